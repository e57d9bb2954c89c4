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

from tests.test_pending_budget import capture
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
    assert whole[0] == {
        (1, 1, "unanswered", at["b1"], None),
        (0, 1, "unanswered", at["a1"], None),
        (1, 1, "no_request", None, at["b1r"]),
        (0, 1, "no_request", None, at["a1r"]),
        (0, 2, "answered", at["a2"], at["a2r"]),
        (0, 3, "answered", at["a3"], at["a3r"]),
    }
    assert whole[1] == [(1, at["b1"]), (0, at["a3"])]
    for n in (2, 3):
        for k in range(n):
            # Share 1 of 2 decodes B while only observing A: B still finds A's two requests
            # holding the budget, so gives itself up, exactly as in the whole capture.
            rows, flagged = records(path, Options(limits=limits, shard=(k, n)))
            assert rows == {r for r in whole[0] if r[0] % n == k}, (k, n)
            assert flagged == [f for f in whole[1] if f[0] % n == k], (k, n)
