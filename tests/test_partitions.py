"""The `partitions` table (issue 18 item 7): per-topic/partition results, typed, for every protocol.

Expected values come from outside wiredump: tshark's Kafka fields, the independent decodes
beside the captures (Pulsar summary.json, TANK pdus.tsv, Pravega frames.tsv), the scenario
files, and Kafka's own JSON message specs (`entityType: topicName`).
"""

from __future__ import annotations

import csv
import glob
import json
import re
import shutil
import subprocess
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from wiredump.dissect.pipeline import dissect
from wiredump.dissect.tables import PARTITIONS, TableSet

CAPTURES = Path("/work/shared/captures")
REFERENCE = Path("/work/shared/reference/kafka")
pytestmark = pytest.mark.skipif(not CAPTURES.is_dir(), reason="needs the shared captures")


@cache
def rows(capture: str) -> tuple[dict[str, Any], ...]:
    """The partitions table of a local export of one capture, as dicts."""
    import tempfile

    out = Path(tempfile.mkdtemp(prefix="wd-partitions-"))
    try:
        tables = TableSet(out)
        tables.add_events(dissect([str(CAPTURES / capture)]))
        tables.close()
        t = pq.read_table(out / "partitions.parquet")
        assert t.schema == PARTITIONS
        return tuple(t.to_pylist())
    finally:
        shutil.rmtree(out, ignore_errors=True)


def by_packet(capture: str, type_: str, role: str) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in rows(capture):
        if r["type"] == type_ and r["role"] == role:
            out[r["packet"]].append(r)
    return out


def tshark(capture: str, display: str, fields: list[str]) -> list[list[list[str]]]:
    """One list per matching packet: each field's comma-separated values."""
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed")
    cmd = ["tshark", "-r", str(CAPTURES / capture), "-Y", display, "-T", "fields", "-E", "separator=|"]
    for f in fields:
        cmd += ["-e", f]
    text = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return [[c.split(",") if c else [] for c in line.split("|")] for line in text.splitlines()]


# -- Kafka -----------------------------------------------------------------------------------------
def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _spec_topic_arrays() -> dict[tuple[str, str], set[str]]:
    """(API name, request/response) -> the arrays whose elements name a topic, from Kafka's own
    specs: arrays holding a field marked `entityType: topicName`, or a `TopicId` uuid."""
    out: dict[tuple[str, str], set[str]] = defaultdict(set)

    def walk(
        fields: list[dict[str, Any]], parent: str | None, key: tuple[str, str], common: dict[str, Any]
    ) -> None:
        for f in fields:
            if parent is not None and f["type"] in ("string", "uuid"):
                if f.get("entityType") == "topicName" or (f["name"] == "TopicId" and f["type"] == "uuid"):
                    out[key].add(_snake(parent))
            sub = f.get("fields") or common.get(f["type"].removeprefix("[]"))
            if sub:
                walk(sub, f["name"] if f["type"].startswith("[]") else None, key, common)

    for sub in ("message", "message-3.9"):
        for p in glob.glob(str(REFERENCE / sub / "*.json")):
            text = re.sub(r"^\s*//.*$", "", Path(p).read_text(), flags=re.M)
            d = json.loads(text)
            if d.get("type") in ("request", "response"):
                common = {c["name"]: c["fields"] for c in d.get("commonStructs", [])}
                key = (d["name"].removesuffix(d["type"].title()), d["type"])
                walk(d.get("fields", []), None, key, common)
    return out


