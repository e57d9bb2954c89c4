"""Display filters on declared fields (`-Y kafka.topic == …`), checked against independent decodes.

Expected frame sets come from tshark (Kafka, the capture pinned to versions tshark 4.0
decodes) and from the decodes beside the captures (pdus.tsv, summary.json,
frames.tsv), never from wiredump's own output.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.cli_support import pcap_times, run_cli
from tests.conftest import tsv_rows
from wiredump.dissect.filter import DisplayFilter, FilterError
from wiredump.dissect.pipeline import FRAME, Options, dissect
from wiredump.dissect.saferegex import SafeRegex

PINNED = "kafka/kafka-python-pinned-2.5.pcap"


def matching(path: Path, text: str) -> Counter[tuple[int, str]]:
    """(packet, type) of every frame the filter keeps, counted (several frames may share a packet)."""
    flt = DisplayFilter(text)
    out: Counter[tuple[int, str]] = Counter()
    for ev in dissect([str(path)], Options(messages=flt.needs_messages)):
        if ev.kind == FRAME and flt.matches(ev.obj):
            out[(ev.obj.packet, ev.obj.type)] += 1
    return out


def tshark_frames(path: Path, flt: str) -> set[int]:
    if shutil.which("tshark") is None:
        pytest.skip("tshark not installed")
    res = subprocess.run(
        ["tshark", "-r", str(path), "-Y", flt, "-T", "fields", "-e", "frame.number"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {int(x) for x in res.stdout.split()}


# -- Kafka against tshark -----------------------------------------------------------------------------
EMBEDDED_TOPICS = {"JoinGroup", "SyncGroup"}
"""Frames whose topics sit in the embedded consumer protocol, which wiredump decodes and tshark leaves as
bytes: there wiredump finds topics tshark cannot."""


@pytest.mark.parametrize("topic", ["kp-pinned", "kp-pinned-gzip", "kp-pinned-zstd"])
def test_kafka_topic_matches_tshark_topic_name(captures: Path, topic: str) -> None:
    path = captures / PINNED
    expected = tshark_frames(path, f'kafka.topic_name == "{topic}"')
    assert expected
    for name in ("kafka.topic", "kafka.topic_name"):
        got = matching(path, f'{name} == "{topic}"')
        packets = {p for p, _ in got}
        assert expected <= packets
        assert {t for p, t in got if p not in expected} <= EMBEDDED_TOPICS


def test_kafka_topic_and_partition_match_tshark(captures: Path) -> None:
    path = captures / PINNED
    expected = tshark_frames(path, 'kafka.topic_name == "kp-pinned" && kafka.partition_id == 1')
    got = matching(path, 'kafka.topic == "kp-pinned" && kafka.partition == 1')
    assert expected and expected <= {p for p, _ in got}
    assert {t for p, t in got if p not in expected} <= EMBEDDED_TOPICS


def test_kafka_client_id_matches_pdus(captures: Path) -> None:
    path = captures / PINNED
    rows = tsv_rows(path.with_name(path.stem + ".pdus.tsv"))
    ids = {r["client_id"] for r in rows if r["client_id"]}
    assert len(ids) >= 2
    for cid in ids:
        expected = Counter((int(r["last_frame"]), r["api_name"]) for r in rows if r["client_id"] == cid)
        assert matching(path, f'kafka.client_id == "{cid}"') == expected
        assert (
            matching(path, f'kafka.client_id contains "{cid[3:9]}" && kafka.client_id == "{cid}"') == expected
        )


def test_kafka_group_id_and_error_by_name(captures: Path) -> None:
    """The consumer's first JoinGroup is refused with MEMBER_ID_REQUIRED (79), as tshark reads it."""
    path = captures / PINNED
    expected = tshark_frames(path, "kafka.error == 79")
    assert expected
    assert {p for p, _ in matching(path, "kafka.error == MEMBER_ID_REQUIRED")} == expected
    assert {p for p, _ in matching(path, "kafka.error == 79")} == expected
    groups = tshark_frames(path, 'kafka.consumer_group == "kp-pinned-group"')
    assert groups <= {p for p, _ in matching(path, 'kafka.group_id == "kp-pinned-group"')}


def test_kafka_record_key_matches(captures: Path) -> None:
    """Record keys (per-message decoding turned on by the filter) against tshark's kafka.message_key."""
    path = captures / PINNED
    key = b"kp-pinned-gzip-key-0003"
    expected = tshark_frames(path, f"kafka.message_key == {key.hex(':')}")
    assert expected
    got = matching(path, f'kafka.record.key == "{key.decode()}"')
    assert {p for p, _ in got} == expected
    assert {
        p for p, _ in matching(path, 'kafka.message_key matches "^kp-pinned-gzip-key-000[3]$"')
    } == expected


