"""Decoders for what a TANK broker answers.

Responses start with the request id (Consume: after its header-length field), so
each decoder reads it first and pairs at once: the Produce response cannot be read
at all without its request's (topic, partition) list, and a Consume response's
messages are marked against the sequence numbers the request asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wiredump.dissect.model import DELIVER, Frame
from wiredump.dissect.protocols.tank import constants as C
from wiredump.dissect.protocols.tank.bundles import Bundle, Chunk, decode_chunk
from wiredump.dissect.protocols.tank.common import (
    ConsumeContext,
    DecodeState,
    ProduceContext,
    add_problems,
    bundle_fields,
    bundle_messages,
    endpoint,
    join_items,
    plural,
    str8,
)
from wiredump.dissect.wire import Cursor

Decoder = Callable[[Cursor, Frame, DecodeState], None]


def _set_error(f: Frame, code: int, name: str) -> None:
    """The frame's error is its first one (a response can carry one per partition)."""
    if f.error_code is None:
        f.error_code = code
        f.error = name


# -- Produce -------------------------------------------------------------------------------


def _produce_error(c: Cursor, code: int) -> dict[str, Any]:
    entry: dict[str, Any] = {"error_code": code, "error": C.PRODUCE_ERRORS.get(code, f"error_{code}")}
    if code == C.OTHER_LEADER:
        entry["leader"] = endpoint(c, "leader")
    return entry


def produce(c: Cursor, f: Frame, st: DecodeState) -> None:
    """Produce response (0x01, also the answer to ProduceWithSeqnum): one error per requested partition."""
    f.correlation_id = f.fields["request_id"] = c.u32le("request id")
    req = st.pair(f, (C.PRODUCE, f.correlation_id))
    ctx = req.context if req is not None else None
    if not isinstance(ctx, ProduceContext):
        _produce_unpaired(c, f)
        return
    if ctx.msg_id != C.PRODUCE:
        f.fields["answers"] = C.MSG_NAMES[ctx.msg_id]
    f.fields["topics"] = topics = []
    items: list[str] = []
    for name, pids in ctx.topics:
        parts: list[dict[str, Any]] = []
        topics.append({"name": name, "partitions": parts})
        if not pids:
            continue
        first = c.u8("topic error")
        if first in C.PRODUCE_TOPIC_LEVEL:
            err = C.PRODUCE_ERRORS[first]
            for pid in pids:
                parts.append({"partition": pid, "error_code": first, "error": err})
            _set_error(f, first, err)
            items.append(f"{name} {err}")
            continue
        for i, pid in enumerate(pids):
            code = first if i == 0 else c.u8("partition error")
            entry = {"partition": pid, **_produce_error(c, code)}
            parts.append(entry)
            items.append(f"{name}/{pid} {entry['error']}")
            if code:
                _set_error(f, code, entry["error"])
    f.summary = f"req {f.correlation_id} " + join_items(items)
    _ok_unless_error(f)


def _ok_unless_error(f: Frame) -> None:
    """Responses that carry error codes report 0 when none of them is an error."""
    if f.error_code is None:
        f.error_code = 0


def _produce_unpaired(c: Cursor, f: Frame) -> None:
    """Without the request the error bytes cannot be tied to partitions; list them in order."""
    errors = []
    while c.left:
        code = c.u8("error")
        errors.append(_produce_error(c, code))
        if code:
            _set_error(f, code, errors[-1]["error"])
    f.fields["errors"] = errors
    f.fields["note"] = "request not captured: (topic, partition) of each error unknown"
    f.summary = f"req {f.correlation_id} " + join_items([e["error"] for e in errors]) + " (request not seen)"
    _ok_unless_error(f)


# -- Consume -------------------------------------------------------------------------------


def consume(c: Cursor, f: Frame, st: DecodeState) -> None:
    """Consume response (0x02): a header of partition entries, then their chunks of bundles."""
    hlen = f.fields["header_length"] = c.u32le("header length")
    hdr_end = c.pos + hlen
    f.correlation_id = f.fields["request_id"] = c.u32le("request id")
    req = st.pair(f, (C.CONSUME, f.correlation_id))
    ntopics = c.u8("topics count")
    _consume_body(c, f, st, req, ntopics, hdr_end, wide=False)


