"""Pravega: every real capture decodes as its independent decode says.

The decodes beside the captures (`X.frames.tsv`, `X.summary.json`) were made
without wiredump. Checked here: the same commands and type codes at the same
packets, in the same direction and connection, with the same payload lengths,
request ids, segments, writer ids, event numbers and offsets; every reply paired
with the request carrying its request id; the command counts each way; as many
produced events as `events_in_appends`; SegmentRead event counts as the `events`
column says (`0+NB` = raw byte-stream data, no events); and no anomaly (the
independent decode found no problem).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import dissect_lists, tsv_rows

PRAVEGA = "pravega"
NAMES = [
    "p01-writer-reader-basic",
    "p02-batching-multi-segment",
    "p04-byte-stream",
    "p06-seal-and-errors",
    "p08-large-events",
]
LONG_MIN = -(2**63)


def _opt(v: str) -> int | None:
    return int(v) if v != "" else None


def _role(r: dict[str, str]) -> str:
    return "client" if r["dir"] == "c>s" else "server"


@pytest.fixture(scope="module", params=NAMES)
def decoded(request: pytest.FixtureRequest, captures: Path):
    base = captures / "pravega" / request.param
    frames, anomalies, exchanges = dissect_lists(base.with_suffix(".pcap"), PRAVEGA)
    rows = tsv_rows(base.with_suffix(".frames.tsv"))
    summary = json.loads(base.with_suffix(".summary.json").read_text())
    return frames, anomalies, exchanges, rows, summary


def _frame_at(frames: list, r: dict[str, str]):
    hits = [
        f
        for f in frames
        if f.stream == int(r["stream"]) and f.packet == int(r["last_frame"]) and f.type == r["type"]
    ]
    assert len(hits) == 1, r
    return hits[0]


def test_same_commands_at_same_packets(decoded) -> None:
    frames, _, _, rows, _ = decoded
    want = Counter(
        (
            int(r["stream"]),
            _role(r),
            int(r["first_frame"]),
            int(r["last_frame"]),
            int(r["type_code"]),
            r["type"],
            int(r["length"]) + 8,  # the tsv gives the payload length; frames count the 8-byte header too
            _opt(r["request_id"]),
        )
        for r in rows
    )
    got = Counter(
        (f.stream, f.role, f.first_packet, f.packet, f.type_code, f.type, f.length, f.correlation_id)
        for f in frames
    )
    assert got == want


def test_fields_match_the_independent_decode(decoded) -> None:
    frames, _, _, rows, _ = decoded
    for r in rows:
        f = _frame_at(frames, r)
        d = f.fields
        assert f.status == "ok", (r, f.anomalies)
        if r["segment"] and f.type not in ("AppendBlockEnd", "DataAppended", "ConditionalBlockEnd"):
            assert d["segment"] == r["segment"], r
        if r["writer_id"]:
            assert uuid.UUID(d["writer_id"]).hex == r["writer_id"], r
        if r["event_number"]:
            key = "last_event_number" if f.type in ("AppendBlockEnd", "AppendSetup") else "event_number"
            assert d[key] == int(r["event_number"]), r
        if r["offset"] and f.type in ("ReadSegment", "SegmentRead", "NoSuchSegment", "SegmentIsSealed"):
            assert d["offset"] == int(r["offset"]), r
        if r["data_len"]:
            assert d["data_length"] == int(r["data_len"]), r


def test_events_per_command(decoded) -> None:
    frames, _, _, rows, _ = decoded
    for r in rows:
        if not r["events"]:
            continue
        f = _frame_at(frames, r)
        if r["events"].isdigit():
            want, kind = int(r["events"]), "events"
        else:  # "0+28B": raw byte-stream bytes, not event records
            assert r["events"] == f"0+{r['data_len']}B"
            want, kind = 0, ("raw" if int(r["data_len"]) else "empty")
        assert len(f.messages) == want, r
        if want:
            assert f.fields["data_kind"] == kind
        direction = "produce" if r["dir"] == "c>s" else "deliver"
        assert all(m.direction == direction for m in f.messages)
        if direction == "deliver" or not f.messages:
            continue
        # Produced events carry the writer, the segment its SetupAppend named, consecutive event numbers.
        last = int(r["event_number"])
        assert [m.offset for m in f.messages] == list(range(last - want + 1, last + 1))
        assert all(uuid.UUID(m.detail["writer_id"]).hex == r["writer_id"] for m in f.messages)
        setup = [s for s in rows if s["type"] == "SetupAppend" and s["writer_id"] == r["writer_id"]]
        assert {m.topic for m in f.messages} == {setup[0]["segment"]}


def test_event_totals(decoded) -> None:
    frames, _, _, _, summary = decoded
    produced = sum(1 for f in frames for m in f.messages if m.direction == "produce")
    assert produced == summary["events_in_appends"]


def test_command_counts_each_way(decoded) -> None:
    frames, _, _, _, summary = decoded
    assert len(frames) == summary["commands"]
    assert Counter(f.type for f in frames if f.role == "client") == Counter(summary["client_to_server"])
    assert Counter(f.type for f in frames if f.role == "server") == Counter(summary["server_to_client"])
    assert max(f.length - 8 for f in frames) == summary["max_command_length"]


def test_replies_pair_with_their_request_id(decoded) -> None:
    """Every reply's peer is the request with its request id (stream-local), and back."""
    frames, _, exchanges, rows, _ = decoded
    requests = {
        (int(r["stream"]), int(r["request_id"])): int(r["last_frame"])
        for r in rows
        if r["dir"] == "c>s" and r["request_id"]
    }
    replies = 0
    for r in rows:
        if r["dir"] != "s>c" or not r["request_id"]:
            continue
        f = _frame_at(frames, r)
        want = requests[(int(r["stream"]), int(r["request_id"]))]
        assert f.peer_packet == want, r
        assert f.latency_us is not None and f.latency_us >= 0
        replies += 1
    assert replies > 0
    answered = [e for e in exchanges if e.status == "answered" and e.protocol == PRAVEGA]
    assert len(answered) == replies + sum(1 for r in rows if r["type"] == "Hello" and r["dir"] == "s>c")
    # Requests left unanswered are reads parked at the tail of a segment when the capture ended.
    unanswered = [e for e in exchanges if e.status != "answered" and e.protocol == PRAVEGA]
    assert all(e.type == "ReadSegment" and e.status == "unanswered" for e in unanswered)
    assert not [e for e in exchanges if e.status == "no_request"]


def test_errors_name_the_reply(decoded) -> None:
    frames, _, _, _, _ = decoded
    for f in frames:
        if f.type in ("SegmentIsSealed", "NoSuchSegment", "SegmentIsTruncated", "TableKeyBadVersion"):
            assert f.error == f.type and f.error_code == f.type_code
        else:
            assert f.error is None and f.error_code is None


def test_hello_versions(decoded) -> None:
    """The Rust client 0.3.7 says Hello(15, 5); the segment store (Pravega master) says (17, 5)."""
    frames, _, _, _, _ = decoded
    hellos = [f for f in frames if f.type == "Hello"]
    assert hellos
    for f in hellos:
        want = (15, 5) if f.role == "client" else (17, 5)
        assert (f.fields["high_version"], f.fields["low_version"]) == want
        assert f.version == want[0]
    servers = [f for f in hellos if f.role == "server"]
    assert all(f.fields["versions"] == "differ" and f.status == "ok" for f in servers)


def test_no_anomalies(decoded) -> None:
    frames, anomalies, _, _, summary = decoded
    assert summary["decode_problems"] == 0
    assert [a for a in anomalies if a.protocol in (PRAVEGA, None)] == []
    assert [a for f in frames for a in f.anomalies] == []
