"""Pravega's per-segment results of a frame, for the `partitions` table.

Why here: Pravega has no topics or partitions on the wire; a stream's data lives in
segments (`scope/stream/N.#epoch.M`), so the segment is the `topic` and `partition` stays
null. Appends name their segment only in SetupAppend/AppendSetup, later frames by writer
id, so the session's writer → segment map names them. `offset` is the segment offset a
frame names (a read's offset, the write offset a DataAppended reports, a conditional
append's expected offset); `records` counts the events the frame carries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wiredump.dissect.model import Frame, TopicPartition

OFFSET_KEYS = ("offset", "current_segment_write_offset", "expected_offset")


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def of_frame(f: Frame, writer_segment: Mapping[str, str]) -> list[TopicPartition] | None:
    """The frame's one row (its segment, error, offset, events); None when it names no segment."""
    fields = f.fields
    segment = fields.get("segment")
    if not isinstance(segment, str):
        writer = fields.get("writer_id")
        segment = writer_segment.get(writer) if isinstance(writer, str) else None
    if not isinstance(segment, str):
        segment = next((m.topic for m in f.messages if m.topic), None)
    if segment is None:
        return None
    offset = None
    for k in OFFSET_KEYS:
        offset = _int(fields.get(k))
        if offset is not None:
            break
    records = len(f.messages) if f.messages else None
    return [TopicPartition(segment, None, f.error_code, f.error, offset, records=records)]