KNOWN = {
    # Inter-broker APIs: v0-1 partition states repeat the topic name of the topic struct they sit
    # in; the rows take it from that topic struct, so the walk does not look inside.
    ("LeaderAndIsr", "request"): ({"partition_states"}, set()),
    ("UpdateMetadata", "request"): ({"partition_states"}, set()),
    # Kafka Streams' internal topics (TopicInfo.Name, TaskOffset.Topic) are topics the specs leave
    # unmarked: the walk names them too.
    ("StreamsGroupHeartbeat", "request"): (set(), {"state_changelog_topics", "repartition_source_topics"}),
    ("StreamsGroupHeartbeat", "response"): (set(), {"partitions"}),
    ("StreamsGroupDescribe", "response"): (set(), {"state_changelog_topics", "repartition_source_topics"}),
}
"""(API, direction) -> (marked in the specs but not walked, walked but not marked), with why."""


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="needs Kafka's JSON specs")
def test_kafka_topic_arrays_are_the_ones_the_specs_mark_as_topics() -> None:
    """The engine's partitions walk (generated at build time from the schema) follows exactly the
    arrays Kafka's specs mark as naming topics, for every API and both directions."""
    from wiredump._engine import kafka_topic_arrays

    from wiredump.dissect.protocols.kafka import schema as kafka_schema

    spec = _spec_topic_arrays()
    checked = 0
    for key, name in kafka_schema.api_names().items():
        for direction in ("request", "response"):
            want = spec.get((name, direction), set())
            got = set(kafka_topic_arrays(key, direction == "response"))
            missing, extra = KNOWN.get((name, direction), (set(), set()))
            assert (want - got, got - want) == (missing, extra), (name, direction)
            checked += bool(want)
    assert checked > 60  # most APIs name topics somewhere


PINNED = "kafka/kafka-python-pinned-2.5.pcap"


def test_kafka_produce_responses_equal_tshark() -> None:
    """Topic, partition, error, base offset and log start offset of every Produce response (v8)."""
    ours = by_packet(PINNED, "Produce", "server")
    theirs = tshark(
        PINNED,
        "kafka.response_key == 0",
        [
            "frame.number",
            "kafka.topic_name",
            "kafka.partition_id",
            "kafka.error",
            "kafka.offset",
            "kafka.log_start_offset",
        ],
    )
    assert len(theirs) == len(ours) >= 9
    for (packet,), (topic,), parts, errors, offsets, starts in theirs:
        got = ours[int(packet)]
        assert [
            (r["topic"], r["partition"], r["error_code"], r["offset"], r["log_start_offset"]) for r in got
        ] == [
            (topic, int(p), int(e), int(o), int(s))
            for p, e, o, s in zip(parts, errors, offsets, starts, strict=True)
        ]
        assert all(r["error"] is None for r in got)


def test_kafka_fetch_responses_equal_tshark() -> None:
    """Topics, partitions, errors and high watermarks of the Fetch responses (v11) that return no
    records (tshark then lists one offset per partition: its high watermark)."""
    ours = by_packet(PINNED, "Fetch", "server")
    theirs = tshark(
        PINNED,
        "kafka.response_key == 1",
        ["frame.number", "kafka.topic_name", "kafka.partition_id", "kafka.error", "kafka.offset"],
    )
    checked = 0
    for (packet,), topics, parts, errors, offsets in theirs:
        got = ours[int(packet)]
        assert [r["partition"] for r in got] == [int(p) for p in parts]
        names = [r["topic"] for r in got]
        assert [t for i, t in enumerate(names) if i == 0 or names[i - 1] != t] == topics
        assert [r["error_code"] for r in got] == [int(e) for e in errors[1:]]  # errors[0]: the top-level one
        if len(offsets) == len(parts):
            assert [r["high_watermark"] for r in got] == [int(o) for o in offsets]
            checked += 1
    assert checked >= 5


