"""Requests waiting for their answer are bounded over the whole capture (`Limits.max_pending_total`),
not only per connection: each one keeps its frame, so connections that are never answered would
otherwise hold frames by the million (benchmarks/hostile.py `kafka-pipelined`).

Past the bound, the connection that sends another request gives up its own oldest one as
unanswered. Checked on a hand-made Kafka capture whose outcome follows from that rule alone
(the budget's counting of requests, answers, evictions and closes: engine/src/correlation.rs,
`the_capture_budget_makes_the_requesting_connection_give_up_its_own_oldest`).
"""

from __future__ import annotations

import struct
from pathlib import Path

from tests.crafted import Conn, Rec, write_pcap
from wiredump.dissect.limits import Limits
from wiredump.dissect.pipeline import Options, dissect


def api_versions_request(corr: int) -> bytes:
    """ApiVersions v0 request: api_key 18, version 0, correlation id, client id "c"."""
    body = struct.pack(">hhih", 18, 0, corr, 1) + b"c"
    return struct.pack(">i", len(body)) + body


def api_versions_response(corr: int) -> bytes:
    """ApiVersions v0 response: correlation id, error_code 0, an empty api_keys array."""
    body = struct.pack(">ihi", corr, 0, 0)
    return struct.pack(">i", len(body)) + body


def capture(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """A sends requests 1 and 2, B its request 1, A its request 3; the broker answers B, then A's three.

    The packets are written one connection after the other in time order; `at` names the
    packet of each message.
    """
    recs: list[Rec] = []
    a = Conn(recs, 50001, 9092)
    b = Conn(recs, 50002, 9092)
    at = {
        "a1": a.client(api_versions_request(1)),
        "a2": a.client(api_versions_request(2)),
        "b1": b.client(api_versions_request(1)),
        "a3": a.client(api_versions_request(3)),
        "b1r": b.server(api_versions_response(1)),
        "a1r": a.server(api_versions_response(1)),
        "a2r": a.server(api_versions_response(2)),
        "a3r": a.server(api_versions_response(3)),
    }
    return write_pcap(tmp_path / "pending.pcap", recs), at


def exchanges(path: Path, limits: Limits) -> set[tuple]:
    rows = set()
    for ev in dissect([str(path)], Options(limits=limits)):
        if ev.kind == "exchange":
            e = ev.obj
            rows.add((e.stream, e.correlation_id, e.status, e.request_packet, e.response_packet))
    return rows


def budget_of_two(at: dict[str, int]) -> set[tuple]:
    """The exchanges of `capture` with two pending requests allowed over the capture, derived
    by hand (see the test below): B's request and A's first are given up, their answers find no
    request, A's second and third are answered."""
    return {
        (1, 1, "unanswered", at["b1"], None),
        (0, 1, "unanswered", at["a1"], None),
        (1, 1, "no_request", None, at["b1r"]),
        (0, 1, "no_request", None, at["a1r"]),
        (0, 2, "answered", at["a2"], at["a2r"]),
        (0, 3, "answered", at["a3"], at["a3r"]),
    }


def test_the_capture_budget_gives_up_the_requesting_connections_oldest(tmp_path: Path) -> None:
    path, at = capture(tmp_path)
    # Unbounded in practice: every request answered.
    assert exchanges(path, Limits()) == {
        (0, 1, "answered", at["a1"], at["a1r"]),
        (0, 2, "answered", at["a2"], at["a2r"]),
        (0, 3, "answered", at["a3"], at["a3r"]),
        (1, 1, "answered", at["b1"], at["b1r"]),
    }
    # Two at once over the capture. A holds both places when B's request comes, so B gives up
    # its own oldest (that very request: B has no other) and B's answer finds no request. Then
    # A's third request gives up A's oldest (request 1), whose answer finds no request either.
    assert exchanges(path, Limits(max_pending_total=2)) == budget_of_two(at)
    # The request that went over the bound says so, naming the one given up; nothing else does.
    flagged = [
        (ev.obj.kind, ev.obj.packet, ev.obj.detail)
        for ev in dissect([str(path)], Options(limits=Limits(max_pending_total=2)))
        if ev.kind == "anomaly" and ev.obj.kind == "pending_limit"
    ]
    bound = (
        "more than 2 requests waited for their answer at once over the capture (Limits.max_pending_total): "
    )
    assert flagged == [
        ("pending_limit", at["b1"], bound + "this one is reported unanswered"),
        (
            "pending_limit",
            at["a3"],
            bound + f"the connection's oldest (packet {at['a1']}) is reported unanswered",
        ),
    ]
