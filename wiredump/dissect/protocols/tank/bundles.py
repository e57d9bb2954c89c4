"""TANK bundles and the chunks of bundles Consume responses carry.

A bundle is TANK's unit of storage and transfer: a flags byte (codec, message
count, SPARSE), optional count and sequence numbers, then a message set that may
be one raw Snappy block. Non-sparse bundles carry no sequence numbers at all: the
caller supplies the first one (the Consume partition entry's base, or the
ProduceWithSeqnum base) and numbering runs on across the bundles of a chunk.
Everything is bounds-checked; problems become `(kind, detail, offset)` tuples the
caller turns into anomalies, so one bad bundle never costs the rest of a frame.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wiredump.dissect import codecs
from wiredump.dissect.limits import Limits
from wiredump.dissect.protocols.tank import constants as C
from wiredump.dissect.wire import Cursor, Short

Problem = tuple[str, str, "int | None"]

U64 = (1 << 64) - 1
"""Sequence numbers are TANK's `uint64_t`: arithmetic on them wraps at 2**64 as in the broker and
client (a hostile sparse header near the top must not number messages past the type)."""


@dataclass(slots=True)
class BundleMessage:
    """One message of a bundle's message set."""

    seq: int | None
    flags: int
    timestamp_ms: int | None
    key: bytes | None
    value: bytes


@dataclass(slots=True)
class Bundle:
    fields: dict[str, Any]
    messages: list[BundleMessage] = field(default_factory=list)
    next_seq: int | None = None
    """Sequence number of the message that would follow this bundle."""
    codec: str = "none"
    problems: list[Problem] = field(default_factory=list)
    parsed: int = 0
    """Messages read from the set; more than `messages` holds when the frame's cap
    (`Limits.max_messages`) was reached: those were checked and counted, not kept."""
    first_seq: int | None = None
    last_seq: int | None = None
    """Sequence numbers of the first and last message read (kept or not)."""


def decode_bundle(
    buf: bytes | memoryview,
    start: int,
    end: int,
    first_seq: int | None,
    limits: Limits,
    keep: int | None = None,
) -> Bundle:
    """Decode the bundle in `buf[start:end]`; `first_seq` numbers a non-sparse bundle.

    At most `keep` messages (default: `limits.max_messages`) are kept in `messages`; the rest
    are read and checked the same way and only counted (`parsed`).

    Offsets in problems are offsets in `buf` (the frame), so they can be reported as is.
    """
    b = Bundle(fields={"length": end - start})
    c = Cursor(buf, start, end)
    f = b.fields
    try:
        flags = c.u8("bundle flags")
        codec = flags & C.CODEC_MASK
        count = (flags >> C.COUNT_SHIFT) & C.COUNT_MASK
        sparse = bool(flags & C.SPARSE)
        b.codec = C.CODECS.get(codec, f"codec{codec}")
        f.update(flags=flags, codec=b.codec, sparse=sparse)
        if flags & C.EXTRA_FLAGS:
            # Layout from tank_encoding.md; TANK master neither writes nor reads it.
            extra = c.u8("bundle extra flags")
            f["extra_flags"] = extra
            if extra & C.EXTRA_RICH_PRODUCER:
                f["partition_leader_epoch"] = c.u32le("partition leader epoch")
                f["producer_id"] = c.u64le("producer id")
                f["producer_epoch"] = c.u16le("producer epoch")
        if count == 0:
            count = c.uvarint("bundle message count", 5)
        f["message_count"] = count
        last_seq: int | None = None
        if sparse:
            first_seq = c.u64le("sparse bundle first seqnum")
            last_seq = (
                first_seq + (c.uvarint("sparse bundle last seqnum delta", 5) + 1 if count != 1 else 0)
            ) & U64
            f["first_seqnum"] = first_seq
            f["last_seqnum"] = last_seq
    except Short as e:
        b.problems.append(("malformed", f"bundle header: {e}", e.offset))
        return b
    f["message_set_size"] = end - c.pos
    msgset_at = c.pos
    if codec == 0:
        data, base = buf, msgset_at
        data_end = end
    elif codec == 1:
        out, problem = codecs.snappy_raw(bytes(buf[msgset_at:end]), limits)
        if problem:
            b.problems.append((problem[0], f"bundle at byte {start}: {problem[1]}", msgset_at))
        if out is None:
            b.next_seq = _next_after(first_seq, last_seq, count, sparse)
            return b
        f["uncompressed_size"] = len(out)
        data, base, data_end = out, 0, len(out)
    else:
        b.problems.append(("malformed", f"bundle at byte {start}: unknown codec {codec}", start))
        b.next_seq = _next_after(first_seq, last_seq, count, sparse)
        return b
    _decode_message_set(
        b,
        data,
        base,
        data_end,
        count,
        sparse,
        first_seq,
        last_seq,
        msgset_at if codec else None,
        limits.max_messages if keep is None else keep,
    )
    b.next_seq = _next_after(first_seq, last_seq, count, sparse)
    return b


