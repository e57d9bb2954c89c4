"""Decoders for what clients (and replicating brokers) send to a TANK broker.

Each decoder reads the payload after the 5-byte header with a bounds-checked
cursor, fills `frame.fields`, `frame.summary`, `frame.correlation_id` as soon as
it is known (so a cut frame still pairs), and keeps in `frame.context` what the
response will need.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wiredump.dissect.model import PRODUCE, Frame
from wiredump.dissect.protocols.tank import constants as C
from wiredump.dissect.protocols.tank.bundles import decode_bundle
from wiredump.dissect.protocols.tank.common import (
    ConsumeContext,
    DecodeState,
    ProduceContext,
    add_problems,
    bundle_fields,
    bundle_messages,
    join_items,
    plural,
    str8,
)
from wiredump.dissect.wire import Cursor

Decoder = Callable[[Cursor, Frame, DecodeState], None]


WAIT_FOREVER = 0xFFFF_FFFF
"""Clients ask for a wait of 2**32-1 ms (49.7 days: until data comes) or more to mean "no limit"."""


def wait_text(ms: int) -> str:
    """`250ms`, or `forever` for the no-limit values (a summary saying `4294967295ms` helps nobody)."""
    return "forever" if ms >= WAIT_FOREVER else f"{ms}ms"


def produce(c: Cursor, f: Frame, st: DecodeState) -> None:
    """Produce (0x01) and ProduceWithSeqnum (0x05): one bundle per (topic, partition)."""
    with_seqnum = f.type_code == C.PRODUCE_WITH_SEQNUM
    fields = f.fields
    f.version = fields["client_version"] = c.u16le("client version")
    f.correlation_id = fields["request_id"] = c.u32le("request id")
    ctx = ProduceContext(f.type_code, [])
    f.context = ctx
    fields["client_id"] = str8(c, "client id")
    fields["required_acks"] = c.u8("required acks")
    fields["ack_timeout_ms"] = c.u32le("ack timeout")
    ntopics = c.u8("topics count")
    fields["topics"] = topics = []
    items: list[str] = []
    for _ in range(ntopics):
        name = str8(c, "topic name")
        nparts = c.u8("partitions count")
        parts: list[dict[str, Any]] = []
        topics.append({"name": name, "partitions": parts})
        pids: list[int] = []
        ctx.topics.append((name, pids))
        for _ in range(nparts):
            pid = c.u16le("partition id")
            pids.append(pid)
            entry: dict[str, Any] = {"partition": pid}
            parts.append(entry)
            blen = entry["bundle_length"] = c.uvarint("bundle length", 5)
            first_seq = None
            if with_seqnum:
                first_seq = entry["first_seqnum"] = c.u64le("first message seqnum")
            c.need(blen, "bundle")
            bundle = decode_bundle(c.buf, c.pos, c.pos + blen, first_seq, st.limits, st.keep)
            st.count(bundle)
            c.pos += blen
            if st.batch_room:
                entry["bundle"] = bundle_fields(bundle)
            st.batches += 1
            add_problems(st, bundle)
            bundle_messages(f, bundle, PRODUCE, name, pid, 0)
            n = bundle.parsed
            seqs = ""
            if n and bundle.first_seq is not None:
                seqs = f" seq {bundle.first_seq}..{bundle.last_seq}"
            items.append(
                f"{name}/{pid} {plural(n, 'msg')}{seqs}" + (" snappy" if bundle.codec == "snappy" else "")
            )
    f.summary = f"req {f.correlation_id} " + join_items(items)


def _seq_text(seq: int) -> str:
    if seq == C.SEQ_FIRST:
        return "first"
    if seq == C.SEQ_TAIL:
        return "tail"
    return str(seq)


def consume(c: Cursor, f: Frame, st: DecodeState) -> None:
    """Consume (0x02): per (topic, partition) the sequence number to start from and a fetch size."""
    fields = f.fields
    version = fields["client_version"] = c.u16le("client version")
    f.version = version
    f.correlation_id = fields["request_id"] = c.u32le("request id")
    ctx = ConsumeContext({})
    f.context = ctx
    fields["client_id"] = str8(c, "client id")
    max_wait = fields["max_wait_ms"] = c.u64le("max wait")
    fields["min_bytes"] = c.u32le("min bytes")
    if version >= 3:
        flags = fields["op_flags"] = c.u8("op flags")
        fields["prefer_local_node"] = bool(flags & 1)
    _consume_topics(c, fields, ctx, wide=False)
    items = [f"{t}/{p}@{_seq_text(s)}" for (t, p), s in ctx.requested.items()]
    f.summary = f"req {f.correlation_id} " + join_items(items) + f" max_wait {wait_text(max_wait)}"


def _consume_topics(c: Cursor, fields: dict[str, Any], ctx: ConsumeContext, wide: bool) -> None:
    ntopics = c.u16le("topics count") if wide else c.u8("topics count")
    fields["topics"] = topics = []
    for _ in range(ntopics):
        name = str8(c, "topic name")
        nparts = c.u16le("partitions count") if wide else c.u8("partitions count")
        parts: list[dict[str, Any]] = []
        topics.append({"name": name, "partitions": parts})
        for _ in range(nparts):
            pid = c.u16le("partition id")
            seq = c.u64le("sequence number")
            fetch = c.u32le("fetch size")
            entry: dict[str, Any] = {"partition": pid, "seqnum": seq, "fetch_size": fetch}
            if seq in (C.SEQ_FIRST, C.SEQ_TAIL):
                entry["from"] = "first_available" if seq == C.SEQ_FIRST else "tail"
            parts.append(entry)
            ctx.requested[(name, pid)] = seq


def consume_peer(c: Cursor, f: Frame, st: DecodeState) -> None:
    """ConsumePeer (0x09, broker to broker): like Consume with u16 counts and a replica id, no request id."""
    fields = f.fields
    fields["replica_id"] = c.u16le("replica id")
    max_wait = fields["max_wait_ms"] = c.u64le("max wait")
    fields["min_bytes"] = c.u32le("min bytes")
    ctx = ConsumeContext({})
    f.context = ctx
    _consume_topics(c, fields, ctx, wide=True)
    items = [f"{t}/{p}@{_seq_text(s)}" for (t, p), s in ctx.requested.items()]
    f.summary = f"replica {fields['replica_id']} " + join_items(items) + f" max_wait {wait_text(max_wait)}"


def ping(c: Cursor, f: Frame, st: DecodeState) -> None:
    """Ping (0x03): the broker's greeting; no payload, no answer."""
    if c.left:
        f.fields["payload"] = c.rest()
        st.problems.append(
            ("malformed", f"Ping carries {len(f.fields['payload'])} bytes; TANK sends none", 5)
        )
    f.summary = ""  # the type says it all: a summary "Ping" would print "Ping  Ping"


