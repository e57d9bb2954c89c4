"""Turning append blocks and segment reads back into the events a writer sent.

A writer wraps each event as a record `[int32 0][int32 length][bytes]` (WIRE.md §6.1)
and ships records in APPEND_BLOCK / APPEND_BLOCK_END pairs: the block holds whole
records, then possibly one PADDING or PARTIAL_EVENT trailer; a PARTIAL_EVENT holds
the head of the record that did not fit and the block end's `data` holds its tail.
`BlockAssembler` does what the segment store's `AppendDecoder` does (§6.4):
appended bytes = block[:sizeOfWholeEvents] + partial + blockEnd.data, then splits
them into records.

SEGMENT_READ data is raw segment bytes: records again, the last one possibly cut
and continued by the next read of that segment at the following offset.
`ReadJoiner` keeps that cut tail per segment (bounded) and joins it.

Data that does not parse as records is a byte stream (ByteStreamWriter /
ByteStreamReader write and read raw bytes): it yields no events. A user counting
messages expects writer events, and a byte-stream chunk boundary means nothing, so
raw bytes stay in the frame's fields (`data_kind = "raw"`, `data_length`) rather
than becoming a message row.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from dataclasses import dataclass, field

from wiredump.dissect.protocols.pravega.commands import MAX_EVENT_SIZE

_HDR = struct.Struct(">ii")
PADDING, PARTIAL_EVENT = -1, -2

MAX_PENDING_BLOCKS = 4
"""Writers with an APPEND_BLOCK waiting for its end (the encoder allows one at a time)."""
MAX_READ_TAILS = 256
"""Segments whose cut last record is kept for the next read."""
MAX_READ_TAIL_BYTES = 32 * 1024 * 1024
"""Bytes of cut records kept for all segments of a connection together."""


@dataclass(slots=True)
class Records:
    """The result of splitting bytes into event records."""

    events: list[tuple[int, bytes]] = field(default_factory=list)
    """(offset of the record in the data, event payload)."""
    whole: int = 0
    """Bytes covered by whole records."""
    is_events: bool = True
    """False when the bytes are not a record sequence (a byte stream, or garbage)."""
    reason: str = ""
    count: int = 0
    """Whole records read; more than `events` holds past the `keep` of `split_records`."""


def split_records(data: bytes | bytearray | memoryview, allow_tail: bool, keep: int | None = None) -> Records:
    """Split `data` into `[0][len][bytes]` records.

    With `allow_tail`, a last record cut short (its header promising more than is
    left) is allowed: `whole` then stops before it. Without, the records must cover
    the data exactly. At most `keep` events are kept (`Limits.max_messages`): the rest
    are checked the same way and counted in `count`.
    """
    out = Records()
    n = len(data)
    pos = 0
    events = out.events
    count = 0
    keep = n if keep is None else keep
    while pos + 8 <= n:
        kind, size = _HDR.unpack_from(data, pos)
        if kind != 0 or size < 0 or size > MAX_EVENT_SIZE:
            out.is_events = False
            out.reason = f"bytes at {pos} are not an event record (type {kind}, length {size})"
            return out
        end = pos + 8 + size
        if end > n:
            break
        if count < keep:
            events.append((pos, bytes(data[pos + 8 : end])))
        count += 1
        pos = end
    out.count = count
    out.whole = pos
    left = n - pos
    if left:
        cut_header_ok = bytes(data[pos : pos + min(left, 4)]) == b"\x00" * min(left, 4)
        if not allow_tail or not cut_header_ok:
            out.is_events = False
            out.reason = f"{left} bytes after the last whole record at {pos}"
    return out


@dataclass(slots=True)
class Block:
    """An APPEND_BLOCK's data, held until its APPEND_BLOCK_END."""

    writer_id: str
    data: bytes


@dataclass(slots=True)
class Assembled:
    data: bytes
    problems: list[str]
    trailer: str | None = None
    from_block: int = 0


