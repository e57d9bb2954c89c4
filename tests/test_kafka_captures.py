"""Kafka: every real capture decodes as its independent decode says.

`X.pdus.tsv` beside each capture was made without wiredump (stream, packets, api key,
version, correlation id, peer); `X.scenario.json` says what the client did (records
produced and consumed). Checked here: the same PDUs at the same packets with the same
pairing, no frame that is not `ok`, every batch checksum verified, and the record
counts of the scenario in the messages.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from functools import cache

import pytest

from tests.conftest import CAPTURES
from wiredump.dissect.model import Anomaly, Exchange, Frame
from wiredump.dissect.pipeline import Options, dissect

CAPS = CAPTURES / "kafka"
NAMES = sorted(p.stem for p in CAPS.glob("*.pcap")) if CAPS.exists() else []

pytestmark = pytest.mark.skipif(not NAMES, reason="Kafka captures not available")


@cache
def run(name: str) -> tuple[list[Frame], list[Anomaly], list[Exchange]]:
    frames: list[Frame] = []
    anomalies: list[Anomaly] = []
    exchanges: list[Exchange] = []
    for ev in dissect([str(CAPS / f"{name}.pcap")], Options()):
        if ev.kind == "frame":
            frames.append(ev.obj)
        elif ev.kind == "anomaly":
            anomalies.append(ev.obj)
        elif ev.kind == "exchange":
            exchanges.append(ev.obj)
    return frames, anomalies, exchanges


def rows(name: str) -> list[dict[str, str]]:
    with (CAPS / f"{name}.pdus.tsv").open() as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def scenario(name: str) -> dict | None:
    p = CAPS / f"{name}.scenario.json"
    return json.loads(p.read_text()) if p.exists() else None


@pytest.mark.parametrize("name", NAMES)
def test_frames_match_independent_decode(name: str) -> None:
    frames, _, _ = run(name)
    by_packet = {(f.stream, f.packet, f.kind): f for f in frames}
    got = set()
    for f in frames:
        peer = None
        if f.peer_packet:
            other = by_packet[(f.stream, f.peer_packet, "response" if f.kind == "request" else "request")]
            peer = other.first_packet
        got.add(
            (f.stream, "req" if f.kind == "request" else "resp", f.first_packet, f.packet)
            + (f.type_code, f.version, f.correlation_id, peer, f.length - 4)
        )
    expected = {
        (int(r["stream"]), r["dir"], int(r["first_frame"]), int(r["last_frame"]))
        + (int(r["api_key"]), int(r["api_version"]), int(r["correlation_id"]))
        + (int(r["peer_frame"]) if r["peer_frame"] else None, int(r["length"]))
        for r in rows(name)
    }
    assert len(frames) == len(expected)
    assert got == expected
    # API names and client ids as the independent decode has them.
    names = {
        (int(r["stream"]), int(r["first_frame"]), r["api_name"], r["client_id"] or None) for r in rows(name)
    }
    mine = {(f.stream, f.first_packet, f.type, f.fields["header"].get("client_id")) for f in frames}
    assert mine == names


@pytest.mark.parametrize("name", NAMES)
def test_no_bad_frames_and_every_request_paired(name: str) -> None:
    frames, anomalies, exchanges = run(name)
    assert [(f.packet, f.status) for f in frames if f.status != "ok"] == []
    kinds = Counter(a.kind for a in anomalies)
    assert not kinds.keys() - {"header_version"}, kinds
    unpaired = {int(r["first_frame"]) for r in rows(name) if r["dir"] == "req" and not r["peer_frame"]}
    statuses = Counter(e.status for e in exchanges)
    assert statuses["answered"] == sum(1 for r in rows(name) if r["dir"] == "resp")
    assert statuses["no_request"] == 0
    assert statuses["unanswered"] + statuses["no_response_expected"] == len(unpaired)


@pytest.mark.parametrize("name", NAMES)
def test_every_batch_checksum_verified(name: str) -> None:
    frames, _, _ = run(name)
    batches = ok = bad = 0
    for f in frames:
        st = f.fields.get("record_stats") or {}
        batches += st.get("batches", 0) + st.get("messages", 0)
        ok += st.get("crc_ok", 0)
        bad += st.get("crc_bad", 0)
    assert batches > 0
    assert bad == 0 and ok == batches
    assert all(m.checksum_ok for f in frames for m in f.messages)


def _expected_counts(sc: dict) -> tuple[int, int]:
    produced = consumed = 0
    for step in sc["steps"]:
        text = step["step"]
        if m := re.search(r"producer sent (\d+)", text):
            produced += int(m.group(1))
        elif m := re.search(r"delivered (\d+)/", text):
            produced += int(m.group(1))
        elif m := re.search(r": (\d+)/(\d+) failed", text):
            produced += int(m.group(2))  # sent on the wire, refused by the broker
        if m := re.search(r"received (\d+)/", text):
            consumed += int(m.group(1))
    return produced, consumed


@pytest.mark.parametrize(
    "name", [n for n in NAMES if (CAPS / f"{n}.scenario.json").exists() and not n.startswith("admin")]
)
def test_record_counts_match_scenario(name: str) -> None:
    frames, _, _ = run(name)
    sc = scenario(name)
    assert sc is not None
    produced, consumed = _expected_counts(sc)
    msgs = Counter(m.direction for f in frames for m in f.messages)
    assert msgs["produce"] == produced
    assert msgs["deliver"] == consumed
    # Produce messages only in Produce requests, deliveries only in Fetch responses.
    assert {f.type for f in frames if any(m.direction == "produce" for m in f.messages)} == {"Produce"}
    if consumed:
        assert {f.type for f in frames if any(m.direction == "deliver" for m in f.messages)} == {"Fetch"}


def test_basic_topic_offsets_and_codecs() -> None:
    frames, _, _ = run("kafka-python-basic")
    delivered = [m for f in frames for m in f.messages if m.direction == "deliver"]
    assert {m.topic for m in delivered} == {"kp-basic"}
    # 201 records consumed once each: offsets 0..200 across the partitions.
    per_part = Counter(m.partition for m in delivered)
    assert sum(per_part.values()) == 201
    for p in per_part:
        offs = sorted(m.offset for m in delivered if m.partition == p)
        assert offs == list(range(len(offs)))
    for codec in ("gzip", "lz4", "snappy", "zstd"):
        frames, _, _ = run(f"ck-compress-{codec}")
        produced = [m for f in frames for m in f.messages if m.direction == "produce"]
        assert {m.compression for m in produced} == {codec}
        assert {m.topic for m in produced} == {f"ck-{codec}"}
        # Fetch v16 names topics by id only: resolved through the Metadata responses.
        delivered = [m for f in frames for m in f.messages if m.direction == "deliver"]
        assert {f.version for f in frames if f.type == "Fetch"} == {16}
        assert {m.topic for m in delivered} == {f"ck-{codec}"}


def test_legacy_message_sets() -> None:
    frames, _, _ = run("kafka-python-legacy-msgset")
    produce = [f for f in frames if f.type == "Produce" and f.kind == "request"]
    magics = Counter()
    codecs = Counter()
    for f in produce:
        for t in f.fields["body"]["topic_data"]:
            for p in t["partition_data"]:
                for b in p["records"]["batches"]:
                    magics[b["magic"]] += 1
                    codecs[b["compression"]] += 1
    # api_version (0,10,1) -> magic 1 (none, gzip, snappy, lz4); (0,9) -> magic 0 (none, gzip).
    assert set(magics) == {0, 1}
    assert set(codecs) == {None, "gzip", "snappy", "lz4"}


def test_third_party_capture() -> None:
    frames, _, _ = run("go-sniffer-kafka")
    produced = [m for f in frames for m in f.messages]
    assert len(produced) == 1
    assert produced[0].topic == "test"
    assert produced[0].value is not None and produced[0].value.startswith(b"{")
    md = next(f for f in frames if f.type == "Metadata" and f.kind == "response")
    assert "test" in {t["name"] for t in md.fields["body"]["topics"]}


def test_consumer_protocol_embedded_in_group_apis() -> None:
    # kafka-python's consumer joins kp-basic-group subscribing to kp-basic and is assigned
    # both partitions (the bytes, hand-checked: version 0, ["kp-basic"], partitions [0, 1]).
    frames, _, _ = run("kafka-python-basic")
    join = next(f for f in frames if f.type == "JoinGroup" and f.kind == "request")
    assert {p["metadata_decoded"]["topics"][0] for p in join.fields["body"]["protocols"]} == {"kp-basic"}
    sync = next(f for f in frames if f.type == "SyncGroup" and f.kind == "response")
    assert sync.fields["body"]["assignment_decoded"]["assigned_partitions"] == [
        {"topic": "kp-basic", "partitions": [0, 1]}
    ]
    assert sync.summary == "assigned kp-basic[0, 1]"