def reg_replica(c: Cursor, f: Frame, st: DecodeState) -> None:
    """RegReplica (0x04): obsolete (the docs' ReplicaIDReq); the current broker closes the connection."""
    f.fields["replica_id"] = c.u16le("replica id")
    f.fields["obsolete"] = True
    f.summary = f"replica {f.fields['replica_id']} (obsolete message)"


def discover_partitions(c: Cursor, f: Frame, st: DecodeState) -> None:
    f.correlation_id = f.fields["request_id"] = c.u32le("request id")
    topic = f.fields["topic"] = str8(c, "topic")
    ids: list[int] = []
    while c.left >= 2:
        ids.append(c.u16le("partition id"))
    if c.left:
        c.u16le("partition id")  # raises: one stray byte
    if ids:
        f.fields["partitions"] = ids
    f.context = {"topic": topic, "partitions": ids}
    f.summary = f"req {f.correlation_id} {topic}" + (f" partitions {ids}" if ids else "")


def create_topic(c: Cursor, f: Frame, st: DecodeState) -> None:
    f.correlation_id = f.fields["request_id"] = c.u32le("request id")
    topic = f.fields["topic"] = str8(c, "topic")
    n = f.fields["partitions"] = c.u16le("partitions")
    clen = c.uvarint("config length", 5)
    f.fields["config"] = c.take(clen, "config").decode("utf-8", "replace")
    f.summary = f"req {f.correlation_id} {topic} {plural(n, 'partition')}" + (
        f" config {clen} bytes" if clen else ""
    )


def reload_conf(c: Cursor, f: Frame, st: DecodeState) -> None:
    f.correlation_id = f.fields["request_id"] = c.u32le("request id")
    topic = f.fields["topic"] = str8(c, "topic")
    pid = f.fields["partition"] = c.u16le("partition")
    f.summary = f"req {f.correlation_id} {topic}/{pid}"


def status(c: Cursor, f: Frame, st: DecodeState) -> None:
    f.correlation_id = f.fields["request_id"] = c.u32le("request id")
    f.summary = f"req {f.correlation_id}"


def discover_with_flags(c: Cursor, f: Frame, st: DecodeState) -> None:
    """DiscoverTopics (0x0b) and DiscoverTopology (0x0c): request id and a flags byte (0)."""
    f.correlation_id = f.fields["request_id"] = c.u32le("request id")
    if c.left:
        f.fields["flags"] = c.u8("flags")
    f.summary = f"req {f.correlation_id}"


REQUESTS: dict[int, Decoder] = {
    C.PRODUCE: produce,
    C.CONSUME: consume,
    C.PING: ping,
    C.REG_REPLICA: reg_replica,
    C.PRODUCE_WITH_SEQNUM: produce,
    C.DISCOVER_PARTITIONS: discover_partitions,
    C.CREATE_TOPIC: create_topic,
    C.RELOAD_CONF: reload_conf,
    C.CONSUME_PEER: consume_peer,
    C.STATUS: status,
    C.DISCOVER_TOPICS: discover_with_flags,
    C.DISCOVER_TOPOLOGY: discover_with_flags,
}
