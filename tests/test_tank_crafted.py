"""TANK: crafted frames for what the real captures lack.

The frames are built here from the layouts in `shared/reference/tank/WIRE.md` (and
the sparse-bundle writer rules of TANK's `produce_with_seqnum`: first and last
sequence numbers in the header, `delta = seq - prev - 1` for middle messages, flag
0x04 instead of a zero delta), so every expected value below is the input we chose,
not something read back from the decoder. Frames go through the real framing
engine (`ConnectionFramer`) exactly as the pipeline drives it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import cramjam
from conversation import Out, Stream

from wiredump.dissect.limits import Limits

C, S = "client", "server"
TS0 = 1_700_000_000_000_000

# -- a small TANK writer ------------------------------------------------------------------------


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def s8(s: str | bytes) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return bytes([len(b)]) + b


def frame(msg_id: int, payload: bytes) -> bytes:
    return bytes([msg_id]) + struct.pack("<I", len(payload)) + payload


@dataclass
class M:
    value: bytes
    ts: int = 1_700_000_000_123
    key: bytes | None = None
    seq: int | None = None


def bundle(msgs: list[M], sparse: bool = False, snappy: bool = False) -> bytes:
    n = len(msgs)
    flags = (1 if snappy else 0) | (0x40 if sparse else 0)
    head = bytes([flags | (n << 2)]) if n < 16 else bytes([flags]) + varint(n)
    if sparse:
        head += struct.pack("<Q", msgs[0].seq)
        if n != 1:
            head += varint(msgs[-1].seq - msgs[0].seq - 1)
    body = bytearray()
    for i, m in enumerate(msgs):
        mflags = 0x01 if m.key is not None else 0
        same_ts = i > 0 and m.ts == msgs[i - 1].ts
        if same_ts:
            mflags |= 0x02
        delta = 0
        if sparse and 0 < i < n - 1:
            delta = m.seq - msgs[i - 1].seq - 1
            if delta == 0:
                mflags |= 0x04
        body.append(mflags)
        if delta:
            body += varint(delta)
        if not same_ts:
            body += struct.pack("<Q", m.ts)
        if m.key is not None:
            body += s8(m.key)
        body += varint(len(m.value)) + m.value
    if snappy:
        body = bytearray(bytes(cramjam.snappy.compress_raw(bytes(body))))
    return head + bytes(body)


def produce_req(
    rid: int, topics: list[tuple[str, list[tuple[int, bytes]]]], with_seqnum: dict | None = None
) -> bytes:
    """`topics`: [(name, [(partition, bundle bytes)])]; `with_seqnum` {(topic, p): first seq} → id 5."""
    p = struct.pack("<HI", 2, rid) + s8("c++") + bytes([0]) + struct.pack("<I", 0) + bytes([len(topics)])
    for name, parts in topics:
        p += s8(name) + bytes([len(parts)])
        for pid, b in parts:
            p += struct.pack("<H", pid) + varint(len(b))
            if with_seqnum is not None:
                p += struct.pack("<Q", with_seqnum[(name, pid)])
            p += b
    return frame(5 if with_seqnum is not None else 1, p)


def consume_req(rid: int, topics: list[tuple[str, list[tuple[int, int]]]], max_wait: int = 0) -> bytes:
    p = struct.pack("<HI", 2, rid) + s8("") + struct.pack("<QI", max_wait, 0) + bytes([len(topics)])
    for name, parts in topics:
        p += s8(name) + bytes([len(parts)])
        for pid, seq in parts:
            p += struct.pack("<HQI", pid, seq, 1 << 20)
    return frame(2, p)


def chunk(*bundles: bytes) -> bytes:
    return b"".join(varint(len(b)) + b for b in bundles)


def consume_resp(rid: int, topics: list[tuple[str, list[bytes] | None]], chunks: list[bytes]) -> bytes:
    """`topics`: [(name, [partition entry bytes]) or (name, None) for unknown]."""
    hdr = struct.pack("<I", rid) + bytes([len(topics)])
    for name, entries in topics:
        if entries is None:
            hdr += s8(name) + bytes([1]) + b"\xff\xff"
        else:
            hdr += s8(name) + bytes([len(entries)]) + b"".join(entries)
    return frame(2, struct.pack("<I", len(hdr)) + hdr + b"".join(chunks))


def entry(pid: int, flag: int, *rest: bytes) -> bytes:
    return struct.pack("<HB", pid, flag) + b"".join(rest)


def q(n: int) -> bytes:
    return struct.pack("<Q", n)


def u32(n: int) -> bytes:
    return struct.pack("<I", n)


PING = frame(3, b"")

# -- the harness --------------------------------------------------------------------------------


def run(steps: list[tuple[str, bytes]] | list[tuple[str, bytes, int]], limits: Limits | None = None) -> Out:
    """The events of (role, bytes[, ts_us]) steps sent to port 11011 as packets 1, 2, 3…"""
    conn = Stream(11011, limits)
    for step in steps:
        conn.feed(step[0], step[1], 0, step[2] - TS0 if len(step) > 2 else None)  # type: ignore[misc]
    return conn.finish()


def test_produce_with_seqnum_sparse_bundles_from_several_producers() -> None:
    # Mirroring: messages that several producers wrote to the source, with gaps in numbering.
    p0 = [
        M(b"a", seq=100, key=b"k1"),
        M(b"b", seq=101),
        M(b"c", seq=105, ts=1_700_000_000_200),
        M(b"d", seq=106, ts=1_700_000_000_200),
        M(b"e", seq=200, key=b"k5", ts=1_700_000_000_300),
    ]
    p1 = [M(b"only", seq=7)]
    two = [M(b"x", seq=1), M(b"y", seq=3)]
    many = [M(b"v%03d" % i, seq=1000 + 2 * i, key=b"key") for i in range(20)]  # varint count, snappy
    req = produce_req(
        9,
        [
            ("mirror", [(0, bundle(p0, sparse=True)), (1, bundle(p1, sparse=True))]),
            ("other", [(3, bundle(two, sparse=True)), (4, bundle(many, sparse=True, snappy=True))]),
        ],
        with_seqnum={("mirror", 0): 100, ("mirror", 1): 7, ("other", 3): 1, ("other", 4): 1000},
    )
    resp = frame(1, u32(9) + bytes([0, 0]) + bytes([0, 0]))
    out = run([(S, PING), (C, req), (S, resp)])
    assert out.all_anomalies() == []
    (rq,) = out.of("ProduceWithSeqnum")
    assert rq.kind == "request" and rq.type_code == 5 and rq.correlation_id == 9
    got = [(m.topic, m.partition, m.offset, m.key, m.value, m.timestamp_ms) for m in rq.messages]
    want = [("mirror", 0, m.seq, m.key, m.value, m.ts) for m in p0]
    want += [("mirror", 1, m.seq, m.key, m.value, m.ts) for m in p1]
    want += [("other", 3, m.seq, m.key, m.value, m.ts) for m in two]
    want += [("other", 4, m.seq, m.key, m.value, m.ts) for m in many]
    assert got == want
    assert all(m.direction == "produce" for m in rq.messages)
    assert [m.compression for m in rq.messages if m.partition == 4] == ["snappy"] * 20
    part = rq.fields["topics"][0]["partitions"][0]
    assert part["first_seqnum"] == 100
    assert part["bundle"]["sparse"] is True
    assert (part["bundle"]["first_seqnum"], part["bundle"]["last_seqnum"]) == (100, 200)
    # ProduceWithSeqnum is answered with msgId 1, paired by request id.
    (rs,) = out.of("Produce", "response")
    assert rs.type_code == 1 and rs.fields["answers"] == "ProduceWithSeqnum"
    assert rs.peer_packet == 2 and rq.peer_packet == 3 and rs.latency_us == 1000
    assert rs.error_code == 0
    assert [(t["name"], [p["partition"] for p in t["partitions"]]) for t in rs.fields["topics"]] == [
        ("mirror", [0, 1]),
        ("other", [3, 4]),
    ]
    assert [e.status for e in out.exchanges] == ["answered"]


def test_consume_chunk_mixing_sparse_and_regular_bundles() -> None:
    # The first bundle is sparse (flag 0xfe: no base seqnum in the entry); a regular
    # producer's bundle continues at last + 1; another sparse one jumps ahead.
    b1 = bundle([M(b"s1", seq=50), M(b"s2", seq=52), M(b"s3", seq=53)], sparse=True)
    b2 = bundle([M(b"r1"), M(b"r2")])
    b3 = bundle([M(b"t1", seq=60), M(b"t2", seq=70)], sparse=True)
    b4 = bundle([M(b"r3", key=b"K")])
    ch = chunk(b1, b2, b3, b4)
    resp = consume_resp(4, [("mirror", [entry(0, 0xFE, q(71), u32(len(ch)))])], [ch])
    out = run([(S, PING), (C, consume_req(4, [("mirror", [(0, 50)])])), (S, resp)])
    assert out.all_anomalies() == []
    (rs,) = out.of("Consume", "response")
    assert [(m.offset, m.value) for m in rs.messages] == [
        (50, b"s1"),
        (52, b"s2"),
        (53, b"s3"),
        (54, b"r1"),
        (55, b"r2"),
        (60, b"t1"),
        (70, b"t2"),
        (71, b"r3"),
    ]
    assert rs.messages[-1].key == b"K"
    assert all(m.direction == "deliver" and m.topic == "mirror" and m.partition == 0 for m in rs.messages)
    e = rs.fields["topics"][0]["partitions"][0]
    assert e["sparse"] is True and e["high_watermark"] == 71 and "base_seqnum" not in e


def test_sparse_single_message_and_prev_plus_one_flags() -> None:
    b = bundle([M(b"a", seq=5), M(b"b", seq=6), M(b"c", seq=7), M(b"d", seq=9), M(b"e", seq=10)], sparse=True)
    assert b[0] == 0x40 | (5 << 2)
    req = produce_req(1, [("t", [(0, b)])])  # plain Produce may carry a sparse bundle too
    out = run([(C, req)])
    assert [m.offset for m in out.frames[0].messages] == [5, 6, 7, 9, 10]


# -- chunks that end in a partial bundle -------------------------------------------------------


def test_chunk_ending_in_partial_bundle_is_normal() -> None:
    full1 = bundle([M(b"m10"), M(b"m11"), M(b"m12")])
    full2 = bundle([M(b"m13", key=b"k"), M(b"m14")])
    cut = bundle([M(b"x" * 30), M(b"y" * 30)])
    partial = varint(len(cut)) + cut[:12]  # the fetch size ended 12 bytes into it
    ch0 = chunk(full1, full2) + partial
    ch1 = chunk(bundle([M(b"p1-0")]))
    resp = consume_resp(
        2,
        [("ev", [entry(0, 0, q(10), q(99), u32(len(ch0))), entry(1, 0, q(0), q(0), u32(len(ch1)))])],
        [ch0, ch1],
    )
    out = run([(C, consume_req(2, [("ev", [(0, 10), (1, 0)])])), (S, resp)])
    assert out.all_anomalies() == []
    (rs,) = out.of("Consume", "response")
    assert rs.status == "ok"
    assert [(m.partition, m.offset, m.value) for m in rs.messages] == [
        (0, 10, b"m10"),
        (0, 11, b"m11"),
        (0, 12, b"m12"),
        (0, 13, b"m13"),
        (0, 14, b"m14"),
        (1, 0, b"p1-0"),
    ]
    e0 = rs.fields["topics"][0]["partitions"][0]
    assert e0["partial_bundle"]["declared_length"] == len(cut)
    assert e0["partial_bundle"]["available"] == 12
    assert len(e0["bundles"]) == 2
    assert "partial" in rs.summary


def test_chunk_cut_inside_the_bundle_length_varint() -> None:
    big = bundle([M(b"z" * 300)])
    assert len(big) >= 128
    ch = chunk(bundle([M(b"a")])) + varint(len(big))[:1]
    resp = consume_resp(3, [("ev", [entry(0, 0, q(1), q(5), u32(len(ch)))])], [ch])
    out = run([(C, consume_req(3, [("ev", [(0, 1)])])), (S, resp)])
    assert out.all_anomalies() == []
    rs = out.of("Consume", "response")[0]
    assert [m.offset for m in rs.messages] == [1]
    assert rs.fields["topics"][0]["partitions"][0]["partial_bundle"]["declared_length"] is None


def test_messages_before_the_requested_seqnum_are_marked() -> None:
    ch = chunk(bundle([M(b"a"), M(b"b"), M(b"c")]))
    resp = consume_resp(1, [("ev", [entry(0, 0, q(20), q(22), u32(len(ch)))])], [ch])
    out = run([(C, consume_req(1, [("ev", [(0, 21)])])), (S, resp)])
    flags = [
        (m.offset, bool(m.detail.get("before_requested"))) for m in out.of("Consume", "response")[0].messages
    ]
    assert flags == [(20, True), (21, False), (22, False)]


# -- errors -------------------------------------------------------------------------------------


def test_produce_response_errors_follow_the_request_list() -> None:
    b = bundle([M(b"v")])
    req = produce_req(
        7, [("gone", [(0, b), (1, b), (2, b)]), ("ev", [(0, b), (1, b), (2, b), (3, b)]), ("ro", [(0, b)])]
    )
    # gone: unknown topic (one byte for all three); ev: ok, other leader (+ep), unknown
    # partition, no leader; ro: read-only (topic level).
    ep = bytes([10, 1, 2, 3]) + struct.pack("<H", 11012)
    resp = frame(1, u32(7) + bytes([0xFF]) + bytes([0, 0xFC]) + ep + bytes([1, 0xFD]) + bytes([0xFE]))
    out = run([(C, req), (S, resp)])
    assert out.all_anomalies() == []
    (rs,) = out.of("Produce", "response")
    parts = [
        (t["name"], p["partition"], p["error_code"], p["error"])
        for t in rs.fields["topics"]
        for p in t["partitions"]
    ]
    assert parts == [
        ("gone", 0, 0xFF, "unknown_topic"),
        ("gone", 1, 0xFF, "unknown_topic"),
        ("gone", 2, 0xFF, "unknown_topic"),
        ("ev", 0, 0, "ok"),
        ("ev", 1, 0xFC, "other_leader"),
        ("ev", 2, 1, "unknown_partition"),
        ("ev", 3, 0xFD, "no_leader"),
        ("ro", 0, 0xFE, "read_only"),
    ]
    assert rs.fields["topics"][1]["partitions"][1]["leader"] == {"address": "10.1.2.3", "port": 11012}
    assert (rs.error_code, rs.error) == (0xFF, "unknown_topic")
    assert out.exchanges[0].error_code == 0xFF


def test_consume_response_errors_named() -> None:
    ep = bytes([192, 168, 0, 9]) + struct.pack("<H", 11011)
    resp = consume_resp(
        5,
        [
            ("nosuch", None),
            (
                "ev",
                [
                    entry(0, 0x01, q(0), q(500), u32(0), q(120)),
                    entry(1, 0xFF),
                    entry(2, 0xFD),
                    entry(3, 0xFC, ep),
                    entry(4, 0xFB),
                ],
            ),
        ],
        [],
    )
    req = consume_req(5, [("nosuch", [(0, 0)]), ("ev", [(0, 3), (1, 0), (2, 0), (3, 0), (4, 0)])])
    out = run([(C, req), (S, resp)])
    assert out.all_anomalies() == []
    (rs,) = out.of("Consume", "response")
    assert rs.fields["topics"][0]["unknown_topic"] is True
    assert (rs.error_code, rs.error) == (0xFFFF, "unknown_topic")
    ev = rs.fields["topics"][1]["partitions"]
    assert [(p["partition"], p["error_or_flags"], p.get("error")) for p in ev] == [
        (0, 1, "boundary_check"),
        (1, 0xFF, "unknown_partition"),
        (2, 0xFD, "no_leader"),
        (3, 0xFC, "other_leader"),
        (4, 0xFB, "system_fault"),
    ]
    assert ev[0]["first_available_seqnum"] == 120 and ev[0]["high_watermark"] == 500
    assert ev[3]["leader"] == {"address": "192.168.0.9", "port": 11011}
    assert "boundary_check first available 120" in rs.summary


def test_discover_partitions_requested_ids_and_reasons() -> None:
    req = frame(6, u32(3) + s8("ev") + struct.pack("<HHH", 4, 2, 9))
    ep = bytes([127, 0, 0, 2]) + struct.pack("<H", 11011)
    body = (
        q(1)
        + q(40)
        + q(2**64 - 1)
        + q(2**64 - 1)
        + bytes([0xFC])
        + ep
        + q(2**64 - 1)
        + q(2**64 - 1)
        + bytes([0xFB])
    )
    resp = frame(6, u32(3) + s8("ev") + struct.pack("<H", 10) + body)
    out = run([(C, req), (S, resp)])
    assert out.all_anomalies() == []
    rs = out.of("DiscoverPartitions", "response")[0]
    assert [(p["partition"], p.get("error")) for p in rs.fields["partitions"]] == [
        (4, None),
        (2, "other_leader"),
        (9, "system_fault"),
    ]
    assert rs.fields["partitions"][0]["first_available_seqnum"] == 1
    assert rs.fields["partitions"][1]["leader"] == {"address": "127.0.0.2", "port": 11011}


def test_create_topic_and_reload_conf_codes() -> None:
    out = run(
        [
            (C, frame(7, u32(1) + s8("t") + struct.pack("<H", 0) + varint(9) + b"retention")),
            (S, frame(7, u32(1) + s8("t") + bytes([10]))),
            (C, frame(8, u32(2) + s8("t") + struct.pack("<H", 3))),
            (S, frame(8, u32(2) + s8("t") + struct.pack("<H", 3) + bytes([11]))),
        ]
    )
    assert out.all_anomalies() == []
    ct_req, ct = out.of("CreateTopic")
    assert ct_req.fields["config"] == "retention" and ct_req.fields["partitions"] == 0
    assert (ct.error_code, ct.error) == (10, "invalid_request")
    rc = out.of("ReloadConf", "response")[0]
    assert (rc.error_code, rc.error, rc.fields["partition"]) == (11, "unknown_topic", 3)
    assert [e.status for e in out.exchanges] == ["answered", "answered"]


# -- the other message types ---------------------------------------------------------------------


def test_status_topics_topology_in_cluster_mode() -> None:
    status = u32(1) + bytes([0, 1]) + u32(3) + u32(12) + bytes([5]) + s8("prod") + u32(2)
    status += u32(12) + u32(7) + u32(1_700_000_000) + u32(400)
    topics = u32(2) + u32(2) + bytes([1]) + s8("a") + bytes([1]) + struct.pack("<H", 8) + bytes([3])
    topics += s8("b") + bytes([0]) + struct.pack("<H", 1) + bytes([1])
    ep = bytes([10, 0, 0, 1]) + struct.pack("<H", 11011)
    topo = u32(3) + struct.pack("<H", 2) + s8("prod")
    topo += struct.pack("<HB", 1, 0b011) + ep + struct.pack("<H", 4)
    topo += struct.pack("<HB", 2, 0b100) + struct.pack("<H", 0)
    out = run(
        [
            (C, frame(10, u32(1))),
            (C, frame(11, u32(2) + b"\x00")),
            (C, frame(12, u32(3) + b"\x00")),
            (S, frame(10, status)),
            (S, frame(11, topics)),
            (S, frame(12, topo)),
        ]
    )
    assert out.all_anomalies() == []
    st = out.of("Status", "response")[0].fields
    assert st["cluster_aware"] is True and st["cluster_name"] == "prod" and st["available_nodes"] == 2
    assert (st["topics"], st["partitions"], st["tank_version"], st["tank_release"]) == (3, 12, 400, "4.0")
    dt = out.of("DiscoverTopics", "response")[0].fields
    assert dt["topics"] == [
        {"name": "a", "enabled": True, "partitions": 8, "replication_factor": 3},
        {"name": "b", "enabled": False, "partitions": 1, "replication_factor": 1},
    ]
    tp = out.of("DiscoverTopology", "response")[0].fields
    assert tp["cluster_name"] == "prod"
    assert tp["nodes"][0]["endpoint"] == {"address": "10.0.0.1", "port": 11011}
    assert tp["nodes"][0]["available"] and not tp["nodes"][0]["blocked"]
    assert "endpoint" not in tp["nodes"][1] and tp["nodes"][1]["blocked"]
    assert [e.status for e in out.exchanges] == ["answered"] * 3


def test_consume_peer_and_reg_replica() -> None:
    req = frame(
        9,
        struct.pack("<HQIH", 2, 500, 1, 1)
        + s8("ev")
        + struct.pack("<H", 1)
        + struct.pack("<HQI", 0, 8, 4096),
    )
    ch = chunk(bundle([M(b"r8"), M(b"r9")]))
    hdr = struct.pack("<H", 1) + s8("ev") + struct.pack("<H", 1) + entry(0, 0, q(8), q(9), u32(len(ch)))
    resp = frame(9, u32(len(hdr)) + hdr + ch)
    out = run([(C, frame(4, struct.pack("<H", 2))), (C, req), (S, resp)])
    assert out.all_anomalies() == []
    reg, creq, cresp = out.frames
    assert reg.type == "RegReplica" and reg.fields["replica_id"] == 2
    assert creq.fields["replica_id"] == 2 and creq.fields["topics"][0]["partitions"][0]["seqnum"] == 8
    assert [(m.offset, m.value) for m in cresp.messages] == [(8, b"r8"), (9, b"r9")]
    assert cresp.peer_packet == 2
    assert sorted(e.status for e in out.exchanges) == ["answered", "no_response_expected"]


# -- correlation ----------------------------------------------------------------------------------


def test_long_poll_consume_answered_later_and_out_of_order() -> None:
    tail = consume_req(1, [("ev", [(0, 2**64 - 1)])], max_wait=10_000)
    ch = chunk(bundle([M(b"late")]))
    late = consume_resp(1, [("ev", [entry(0, 0, q(6), q(6), u32(len(ch)))])], [ch])
    steps = [
        (S, PING, TS0),
        (C, tail, TS0 + 100),
        (C, produce_req(2, [("ev", [(0, bundle([M(b"late")]))])]), TS0 + 200),
        (S, frame(1, u32(2) + b"\x00"), TS0 + 300),
        (S, late, TS0 + 5_000_100),
    ]
    out = run(steps)
    assert out.all_anomalies() == []
    ping = out.of("Ping")[0]
    assert ping.kind == "event" and ping.peer_packet is None
    cq, cr = out.of("Consume")
    assert (cq.peer_packet, cr.peer_packet, cr.latency_us) == (5, 2, 5_000_000)
    pr = out.of("Produce", "response")[0]
    assert (pr.peer_packet, pr.latency_us) == (3, 100)
    assert sorted((e.type, e.status) for e in out.exchanges) == [
        ("Consume", "answered"),
        ("Produce", "answered"),
    ]
    assert cq.fields["topics"][0]["partitions"][0]["from"] == "tail"


def test_same_request_id_for_different_types_pairs_by_type() -> None:
    out = run(
        [
            (C, frame(10, u32(1))),
            (C, frame(12, u32(1) + b"\x00")),
            (S, frame(12, u32(1) + b"\xff\xff")),
            (S, frame(10, u32(1) + bytes([0, 0]) + u32(0) + u32(0))),
        ]
    )
    assert out.all_anomalies() == []
    assert [(f.type, f.peer_packet) for f in out.frames] == [
        ("Status", 4),
        ("DiscoverTopology", 3),
        ("DiscoverTopology", 2),
        ("Status", 1),
    ]


def test_produce_response_without_its_request() -> None:
    out = run([(S, frame(1, u32(40) + bytes([0, 0xFC, 1, 2, 3, 4, 0x0B, 0x2B, 1])))])
    (rs,) = out.frames
    assert rs.status == "ok"
    assert [e["error"] for e in rs.fields["errors"]] == ["ok", "other_leader", "unknown_partition"]
    assert rs.fields["errors"][1]["leader"] == {"address": "1.2.3.4", "port": 11019}
    assert [e.status for e in out.exchanges] == ["no_request"]


# -- bad input ------------------------------------------------------------------------------------


def test_truncated_request_keeps_what_it_read() -> None:
    req = produce_req(3, [("ev", [(0, bundle([M(b"v" * 50)]))])])
    out = run([(S, PING), (C, req[:40])])
    (f,) = out.of("Produce")
    assert f.status == "truncated" and f.correlation_id == 3
    assert any(a.kind == "truncated" for a in f.anomalies)
    assert f.messages == []
    assert [e.status for e in out.exchanges] == ["unanswered"]


def test_oversize_frame_reported_then_resync() -> None:
    huge = bytes([1]) + struct.pack("<I", 300 * 1024 * 1024)
    good = consume_req(1, [("ev", [(0, 0)])])
    first = frame(10, u32(1))  # once a direction is in step, lengths are trusted up to the maximum
    out = run([(S, PING), (C, first + huge + good)])
    kinds = [a.kind for a in out.anomalies]
    assert "oversize_frame" in kinds and "resync" in kinds
    (cq,) = out.of("Consume")
    assert cq.status == "ok" and cq.correlation_id == 1


def test_mid_stream_start_does_not_trust_a_garbage_length() -> None:
    # A capture that starts inside a frame: a byte that looks like a known id followed by
    # a large length must not make the engine wait for megabytes.
    tail_of_something = b"\x01\x00\x00\x30\x00" + b"payload bytes of a message"
    good = consume_req(4, [("ev", [(0, 0)])])
    out = run([(C, tail_of_something + good)])
    assert [a.kind for a in out.anomalies] == ["resync"]
    assert [(f.type, f.correlation_id) for f in out.frames] == [("Consume", 4)]


def test_unknown_message_id_framed_and_framing_continues() -> None:
    out = run([(S, PING), (S, frame(0x20, b"abc")), (S, PING)])
    unk = [f for f in out.frames if f.status == "unknown_type"]
    assert len(unk) == 1 and unk[0].type_code == 0x20 and unk[0].length == 8
    assert [a.kind for a in unk[0].anomalies] == ["unknown_type"]
    assert len(out.of("Ping")) == 2


def test_garbage_between_frames_resyncs_on_a_plausible_header() -> None:
    good = consume_req(7, [("ev", [(0, 0)])])
    out = run([(C, b"\x00\xff\x13\x37garbage!" + good + frame(10, u32(8)))])
    assert [a.kind for a in out.anomalies] == ["resync"]
    assert [(f.type, f.correlation_id) for f in out.frames] == [("Consume", 7), ("Status", 8)]


def test_short_and_overlong_payloads_are_malformed() -> None:
    out = run([(C, frame(10, u32(9))), (C, frame(10, u32(1) + b"\x00\x00")), (C, frame(7, u32(2) + s8("t")))])
    _, status, create = out.frames
    assert status.status == "malformed" and "2 bytes left" in status.anomalies[0].detail
    assert create.status == "malformed" and create.correlation_id == 2


def test_bundle_count_mismatch_and_unknown_codec() -> None:
    good = bundle([M(b"a"), M(b"b")])
    lying = bytes([good[0] & ~0x3C | (3 << 2)]) + good[1:]  # says 3 messages, holds 2
    codec3 = bytes([0x03 | (1 << 2)]) + good[1:]
    out = run([(C, produce_req(1, [("t", [(0, lying)])])), (C, produce_req(2, [("t", [(0, codec3)])]))])
    a, b = out.frames
    assert a.status == "malformed" and "declares 3 messages" in a.anomalies[0].detail
    assert len(a.messages) == 2
    assert b.status == "malformed" and "unknown codec 3" in b.anomalies[0].detail


CHUNKS_AT = 5 + 4 + (4 + 1 + 3 + 1 + 23)
"""Where the chunks of a one-topic ("ev"), one-partition Consume response start in the frame:
frame header 5, header length u32 4, then the header: request id 4, topics count 1, str8 "ev" 3,
partitions count 1 and an OK entry (partition u16, flags u8, base u64, hwm u64, length u32 = 23)."""


def test_chunk_of_zero_bytes_is_one_malformed_stretch() -> None:
    # A bundle length of 0 is no bundle (TANK's log verifier rejects it): the rest of the chunk
    # is reported once with its size, not as one empty bundle and one anomaly per byte.
    good = bundle([M(b"a")])
    ch = chunk(good) + bytes(1000)
    resp = consume_resp(4, [("ev", [entry(0, 0, q(5), q(9), u32(len(ch)))])], [ch])
    out = run([(C, consume_req(4, [("ev", [(0, 5)])])), (S, resp)])
    (rs,) = out.of("Consume", "response")
    zeros_at = CHUNKS_AT + 1 + len(good)  # after the good bundle's 1-byte length and its bytes
    assert rs.status == "malformed"
    assert [(a.kind, a.offset) for a in rs.anomalies] == [("malformed", zeros_at)]
    assert "the last 1000 bytes of the chunk" in rs.anomalies[0].detail
    e = rs.fields["topics"][0]["partitions"][0]
    assert len(e["bundles"]) == 1 and e["unread"] == {"offset": zeros_at, "length": 1000}
    assert [(m.offset, m.value) for m in rs.messages] == [(5, b"a")]


def test_anomalies_of_a_kind_are_capped_per_frame() -> None:
    # 1000 two-byte records `01 04`: bundle length 1, flags 0x04 (1 message, no codec), an empty
    # message set: each bundle is malformed ("declares 1 messages, holds 0"), 1000 problems of one
    # kind in one frame. The first 64 are listed, the other 936 counted in one anomaly placed at
    # the 65th problem: the message set of bundle 64, at CHUNKS_AT + 2 * 64 + 2.
    ch = b"\x01\x04" * 1000
    resp = consume_resp(5, [("ev", [entry(0, 0, q(0), q(9), u32(len(ch)))])], [ch])
    out = run([(C, consume_req(5, [("ev", [(0, 0)])])), (S, resp)])
    (rs,) = out.of("Consume", "response")
    assert rs.status == "malformed"
    kinds = [a.kind for a in rs.anomalies]
    assert kinds == ["malformed"] * 64 + ["anomaly_limit"]
    assert [a.offset for a in rs.anomalies[:2]] == [CHUNKS_AT + 2, CHUNKS_AT + 4]
    limit = rs.anomalies[-1]
    assert limit.offset == CHUNKS_AT + 2 * 64 + 2
    assert limit.detail.startswith("936 more malformed anomalies in this frame past the first 64")
    assert len(rs.fields["topics"][0]["partitions"][0]["bundles"]) == 1000
    assert rs.messages == []


def test_bundles_past_the_frame_cap_are_read_and_counted_not_listed() -> None:
    # 12,000 one-byte bundles `01 04` (length 1; flags 0x04: one message, no codec; an empty
    # message set): each malformed ("declares 1 messages, its message set holds 0") at its
    # message set, CHUNKS_AT + 2 * i + 2. `Limits.max_batches` (10,000) lists the first 10,000
    # bundles; all 12,000 are read and their anomalies counted: 64 listed, the other 11,936 in one
    # `anomaly_limit` at the 65th; one `batch_limit` says 2,000 were not listed.
    n = 12_000
    ch = b"\x01\x04" * n
    resp = consume_resp(5, [("ev", [entry(0, 0, q(0), q(9), u32(len(ch)))])], [ch])
    out = run([(C, consume_req(5, [("ev", [(0, 0)])])), (S, resp)])
    (rs,) = out.of("Consume", "response")
    assert rs.status == "malformed"
    assert [a.kind for a in rs.anomalies] == ["malformed"] * 64 + ["anomaly_limit", "batch_limit"]
    assert [a.offset for a in rs.anomalies[:64]] == [CHUNKS_AT + 2 * i + 2 for i in range(64)]
    assert rs.anomalies[0].detail == "bundle declares 1 messages, its message set holds 0"
    limit, batches = rs.anomalies[64:]
    assert (limit.offset, limit.detail) == (
        CHUNKS_AT + 2 * 64 + 2,
        "11936 more malformed anomalies in this frame past the first 64 (counted, not listed)",
    )
    assert (batches.offset, batches.detail) == (
        None,
        "12000 batches in the frame; the first 10000 are listed in its fields, 2000 more were "
        "read and counted only (limit 10000 per frame)",
    )
    e = rs.fields["topics"][0]["partitions"][0]
    assert len(e["bundles"]) == 10_000 and e["bundles"][-1]["offset"] == CHUNKS_AT + 2 * 9_999
    assert rs.messages == [] and rs.summary == "req 5 ev/0 no data hw 9"


def test_messages_of_bundles_past_the_cap_are_still_rows() -> None:
    # 10,003 good bundles of one message each (seqs 100..10102 from the entry's base): the
    # first 10,000 are listed, the last 3 only counted, but every message is a row (10,003 is
    # within `Limits.max_messages`) and the summary counts them all. The frame is fine.
    one = bundle([M(b"x", ts=7)])
    n = 10_003
    ch = chunk(*[one] * n)
    resp = consume_resp(6, [("ev", [entry(0, 0, q(100), q(20_000), u32(len(ch)))])], [ch])
    out = run([(C, consume_req(6, [("ev", [(0, 100)])])), (S, resp)])
    (rs,) = out.of("Consume", "response")
    assert rs.status == "ok"
    assert [(a.kind, a.detail) for a in rs.anomalies] == [
        (
            "batch_limit",
            "10003 batches in the frame; the first 10000 are listed in its fields, 3 more were "
            "read and counted only (limit 10000 per frame)",
        )
    ]
    assert [m.offset for m in rs.messages] == list(range(100, 100 + n))
    assert {m.detail["bundle"] for m in rs.messages[-3:]} == {10_000, 10_001, 10_002}
    assert len(rs.fields["topics"][0]["partitions"][0]["bundles"]) == 10_000
    assert rs.summary == "req 6 ev/0 10003 msgs seq 100..10102 hw 20000"


def test_frame_cut_after_many_bad_bundles_lists_its_own_anomaly_first() -> None:
    # The response's header says the chunk holds 2 more bytes than the frame has: the decoder
    # stops with its own `malformed` (listed first, as before the bundles' problems), then the
    # 100 bad bundles: 63 fit under the per-kind cap of 64, the other 37 are counted in one
    # `anomaly_limit` at the 64th bundle's message set (CHUNKS_AT + 2 * 63 + 2).
    ch = b"\x01\x04" * 100
    resp = consume_resp(7, [("ev", [entry(0, 0, q(0), q(9), u32(len(ch) + 2))])], [ch])
    out = run([(C, consume_req(7, [("ev", [(0, 0)])])), (S, resp)])
    (rs,) = out.of("Consume", "response")
    assert [a.kind for a in rs.anomalies] == ["malformed"] * 64 + ["anomaly_limit"]
    assert rs.anomalies[0].detail.startswith("Consume: chunk of ev/0")
    assert [a.offset for a in rs.anomalies[1:64]] == [CHUNKS_AT + 2 * i + 2 for i in range(63)]
    assert (rs.anomalies[64].offset, rs.anomalies[64].detail) == (
        CHUNKS_AT + 2 * 63 + 2,
        "37 more malformed anomalies in this frame past the first 64 (counted, not listed)",
    )


def test_snappy_failures_and_limits() -> None:
    msgs = [M(b"%05d" % i + b"." * 200) for i in range(40)]
    comp = bundle(msgs, snappy=True)
    corrupt = comp[:1] + b"\xff\xff\xff\xff\x0f" + comp[6:]
    out = run([(C, produce_req(1, [("t", [(0, comp)])])), (C, produce_req(2, [("t", [(0, corrupt)])]))])
    ok, bad = out.frames
    assert ok.status == "ok" and [m.value for m in ok.messages] == [m.value for m in msgs]
    assert bad.status == "malformed" and bad.anomalies[0].kind == "decompression_failed"
    small = Limits(max_decompressed=1000, ratio_floor=1000)
    out = run([(C, produce_req(1, [("t", [(0, comp)])]))], limits=small)
    (f,) = out.frames
    assert [a.kind for a in f.anomalies] == ["decompression_limit"]
    assert f.messages == [] and f.status == "ok"


def test_extra_flags_bundle_per_tank_encoding_md() -> None:
    inner = bundle([M(b"hi")])
    extra = bytes([inner[0] | 0x80, 0x01]) + struct.pack("<IQH", 3, 77, 2) + inner[1:]
    out = run([(C, produce_req(1, [("t", [(0, extra)])]))])
    (f,) = out.frames
    b = f.fields["topics"][0]["partitions"][0]["bundle"]
    assert (b["partition_leader_epoch"], b["producer_id"], b["producer_epoch"]) == (3, 77, 2)
    assert [m.value for m in f.messages] == [b"hi"]


def test_frames_split_across_many_packets() -> None:
    msgs = [M(b"m%d" % i) for i in range(30)]
    req = produce_req(1, [("ev", [(0, bundle(msgs))])])
    steps = [(C, req[i : i + 7]) for i in range(0, len(req), 7)]
    out = run(steps)
    (f,) = out.frames
    assert f.status == "ok" and len(f.messages) == 30
    assert f.first_packet == 1 and f.packet == len(steps)


# -- never raise ----------------------------------------------------------------------------------


def test_every_cut_of_real_looking_frames_decodes_without_raising() -> None:
    ch = chunk(bundle([M(b"a", key=b"k"), M(b"b")]), bundle([M(b"c" * 40)] * 20, snappy=True))
    frames = [
        (
            C,
            33,
            produce_req(
                1, [("ev", [(0, bundle([M(b"x")] * 3)), (1, bundle([M(b"y" * 300)] * 30, snappy=True))])]
            ),
        ),
        (
            C,
            2,
            produce_req(
                2, [("ev", [(0, bundle([M(b"s", seq=4), M(b"t", seq=9)], sparse=True))])], {("ev", 0): 4}
            ),
        ),
        (C, 0, consume_req(3, [("ev", [(0, 1), (1, 2)])])),
        (
            S,
            22,
            consume_resp(
                3,
                [("ev", [entry(0, 0, q(1), q(30), u32(len(ch))), entry(1, 1, q(0), q(9), u32(0), q(3))])],
                [ch],
            ),
        ),
    ]
    for sender, n_msgs, data in frames:
        for role in (C, S):  # also as if the other side had sent it
            for cut in range(1, len(data) + 1):  # the fixture fails the test on any internal_error
                out = run([(role, data[:cut])])
                assert len(out.frames) <= 1  # a cut inside the 5-byte header is no frame
                if cut == len(data) and role == sender:
                    assert out.frames[0].status == "ok"
                    assert len(out.frames[0].messages) == n_msgs


def test_random_bytes_never_raise() -> None:
    import random

    rnd = random.Random(6)
    for _ in range(1000):  # through the whole engine; the cargo-fuzz targets run millions
        msg_id = rnd.randrange(0, 14)
        payload = bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 60)))
        data = frame(msg_id, payload)
        for role in (C, S):
            out = run([(role, data + data)])
            assert {f.status for f in out.frames} <= {"ok", "malformed", "unknown_type", "truncated"}


def test_sequence_numbers_wrap_and_int64_overflow_is_left_out() -> None:
    """TANK's seqnums are uint64_t: a sparse bundle starting near 2**64 numbers on modulo 2**64 (as
    the broker's own arithmetic does); offsets and timestamps at or above 2**63 do not fit the int64
    columns and are None in the model (the tables would null them). Both engines, same values."""
    top = 1 << 64
    msgs = [M(b"a", seq=top - 3, ts=top - 1), M(b"b", seq=top - 2, ts=1 << 63)]
    msgs.append(M(b"c", seq=top + 5, ts=(1 << 63) - 1))
    req = produce_req(2, [("t", [(0, bundle(msgs, sparse=True))])], with_seqnum={("t", 0): top - 3})
    out = run([(C, req)])
    (f,) = out.frames
    assert [(m.offset, m.timestamp_ms) for m in f.messages] == [
        (None, None),
        (None, None),
        (5, (1 << 63) - 1),
    ]
    b = f.fields["topics"][0]["partitions"][0]["bundle"]
    assert (b["first_seqnum"], b["last_seqnum"]) == (top - 3, 5)
    assert [m["seqnum"] for m in b["messages"]] == [top - 3, top - 2, 5]
    assert f.summary == f"req 2 t/0 3 msgs seq {top - 3}..5"


def test_message_cap_and_decompression_limit_under_default_limits() -> None:
    """A Produce carrying 30,000 messages (over `Limits.max_messages`, 25,000: the rest are read
    and counted, a `message_limit` anomaly, status ok) and a snappy bundle whose preamble declares
    2 MiB from a few compressed bytes (over the 1 MiB ratio floor: `decompression_limit`, not the
    frame's fault), then a Consume response with both in one chunk."""
    many = [M(b"", ts=1_700_000_000_000) for _ in range(30_000)]
    big = bundle(many)
    bomb = bytes([1 | (1 << 2)]) + varint(2 << 20) + b"\x00" * 8
    req = produce_req(4, [("t", [(0, big), (1, bomb)])])
    consume = consume_req(5, [("t", [(0, 10)])])
    e = entry(0, 0, q(10), q(30_011), u32(len(chunk(big, bomb))))
    resp = consume_resp(5, [("t", [e])], [chunk(big, bomb)])
    out = run([(C, req), (C, consume), (S, resp)])
    produce, _, response = out.frames
    for f in (produce, response):
        assert f.status == "ok"
        assert len(f.messages) == 25_000
        kinds = [a.kind for a in f.anomalies]
        assert kinds == ["decompression_limit", "message_limit"], f.anomalies
        assert f.anomalies[1].detail.startswith("30000 messages in the frame; the first 25000 are kept")
        assert f.anomalies[0].detail.endswith("snappy: declares 2097152 bytes, over the limit of 1048576")
    # Deliveries are numbered from the entry's base sequence number.
    assert [m.offset for m in response.messages[:3]] == [10, 11, 12]