# -- Pulsar, Pravega, TANK against their summaries ---------------------------------------------------------
def test_pulsar_producer_name_and_sequence_id(captures: Path) -> None:
    path = captures / "pulsar/s01-producer-nobatch.pcap"
    summary = json.loads(path.with_suffix(".summary.json").read_text())

    def values(fr: dict, key: str) -> list[str]:
        meta = (fr.get("payload") or {}).get("metadata") or {}
        return [str(d[key]) for d in (fr["command"], meta) if key in d]

    expected = Counter(
        (fr["last_packet"], fr["type"])
        for fr in summary["frames"]
        if "s01-producer" in values(fr, "producer_name")
    )
    assert expected
    assert matching(path, 'pulsar.producer_name == "s01-producer"') == expected
    expected = Counter(
        (fr["last_packet"], fr["type"]) for fr in summary["frames"] if "3" in values(fr, "sequence_id")
    )
    assert len(expected) >= 2  # the SEND and its receipt
    assert matching(path, "pulsar.sequence_id == 3") == expected


def test_pulsar_topic(captures: Path) -> None:
    path = captures / "pulsar/s01-producer-nobatch.pcap"
    summary = json.loads(path.with_suffix(".summary.json").read_text())
    topic = "persistent://public/default/s01-orders"
    with_topic = Counter(
        (fr["last_packet"], fr["type"]) for fr in summary["frames"] if fr["command"].get("topic") == topic
    )
    got = matching(path, f'pulsar.topic == "{topic}"')
    assert with_topic and all(got[k] >= n for k, n in with_topic.items())


@pytest.mark.parametrize("name", ["p01-writer-reader-basic", "p02-batching-multi-segment"])
def test_pravega_segment(captures: Path, name: str) -> None:
    path = captures / f"pravega/{name}.pcap"
    rows = tsv_rows(path.with_name(path.stem + ".frames.tsv"))
    segments = {r["segment"] for r in rows if r["segment"]}
    assert segments
    for seg in segments:
        expected = Counter((int(r["last_frame"]), r["type"]) for r in rows if r["segment"] == seg)
        got = matching(path, f'pravega.segment == "{seg}"')
        assert got == expected, seg


def test_tank_topic(captures: Path) -> None:
    path = captures / "tank/t02-bundles.pcap"
    rows = tsv_rows(path.with_name(path.stem + ".pdus.tsv"))
    named = [r for r in rows if r["topics"] and r["msg_name"] == "Produce"]
    assert named
    topic = named[0]["topics"].split(",")[0].split("/")[0]
    expected = Counter(
        (int(r["last_frame"]), "Produce")
        for r in named
        if topic in {t.split("/")[0] for t in r["topics"].split(",")}
    )
    got = matching(path, f'tank.topic == "{topic}" && type == Produce && kind == request')
    assert got == expected


# -- language ------------------------------------------------------------------------------------------
def test_unknown_field_names_the_closest(capsys: pytest.CaptureFixture[str], captures: Path) -> None:
    r = run_cli(capsys, captures / PINNED, "-Y", 'kafka.topik == "x"')
    assert r.code == 2
    assert "unknown field 'kafka.topik'; did you mean 'kafka.topic'?" in r.err
    assert r.err.splitlines()[-1] == "  ^"
    with pytest.raises(FilterError, match="did you mean MEMBER_ID_REQUIRED"):
        DisplayFilter("kafka.error == MEMBER_ID_REQUIRD")
    with pytest.raises(FilterError, match="structure"):
        DisplayFilter("kafka.topic_data == 1")
    with pytest.raises(FilterError, match="not supported"):
        DisplayFilter(r'kafka.topic matches "(a)\1"')