def _next_after(first_seq: int | None, last_seq: int | None, count: int, sparse: bool) -> int | None:
    if sparse and last_seq is not None:
        return (last_seq + 1) & U64
    if first_seq is None:
        return None
    return (first_seq + count) & U64


def _decode_message_set(
    b: Bundle,
    data: bytes | memoryview,
    pos: int,
    end: int,
    count: int,
    sparse: bool,
    first_seq: int | None,
    last_seq: int | None,
    compressed_at: int | None,
    keep: int,
) -> None:
    """Messages one after the other until the set ends (TANK iterates by bytes, as here).

    The hottest loop of the decoder (tens of thousands of messages per Consume
    response), so it reads `data` directly instead of through `Cursor`; every read is
    still checked against `end` first.
    """
    seq = first_seq
    ts: int | None = None
    idx = 0
    p = pos
    out = b.messages
    at = pos
    first_read: int | None = None
    try:
        while p < end:
            at = p
            flags = data[p]
            p += 1
            if sparse:
                if idx == 0:
                    seq = first_seq
                elif idx == count - 1:
                    seq = last_seq
                elif flags & C.MSG_SEQ_PREV_PLUS_ONE:
                    seq = None if seq is None else (seq + 1) & U64
                else:
                    delta, p = _varint(data, p, end, "message seqnum delta")
                    seq = None if seq is None else (seq + 1 + delta) & U64
            elif idx:
                seq = None if seq is None else (seq + 1) & U64
            if not flags & C.MSG_USE_LAST_TS:
                if p + 8 > end:
                    raise Short("message timestamp", p, 8, end - p)
                ts = _U64.unpack_from(data, p)[0]
                p += 8
            key = None
            if flags & C.MSG_HAVE_KEY:
                if p >= end:
                    raise Short("key length", p, 1, 0)
                klen = data[p]
                if p + 1 + klen > end:
                    raise Short("key", p + 1, klen, end - p - 1)
                key = bytes(data[p + 1 : p + 1 + klen])
                p += 1 + klen
            vlen, p = _varint(data, p, end, "content length")
            if p + vlen > end:
                raise Short("content", p, vlen, end - p)
            if idx < keep:
                out.append(BundleMessage(seq, flags, ts, key, bytes(data[p : p + vlen])))
            if not idx:
                first_read = seq
            p += vlen
            idx += 1
            b.last_seq = seq
    except Short as e:
        where = e.offset if compressed_at is None else compressed_at
        inside = "" if compressed_at is None else f" (byte {e.offset} of the uncompressed set)"
        b.problems.append(("malformed", f"message {idx} of bundle (at byte {at}): {e}{inside}", where))
    b.parsed = idx
    b.first_seq = first_read
    if idx != count and not b.problems:
        b.problems.append(
            (
                "malformed",
                f"bundle declares {count} messages, its message set holds {idx}",
                pos if compressed_at is None else compressed_at,
            )
        )


