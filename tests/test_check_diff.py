"""Baseline comparison on hand-made transcripts: pairing by content, repeat handling, diff places."""

from __future__ import annotations

from wiredump.check.diff import compare, pair
from wiredump.check.transcript import ConnTranscript, Entry, entry_key, project


def conn(
    protocol: str, client: list[tuple[str, int]], server: list[tuple[str, int]], stream: int = 0
) -> ConnTranscript:
    t = ConnTranscript(protocol, capture="run.pcap", stream=stream)
    packet = 1
    for role, items in (("client", client), ("server", server)):
        index = 1
        for typ, count in items:
            data = {"type": typ}
            t.side(role).append(Entry(data, entry_key(data), count, packet, index))
            packet += count
            index += count
    return t


def test_pairs_by_content_not_order() -> None:
    a = conn("kafka", [("ApiVersions", 1), ("Produce", 3)], [("ApiVersions", 1), ("Produce", 3)])
    b = conn("kafka", [("ApiVersions", 1), ("Fetch", 9)], [("ApiVersions", 1), ("Fetch", 9)])
    c = conn("pulsar", [("CONNECT", 1)], [("CONNECTED", 1)])
    run = [conn("pulsar", [("CONNECT", 1)], [("CONNECTED", 1)], 0), b, a]
    pairs, missing, extra = pair([a, b, c], run, repeat=True)
    assert pairs == [(0, 2), (1, 1), (2, 0)] and missing == [] and extra == []


def test_similar_connection_pairs_and_diff_names_first_difference() -> None:
    golden = conn("kafka", [("ApiVersions", 1), ("Metadata", 1), ("Produce", 5)], [("ApiVersions", 1)])
    drift = conn("kafka", [("ApiVersions", 1), ("Metadata", 1), ("Produce", 4)], [("ApiVersions", 1)], 7)
    (o, extra) = compare([golden], [drift], repeat=True, suite="b", source="b.yaml")
    assert not o.passed and extra.passed
    assert "stream 7 of run.pcap" in o.message
    assert "client entry 3 (packet 3, frame 3): expected Produce ×5; came Produce ×4" in o.message
    assert o.offenders[0].packet == 3 and o.offenders[0].role == "client"
    # Without repeat counts the two runs are the same.
    fields = frozenset({"type"})
    (o, _) = compare(
        [project(golden, fields)], [project(drift, fields)], repeat=False, suite="b", source="b.yaml"
    )
    assert o.passed


def test_missing_and_unexpected() -> None:
    golden = conn("tank", [("Produce", 1)], [("Produce", 1)])
    other = conn("pravega", [("Hello", 1)], [("Hello", 1)], 3)
    (o, extra) = compare([golden], [other], repeat=True, suite="b", source="b.yaml")
    assert not o.passed and o.message.startswith("missing")
    assert not extra.passed and extra.offenders[0].stream == 3 and "pravega" in extra.offenders[0].detail


def test_missing_entry_at_the_end_and_extra_entry() -> None:
    golden = conn("pulsar", [("CONNECT", 1), ("SEND", 2), ("CLOSE_PRODUCER", 1)], [])
    short = conn("pulsar", [("CONNECT", 1), ("SEND", 2)], [])
    (o, _) = compare([golden], [short], repeat=True, suite="b", source="b.yaml")
    assert "client entry 3: expected CLOSE_PRODUCER; missing (at the end)" in o.message
    longer = conn("pulsar", [("CONNECT", 1), ("SEND", 2), ("PING", 1), ("CLOSE_PRODUCER", 1)], [])
    (o, _) = compare([golden], [longer], repeat=True, suite="b", source="b.yaml")
    assert "client packet 4, frame 4: unexpected PING (after baseline client entry 2)" in o.message


def test_project_merges_runs_that_become_equal() -> None:
    t = ConnTranscript("kafka")
    for v, n in ((9, 2), (10, 3)):
        d = {"type": "Produce", "version": v}
        t.client.append(Entry(d, entry_key(d), n, 1, 1))
    p = project(t, frozenset({"type"}))
    assert [(e.data, e.count) for e in p.client] == [({"type": "Produce"}, 5)]