def consume_peer(c: Cursor, f: Frame, st: DecodeState) -> None:
    """ConsumePeer response (0x09): Consume's layout with u16 counts and no request id."""
    hlen = f.fields["header_length"] = c.u32le("header length")
    hdr_end = c.pos + hlen
    req = st.pair(f, (C.CONSUME_PEER,))
    ntopics = c.u16le("topics count")
    _consume_body(c, f, st, req, ntopics, hdr_end, wide=True)


def _consume_body(
    c: Cursor, f: Frame, st: DecodeState, req: Frame | None, ntopics: int, hdr_end: int, wide: bool
) -> None:
    requested = req.context.requested if req is not None and isinstance(req.context, ConsumeContext) else {}
    f.fields["topics"] = topics = []
    entries: list[tuple[str, dict[str, Any]]] = []
    items: list[str] = []
    for _ in range(ntopics):
        name = str8(c, "topic name")
        nparts = c.u16le("partitions count") if wide else c.u8("partitions count")
        topic: dict[str, Any] = {"name": name, "partitions": []}
        topics.append(topic)
        # The broker writes the marker even when the request listed no partitions.
        if c.pos + 2 <= min(hdr_end, c.end) and c.buf[c.pos] == 0xFF and c.buf[c.pos + 1] == 0xFF:
            c.pos += 2
            topic["unknown_topic"] = True
            _set_error(f, C.UNKNOWN_TOPIC_CODE, "unknown_topic")
            items.append(f"{name} unknown_topic")
            continue
        for _ in range(nparts):
            entry = _partition_entry(c, f)
            topic["partitions"].append(entry)
            entries.append((name, entry))
    if c.pos != hdr_end:
        st.problems.append(
            (
                "malformed",
                f"header length says the chunks start at byte {hdr_end}, entries end at {c.pos}",
                c.pos,
            )
        )
        c.pos = hdr_end
    for name, entry in entries:
        pid = entry["partition"]
        clen = entry.get("chunk_length", 0)
        seq_from = entry.get("base_seqnum") if entry["error_or_flags"] == C.CONSUME_OK else None
        min_seq = requested.get((name, pid))
        if min_seq in (C.SEQ_FIRST, C.SEQ_TAIL):
            min_seq = None
        chunk: Chunk | None = None
        if clen:
            at = c.pos
            end = min(c.pos + clen, c.end)

            def each(
                b: Bundle, i: int, name: str = name, pid: int = pid, min_seq: int | None = min_seq
            ) -> None:
                st.count(b)
                add_problems(st, b)
                bundle_messages(f, b, DELIVER, name, pid, i, min_seq)

            chunk = decode_chunk(c.buf, at, end, seq_from, st.limits, each, st.keep, st.batch_room)
            st.batches += chunk.count
            entry["bundles"] = [bundle_fields(b) for b in chunk.bundles]
            if chunk.partial is not None:
                # Normal: the fetch size is in bytes, the broker cuts the last bundle.
                entry["partial_bundle"] = chunk.partial
            if chunk.unread is not None:
                entry["unread"] = chunk.unread
                st.problems.extend(chunk.problems)
            c.pos = end
            c.need(clen - (end - at), f"chunk of {name}/{pid}")
        items.append(_entry_text(name, entry, chunk))
    what = f"req {f.correlation_id} " if f.correlation_id is not None else ""
    f.summary = what + join_items(items)
    _ok_unless_error(f)


def _partition_entry(c: Cursor, f: Frame) -> dict[str, Any]:
    pid = c.u16le("partition id")
    flag = c.u8("errorOrFlags")
    entry: dict[str, Any] = {"partition": pid, "error_or_flags": flag}
    name = C.CONSUME_FLAGS.get(flag)
    if name is None:
        entry["error"] = f"flags_{flag:#04x}"
        _set_error(f, flag, entry["error"])
        # Unknown layout after an unknown flag: nothing else in this header can be trusted.
        raise UnknownFlag(c.pos - 1, flag)
    if flag not in C.CONSUME_NOT_ERRORS:
        entry["error"] = name
        _set_error(f, flag, name)
    if flag in (C.CONSUME_OK, C.CONSUME_BOUNDARY):
        entry["base_seqnum"] = c.u64le("base seqnum")
    if flag in (C.CONSUME_OK, C.CONSUME_BOUNDARY, C.CONSUME_SPARSE):
        entry["high_watermark"] = c.u64le("high-water mark")
        entry["chunk_length"] = c.u32le("chunk length")
    if flag == C.CONSUME_SPARSE:
        entry["sparse"] = True
    if flag == C.CONSUME_BOUNDARY:
        entry["first_available_seqnum"] = c.u64le("first available seqnum")
    if flag == C.OTHER_LEADER:
        entry["leader"] = endpoint(c, "leader")
    return entry