_U64 = struct.Struct("<Q")


def _varint(data: bytes | memoryview, p: int, end: int, what: str) -> tuple[int, int]:
    """TANK's varint (unsigned LEB128, at most 5 bytes for 32-bit values) at `p`; (value, next)."""
    value = shift = 0
    start = p
    while p < end and p - start < 5:
        byte = data[p]
        p += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, p
        shift += 7
    raise Short(what, start, p - start + 1, end - start)


@dataclass(slots=True)
class Chunk:
    bundles: list[Bundle] = field(default_factory=list)
    """The bundles listed (the first `room` of `decode_chunk`); `count` says how many were read."""
    count: int = 0
    """Bundles read, listed or not."""
    partial: dict[str, Any] | None = None
    """The cut-off last bundle (normal: the fetch size is in bytes), if any."""
    next_seq: int | None = None
    unread: dict[str, Any] | None = None
    """Where the chunk stopped making sense (a bundle length of 0), and the bytes left unread."""
    problems: list[Problem] = field(default_factory=list)
    """Problems of the chunk itself (not of one of its bundles)."""
    messages: int = 0
    """Messages read in all its bundles (kept or not)."""
    read_any: bool = False
    """Whether a bundle held messages; then `first_seq`/`last_seq` are the first one's first
    and the last one's last sequence number (what the summary shows)."""
    first_seq: int | None = None
    last_seq: int | None = None


def decode_chunk(
    buf: bytes | memoryview,
    start: int,
    end: int,
    base_seq: int | None,
    limits: Limits,
    each: Callable[[Bundle, int], None],
    keep: int | None = None,
    room: int | None = None,
) -> Chunk:
    """A run of `[length varint][bundle]` records whose last one may be cut short; at most `keep`
    messages of them all are kept (see `decode_bundle`).

    `each(bundle, index)` is called on every bundle as it is read (to take its messages and
    problems); only the first `room` (default: all) stay in `bundles`, so a chunk of a million
    tiny bundles costs the fields of `room` of them (`Limits.max_batches`)."""
    left = limits.max_messages if keep is None else keep
    ch = Chunk(next_seq=base_seq)
    c = Cursor(buf, start, end)
    seq = base_seq
    while c.left > 0:
        at = c.pos
        try:
            blen = c.uvarint("bundle length", 5)
        except Short:
            ch.partial = {"offset": at, "declared_length": None, "available": end - at}
            break
        if blen > c.left:
            ch.partial = {"offset": at, "declared_length": blen, "available": c.left}
            break
        if blen == 0:
            # Not a bundle: every bundle holds at least its flags byte (and one message), and
            # TANK's own log verifier rejects a zero length (`TANK_EXPECT(bundleLen)`). The
            # length is the only framing a chunk has, so nothing after it can be trusted: the
            # rest of the chunk is one malformed stretch, reported once with its size (a chunk
            # of zero bytes would otherwise be one empty bundle and one problem per byte).
            left_bytes = end - at
            ch.unread = {"offset": at, "length": left_bytes}
            ch.problems.append(
                (
                    "malformed",
                    f"bundle length 0 at byte {at} (a bundle holds at least its flags byte): "
                    f"the last {left_bytes} bytes of the chunk are not read as bundles",
                    at,
                )
            )
            break
        bundle = decode_bundle(buf, c.pos, c.pos + blen, seq, limits, left)
        left -= len(bundle.messages)
        bundle.fields["offset"] = at
        each(bundle, ch.count)
        if room is None or ch.count < room:
            ch.bundles.append(bundle)
        ch.count += 1
        if bundle.parsed:
            if not ch.read_any:
                ch.read_any = True
                ch.first_seq = bundle.first_seq
            ch.last_seq = bundle.last_seq
            ch.messages += bundle.parsed
        seq = bundle.next_seq
        c.pos += blen
    ch.next_seq = seq
    return ch