class BlockAssembler:
    """Per-connection AppendDecoder: joins APPEND_BLOCK with its APPEND_BLOCK_END."""

    def __init__(self) -> None:
        self._blocks: OrderedDict[str, Block] = OrderedDict()

    @property
    def pending(self) -> int:
        return len(self._blocks)

    def pending_writers(self) -> list[str]:
        return list(self._blocks)

    def add_block(self, writer_id: str, data: bytes) -> list[str]:
        """Hold a block; returns problems (a block replaced before its end, or evicted)."""
        problems = []
        if writer_id in self._blocks:
            old = self._blocks.pop(writer_id)
            problems.append(
                f"APPEND_BLOCK for writer {writer_id} replaces one of {len(old.data)} bytes never ended"
            )
        self._blocks[writer_id] = Block(writer_id, data)
        while len(self._blocks) > MAX_PENDING_BLOCKS:
            w, old = self._blocks.popitem(last=False)
            problems.append(f"dropped the unended APPEND_BLOCK of writer {w} ({len(old.data)} bytes)")
        return problems

    def drop(self, writer_id: str) -> Block | None:
        return self._blocks.pop(writer_id, None)

    def end_block(self, writer_id: str, size_of_whole_events: int, end_data: bytes) -> Assembled:
        """The bytes the segment store appends for this APPEND_BLOCK_END (AppendDecoder's rules)."""
        block = self._blocks.pop(writer_id, None)
        if block is None:
            return Assembled(end_data, [])
        problems: list[str] = []
        data = block.data
        sow = size_of_whole_events
        if sow < 0 or sow > len(data):
            problems.append(f"sizeOfWholeEvents {sow} outside the block's {len(data)} bytes")
            sow = max(0, min(sow, len(data)))
        whole = data[:sow]
        rest = data[sow:]
        trailer = None
        appended = whole + end_data
        if rest:
            if len(rest) < 8:
                problems.append(f"{len(rest)} bytes after the whole events are not a PADDING/PARTIAL_EVENT")
            else:
                kind, size = _HDR.unpack_from(rest, 0)
                if size != len(rest) - 8:
                    problems.append(
                        f"block trailer (type {kind}) declares {size} bytes but {len(rest) - 8} follow"
                    )
                elif kind == PARTIAL_EVENT:
                    trailer = "PartialEvent"
                    appended = whole + rest[8:] + end_data
                elif kind == PADDING:
                    trailer = "Padding"
                    if end_data:
                        problems.append("APPEND_BLOCK_END carries data after a PADDING trailer")
                else:
                    problems.append(f"block trailer has type {kind}, not PADDING (-1) or PARTIAL_EVENT (-2)")
        return Assembled(appended, problems, trailer, len(data))


def describe_block(data: bytes) -> dict[str, object]:
    """What an APPEND_BLOCK's data holds: whole records, then a trailer (when it parses that way)."""
    n = len(data)
    pos = count = 0
    while pos + 8 <= n:
        kind, size = _HDR.unpack_from(data, pos)
        if kind == 0 and 0 <= size <= n - pos - 8:
            count += 1
            pos += 8 + size
            continue
        if kind in (PADDING, PARTIAL_EVENT) and size == n - pos - 8:
            return {
                "whole_events": count,
                "whole_event_bytes": pos,
                "trailer": "Padding" if kind == PADDING else "PartialEvent",
                "trailer_length": size,
            }
        break
    if pos == n:
        return {"whole_events": count, "whole_event_bytes": pos, "trailer": None}
    return {"whole_events": count, "whole_event_bytes": pos, "trailer": None, "unparsed_bytes": n - pos}


@dataclass(slots=True)
class _Tail:
    next_offset: int
    data: bytearray


class ReadJoiner:
    """Joins a record cut at the end of one SEGMENT_READ with the next read of that segment."""

    def __init__(self) -> None:
        self._tails: OrderedDict[str, _Tail] = OrderedDict()
        self._bytes = 0

    def split(
        self, segment: str, offset: int, data: bytes, keep: int | None = None
    ) -> tuple[Records, int, int]:
        """Records in this read (joined with a kept tail when the offsets meet).

        Returns (records, base offset of records' offsets in the segment, joined tail bytes).
        """
        tail = self._tails.pop(segment, None)
        if tail is not None:
            self._bytes -= len(tail.data)
        joined = 0
        if tail is not None and tail.next_offset == offset and tail.data:
            buf = tail.data
            buf += data
            joined = len(buf) - len(data)
            recs = split_records(buf, allow_tail=True, keep=keep)
            if recs.is_events:
                self._keep(segment, offset + len(data), buf, recs.whole)
                return recs, offset - joined, joined
        recs = split_records(data, allow_tail=True, keep=keep)
        if recs.is_events:
            self._keep(segment, offset + len(data), data, recs.whole)
        return recs, offset, 0

    def _keep(self, segment: str, next_offset: int, buf: bytes | bytearray, whole: int) -> None:
        left = len(buf) - whole
        if not left or left > MAX_EVENT_SIZE + 8:
            return
        self._tails[segment] = _Tail(next_offset, bytearray(buf[whole:]))
        self._bytes += left
        while len(self._tails) > MAX_READ_TAILS or self._bytes > MAX_READ_TAIL_BYTES:
            _, old = self._tails.popitem(last=False)
            self._bytes -= len(old.data)

    def pending(self, segment: str) -> int:
        t = self._tails.get(segment)
        return len(t.data) if t else 0
