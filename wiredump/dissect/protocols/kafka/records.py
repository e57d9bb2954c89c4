"""Kafka record sets: v2 record batches and legacy (magic 0/1) message sets.

A RECORDS field holds a concatenation of entries whose magic byte sits at offset 16
in every format, so one loop reads both. Checksums are verified (CRC-32C over a v2
batch from its attributes on, CRC-32 over a legacy message from its magic on),
compressed payloads go through `wiredump.dissect.codecs` (which enforces the limits),
and every record becomes a `Message`. This is the hot path of large captures, so it
reads varints inline from `bytes` and avoids per-record dictionaries.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

import crc32c

from wiredump.dissect import codecs
from wiredump.dissect.limits import BATCH_LIMIT, MESSAGE_LIMIT, Limits
from wiredump.dissect.model import BAD_CHECKSUM, MALFORMED, Anomaly, Frame, Message
from wiredump.dissect.protocols.kafka.embedded import decode_control_value

_V2 = struct.Struct(">qiibIhiqqqhii")  # the 61-byte v2 batch header
_HEAD = struct.Struct(">qi")  # offset, size/length: common to every format
_LEGACY = struct.Struct(">Ibb")  # crc, magic, attributes (after offset and size)
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_CTRL = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")

CODECS = {0: None, 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
V2_OVERHEAD = 61
LEGACY_MIN = 14  # crc + magic + attributes + key length + value length


class BadRecord(Exception):
    """A record inside a batch does not parse; carries the offset within the records."""

    def __init__(self, msg: str, offset: int) -> None:
        super().__init__(msg)
        self.offset = offset


@dataclass(slots=True)
class RecordContext:
    """Where the records sit and what to do with what is found."""

    frame: Frame
    direction: str
    limits: Limits
    topic: str | None = None
    partition: int | None = None
    partial_ok: bool = False
    """Fetch responses may end with a partial batch (normal); elsewhere it is malformed."""
    base: int = 0
    """Offset of the record set inside the frame (for anomaly offsets)."""
    emit: bool = True
    """False when only trying a layout (no messages, no anomalies)."""
    stats: dict[str, int] = field(default_factory=dict)
    messages: bool = True
    """False when nobody reads the messages (the timeline): records are still read and checked, but no
    `Message` objects are made."""


def _varint(b: bytes, p: int) -> tuple[int, int]:
    """Zig-zag varint at b[p] -> (value, next position); IndexError when cut."""
    x = b[p]
    p += 1
    if x < 0x80:
        return (x >> 1) ^ -(x & 1), p
    result = x & 0x7F
    shift = 7
    while True:
        x = b[p]
        p += 1
        result |= (x & 0x7F) << shift
        if x < 0x80:
            return (result >> 1) ^ -(result & 1), p
        shift += 7
        if shift > 63:
            raise BadRecord("varint longer than 10 bytes", p)


def _count(stats: dict[str, int], key: str, n: int = 1) -> None:
    stats[key] = stats.get(key, 0) + n


def _counted_only(rc: RecordContext, read: int, room: int) -> None:
    """Count on the frame the records of a batch read past its cap (`room` left when the batch
    began), so totals include the messages that are not kept as rows."""
    if rc.emit and read > max(room, 0):
        rc.frame.messages_counted += read - max(room, 0)


def decode_record_set(data: bytes, rc: RecordContext, depth: int = 0) -> dict[str, Any]:
    """Decode every batch/message in `data`; returns the decode for the frame's fields."""
    n = len(data)
    pos = 0
    batches: list[dict[str, Any]] = []
    out: dict[str, Any] = {"size": n, "batches": batches}
    records = 0
    unlisted = first_unlisted = 0
    while pos < n:
        left = n - pos
        if left < 17:
            _partial(rc, out, pos, left, "record set ends with a partial entry header")
            break
        base_offset, length = _HEAD.unpack_from(data, pos)
        magic = data[pos + 16]
        end = pos + 12 + length
        if length < 0 or (magic == 2 and length < V2_OVERHEAD - 12) or (magic < 2 and length < LEGACY_MIN):
            _problem(rc, MALFORMED, "malformed", f"record entry declares length {length}", pos)
            out["undecoded_bytes"] = left
            break
        if end > n:
            _partial(rc, out, pos, left, f"entry of {12 + length} bytes with {left} left")
            break
        # The frame lists its first `max_batches` batches (and legacy messages) in its fields:
        # an empty batch is 61 bytes, so a 100 MiB record set holds 1.7M of them.
        listed = _entries_so_far(rc.stats) < rc.limits.max_batches
        if magic == 2:
            b = _batch_v2(data, pos, end, base_offset, rc)
        elif magic in (0, 1):
            b = _legacy(data, pos, end, base_offset, magic, rc, depth, None)
        else:
            _problem(rc, MALFORMED, "malformed", f"unknown record magic {magic}", pos + 16)
            out["undecoded_bytes"] = left
            break
        records += b.get("record_count", 0)
        if listed:
            batches.append(b)
        else:
            if not unlisted:
                first_unlisted = pos
            unlisted += 1
        pos = end
    if unlisted:
        out["batches_not_listed"] = unlisted
        if rc.emit:
            _problem(
                rc,
                None,
                BATCH_LIMIT,
                f"{unlisted} of the record set's {len(batches) + unlisted} batches are past the frame's "
                f"{rc.limits.max_batches}th: read and checked, not listed",
                first_unlisted,
            )
    out["record_count"] = records
    return out