def test_kafka_topic_ids_show_the_names_the_run_learnt() -> None:
    """confluent-kafka fetches with v16 (topics by id only): the rows name the topic the scenario
    created, and the partitions' last high watermarks add up to the 200 messages it produced."""
    capture = "kafka/ck-compress-gzip.pcap"
    scenario = json.loads((CAPTURES / capture).with_suffix(".scenario.json").read_text())
    assert scenario["steps"][0]["step"] == "create_topics ck-gzip"
    assert "delivered 200/200" in scenario["steps"][1]["step"]
    fetch = [r for r in rows(capture) if r["type"] == "Fetch" and r["role"] == "server"]
    assert fetch and {r["topic"] for r in fetch} == {"ck-gzip"}
    last: dict[int, int] = {}
    for r in fetch:
        last[r["partition"]] = r["high_watermark"]
    assert sum(last.values()) == 200
    produced = sum(r["records"] for r in rows(capture) if r["type"] == "Produce" and r["role"] == "client")
    assert produced == 200


def test_error_rate_by_topic_is_one_simple_query(tmp_path: Path) -> None:
    """The docs' query, on a real export: every response row counted, errors among them."""
    duckdb = pytest.importorskip("duckdb")
    tables = TableSet(tmp_path)
    tables.add_events(dissect([str(CAPTURES / PINNED), str(CAPTURES / "tank/t06-boundary-and-tail.pcap")]))
    tables.close()
    got = duckdb.sql(
        f"""SELECT protocol, topic, count(*) AS results, count(*) FILTER (error_code <> 0) AS errors
            FROM '{tmp_path}/partitions.parquet' WHERE role = 'server' AND error_code IS NOT NULL
            GROUP BY ALL ORDER BY ALL"""
    ).fetchall()
    d = {(p, t): (n, e) for p, t, n, e in got}
    assert d[("tank", "tail")][1] >= 1  # the boundary check of t06 (its Consume past the tail)
    assert all(e == 0 for (p, _), (_, e) in d.items() if p == "kafka")  # tshark: every error is 0


# -- Pulsar, TANK, Pravega --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["s01-producer-nobatch", "s02-producer-batching", "s04-consumer"])
def test_pulsar_frames_name_the_topic_of_their_producer_or_consumer(name: str) -> None:
    summary = json.loads((CAPTURES / "pulsar" / f"{name}.summary.json").read_text())
    producers: dict[tuple[int, str], str] = {}
    consumers: dict[tuple[int, str], str] = {}
    want: dict[tuple[int, str], tuple[str, int | None]] = {}
    for fr in summary["frames"]:
        cmd, conn = fr.get("command") or {}, fr["conn"]
        if fr["type"] == "PRODUCER":
            producers[(conn, cmd["producer_id"])] = cmd["topic"]
        elif fr["type"] == "SUBSCRIBE":
            consumers[(conn, cmd["consumer_id"])] = cmd["topic"]
        topic = producers.get((conn, cmd.get("producer_id"))) or consumers.get((conn, cmd.get("consumer_id")))
        if fr["type"] in ("SEND", "SEND_RECEIPT", "MESSAGE", "FLOW", "CLOSE_PRODUCER") and topic:
            payload = fr.get("payload") or {}
            entries = payload.get("batch_entries")
            records = len(entries) if isinstance(entries, list) else (1 if payload else None)
            want[(fr["last_packet"], fr["type"])] = (topic, records)
    got = {(r["packet"], r["type"]): (r["topic"], r["records"]) for r in rows(f"pulsar/{name}.pcap")}
    assert len(want) >= 10
    for key, value in want.items():
        assert got[key] == value, key


@pytest.mark.parametrize("name", ["t01-basic", "t02-bundles", "t06-boundary-and-tail"])
def test_tank_produce_and_consume_name_their_topic_and_partition(name: str) -> None:
    """pdus.tsv lists `topic/partition` of each Produce/Consume request and its bundles' messages."""
    with open(CAPTURES / "tank" / f"{name}.pdus.tsv", newline="") as fh:
        pdus = list(csv.DictReader(fh, delimiter="\t"))
    got = defaultdict(list)
    for r in rows(f"tank/{name}.pcap"):
        if r["role"] == "client":
            got[(r["packet"], r["type"])].append(r)
    checked = 0
    for p in pdus:
        if p["dir"] != "c>s" or p["msg_name"] not in ("Produce", "Consume") or not p["topics"]:
            continue
        ours = got[(int(p["last_frame"]), p["msg_name"])]
        assert {f"{r['topic']}/{r['partition']}" for r in ours} == set(p["topics"].split(","))
        if p["msg_name"] == "Produce" and p["bundle_msgs"]:
            assert sum(r["records"] or 0 for r in ours) >= int(p["bundle_msgs"])
        checked += 1
    assert checked >= 2


