"""Pulsar through the whole pipeline: a crafted capture read, reassembled, framed and paired.

The capture holds what the hidden real-world cases look like in small: a 300 KiB message
over a hundred TCP segments, a corrupted checksum in the middle of a stream, a TLS
connection on 6651 and a broker on a port nobody registered.
"""

from __future__ import annotations

from pathlib import Path

from crafted import Rec, link, tcp, write_pcap
from test_pulsar_crafted import (
    CONNECT,
    CONNECTED,
    PRODUCER,
    PRODUCER_SUCCESS,
    meta,
    receipt,
    send,
)

from wiredump.dissect.pipeline import Options, dissect

CLIENT, SERVER = "10.0.0.1", "10.0.0.2"


class Flow:
    """Both directions of one TCP connection, as capture records."""

    def __init__(self, recs: list[Rec], cport: int, sport: int) -> None:
        self.recs, self.cport, self.sport = recs, cport, sport
        self.cseq, self.sseq = 1000, 5000
        self.add(CLIENT, SERVER, cport, sport, "S", b"")
        self.add(SERVER, CLIENT, sport, cport, "SA", b"")
        self.add(CLIENT, SERVER, cport, sport, "A", b"")

    def add(self, src: str, dst: str, sp: int, dp: int, flags: str, data: bytes) -> None:
        client = src == CLIENT
        seq = self.cseq if client else self.sseq
        ack = self.sseq if client else self.cseq
        pkt = tcp(src, dst, sp, dp, seq=seq, ack=ack, flags=flags, payload=data)
        self.recs.append(Rec(link(1, pkt), ts_us=1_700_000_000_000_000 + 100 * len(self.recs)))
        step = len(data) + (1 if "S" in flags else 0)
        if client:
            self.cseq += step
        else:
            self.sseq += step

    def client(self, data: bytes, segments: int = 1) -> None:
        size = -(-len(data) // segments)
        for i in range(0, len(data), size):
            self.add(CLIENT, SERVER, self.cport, self.sport, "PA", data[i : i + size])

    def server(self, data: bytes) -> None:
        self.add(SERVER, CLIENT, self.sport, self.cport, "PA", data)


def build(path: Path) -> dict[str, int]:
    recs: list[Rec] = []
    marks: dict[str, int] = {}
    f = Flow(recs, 40001, 6650)
    f.client(CONNECT)
    f.server(CONNECTED)
    f.client(PRODUCER)
    f.server(PRODUCER_SUCCESS)
    big = bytes(i % 253 for i in range(300 * 1024))
    marks["big_first"] = len(recs) + 1
    f.client(send(7, 0, meta(0), big), segments=100)
    marks["big_last"] = len(recs)
    f.server(receipt(7, 0, 20, 0))
    bad = bytearray(send(7, 1, meta(1), b"corrupt me"))
    bad[-1] ^= 0xFF
    f.client(bytes(bad) + send(7, 2, meta(2), b"fine"))
    marks["bad"] = len(recs)
    f.server(receipt(7, 1, 20, 1) + receipt(7, 2, 20, 2))
    tls = Flow(recs, 40002, 6651)
    tls.client(b"\x16\x03\x01\x00\x40" + b"\x01" * 64)
    odd = Flow(recs, 40003, 16650)
    odd.client(CONNECT)
    odd.server(CONNECTED)
    marks["odd_connected"] = len(recs)
    write_pcap(path, recs)
    return marks


def test_whole_pipeline(tmp_path: Path) -> None:
    path = tmp_path / "pulsar.pcap"
    marks = build(path)
    frames, anomalies, exchanges = [], [], []
    for ev in dissect([str(path)], Options()):
        if ev.kind == "frame":
            frames.append(ev.obj)
        elif ev.kind == "anomaly":
            anomalies.append(ev.obj)
        elif ev.kind == "exchange":
            exchanges.append(ev.obj)
    s0 = [fr for fr in frames if fr.stream == 0]
    assert [fr.type for fr in s0] == [
        "CONNECT",
        "CONNECTED",
        "PRODUCER",
        "PRODUCER_SUCCESS",
        "SEND",
        "SEND_RECEIPT",
        "SEND",
        "SEND",
        "SEND_RECEIPT",
        "SEND_RECEIPT",
    ]
    big = s0[4]
    assert (big.first_packet, big.packet) == (marks["big_first"], marks["big_last"])
    assert big.messages[0].value_size == 300 * 1024 and big.messages[0].checksum_ok is True
    assert big.messages[0].message_id == "20:0:2:-1"
    bad, fine = s0[6], s0[7]
    assert bad.packet == fine.packet == marks["bad"]
    assert bad.status == "bad_checksum" and fine.status == "ok"
    assert [(a.kind, a.packet) for a in anomalies if a.kind == "bad_checksum"] == [
        ("bad_checksum", marks["bad"])
    ]
    # Every request of stream 0 answered, latencies on the answers.
    s0_ex = [e for e in exchanges if e.stream == 0]
    assert len(s0_ex) == 5 and {e.status for e in s0_ex} == {"answered"}
    # 6651: TLS, undecodable, no frames.
    assert not [fr for fr in frames if fr.stream == 1]
    assert [a.kind for a in anomalies if a.stream == 1] == ["undecodable"]
    # An unregistered port still decodes: the first bytes sniff as Pulsar.
    s2 = [fr for fr in frames if fr.stream == 2]
    assert [(fr.protocol, fr.type) for fr in s2] == [("pulsar", "CONNECT"), ("pulsar", "CONNECTED")]
    assert s2[1].packet == marks["odd_connected"]
