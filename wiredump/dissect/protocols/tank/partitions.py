"""TANK's per-topic/partition results of a frame, for the `partitions` table.

Why here: TANK's Produce and Consume carry `topics[].partitions[]` (error per partition in
responses, the start sequence number of a Consume, a consumed chunk's base sequence number
and high watermark); CreateTopic and DiscoverPartitions name one `topic`. TANK's sequence
numbers are its offsets. A Consume response entry's error is its errorOrFlags byte when
that byte is an error (0 when the partition was served); `records` counts the messages the
frame carries for the partition.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from wiredump.dissect.model import Frame, TopicPartition


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _row(topic: str, p: dict[str, Any], counts: Counter) -> TopicPartition:
    partition = _int(p.get("partition"))
    code = _int(p.get("error_code"))
    if code is None and "error_or_flags" in p:
        code = _int(p["error_or_flags"]) if "error" in p else 0
    offset = _int(p.get("base_seqnum"))
    if offset is None:
        offset = _int(p.get("seqnum"))
    return TopicPartition(
        topic,
        partition,
        code,
        p.get("error") if isinstance(p.get("error"), str) and code else None,
        offset,
        _int(p.get("high_watermark")),
        _int(p.get("first_available_seqnum")),
        counts.get((topic, partition)) or None,
    )


def of_frame(f: Frame) -> list[TopicPartition] | None:
    """Every topic/partition the frame names, in wire order; None when it names none."""
    fields = f.fields
    counts: Counter = Counter((m.topic, m.partition) for m in f.messages)
    out: list[TopicPartition] = []
    topics = fields.get("topics")
    if isinstance(topics, list):
        for t in topics:
            if not isinstance(t, dict) or not isinstance(t.get("name"), str):
                continue
            parts = t.get("partitions")
            n = len(out)
            if isinstance(parts, list):
                out.extend(_row(t["name"], p, counts) for p in parts if isinstance(p, dict))
            if len(out) == n:
                out.append(TopicPartition(t["name"]))
    elif isinstance(fields.get("topic"), str):
        topic = fields["topic"]
        parts = fields.get("partitions")
        if isinstance(parts, list) and parts:
            out.extend(_row(topic, p, counts) for p in parts if isinstance(p, dict))
        else:
            code = _int(fields.get("error_code"))
            out.append(TopicPartition(topic, None, code, fields.get("error") if code else None))
    return out or None