def _entries_so_far(stats: dict[str, int]) -> int:
    """Batches and legacy messages the frame has read so far (`Limits.max_batches`)."""
    return stats.get("batches", 0) + stats.get("messages", 0)


def _partial(rc: RecordContext, out: dict[str, Any], pos: int, left: int, why: str) -> None:
    out["partial_trailing_bytes"] = left
    if not rc.partial_ok:
        _problem(rc, MALFORMED, "malformed", f"truncated record set: {why}", pos)


def _problem(rc: RecordContext, status: str | None, kind: str, detail: str, offset: int | None) -> None:
    if not rc.emit:
        raise BadRecord(detail, offset or 0)
    at = None if offset is None else rc.base + offset
    where = f"{rc.topic}[{rc.partition}]" if rc.topic is not None else f"partition {rc.partition}"
    if status is None:
        rc.frame.add(Anomaly(kind, f"{where}: {detail}", at))
    else:
        rc.frame.flag(status, kind, f"{where}: {detail}", at)


def _decompress(codec: int, payload: bytes, rc: RecordContext, legacy_lz4: bool, where: int) -> bytes | None:
    limits = rc.limits
    if codec == 1:
        res = codecs.gzip(payload, limits)
    elif codec == 2:
        res = codecs.snappy_kafka(payload, limits)
    elif codec == 3:
        res = codecs.lz4_frame(payload, limits, legacy_checksum=legacy_lz4)
    elif codec == 4:
        res = codecs.zstd(payload, limits)
    else:
        _problem(rc, MALFORMED, "malformed", f"unknown compression codec {codec}", where)
        return None
    out, problem = res
    if problem is not None:
        kind, detail = problem
        _problem(rc, MALFORMED if kind == codecs.FAILED else None, kind, detail, where)
        return None
    return out


_ZZ = tuple((x >> 1) ^ -(x & 1) for x in range(128))
"""Zig-zag value of each one-byte varint: one index instead of four operations per field."""
_crc32c = crc32c.crc32c
_CODEC_NAMES = tuple(CODECS.get(c, str(c)) for c in range(8))
SLICE_BELOW = 4096
"""CRC a copy of batches smaller than this (cheaper than a memoryview), a view of larger ones."""