class UnknownFlag(Exception):
    def __init__(self, offset: int, flag: int) -> None:
        super().__init__(f"unknown errorOrFlags {flag:#04x} at byte {offset}")
        self.offset = offset


def _entry_text(name: str, entry: dict[str, Any], chunk: Chunk | None) -> str:
    """The entry's part of the summary; `chunk`: what its bundles held (messages counted whether
    or not they were kept, see `Limits.max_messages`, bundles whether or not they are listed)."""
    pid = entry["partition"]
    flag = entry["error_or_flags"]
    if flag == C.CONSUME_BOUNDARY:
        return (
            f"{name}/{pid} boundary_check first available {entry.get('first_available_seqnum')}"
            f" hw {entry.get('high_watermark')}"
        )
    if "error" in entry:
        return f"{name}/{pid} {entry['error']}"
    text = f"{name}/{pid} "
    if chunk is not None and chunk.read_any:
        first, last = chunk.first_seq, chunk.last_seq
        text += plural(chunk.messages, "msg") + (f" seq {first}..{last}" if first is not None else "")
    else:
        text += "no data"
    text += f" hw {entry.get('high_watermark')}"
    if "partial_bundle" in entry:
        text += " +partial bundle"
    return text


# -- the others ----------------------------------------------------------------------------


def ping(c: Cursor, f: Frame, st: DecodeState) -> None:
    if c.left:
        f.fields["payload"] = c.rest()
        st.problems.append(
            ("malformed", f"Ping carries {len(f.fields['payload'])} bytes; TANK sends none", 5)
        )
    f.summary = ""  # the type says it all: a summary "Ping" would print "Ping  Ping"


def discover_partitions(c: Cursor, f: Frame, st: DecodeState) -> None:
    f.correlation_id = f.fields["request_id"] = c.u32le("request id")
    req = st.pair(f, (C.DISCOVER_PARTITIONS, f.correlation_id))
    asked: list[int] = []
    if req is not None and isinstance(req.context, dict):
        asked = list(req.context.get("partitions") or [])
    topic = f.fields["topic"] = str8(c, "topic")
    count = f.fields["count"] = c.u16le("partitions count")
    if count == 0:
        _set_error(f, C.UNKNOWN_TOPIC_CODE, "unknown_topic")
        f.summary = f"req {f.correlation_id} {topic} unknown_topic"
        return
    parts: list[dict[str, Any]] = []
    f.fields["partitions"] = parts
    limit = len(asked) if asked else count
    # TANK writes `count` = all partitions but loops over the enabled ones: stop when bytes end.
    while len(parts) < limit and c.left:
        i = len(parts)
        entry: dict[str, Any] = {"partition": asked[i] if asked else i}
        first = c.u64le("first available seqnum")
        hw = c.u64le("high-water mark")
        if first == C.NO_SEQ and hw == C.NO_SEQ:
            reason = c.u8("reason")
            entry["error_code"] = reason
            entry["error"] = C.DISCOVER_PARTITION_REASONS.get(reason, f"reason_{reason}")
            if reason == C.OTHER_LEADER:
                entry["leader"] = endpoint(c, "leader")
            _set_error(f, reason, entry["error"])
        else:
            entry["first_available_seqnum"] = first
            entry["high_watermark"] = hw
        parts.append(entry)
    items = [
        f"{topic}/{p['partition']} "
        + (p["error"] if "error" in p else f"{p['first_available_seqnum']}..{p['high_watermark']}")
        for p in parts
    ]
    f.summary = f"req {f.correlation_id} {plural(count, 'partition')}: " + join_items(items)
    _ok_unless_error(f)


def create_topic(c: Cursor, f: Frame, st: DecodeState) -> None:
    f.correlation_id = f.fields["request_id"] = c.u32le("request id")
    st.pair(f, (C.CREATE_TOPIC, f.correlation_id))
    topic = f.fields["topic"] = str8(c, "topic")
    code = c.u8("error")
    name = C.CREATE_TOPIC_ERRORS.get(code, f"error_{code}")
    f.fields.update(error_code=code, error=name)
    f.error_code, f.error = code, (name if code else None)
    f.summary = f"req {f.correlation_id} {topic} {name}"


