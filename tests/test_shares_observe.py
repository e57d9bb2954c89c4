"""What a share keeps of the Kafka connections it only observes (`Options.shard`: another share
decodes them) changes nothing in the rows of the connections it decodes.

An observer keeps of a connection only what the run shares with the others: the requests
waiting for their answer, which count against the capture's budget (`Limits.max_pending_total`)
as in the whole capture, and the topic names its answers teach. It records no exchange, link
or note and makes no header fields (engine/src/correlation.rs `Correlator::observing`,
engine/src/kafka/session.rs). Checked here where that kept state decides the decoded rows: the
pending budget spent by a connection another share decodes (the hand-made capture of
tests/test_pending_budget.py, whose outcome follows from the budget rule alone).
"""

from __future__ import annotations

from pathlib import Path

from tests.test_pending_budget import budget_of_two, capture
from wiredump.dissect.limits import Limits
from wiredump.dissect.pipeline import Options, dissect


def records(path: Path, opts: Options) -> tuple[set[tuple], list[tuple]]:
    """(exchange rows, pending_limit anomalies) of one run."""
    rows, flagged = set(), []
    for ev in dissect([str(path)], opts):
        if ev.kind == "exchange":
            e = ev.obj
            rows.add((e.stream, e.correlation_id, e.status, e.request_packet, e.response_packet))
        elif ev.kind == "anomaly" and ev.obj.kind == "pending_limit":
            flagged.append((ev.obj.stream, ev.obj.packet))
    return rows, flagged


def test_a_share_spends_the_pending_budget_as_the_whole_capture(tmp_path: Path) -> None:
    path, at = capture(tmp_path)
    limits = Limits(max_pending_total=2)
    # The whole capture (stream 0 is A, stream 1 is B), as tests/test_pending_budget.py derives
    # it: B's request finds both places taken by A's and gives itself up; A's third gives up
    # A's first.
    whole = records(path, Options(limits=limits))
    assert whole[0] == budget_of_two(at)
    assert whole[1] == [(1, at["b1"]), (0, at["a3"])]
    for n in (2, 3):
        for k in range(n):
            # Share 1 of 2 decodes B while only observing A: B still finds A's two requests
            # holding the budget, so gives itself up, exactly as in the whole capture.
            rows, flagged = records(path, Options(limits=limits, shard=(k, n)))
            assert rows == {r for r in whole[0] if r[0] % n == k}, (k, n)
            assert flagged == [f for f in whole[1] if f[0] % n == k], (k, n)


STEP = 256
"""Packets the engine reads per step (pipeline.rs `STEP_RECORDS`): a connection's bytes that
come a step after its protocol was chosen find it already set aside by a share."""


def conflicting(tmp_path: Path) -> tuple[Path, list[int]]:
    """Two Pulsar-port connections (a protocol whose connections teach the run nothing, so a
    share that does not decode one neither frames nor reads its bytes), each with a client
    segment sent again with other bytes, a step of bare ACKs later; the packets of the second
    copies."""
    from tests.crafted import Conn, Rec, write_pcap

    recs: list[Rec] = []
    again = []
    for sport in (50001, 50002):
        c = Conn(recs, sport, 6650)
        c.client(b"\x00\x00\x00\x08first-ab")
        for _ in range(STEP):  # the engine reads 256 packets a step: the rest comes later
            c._add("A", True)
        c.cseq -= 12
        c._add("PA", True, b"\x00\x00\x00\x08other-cd")  # same sequence numbers, other bytes
        c.cseq += 12
        again.append(len(recs))
        c.server(b"\x00\x00\x00\x04pong")
    return write_pcap(tmp_path / "conflicts.pcap", recs), again


def rows_of(path: Path, opts: Options) -> tuple[list[tuple], list[tuple]]:
    anomalies, conns = [], []
    for ev in dissect([str(path)], opts):
        if ev.kind == "anomaly":
            anomalies.append((ev.obj.kind, ev.obj.stream, ev.obj.packet, ev.obj.detail))
        elif ev.kind == "connection":
            c = ev.obj
            conns.append((c.stream, c.protocol, c.packets, c.bytes_client, c.bytes_server, c.retransmissions))
    return anomalies, conns


def test_a_share_that_reads_no_byte_of_a_connection_keeps_its_row_and_leaves_its_anomalies(
    tmp_path: Path,
) -> None:
    """A share sets such a connection aside once its protocol is known (its later bytes are
    counted, not copied out of reassembly): the connection's rows and anomalies are its
    owner's alone, and nothing of it reaches the share that set it aside."""
    path, again = conflicting(tmp_path)
    anomalies, conns = rows_of(path, Options())
    # Each connection: 12 client bytes delivered once (the second copy conflicts: the first
    # is kept), 8 server bytes, 6 packets (handshake, data, its second copy, the answer) and
    # the ACKs.
    assert [(s, b_c, b_s, r) for s, _, _, b_c, b_s, r in conns] == [(0, 12, 8, 1), (1, 12, 8, 1)]
    assert [c[2] for c in conns] == [6 + STEP, 6 + STEP]
    conflicts = [(s, p) for kind, s, p, _ in anomalies if kind == "overlap_conflict"]
    assert conflicts == [(0, again[0]), (1, again[1])]
    for n in (2, 3):
        shares = [rows_of(path, Options(shard=(k, n))) for k in range(n)]
        assert sorted(a for s in shares for a in s[0]) == sorted(anomalies), n
        assert sorted(c for s in shares for c in s[1]) == sorted(conns), n