def _batch_v2(data: bytes, pos: int, end: int, base_offset: int, rc: RecordContext) -> dict[str, Any]:
    """One v2 batch at data[pos:end]: header, CRC-32C, records (this loop is the hot path)."""
    (
        _,
        length,
        leader_epoch,
        magic,
        crc,
        attributes,
        last_delta,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_seq,
        count,
    ) = _V2.unpack_from(data, pos)
    covered = data[pos + 21 : end] if end - pos < SLICE_BELOW else memoryview(data)[pos + 21 : end]
    crc_ok = _crc32c(covered) == crc
    codec = attributes & 7
    log_append = bool(attributes & 8)
    control = bool(attributes & 32)
    transactional = bool(attributes & 16)
    compression = _CODEC_NAMES[codec]
    b: dict[str, Any] = {
        "base_offset": base_offset,
        "batch_length": length,
        "partition_leader_epoch": leader_epoch,
        "magic": magic,
        "crc": crc,
        "crc_ok": crc_ok,
        "attributes": attributes,
        "compression": compression,
        "timestamp_type": "LogAppendTime" if log_append else "CreateTime",
        "is_transactional": transactional,
        "is_control": control,
        "has_delete_horizon": bool(attributes & 64),
        "last_offset_delta": last_delta,
        "base_timestamp": base_ts,
        "max_timestamp": max_ts,
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
        "base_sequence": base_seq,
        "records_count": count,
        "record_count": 0,
    }
    stats = rc.stats
    stats["batches"] = stats.get("batches", 0) + 1
    if crc_ok:
        stats["crc_ok"] = stats.get("crc_ok", 0) + 1
    else:
        stats["crc_bad"] = stats.get("crc_bad", 0) + 1
        _problem(
            rc,
            BAD_CHECKSUM,
            "bad_checksum",
            f"record batch at offset {base_offset}: CRC-32C {crc:#010x} stored, "
            f"{_crc32c(covered):#010x} computed",
            pos + 17,
        )
    if count < 0:
        _problem(rc, MALFORMED, "malformed", f"record batch declares {count} records", pos + 57)
        return b
    start = pos + V2_OVERHEAD
    if codec:
        rb = _decompress(codec, data[start:end], rc, False, start)
        if rb is None:
            return b
        p, rend = 0, len(rb)
        rel = start  # offsets inside the decompressed stream are not frame offsets
    else:
        rb, p, rend, rel = data, start, end, 0
    if count > rend - p:  # every record takes at least one byte
        _problem(rc, MALFORMED, "malformed", f"batch declares {count} records in {rend - p} bytes", pos + 57)
        return b
    emit = rc.emit
    # Every record is read and checked even when nobody wants the messages (the plain
    # timeline): a frame's status must not depend on which command or filter asked for it.
    msgs = rc.frame.messages if emit and rc.messages else None
    room = rc.limits.max_messages - stats.get("records", 0)  # the frame's cap (Limits.max_messages)
    # Control records are not messages, but a compressed control batch can hold millions: the
    # frame keeps at most max_messages of their dicts too, and counts them all.
    control_room = rc.limits.max_messages - stats.get("control_records", 0)
    ts_fixed = max_ts if log_append else None
    direction, topic, partition = rc.direction, rc.topic, rc.partition
    controls: list[dict[str, Any]] = []
    # One detail dict shared by every record of the batch: the producer state an
    # idempotence or transaction problem is read from.
    detail = {
        "batch_base_offset": base_offset,
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
        "base_sequence": base_seq,
        "transactional": transactional,
        "magic": 2,
    }
    zz = _ZZ
    n = 0
    try:
        for n in range(count):  # noqa: B007  (n is read after the loop and in errors)
            # Varints inline when they fit in one byte (almost always).
            x = rb[p]
            if x < 0x80:
                length = zz[x]
                p += 1
            else:
                length, p = _varint(rb, p)
            rec_end = p + length
            if length < 5 or rec_end > rend:
                raise BadRecord(f"record {n} declares length {length}", p)
            # After the unused attributes byte: timestamp delta, offset delta, key length. The
            # record holds at least 5 bytes, so these three are inside it.
            t, o, x = rb[p + 1], rb[p + 2], rb[p + 3]
            if t < 0x80 and o < 0x80 and x < 0x80:
                ts_delta, off_delta, klen = zz[t], zz[o], zz[x]
                p += 4
            else:
                if t < 0x80:
                    ts_delta = zz[t]
                    p += 2
                else:
                    ts_delta, p = _varint(rb, p + 1)
                x = rb[p]
                if x < 0x80:
                    off_delta = zz[x]
                    p += 1
                else:
                    off_delta, p = _varint(rb, p)
                x = rb[p]
                if x < 0x80:
                    klen = zz[x]
                    p += 1
                else:
                    klen, p = _varint(rb, p)
            if klen >= 0:
                key = rb[p : p + klen]
                p += klen
            else:
                key = None
            x = rb[p]
            if x < 0x80:
                vlen = zz[x]
                p += 1
            else:
                vlen, p = _varint(rb, p)
            if vlen >= 0:
                value = rb[p : p + vlen]
                p += vlen
            else:
                value = None
            x = rb[p]
            if x == 0:
                headers = None
                p += 1
            else:
                if x < 0x80:
                    hcount = zz[x]
                    p += 1
                else:
                    hcount, p = _varint(rb, p)
                headers = None
                if hcount:
                    if hcount < 0 or hcount > rec_end - p:
                        raise BadRecord(f"record {n} declares {hcount} headers", p)
                    headers = []
                    for _h in range(hcount):
                        hk, p = _varint(rb, p)
                        if hk < 0:
                            raise BadRecord(f"record {n}: header key length {hk}", p)
                        hkey = rb[p : p + hk].decode("utf-8", "replace")
                        p += hk
                        hv, p = _varint(rb, p)
                        if hv >= 0:
                            headers.append((hkey, rb[p : p + hv]))
                            p += hv
                        else:
                            headers.append((hkey, None))
            if p != rec_end:
                raise BadRecord(f"record {n} ends at {p}, declared end {rec_end}", p)
            if control:
                if n < control_room:
                    controls.append(_control(key, value))
                continue
            if msgs is not None and n < room:
                msgs.append(
                    Message(
                        direction,
                        vlen if vlen > 0 else 0,
                        topic,
                        partition,
                        base_offset + off_delta,
                        None,
                        key,
                        value,
                        ts_fixed if ts_fixed is not None else base_ts + ts_delta,
                        headers,
                        compression,
                        crc_ok,
                        detail,
                    )
                )
        else:
            n = count  # every record read (also when there are none)
    except BadRecord as e:
        b["record_count"] = n
        _counted_only(rc, n if not control else 0, room)
        _problem(rc, MALFORMED, "malformed", f"batch at offset {base_offset}: {e}", rel + e.offset)
        return b
    except IndexError:
        b["record_count"] = n
        _counted_only(rc, n if not control else 0, room)
        _problem(
            rc,
            MALFORMED,
            "malformed",
            f"batch at offset {base_offset}: record {n} runs past the batch",
            rel + p,
        )
        return b
    b["record_count"] = n if not control else 0
    if controls:
        b["control_records"] = controls
    if p != rend:
        _problem(
            rc,
            MALFORMED,
            "malformed",
            f"batch at offset {base_offset}: {rend - p} bytes after the last record",
            rel + p,
        )
    _counted_only(rc, b["record_count"], room)
    if control:
        stats["control_records"] = stats.get("control_records", 0) + n
        if emit and n > control_room >= 0:
            _problem(
                rc,
                None,
                MESSAGE_LIMIT,
                f"batch at offset {base_offset}: control records past the frame's {rc.limits.max_messages}th "
                f"were read and checked, not kept ({n - control_room} of {n})",
                pos,
            )
    if emit and b["record_count"] > room >= 0:
        # Counted, not materialised (whatever the command, so the anomaly is the same everywhere).
        _problem(
            rc,
            None,
            MESSAGE_LIMIT,
            f"batch at offset {base_offset}: records past the frame's {rc.limits.max_messages}th "
            f"were read and checked, not kept ({b['record_count'] - room} of {b['record_count']})",
            pos,
        )
    stats["records"] = stats.get("records", 0) + b["record_count"]
    return b