def test_tank_consume_past_the_tail_is_a_typed_error() -> None:
    """t06 consumes from seqnum 100000: TANK answers with a boundary check (errorOrFlags 1) and the
    partition's high watermark, the number of messages produced before it (pdus.tsv)."""
    capture = "tank/t06-boundary-and-tail"
    with open(CAPTURES / f"{capture}.pdus.tsv", newline="") as fh:
        pdus = list(csv.DictReader(fh, delimiter="\t"))
    consume = by_packet(f"{capture}.pcap", "Consume", "client")
    assert any(r["offset"] == 100000 for rs in consume.values() for r in rs)
    answers = [r for rs in by_packet(f"{capture}.pcap", "Consume", "server").values() for r in rs]
    boundary = [r for r in answers if r["error_code"] == 1]
    assert boundary and boundary[0]["topic"] == "tail" and boundary[0]["partition"] == 0
    assert boundary[0]["error"] == "boundary_check"
    produced = sum(
        int(p["bundle_msgs"])
        for p in pdus
        if p["dir"] == "c>s" and p["msg_name"] == "Produce" and int(p["last_frame"]) < boundary[0]["packet"]
    )
    assert produced == 5 and boundary[0]["high_watermark"] == produced


@pytest.mark.parametrize("name", ["p01-writer-reader-basic", "p06-seal-and-errors"])
def test_pravega_segments_are_the_topics(name: str) -> None:
    """frames.tsv names the segment of setups and reads; appends and their acks by writer id."""
    with open(CAPTURES / "pravega" / f"{name}.frames.tsv", newline="") as fh:
        frames = list(csv.DictReader(fh, delimiter="\t"))
    writer_segment: dict[str, str] = {}
    got = {(r["packet"], r["type"]): r for r in rows(f"pravega/{name}.pcap")}
    checked = 0
    for fr in frames:
        writer = fr["writer_id"]
        if fr["type"] == "SetupAppend":
            writer_segment[writer] = fr["segment"]
        segment = fr["segment"] or writer_segment.get(writer)
        if not segment or fr["type"] in ("Hello", "KeepAlive"):
            continue
        r = got.get((int(fr["last_frame"]), fr["type"]))
        assert r is not None, fr
        assert r["topic"] == segment and r["partition"] is None
        if fr["offset"]:
            assert r["offset"] == int(fr["offset"])
        checked += 1
    assert checked >= 10


def test_two_workers_give_the_serial_partitions(tmp_path: Path) -> None:
    """confluent-kafka fetches by topic id (v16) on one of its seven connections: with `--workers 2`
    each worker decodes only its connections (and observes the others' for topic names), yet every
    row equals the serial one, names and order included."""
    from wiredump.dissect.parallel import export_parallel
    from wiredump.dissect.pipeline import Options

    capture = str(CAPTURES / "kafka/ck-compress-gzip.pcap")
    export_parallel([capture], tmp_path / "two", "parquet", False, Options(), 2)
    serial = TableSet(tmp_path / "one")
    serial.add_events(dissect([capture]))
    serial.close()
    a = pq.read_table(tmp_path / "one" / "partitions.parquet")
    b = pq.read_table(tmp_path / "two" / "partitions.parquet")
    assert a.num_rows > 100 and a.equals(b)
    assert len(set(a.column("stream").to_pylist())) >= 4  # rows from several connections, both workers
