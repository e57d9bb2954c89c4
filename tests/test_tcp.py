"""TCP reassembly cases: segments built by scapy, reassembled by the engine (`_engine.StreamReader`,
the reassembly every capture goes through), what it delivers checked against what the segments say.

`TcpReassembler` below gives the segments of a case to the engine as one capture (packet i at
i ms); the listener calls (data, gaps, closes, anomalies) and the connections' rows come back as
the cases read them. After each `segment` the listener holds what the engine delivered while
reading the packets so far (a last non-TCP packet marks where reading ended and the capture's
end begins); after `finish`, everything.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from wiredump._engine import StreamReader

from wiredump.dissect.limits import Limits
from wiredump.dissect.model import Anomaly

HOLE_GRACE_PACKETS = 8
"""Packets the engine waits for bytes its peer acknowledged before giving them up (engine/src/tcp.rs)."""
RECORD, OPEN, DATA, GAP, CLOSE, ANOMALY, RELEASE = 0, 2, 3, 4, 5, 6, 11
"""`StreamReader`'s event codes (engine/src/python.rs)."""
NOT_TCP = bytes(12) + b"\x08\x06" + bytes(28)
"""An Ethernet ARP packet: read, numbered, nothing to reassemble."""


class TcpReassembler:
    """The cases' view of the engine's reassembly: `segment` queues a packet, `finish` runs them."""

    def __init__(self, listener: Any, limits: Limits, server_ports: frozenset[int]) -> None:
        self.listener = listener
        self.limits = limits
        self.server_ports = sorted(server_ports)
        self.packets: list[tuple[bytes, int]] = []
        self.all: list[Any] = []
        """Every connection, by stream, with its row (`packets`, `state`, `gaps`…) once released."""

    def segment(self, packet: bytes, number: int, ts_us: int) -> None:
        self.packets.append((packet, ts_us))
        self._run(final=False)

    def finish(self) -> None:
        self._run(final=True)

    def _run(self, final: bool) -> None:
        self.listener.__init__()  # what the engine says of the packets so far, from the start
        self.all = []
        packets = list(self.packets)
        if not final:
            packets.append((NOT_TCP, packets[-1][1]))
        pcap = io.BytesIO()
        pcap.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        for data, ts in packets:
            pcap.write(struct.pack("<IIII", ts // 1_000_000, ts % 1_000_000, len(data), len(data)) + data)
        pcap.seek(0)
        reader = StreamReader(pcap, self.server_ports, self.limits.max_out_of_order)
        conns: dict[int, Any] = {}
        for ev in (ev for batch in reader for ev in batch):
            code = ev[0]
            if code == RECORD and not final and ev[1] == len(packets):
                return  # the capture's end is not reached yet
            if code == OPEN:
                _, stream, client, client_port, server, server_port, _first = ev
                c = SimpleNamespace(stream=stream, client=client, client_port=client_port)
                c.server, c.server_port = server, server_port
                conns[stream] = c
                self.all.append(c)
            elif code == DATA:
                _, stream, role, data, packet, ts = ev
                self.listener.on_data(conns[stream], role, data, packet, ts)
            elif code == GAP:
                _, stream, role, size, packet, ts = ev
                self.listener.on_gap(conns[stream], role, size, packet, ts)
            elif code == CLOSE:
                self.listener.on_close(conns[ev[1]])
            elif code == ANOMALY:
                _, kind, detail, packet, stream = ev
                self.listener.on_anomaly(Anomaly(kind, detail, packet=packet, stream=stream))
            elif code == RELEASE:
                _, stream, counts, state, _last = ev
                c = conns[stream]
                c.packets, _, _, c.gaps, c.retransmissions, _, _ = counts
                c.state = state


CLI, SRV = ("10.0.0.1", 40000), ("10.0.0.2", 9092)


@dataclass
class Recorder:
    data: dict[tuple[int, str], bytearray] = field(default_factory=dict)
    gaps: list[tuple[int, str, int, int]] = field(default_factory=list)
    closed: list[int] = field(default_factory=list)
    anomalies: list[Anomaly] = field(default_factory=list)

    def on_data(self, conn, role, data, packet, ts_us):  # noqa: ANN001
        self.data.setdefault((conn.stream, role), bytearray()).extend(data)

    def on_gap(self, conn, role, size, packet, ts_us):  # noqa: ANN001
        self.gaps.append((conn.stream, role, size, packet))

    def on_close(self, conn):  # noqa: ANN001
        self.closed.append(conn.stream)

    def on_anomaly(self, anomaly):  # noqa: ANN001
        self.anomalies.append(anomaly)

    def kinds(self) -> list[str]:
        return [a.kind for a in self.anomalies]


def seg(src, dst, seq, ack=0, flags="A", payload=b""):  # noqa: ANN001
    pkt = (
        Ether()
        / IP(src=src[0], dst=dst[0])
        / TCP(sport=src[1], dport=dst[1], seq=seq, ack=ack, flags=flags)
        / payload
    )
    return bytes(pkt)


def run(segments, limits: Limits | None = None) -> tuple[Recorder, TcpReassembler]:  # noqa: ANN001
    rec = Recorder()
    tcp = TcpReassembler(rec, limits or Limits(), frozenset({9092}))
    for i, s in enumerate(segments, start=1):
        tcp.segment(s, i, i * 1000)
    tcp.finish()
    return rec, tcp


def handshake(isn_c: int = 1000, isn_s: int = 5000) -> list:
    return [
        seg(CLI, SRV, isn_c, 0, "S"),
        seg(SRV, CLI, isn_s, isn_c + 1, "SA"),
        seg(CLI, SRV, isn_c + 1, isn_s + 1, "A"),
    ]


def test_in_order_and_roles() -> None:
    rec, tcp = run(
        handshake() + [seg(CLI, SRV, 1001, 5001, "PA", b"hello"), seg(SRV, CLI, 5001, 1006, "PA", b"world")]
    )
    assert rec.data[(0, "client")] == b"hello"
    assert rec.data[(0, "server")] == b"world"
    conn = tcp.all[0]
    assert (conn.client, conn.client_port, conn.server_port) == ("10.0.0.1", 40000, 9092)
    assert conn.state == "open" and conn.packets == 5 and rec.anomalies == []


def test_out_of_order_segments_are_held_until_the_hole_fills() -> None:
    rec, _ = run(
        handshake() + [seg(CLI, SRV, 1006, 5001, "PA", b"world"), seg(CLI, SRV, 1001, 5001, "PA", b"hello")]
    )
    assert rec.data[(0, "client")] == b"helloworld"
    assert rec.kinds() == ["out_of_order"]


def test_exact_duplicate_is_dropped_and_reported() -> None:
    p = seg(CLI, SRV, 1001, 5001, "PA", b"hello")
    rec, tcp = run(handshake() + [p, p])
    assert rec.data[(0, "client")] == b"hello"
    assert rec.kinds() == ["retransmission"]
    assert tcp.all[0].retransmissions == 1


def test_partial_overlap_keeps_only_new_bytes() -> None:
    rec, _ = run(
        handshake()
        + [seg(CLI, SRV, 1001, 5001, "PA", b"hello"), seg(CLI, SRV, 1004, 5001, "PA", b"lo world")]
    )
    assert rec.data[(0, "client")] == b"hello world"
    assert rec.kinds() == ["retransmission"]


def test_conflicting_overlap_is_reported_first_copy_kept() -> None:
    rec, _ = run(
        handshake() + [seg(CLI, SRV, 1001, 5001, "PA", b"hello"), seg(CLI, SRV, 1001, 5001, "PA", b"HELLO!")]
    )
    assert rec.data[(0, "client")] == b"hello!"
    assert rec.kinds() == ["overlap_conflict"]
    assert "stream offset 0" in rec.anomalies[0].detail


def test_one_byte_segments() -> None:
    msg = b"one byte at a time"
    segs = [seg(CLI, SRV, 1001 + i, 5001, "PA", msg[i : i + 1]) for i in range(len(msg))]
    rec, _ = run(handshake() + segs)
    assert rec.data[(0, "client")] == msg


def test_lost_segment_becomes_a_gap_once_the_receiver_acks_past_it() -> None:
    rec, tcp = run(
        handshake()
        + [
            seg(CLI, SRV, 1001, 5001, "PA", b"aaaa"),
            # 1005..1009 never captured
            seg(CLI, SRV, 1009, 5001, "PA", b"cccc"),
            seg(SRV, CLI, 5001, 1013, "A"),  # the server got everything
        ]
    )
    assert rec.data[(0, "client")] == b"aaaacccc"
    # Reported at the packet right after the hole (as tshark's "previous segment not captured"),
    # not at the ACK that revealed it.
    assert rec.gaps == [(0, "client", 4, 5)]
    assert "gap" in rec.kinds() and tcp.all[0].gaps == 1


def test_lost_segment_at_end_of_capture_is_a_gap() -> None:
    rec, _ = run(
        handshake() + [seg(CLI, SRV, 1001, 5001, "PA", b"aaaa"), seg(CLI, SRV, 1009, 5001, "PA", b"cccc")]
    )
    assert rec.gaps and rec.gaps[0][2] == 4
    assert rec.data[(0, "client")] == b"aaaacccc"


def test_midstream_start_roles_from_port() -> None:
    rec, tcp = run([seg(SRV, CLI, 777, 999, "PA", b"resp"), seg(CLI, SRV, 999, 781, "PA", b"req")])
    conn = tcp.all[0]
    assert conn.server_port == 9092 and conn.client_port == 40000
    assert conn.state == "midstream"
    assert rec.data[(0, "server")] == b"resp" and rec.data[(0, "client")] == b"req"


def test_sequence_wraparound() -> None:
    isn = 0xFFFFFFFA
    first = (isn + 1) & 0xFFFFFFFF
    rec, _ = run(
        handshake(isn_c=isn)
        + [
            seg(CLI, SRV, first, 5001, "PA", b"abcdefgh"),
            seg(CLI, SRV, (first + 8) & 0xFFFFFFFF, 5001, "PA", b"ijk"),
        ]
    )
    assert rec.data[(0, "client")] == b"abcdefghijk"
    assert rec.anomalies == []


def test_port_reuse_after_close_is_a_new_stream() -> None:
    close = [seg(CLI, SRV, 1006, 5001, "FA"), seg(SRV, CLI, 5001, 1007, "FA"), seg(CLI, SRV, 1007, 5002, "A")]
    again = handshake(isn_c=90000, isn_s=70000) + [seg(CLI, SRV, 90001, 70001, "PA", b"again")]
    rec, tcp = run(handshake() + [seg(CLI, SRV, 1001, 5001, "PA", b"first")] + close + again)
    assert [c.stream for c in tcp.all] == [0, 1]
    assert tcp.all[0].state == "closed" and tcp.all[0].packets == 7
    assert rec.data[(0, "client")] == b"first" and rec.data[(1, "client")] == b"again"


def test_rst_resets() -> None:
    rec, tcp = run(handshake() + [seg(CLI, SRV, 1001, 5001, "PA", b"x"), seg(SRV, CLI, 5001, 1002, "R")])
    assert tcp.all[0].state == "reset"
    assert rec.closed == [0]


def test_out_of_order_buffer_is_bounded() -> None:
    limits = Limits(max_out_of_order=64)
    far = [seg(CLI, SRV, 2001 + i * 40, 5001, "PA", b"z" * 40) for i in range(3)]
    rec, _ = run(handshake() + far, limits)
    # The hole (1001..2001) is given up as soon as the held bytes pass the bound (packet 5);
    # it is reported at the first packet after the hole (4).
    assert rec.gaps[0][2] == 1000 and rec.gaps[0][3] == 4
    assert rec.data[(0, "client")] == b"z" * 120


@dataclass
class PacketRecorder(Recorder):
    chunks: list[tuple[str, bytes, int, int]] = field(default_factory=list)

    def on_data(self, conn, role, data, packet, ts_us):  # noqa: ANN001
        super().on_data(conn, role, data, packet, ts_us)
        self.chunks.append((role, bytes(data), packet, ts_us))


def test_bytes_after_a_given_up_hole_keep_their_own_packet() -> None:
    """A lost segment: the bytes held behind the hole are delivered when the receiver's ACK
    shows the loss, but they keep the packet (and time) they were captured in, so frames in
    them get the packet numbers tshark shows. (They used to take the ACK's packet number.)"""
    rec = PacketRecorder()
    tcp = TcpReassembler(rec, Limits(), frozenset({9092}))
    segs = handshake() + [
        seg(CLI, SRV, 1001, 5001, "PA", b"aaaa"),
        # 1005..1009 never captured
        seg(CLI, SRV, 1009, 5001, "PA", b"cccc"),  # packet 5: held
        seg(CLI, SRV, 1013, 5001, "PA", b"dddd"),  # packet 6: held
        seg(SRV, CLI, 5001, 1017, "A"),  # packet 7: acks everything
    ]
    for i, s in enumerate(segs, start=1):
        tcp.segment(s, i, i * 1000)
    tcp.finish()
    assert rec.chunks == [
        ("client", b"aaaa", 4, 4000),
        ("client", b"cccc", 5, 5000),
        ("client", b"dddd", 6, 6000),
    ]
    assert rec.gaps == [(0, "client", 4, 5)]


def test_late_segment_filling_the_hole_completes_at_its_own_packet() -> None:
    """Out of order (not lost): held bytes are delivered when the late segment arrives."""
    rec = PacketRecorder()
    tcp = TcpReassembler(rec, Limits(), frozenset({9092}))
    segs = handshake() + [
        seg(CLI, SRV, 1006, 5001, "PA", b"world"),
        seg(CLI, SRV, 1001, 5001, "PA", b"hello"),
    ]
    for i, s in enumerate(segs, start=1):
        tcp.segment(s, i, i * 1000)
    assert rec.chunks == [("client", b"hello", 5, 5000), ("client", b"world", 5, 5000)]


def test_a_hole_the_peer_acknowledges_is_given_up_before_the_peers_data() -> None:
    """The response that acknowledges a request's lost segment must not overtake the
    request bytes held behind the hole: the ACK is taken before the packet's own data,
    so the correlator sees the request first. (The response used to go up first.)"""
    rec = PacketRecorder()
    tcp = TcpReassembler(rec, Limits(), frozenset({9092}))
    segs = handshake() + [
        seg(CLI, SRV, 1001, 5001, "PA", b"aaaa"),
        # 1005..1009 never captured
        seg(CLI, SRV, 1009, 5001, "PA", b"cccc"),  # packet 5: held
        seg(SRV, CLI, 5001, 1013, "PA", b"resp"),  # packet 6: the response, acks everything
    ]
    for i, s in enumerate(segs, start=1):
        tcp.segment(s, i, i * 1000)
    tcp.finish()
    assert [(role, data) for role, data, _, _ in rec.chunks] == [
        ("client", b"aaaa"),
        ("client", b"cccc"),
        ("server", b"resp"),
    ]


def feed(segments) -> tuple[PacketRecorder, TcpReassembler]:  # noqa: ANN001
    rec = PacketRecorder()
    tcp = TcpReassembler(rec, Limits(), frozenset({9092}))
    for i, s in enumerate(segments, start=1):
        tcp.segment(s, i, i * 1000)
    return rec, tcp


def test_segment_listed_after_the_ack_that_covers_it_is_not_a_gap() -> None:
    """Two segments swapped around the receiver's ACK (capture queues can do that): the ACK
    covers bytes not seen yet, but they turn up a packet later. They used to be given up as
    a gap at once, and the late segment dropped as a retransmission."""
    rec, tcp = feed(
        handshake()
        + [
            seg(CLI, SRV, 1005, 5001, "PA", b"world"),  # 4: held
            seg(SRV, CLI, 5001, 1005, "A"),  # 5: acks 'hell' (unseen yet)
            seg(CLI, SRV, 1001, 5001, "PA", b"hell"),  # 6: the late segment
        ]
    )
    tcp.finish()
    assert rec.data[(0, "client")] == b"hellworld"
    assert rec.kinds() == ["out_of_order"] and rec.gaps == []
    assert tcp.all[0].gaps == 0 and tcp.all[0].retransmissions == 0


def test_peer_data_waits_while_acknowledged_bytes_are_awaited() -> None:
    """The response that acknowledges the request comes between its two swapped segments:
    it goes up after the request is whole (pairing needs request first)."""
    rec, tcp = feed(
        handshake()
        + [
            seg(CLI, SRV, 1005, 5001, "PA", b"uest"),  # 4: held
            seg(SRV, CLI, 5001, 1009, "PA", b"resp"),  # 5: the response, acks everything
            seg(CLI, SRV, 1001, 5001, "PA", b"req-"),  # 6: the late segment
        ]
    )
    assert [(r, d, p) for r, d, p, _ in rec.chunks] == [
        ("client", b"req-", 6),
        ("client", b"uest", 6),
        ("server", b"resp", 5),
    ]
    tcp.finish()
    assert rec.gaps == [] and tcp.all[0].gaps == 0


def test_acknowledged_hole_is_given_up_after_a_few_packets() -> None:
    # The first ping shows the hole; the wait ends HOLE_GRACE_PACKETS packets later.
    pings = [seg(SRV, CLI, 5001 + i, 1013, "PA", b"p") for i in range(HOLE_GRACE_PACKETS + 1)]
    rec, tcp = feed(
        handshake()
        + [
            seg(CLI, SRV, 1001, 5001, "PA", b"aaaa"),  # 4
            seg(CLI, SRV, 1009, 5001, "PA", b"cccc"),  # 5: held, 1005..1009 lost
        ]
        + pings  # 6..: the server acks everything and sends one byte a packet
    )
    # Given up without the end of the capture; the server's bytes kept their order and packets.
    assert rec.gaps == [(0, "client", 4, 5)]
    assert rec.chunks[:2] == [("client", b"aaaa", 4, 4000), ("client", b"cccc", 5, 5000)]
    assert [p for r, _, p, _ in rec.chunks if r == "server"] == list(range(6, 7 + HOLE_GRACE_PACKETS))


def test_sender_moving_past_an_acknowledged_hole_gives_it_up() -> None:
    rec, tcp = feed(
        handshake()
        + [
            seg(CLI, SRV, 1001, 5001, "PA", b"aaaa"),  # 4
            seg(CLI, SRV, 1009, 5001, "PA", b"cccc"),  # 5: held, 1005..1009 lost
            seg(SRV, CLI, 5001, 1013, "A"),  # 6: acks everything
            seg(CLI, SRV, 1013, 5001, "PA", b"dddd"),  # 7: new data: the hole is lost
        ]
    )
    assert rec.gaps == [(0, "client", 4, 5)]
    assert rec.data[(0, "client")] == b"aaaaccccdddd"