def _control(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if key is not None and len(key) >= 4:
        version, ctype = _CTRL.unpack_from(key, 0)
        out["version"] = version
        out["type"] = CONTROL_TYPES.get(ctype, f"UNKNOWN_{ctype}")
        if ctype in (0, 1) and value is not None and len(value) >= 6:
            mversion, epoch = _MARKER.unpack_from(value, 0)
            out["marker_version"] = mversion
            out["coordinator_epoch"] = epoch
        elif value is not None:
            decoded = decode_control_value(ctype, value)
            if decoded is not None:
                out["value_decoded"] = decoded
            else:
                out["value"] = value
    else:
        out["key"] = key
    return out


def _legacy(
    data: bytes,
    pos: int,
    end: int,
    offset: int,
    magic: int,
    rc: RecordContext,
    depth: int,
    inner_of: list[Message] | None,
) -> dict[str, Any]:
    """One legacy message at data[pos:end]; a compressed wrapper recurses into its inner set."""
    crc, _, attributes = _LEGACY.unpack_from(data, pos + 12)
    crc_ok = (zlib.crc32(memoryview(data)[pos + 16 : end]) & 0xFFFFFFFF) == crc
    codec = attributes & 7
    log_append = bool(attributes & 8) and magic == 1
    m: dict[str, Any] = {
        "offset": offset,
        "message_size": end - pos - 12,
        "crc": crc,
        "crc_ok": crc_ok,
        "magic": magic,
        "attributes": attributes,
        "compression": CODECS.get(codec, str(codec)),
        "record_count": 0,
    }
    stats = rc.stats
    _count(stats, "messages")
    if crc_ok:
        _count(stats, "crc_ok")
    else:
        _count(stats, "crc_bad")
        computed = zlib.crc32(memoryview(data)[pos + 16 : end]) & 0xFFFFFFFF
        _problem(
            rc,
            BAD_CHECKSUM,
            "bad_checksum",
            f"message at offset {offset}: CRC-32 {crc:#010x} stored, {computed:#010x} computed",
            pos + 12,
        )
    p = pos + 18
    ts: int | None = None
    try:
        if magic == 1:
            (ts,) = _I64.unpack_from(data, p)
            p += 8
            m["timestamp"] = ts
            m["timestamp_type"] = "LogAppendTime" if log_append else "CreateTime"
        (klen,) = _I32.unpack_from(data, p)
        p += 4
        if klen > end - p:
            raise BadRecord(f"key length {klen}", p - 4)
        key = None if klen < 0 else data[p : p + klen]
        p += max(klen, 0)
        (vlen,) = _I32.unpack_from(data, p)
        p += 4
        if vlen > end - p:
            raise BadRecord(f"value length {vlen}", p - 4)
        value = None if vlen < 0 else data[p : p + vlen]
        p += max(vlen, 0)
    except (struct.error, BadRecord) as e:
        off = e.offset if isinstance(e, BadRecord) else p
        _problem(rc, MALFORMED, "malformed", f"message at offset {offset}: {e}", off)
        return m
    if p != end:
        _problem(
            rc, MALFORMED, "malformed", f"message at offset {offset}: {end - p} bytes after the value", p
        )
    if codec == 0:
        m["record_count"] = 1
        _count(stats, "records")
        if rc.emit and (inner_of is not None or rc.messages):
            msg = Message(
                rc.direction,
                vlen if vlen > 0 else 0,
                rc.topic,
                rc.partition,
                offset,
                None,
                key,
                value,
                ts if ts is not None and ts >= 0 else None,
                None,
                None,
                crc_ok,
            )
            (inner_of if inner_of is not None else rc.frame.messages).append(msg)
        return m
    # A compressed wrapper: the value holds an inner message set.
    if depth >= 1 or inner_of is not None:
        _problem(
            rc,
            MALFORMED,
            "malformed",
            f"message at offset {offset}: compressed message inside a compressed message",
            pos + 17,
        )
        return m
    if value is None:
        _problem(rc, MALFORMED, "malformed", f"compressed message at offset {offset} has no value", p)
        return m
    inner = _decompress(codec, value, rc, magic == 0, p - len(value))
    if inner is None:
        return m
    inner_msgs: list[Message] = []
    saved = rc.base
    room = rc.limits.max_messages - rc.stats.get("records", 0)
    spare: list[Message] = []
    entries = over = 0
    crc_all = True
    last_over: int | None = None
    ipos, n = 0, len(inner)
    # Offsets inside the decompressed data are not frame offsets: report them at the wrapper.
    rc.base = saved + pos
    try:
        while ipos < n:
            if n - ipos < 12 + LEGACY_MIN:
                _problem(
                    rc,
                    MALFORMED,
                    "malformed",
                    f"wrapper at offset {offset}: inner set ends with {n - ipos} stray bytes",
                    0,
                )
                break
            ioff, isize = _HEAD.unpack_from(inner, ipos)
            iend = ipos + 12 + isize
            imagic = inner[ipos + 16]
            if isize < LEGACY_MIN or iend > n or imagic not in (0, 1):
                _problem(
                    rc,
                    MALFORMED,
                    "malformed",
                    f"wrapper at offset {offset}: bad inner message at byte {ipos}",
                    0,
                )
                break
            # Past the frame's cap (Limits.max_messages) inner messages are read and counted, not kept.
            sink = inner_msgs if len(inner_msgs) < room else spare
            e = _legacy(inner, ipos, iend, ioff, imagic, rc, depth + 1, sink)
            entries += 1
            crc_all = crc_all and e["crc_ok"]
            if spare:
                over += len(spare)
                last_over = spare[-1].offset
                spare.clear()
            ipos = iend
    finally:
        rc.base = saved
    if magic == 1 and inner_msgs and offset != 0:
        last = (last_over if over else inner_msgs[-1].offset) or 0
        for im in inner_msgs:
            im.offset = offset - last + (im.offset or 0)
    compression = m["compression"]
    for im in inner_msgs:
        im.compression = compression
        im.checksum_ok = bool(im.checksum_ok) and crc_ok
        if log_append:
            im.timestamp_ms = ts
    if rc.emit and rc.messages:
        rc.frame.messages.extend(inner_msgs)
    m["inner_messages"] = entries
    m["inner_crc_ok"] = crc_all
    m["record_count"] = len(inner_msgs) + over
    if rc.emit:
        rc.frame.messages_counted += over
    if over and rc.emit and room >= 0:  # once per frame: the wrapper that crossed the cap
        _problem(
            rc,
            None,
            MESSAGE_LIMIT,
            f"wrapper at offset {offset}: inner messages past the frame's {rc.limits.max_messages}th were "
            f"read and checked, not kept ({over} of {m['record_count']})",
            pos,
        )
    return m
