"""TANK: every real capture decodes as its independent decode says (`X.pdus.tsv`, `X.summary.json`).

The decodes beside the captures were made without wiredump. Checked here: the same
message names and ids at the same packets, in the same direction and connection,
the same payload lengths and request ids, the same request/response pairing, the
bundle codecs and per-request message counts, the produced-message and bundle
totals, and no anomaly at all (the independent decode found nothing bad).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import dissect_lists, tsv_rows

TANK = "tank"
NAMES = ["t01-basic", "t02-bundles", "t03-compressed", "t04-keys", "t06-boundary-and-tail", "t07-errors"]


def _opt(v: str) -> int | None:
    return int(v) if v != "" else None


@pytest.fixture(scope="module", params=NAMES)
def decoded(request: pytest.FixtureRequest, captures: Path):
    base = captures / "tank" / request.param
    frames, anomalies, exchanges = dissect_lists(base.with_suffix(".pcap"))
    rows = tsv_rows(base.with_suffix(".pdus.tsv"))
    summary = json.loads(base.with_suffix(".summary.json").read_text())
    return frames, anomalies, exchanges, rows, summary


def test_same_messages_at_same_packets(decoded) -> None:
    frames, _, _, rows, _ = decoded
    assert all(r["segments"] == "1" for r in rows)  # so the first packet is the last packet
    want = Counter(
        (
            int(r["stream"]),
            "client" if r["dir"] == "c>s" else "server",
            int(r["last_frame"]),
            int(r["msg_id"]),
            r["msg_name"],
            int(r["length"]),
            _opt(r["request_id"]),
            _opt(r["peer_frame"]),
        )
        for r in rows
    )
    got = Counter(
        (f.stream, f.role, f.packet, f.type_code, f.type, f.length - 5, f.correlation_id, f.peer_packet)
        for f in frames
        if f.protocol == TANK
    )
    assert got == want


def test_counts_and_cleanliness(decoded) -> None:
    frames, anomalies, exchanges, _, summary = decoded
    assert len(frames) == summary["messages"]
    assert anomalies == []
    assert all(f.status == "ok" for f in frames)
    c2s = Counter(f.type for f in frames if f.role == "client")
    s2c = Counter(f.type for f in frames if f.role == "server")
    assert c2s == Counter(summary["client_to_broker"])
    assert s2c == Counter(summary["broker_to_client"])
    # The broker's greeting Ping is an event: no exchange is left unanswered.
    statuses = Counter(e.status for e in exchanges)
    assert statuses["unanswered"] == summary["requests_without_response"] == 0
    assert statuses["no_request"] == summary["responses_without_request"] == 0
    assert statuses["answered"] == sum(1 for f in frames if f.kind == "request")
    assert all(f.kind == "event" for f in frames if f.type == "Ping")


def test_produced_messages_and_bundles(decoded) -> None:
    frames, _, _, rows, summary = decoded
    produce = [f for f in frames if f.type in ("Produce", "ProduceWithSeqnum") and f.kind == "request"]
    msgs = [m for f in produce for m in f.messages]
    assert all(m.direction == "produce" for m in msgs)
    assert len(msgs) == summary["produced_messages"]
    bundles = [p["bundle"] for f in produce for t in f.fields["topics"] for p in t["partitions"]]
    assert len(bundles) == summary["produced_bundles"]
    assert sum(b["codec"] == "snappy" for b in bundles) == summary["snappy_bundles"]
    # Per request: topic/partition, bundle count, codec and message count as the .tsv says.
    by_key = {(f.stream, f.packet, f.correlation_id): f for f in produce}
    for r in rows:
        if r["dir"] != "c>s" or r["msg_name"] != "Produce":
            continue
        f = by_key[(int(r["stream"]), int(r["last_frame"]), int(r["request_id"]))]
        parts = [(t["name"], p) for t in f.fields["topics"] for p in t["partitions"]]
        assert [f"{name}/{p['partition']}" for name, p in parts] == [r["topics"]]
        assert len(parts) == int(r["bundles"])
        assert str(1 if parts[0][1]["bundle"]["codec"] == "snappy" else 0) == r["bundle_codecs"]
        assert len(f.messages) == int(r["bundle_msgs"])
        assert {(m.topic, m.partition) for m in f.messages} == {(parts[0][0], parts[0][1]["partition"])}


def test_latency_on_every_response(decoded) -> None:
    frames, _, _, _, _ = decoded
    for f in frames:
        if f.kind == "response":
            assert f.latency_us is not None and f.latency_us >= 0


def test_consumed_messages_are_the_produced_ones(decoded) -> None:
    """Two decode paths agree: Produce bundles (no sequence numbers on the wire) and the
    broker's Consume chunks (numbered from the partition entry's base). The broker numbers
    accepted messages 1, 2, … in arrival order, so delivered seq N must be the Nth message
    accepted, with the same key, value and timestamp."""
    frames, _, _, _, _ = decoded
    produced: dict[tuple[str, int], list[tuple]] = {}
    for f in sorted(frames, key=lambda f: f.packet):
        if f.type == "Produce" and f.kind == "response":
            ok = {
                (t["name"], p["partition"])
                for t in f.fields["topics"]
                for p in t["partitions"]
                if p["error_code"] == 0
            }
            req = next(
                r for r in frames if r.packet == f.peer_packet and r.correlation_id == f.correlation_id
            )
            for m in req.messages:
                if (m.topic, m.partition) in ok:
                    produced.setdefault((m.topic, m.partition), []).append((m.key, m.value, m.timestamp_ms))
    delivered: dict[tuple[str, int, int], tuple] = {}
    for f in frames:
        if f.type == "Consume" and f.kind == "response":
            for m in f.messages:
                assert m.direction == "deliver"
                delivered[(m.topic, m.partition, m.offset)] = (m.key, m.value, m.timestamp_ms)
    assert delivered, "every capture consumes something"
    for (topic, partition, seq), msg in delivered.items():
        assert produced[(topic, partition)][seq - 1] == msg


def test_long_poll_consume_paired_with_its_latency(captures: Path) -> None:
    """t06: a tail Consume (seq 2^64-1, max wait 2^32-1 ms) sent at packet 64 is answered at
    packet 75 once another connection produced; tshark's frame.time_relative gives 0.012557 s
    and 2.014250 s, i.e. 2,001,693 µs."""
    frames, _, exchanges = dissect_lists(captures / "tank" / "t06-boundary-and-tail.pcap")
    by_packet = {(f.packet, f.kind): f for f in frames}
    req, resp = by_packet[(64, "request")], by_packet[(75, "response")]
    assert req.type == resp.type == "Consume" and req.correlation_id == resp.correlation_id == 1
    assert req.fields["topics"][0]["partitions"][0]["from"] == "tail"
    assert req.fields["max_wait_ms"] == 2**32 - 1
    assert (req.peer_packet, resp.peer_packet, resp.latency_us) == (75, 64, 2_001_693)
    assert [(m.offset, m.value) for m in resp.messages] == [(6, b"late1")]
    ex = next(e for e in exchanges if e.request_packet == 64)
    assert (ex.status, ex.response_packet, ex.latency_us) == ("answered", 75, 2_001_693)
