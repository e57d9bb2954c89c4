"""`-T json` and `-T jsonl`: one frame as one JSON object, the frames table's row.

The frames table stores a frame's decoded tree in `detail` as JSON text (a Parquet
string column). Printed as JSON, that text would be a string inside JSON that every
consumer has to decode again (`jq '.detail | fromjson'`); here it is the object
itself. With `-V` the object also carries the frame's messages and anomalies, as
the messages and anomalies tables hold them (without the columns repeated from the
frame), so `-T jsonl -V` has what `-V` prints. Values are exact (no terminal escaping).
"""

from __future__ import annotations

import json
from typing import Any

from wiredump.dissect.model import Frame

_REPEATED = frozenset({"capture", "packet", "stream", "protocol"})
"""Columns of the message/anomaly rows that repeat the frame's own."""
_PARTITION_REPEATED = _REPEATED | {"ts", "role", "kind", "type", "correlation_id", "latency_us"}
"""Columns of the partitions rows that repeat the frame's own."""


def _parsed(row: dict[str, Any]) -> dict[str, Any]:
    """The row with its `detail` JSON text as the object it holds."""
    detail = row.get("detail")
    if isinstance(detail, str):
        try:
            row["detail"] = json.loads(detail)
        except ValueError:
            pass  # not JSON (the tables always write JSON there): kept as it is
    return row


def frame_object(f: Frame, capture: str, verbose: bool = False) -> dict[str, Any]:
    """The frames-table row of `f` with `detail` as an object (and, `verbose`, its messages and anomalies)."""
    from wiredump.dissect.tables import (
        PARTITIONS,
        anomaly_row,
        frame_row,
        json_row,
        message_row,
        partition_tuples,
    )

    obj = _parsed(json_row("frames", frame_row(f, capture)))
    if verbose:
        obj["messages"] = [
            {
                k: v
                for k, v in _parsed(json_row("messages", message_row(m, f, capture, False))).items()
                if k not in _REPEATED
            }
            for m in f.messages
        ]
        obj["anomalies"] = [
            {k: v for k, v in json_row("anomalies", anomaly_row(a, capture)).items() if k not in _REPEATED}
            for a in f.anomalies
        ]
        obj["partitions"] = [
            {
                k: v
                for k, v in json_row("partitions", dict(zip(PARTITIONS.names, r, strict=True))).items()
                if k not in _PARTITION_REPEATED
            }
            for r in partition_tuples(f, capture)
        ]
    return obj


def frame_json(f: Frame, capture: str, verbose: bool = False) -> str:
    """`frame_object` as one line of JSON."""
    return json.dumps(frame_object(f, capture, verbose), ensure_ascii=False)