def reload_conf(c: Cursor, f: Frame, st: DecodeState) -> None:
    f.correlation_id = f.fields["request_id"] = c.u32le("request id")
    st.pair(f, (C.RELOAD_CONF, f.correlation_id))
    topic = f.fields["topic"] = str8(c, "topic")
    pid = f.fields["partition"] = c.u16le("partition")
    code = c.u8("error")
    name = C.RELOAD_CONF_ERRORS.get(code, f"error_{code}")
    f.fields.update(error_code=code, error=name)
    f.error_code, f.error = code, (name if code else None)
    f.summary = f"req {f.correlation_id} {topic}/{pid} {name}"


def status(c: Cursor, f: Frame, st: DecodeState) -> None:
    fl = f.fields
    f.correlation_id = fl["request_id"] = c.u32le("request id")
    st.pair(f, (C.STATUS, f.correlation_id))
    fl["global_flags"] = c.u8("global flags")
    cluster = fl["cluster_aware"] = bool(c.u8("cluster aware"))
    fl["topics"] = c.u32le("topics")
    fl["partitions"] = c.u32le("partitions")
    if cluster:
        fl["cluster_flags"] = c.u8("cluster flags")
        fl["cluster_name"] = str8(c, "cluster name")
        fl["available_nodes"] = c.u32le("available nodes")
    if c.left:  # older brokers stop here
        fl["open_partitions"] = c.u32le("open partitions")
        fl["open_partitions_time"] = c.u32le("open partitions time")
        fl["startup_time"] = c.u32le("startup time")
        version = fl["tank_version"] = c.u32le("TANK version")
        fl["tank_release"] = f"{version // 100}.{version % 100}"
    f.summary = (
        f"req {f.correlation_id} {plural(fl['topics'], 'topic')} {plural(fl['partitions'], 'partition')}"
        + (f" TANK {fl['tank_release']}" if "tank_release" in fl else "")
    )


def discover_topics(c: Cursor, f: Frame, st: DecodeState) -> None:
    fl = f.fields
    f.correlation_id = fl["request_id"] = c.u32le("request id")
    st.pair(f, (C.DISCOVER_TOPICS, f.correlation_id))
    count = c.u32le("topic count")
    cluster = fl["cluster_aware"] = bool(c.u8("cluster aware"))
    fl["topics"] = topics = []
    for _ in range(count):
        t: dict[str, Any] = {"name": str8(c, "topic name")}
        t["enabled"] = bool(c.u8("enabled"))
        t["partitions"] = c.u16le("partitions")
        if cluster:
            t["replication_factor"] = c.u8("replication factor")
        topics.append(t)
    f.summary = f"req {f.correlation_id} {plural(count, 'topic')}: " + join_items(
        [f"{t['name']}({t['partitions']})" for t in topics]
    )


def discover_topology(c: Cursor, f: Frame, st: DecodeState) -> None:
    fl = f.fields
    f.correlation_id = fl["request_id"] = c.u32le("request id")
    st.pair(f, (C.DISCOVER_TOPOLOGY, f.correlation_id))
    count = c.u16le("node count")
    if count == 0xFFFF:
        fl["cluster"] = False
        f.summary = f"req {f.correlation_id} not a cluster"
        return
    fl["cluster"] = True
    fl["cluster_name"] = str8(c, "cluster name")
    fl["nodes"] = nodes = []
    for _ in range(count):
        n: dict[str, Any] = {"id": c.u16le("node id")}
        flags = n["flags"] = c.u8("node flags")
        n["available"] = bool(flags & 2)
        n["blocked"] = bool(flags & 4)
        if flags & 1:
            n["endpoint"] = endpoint(c)
        n["replica_for"] = c.u16le("replica-for count")
        nodes.append(n)
    f.summary = f"req {f.correlation_id} cluster {fl['cluster_name']} {plural(count, 'node')}"


RESPONSES: dict[int, Decoder] = {
    C.PRODUCE: produce,
    C.CONSUME: consume,
    C.PING: ping,
    C.DISCOVER_PARTITIONS: discover_partitions,
    C.CREATE_TOPIC: create_topic,
    C.RELOAD_CONF: reload_conf,
    C.CONSUME_PEER: consume_peer,
    C.STATUS: status,
    C.DISCOVER_TOPICS: discover_topics,
    C.DISCOVER_TOPOLOGY: discover_topology,
}