def test_frame_time_relative_against_pcap_times(capsys: pytest.CaptureFixture[str], captures: Path) -> None:
    """frame.time_relative counts from the capture's first packet (times read straight from the pcap)."""
    path = captures / PINNED
    times = pcap_times(path)
    rows = tsv_rows(path.with_name(path.stem + ".pdus.tsv"))

    def rel(r: dict[str, str]) -> int:
        return times[int(r["last_frame"]) - 1] - times[0]

    for text, keep in (
        ("frame.time_relative <= 100ms", lambda us: us <= 100_000),
        ("frame.time_relative > 0.1 && frame.time_relative < 3", lambda us: 100_000 < us < 3_000_000),
    ):
        expected = Counter((int(r["last_frame"]), r["api_name"]) for r in rows if keep(rel(r)))
        assert expected
        r = run_cli(capsys, path, "-Y", text, "-T", "fields", "-e", "frame.number", "-e", "type")
        assert r.code == 0, r.err
        got = Counter((int(n), t) for n, t in (line.split("\t") for line in r.out.splitlines()))
        assert got == expected


def test_safe_regex_agrees_with_re_and_never_backtracks() -> None:
    cases = ["^kp-(basic|pinned)$", "a.c", r"\d{2,3}-x", "(?i)ORDERS", r"\bgo\b", "colou?r", "[^a-c]+$"]
    texts = [
        "kp-basic",
        "kp-pinnedx",
        "abc",
        "a\nc",
        "12-x",
        "1-x",
        "my-orders",
        "ago go",
        "color",
        "abc",
        "abd",
        "",
    ]
    for pat in cases:
        rx = SafeRegex(pat)
        for t in texts:
            assert rx.search(t) == (re.search(pat, t) is not None), (pat, t)
    # `(a+)+$` against 'a'*n + 'b' is 2**n steps for a backtracking engine; here it is linear.
    started = time.process_time()
    assert SafeRegex("(a+)+b").search("a" * 30 + "b") is True
    assert SafeRegex("(a+)+$").search("a" * 30 + "b") is False
    assert time.process_time() - started < 5


def test_field_filters_give_the_same_lines_on_two_workers(
    capsys: pytest.CaptureFixture[str], captures: Path
) -> None:
    """The parallel timeline compiles the same filter in each worker (per-record fields included)."""
    path = captures / PINNED
    for flt in (
        'kafka.topic == "kp-pinned-lz4" && kafka.partition == 0',
        'kafka.record.key contains "lz4-key-0001"',
    ):
        serial = run_cli(capsys, path, "-Y", flt, "--workers", "1")
        parallel = run_cli(capsys, path, "-Y", flt, "--workers", "2")
        assert serial.code == parallel.code == 0
        assert serial.out and parallel.out == serial.out
    expected = tshark_frames(
        path, "kafka.message_key contains 6c:7a:34:2d:6b:65:79:2d:30:30:30:31"
    )  # "lz4-key-0001"
    assert {int(line.split()[0]) for line in serial.out.splitlines()} == expected


def test_safe_regex_agrees_with_re_on_generated_patterns() -> None:
    """Python's re is the oracle, on patterns and texts drawn from a small alphabet (fixed seed)."""
    import random

    rnd = random.Random(16)
    atoms = ["a", "b", ".", "[ab]", "[^a]", "(a|b)", "(ab)", "\\d", "x"]
    quants = ["", "", "*", "+", "?", "{1,2}"]
    anchors = [("", ""), ("^", ""), ("", "$"), ("\\b", "")]
    for _ in range(300):
        body = "".join(rnd.choice(atoms) + rnd.choice(quants) for _ in range(rnd.randint(1, 4)))
        head, tail = rnd.choice(anchors)
        pat = head + body + tail
        rx = SafeRegex(pat)
        for _ in range(8):
            text = "".join(rnd.choice("ab1x \n") for _ in range(rnd.randint(0, 12)))
            assert rx.search(text) == (re.search(pat, text) is not None), (pat, text)


def test_frame_time_delta_against_pcap_times(capsys: pytest.CaptureFixture[str], captures: Path) -> None:
    """frame.time_delta: seconds since the previous decoded frame (times read straight from the pcap)."""
    path = captures / PINNED
    times = pcap_times(path)
    r = run_cli(capsys, path, "-T", "fields", "-e", "frame.number", "-e", "frame.time_delta")
    assert r.code == 0, r.err
    rows = [line.split("\t") for line in r.out.splitlines()]
    assert len(rows) > 100
    previous = None
    for number, delta in rows:
        ts = times[int(number) - 1]
        expected = 0 if previous is None else ts - previous
        assert delta == f"{expected / 1e6:.9f}"
        previous = ts
    r = run_cli(capsys, path, "-Y", "frame.time_delta > 1", "-T", "fields", "-e", "frame.number")
    long_waits = [int(n) for (n, d) in rows if float(d) > 1]
    assert long_waits and [int(n) for n in r.out.split()] == long_waits
