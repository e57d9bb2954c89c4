"""TANK through the whole pipeline on a crafted capture: mirroring between two brokers.

`tank-cli mirror` consumes from one broker and re-produces the messages, with their
sequence numbers, to another using ProduceWithSeqnum (sparse bundles). The second
broker listens on a port that is not TANK's default, so it must be recognised by its
greeting Ping. Expected values are the inputs chosen here.
"""

from __future__ import annotations

from pathlib import Path

from crafted import Conn, Rec, write_pcap
from test_tank_crafted import (
    PING,
    M,
    bundle,
    chunk,
    consume_req,
    consume_resp,
    entry,
    frame,
    produce_req,
    q,
    u32,
)

from wiredump.dissect.pipeline import Options, dissect


def test_mirroring_between_two_brokers(tmp_path: Path) -> None:
    recs: list[Rec] = []
    src = Conn(recs, 50000, 11011)
    src.server(PING)
    # Source partitions 0 and 1; partition 0 has a gap (compacted) so its bundle is sparse.
    p0 = [M(b"a", seq=10), M(b"b", seq=12), M(b"c", seq=13)]
    p1 = [M(b"x", key=b"k"), M(b"y", key=b"k")]
    c0 = chunk(bundle(p0, sparse=True))
    c1 = chunk(bundle(p1))
    consume_pkt = src.client(consume_req(1, [("orders", [(0, 10), (1, 40)])]))
    resp = consume_resp(
        1,
        [("orders", [entry(0, 0xFE, q(13), u32(len(c0))), entry(1, 0, q(40), q(41), u32(len(c1)))])],
        [c0, c1],
    )
    consume_resp_pkt = src.server(resp)

    dst = Conn(recs, 50002, 21011)  # not TANK's port: recognised by the broker's greeting
    dst.server(PING)
    p1_seq = [M(b"x", key=b"k", seq=40), M(b"y", key=b"k", seq=41)]
    req = produce_req(
        1,
        [("orders", [(0, bundle(p0, sparse=True)), (1, bundle(p1_seq, sparse=True))])],
        with_seqnum={("orders", 0): 10, ("orders", 1): 40},
    )
    produce_pkt = dst.client(req)
    ack_pkt = dst.server(frame(1, u32(1) + b"\x00\x00"))
    path = write_pcap(tmp_path / "mirror.pcap", recs)

    frames, anomalies, exchanges = [], [], []
    for ev in dissect([str(path)], Options()):
        {"frame": frames, "anomaly": anomalies, "exchange": exchanges}.get(ev.kind, []).append(ev.obj)
    assert anomalies == []
    assert {f.protocol for f in frames} == {"tank"}
    assert [(f.stream, f.type, f.kind, f.packet, f.peer_packet) for f in frames] == [
        (0, "Ping", "event", 4, None),
        (0, "Consume", "request", consume_pkt, consume_resp_pkt),
        (0, "Consume", "response", consume_resp_pkt, consume_pkt),
        (1, "Ping", "event", 10, None),
        (1, "ProduceWithSeqnum", "request", produce_pkt, ack_pkt),
        (1, "Produce", "response", ack_pkt, produce_pkt),
    ]
    delivered = [(m.partition, m.offset, m.value) for m in frames[2].messages]
    produced = [(m.partition, m.offset, m.value) for m in frames[4].messages]
    assert (
        delivered == produced == [(0, 10, b"a"), (0, 12, b"b"), (0, 13, b"c"), (1, 40, b"x"), (1, 41, b"y")]
    )
    assert [m.direction for m in frames[4].messages] == ["produce"] * 5
    assert sorted((e.stream, e.type, e.status) for e in exchanges) == [
        (0, "Consume", "answered"),
        (1, "ProduceWithSeqnum", "answered"),
    ]
