"""`wiredump stats`: its numbers equal the ones computed from the exported tables (pyarrow)."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict

import pyarrow.parquet as pq
import pytest
from cli_support import read_tsv, run_cli

from wiredump.dissect.stats import bucket_bounds, histogram, latency_summary, percentile


def nearest_rank(values: list[int], q: float) -> int:
    s = sorted(values)
    return s[math.ceil(q * len(s)) - 1]


@pytest.fixture(scope="module")
def pcaps(captures):
    return [
        captures / "kafka" / "kafka-python-legacy-msgset.pcap",
        captures / "tank" / "t07-errors.pcap",
        captures / "pravega" / "p06-seal-and-errors.pcap",
    ]


@pytest.fixture()
def both(capsys, tmp_path, pcaps):
    res = run_cli(capsys, "export", *pcaps, "-o", tmp_path / "t")
    assert res.code == 0, res.err
    tables = {
        n: pq.read_table(tmp_path / "t" / f"{n}.parquet").to_pylist()
        for n in ("frames", "exchanges", "anomalies", "connections")
    }
    res = run_cli(capsys, "stats", "--json", *pcaps)
    assert res.code == 0, res.err
    return json.loads(res.out), tables


def test_types_match_the_tables(both):
    stats, t = both
    frames: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in t["frames"]:
        frames[(r["protocol"], r["type"])].append(r)
    lat: dict[tuple[str, str], list[int]] = defaultdict(list)
    unanswered: Counter[tuple[str, str]] = Counter()
    for e in t["exchanges"]:
        if e["status"] == "answered":
            lat[(e["protocol"], e["type"])].append(e["latency_us"])
        elif e["status"] == "unanswered":
            unanswered[(e["protocol"], e["type"])] += 1
    by_key = {(x["protocol"], x["type"]): x for x in stats["types"]}
    assert set(by_key) == set(frames) | set(lat) | set(unanswered)
    for key, rows in frames.items():
        s = by_key[key]
        assert s["frames"] == len(rows)
        assert s["bytes"] == sum(r["length"] for r in rows)
    for key, values in lat.items():
        got = by_key[key]["latency_us"]
        assert got["count"] == len(values)
        assert got["p50"] == nearest_rank(values, 0.5)
        assert got["p90"] == nearest_rank(values, 0.9)
        assert got["p99"] == nearest_rank(values, 0.99)
        assert got["max"] == max(values)
    for key, n in unanswered.items():
        assert by_key[key]["unanswered"] == n
    assert stats["totals"]["frames"] == len(t["frames"])
    assert stats["totals"]["unanswered"] == sum(unanswered.values())


def test_unanswered_agree_with_the_independent_decode(both, captures):
    """kafka-python-legacy-msgset.pdus.tsv: two Produce and one SyncGroup request have no peer."""
    stats, _ = both
    rows = read_tsv(captures / "kafka" / "kafka-python-legacy-msgset.pdus.tsv")
    want = Counter(r["api_name"] for r in rows if r["dir"] == "req" and not r["peer_frame"])
    got = {x["type"]: x["unanswered"] for x in stats["types"] if x["protocol"] == "kafka" and x["unanswered"]}
    assert got == dict(want) == {"Produce": 2, "SyncGroup": 1}


def test_errors_by_name(both, captures):
    stats, t = both
    errors = Counter((r["protocol"], r["type"], r["error"]) for r in t["frames"] if r["error"])
    got = Counter()
    for x in stats["types"]:
        for name, n in x["errors"].items():
            got[(x["protocol"], x["type"], name)] += n
    assert got == errors
    # t07-errors.pdus.tsv notes the TANK error responses; Pravega p06 answers NoSuchSegment twice
    pravega = read_tsv(captures / "pravega" / "p06-seal-and-errors.frames.tsv")
    assert sum(1 for r in pravega if r["type"] == "NoSuchSegment") == 2
    assert {x["type"]: x["frames"] for x in stats["types"] if x["protocol"] == "pravega"}[
        "NoSuchSegment"
    ] == 2


def test_connections_and_anomalies_match(both):
    stats, t = both
    conns = sorted(
        (c["capture"], c["stream"], c["frames"], c["bytes"], c["gaps"], c["retransmissions"], c["state"])
        for c in stats["connections"]
    )
    want = sorted(
        (
            r["capture"],
            r["stream"],
            r["frames"],
            r["bytes_client"] + r["bytes_server"],
            r["gaps"],
            r["retransmissions"],
            r["state"],
        )
        for r in t["connections"]
    )
    assert conns == want
    assert {k: v["count"] for k, v in stats["anomalies"].items()} == dict(
        Counter(r["kind"] for r in t["anomalies"])
    )
    assert sum(c["packets"] for c in stats["captures"]) > 0


def test_histogram_counts_every_answered_exchange(both, pcaps):
    stats, t = both
    for proto, buckets in stats["histogram"].items():
        n = sum(1 for e in t["exchanges"] if e["protocol"] == proto and e["status"] == "answered")
        assert sum(b["count"] for b in buckets) == n


def test_plain_stats_text(capsys, pcaps):
    res = run_cli(capsys, "stats", pcaps[0])
    assert res.code == 0
    out = res.out
    assert "\x1b" not in out
    assert "Frames by protocol and type" in out and "Connections" in out and "Anomalies" in out
    sync = next(x for x in out.splitlines() if x.startswith("kafka") and " SyncGroup " in x)
    assert sync.split()[-1] == "1"  # the unanswered column
    assert "Latency histogram" in out


def test_percentile_helpers():
    assert percentile([], 0.5) is None
    assert percentile([10], 0.99) == 10
    assert percentile(list(range(1, 101)), 0.9) == 90
    assert percentile([1, 2, 3, 4], 0.5) == 2
    s = latency_summary([30, 10, 20])
    assert (s["min"], s["p50"], s["max"], s["mean"]) == (10, 20, 30, 20.0)
    assert bucket_bounds(3, 1700) == [5, 10, 20, 50, 100, 200, 500, 1000, 2000]
    assert sum(c for _, c in histogram([1, 5, 6, 1000, 2000])) == 5


def test_filtered_stats_match_the_filtered_tables(capsys, both, pcaps):
    _, t = both
    res = run_cli(capsys, "stats", "--json", "-Y", "protocol == kafka && type == Produce", *pcaps)
    assert res.code == 0, res.err
    stats = json.loads(res.out)
    frames = [r for r in t["frames"] if r["protocol"] == "kafka" and r["type"] == "Produce"]
    assert stats["totals"]["frames"] == len(frames) == stats["types"][0]["frames"]
    assert [(x["protocol"], x["type"]) for x in stats["types"]] == [("kafka", "Produce")]
    lat = [
        e["latency_us"]
        for e in t["exchanges"]
        if e["protocol"] == "kafka" and e["type"] == "Produce" and e["status"] == "answered"
    ]
    assert stats["types"][0]["latency_us"]["max"] == max(lat)
    assert stats["types"][0]["unanswered"] == 2
    streams = {(r["capture"], r["stream"]) for r in frames}
    assert {(c["capture"], c["stream"]) for c in stats["connections"]} == streams
    res = run_cli(capsys, "stats", "-Y", "type ==", *pcaps)
    assert res.code == 2 and "bad filter" in res.err
