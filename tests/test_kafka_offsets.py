"""Kafka: a produced record's offset is the one the broker gave it (issue 16 item 3).

A Produce request carries records numbered from 0 in each partition; the broker stores them
from a base offset that only its answer says. Checked against sources that are not wiredump:

- kafka-python-pinned-2.5 (versions tshark 4.0 decodes): tshark's base offset for each
  partition of each Produce response, tshark's record offsets inside the request (the delta)
  and tshark's Fetch responses, which deliver the same key and value at that very offset;
- go-sniffer-kafka (a third-party capture): tshark's base offset;
- ck-compress-* and kafka-python-basic (versions tshark 4.0 cannot read): the Fetch responses
  of the same capture deliver the same key and value at the offset given to each produced record,
  and the record counts of the scenario hold;
- kafka-python-legacy-msgset: tshark shows every Produce answered with error 59 and base offset
  -1, so no produced record has an offset (the delta stays);
- a request whose answer the capture lacks, or that the hold bound released before its answer
  came, keeps a null offset.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter, defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests import variants
from tests.conftest import CAPTURES
from wiredump.dissect.model import Frame, Message
from wiredump.dissect.pipeline import Options, dissect
from wiredump.dissect.tables import SCHEMAS, TableSet

CAPS = CAPTURES / "kafka"
PINNED = CAPS / "kafka-python-pinned-2.5.pcap"
HAVE_TSHARK = shutil.which("tshark") is not None

pytestmark = pytest.mark.skipif(not PINNED.exists(), reason="Kafka captures not available")
needs_tshark = pytest.mark.skipif(not HAVE_TSHARK, reason="tshark not installed")

Group = tuple[int, str, int]
"""(packet of the Produce request, topic, partition)."""


def frames_of(path: Path, options: Options | None = None) -> list[Frame]:
    return [ev.obj for ev in dissect([str(path)], options or Options()) if ev.kind == "frame"]


def produced(frames: list[Frame]) -> dict[Group, list[Message]]:
    out: dict[Group, list[Message]] = defaultdict(list)
    for f in frames:
        for m in f.messages:
            if m.direction == "produce":
                assert m.topic is not None and m.partition is not None
                out[(f.packet, m.topic, m.partition)].append(m)
    return dict(out)


def delivered(frames: list[Frame]) -> dict[tuple[str, int, int], tuple[bytes | None, bytes | None]]:
    """(topic, partition, offset) -> (key, value) of every record Fetch responses delivered."""
    out: dict[tuple[str, int, int], tuple[bytes | None, bytes | None]] = {}
    for f in frames:
        for m in f.messages:
            if m.direction == "deliver":
                assert m.topic is not None and m.partition is not None and m.offset is not None
                out[(m.topic, m.partition, m.offset)] = (m.key, m.value)
    return out


# -- tshark's decode ---------------------------------------------------------------------------------
def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, list[Any]]:
    d: dict[str, list[Any]] = defaultdict(list)
    for k, v in pairs:
        d[k].append(v)  # tshark repeats keys (Record, Partition…) inside one object
    return dict(d)


def _hex(v: str | None) -> bytes:
    """tshark's hex bytes; a null key or value shows as empty there, so both read as b''."""
    return b"" if v is None else bytes.fromhex(v.replace(":", ""))


def kv(m: Message) -> tuple[bytes, bytes]:
    return (m.key or b"", m.value or b"")


@cache
def tshark_kafka(path: Path) -> dict[str, Any]:
    """What tshark decodes of Produce and Fetch: base offsets, request records, fetched records.

    bases: (request packet, topic, partition) -> (error code, base offset) from each Produce response;
    sent: (request packet, topic, partition) -> [(record offset, key, value)] inside each Produce request;
    fetched: (topic, partition, offset) -> (key, value) inside each Fetch response.
    """
    raw = subprocess.run(
        ["tshark", "-r", str(path), "-T", "json", "-J", "frame kafka"], capture_output=True, check=True
    ).stdout
    bases: dict[Group, tuple[int, int]] = {}
    sent: dict[Group, list[tuple[int, bytes, bytes]]] = defaultdict(list)
    fetched: dict[tuple[str, int, int], tuple[bytes, bytes]] = {}

    def walk(o: Any, ctx: dict[str, Any]) -> None:
        if isinstance(o, list):
            for x in o:
                walk(x, ctx)
            return
        if not isinstance(o, dict):
            return
        ctx = dict(ctx)
        if "kafka.topic_name" in o:
            ctx["topic"] = o["kafka.topic_name"][0]
        if "kafka.partition_id" in o:
            ctx["partition"] = int(o["kafka.partition_id"][0])
        if "kafka.record_attributes" in o:  # one record
            rec = (
                int(o["kafka.offset"][0]),
                _hex(o.get("kafka.message_key", [None])[0]),
                _hex(o.get("kafka.message_value", [None])[0]),
            )
            if ctx["api"] == 0 and not ctx["response"]:
                sent[(ctx["frame"], ctx["topic"], ctx["partition"])].append(rec)
            elif ctx["api"] == 1 and ctx["response"]:
                fetched[(ctx["topic"], ctx["partition"], rec[0])] = rec[1:]
            return
        if ctx["api"] == 0 and ctx["response"] and "kafka.partition_id" in o and "kafka.offset" in o:
            bases[(ctx["request"], ctx["topic"], ctx["partition"])] = (
                int(o["kafka.error"][0]),
                int(o["kafka.offset"][0]),
            )
        for vs in o.values():
            for v in vs:
                if isinstance(v, dict | list):
                    walk(v, ctx)

    for pkt in json.loads(raw, object_pairs_hook=_pairs_hook):
        layers = pkt["_source"][0]["layers"][0]
        if "kafka" not in layers:
            continue
        number = int(layers["frame"][0]["frame.number"][0])
        for pdu in layers["kafka"]:
            if "kafka.api_key" not in pdu:
                continue  # a PDU tshark could not tie to an API (e.g. an answer whose request it lacks)
            response = "kafka.response_key" in pdu
            ctx = {
                "frame": number,
                "api": int(pdu["kafka.api_key"][0]),
                "response": response,
                "request": int(pdu["kafka.request_frame"][0]) if response else None,
            }
            walk(pdu, ctx)
    return {"bases": bases, "sent": dict(sent), "fetched": fetched}


def scenario_produced(name: str) -> int:
    """Records the client says it produced (sent on the wire, accepted or refused)."""
    sc = json.loads((CAPS / f"{name}.scenario.json").read_text())
    n = 0
    for step in sc["steps"]:
        text = step["step"]
        if m := re.search(r"producer sent (\d+)", text) or re.search(r"delivered (\d+)/", text):
            n += int(m.group(1))
        elif m := re.search(r": (\d+)/(\d+) failed", text):
            n += int(m.group(2))
    return n


# -- the tests -------------------------------------------------------------------------------------------
@needs_tshark
def test_offsets_are_tsharks_base_offset_plus_delta_and_fetch_agrees() -> None:
    ts = tshark_kafka(PINNED)
    got = produced(frames_of(PINNED))
    assert set(got) == set(ts["sent"]) == set(ts["bases"])  # the same Produce partitions, same packets
    total = 0
    for group, msgs in got.items():
        error, base = ts["bases"][group]
        assert error == 0 and base >= 0
        records = ts["sent"][group]
        # The delta is the record's offset inside the request, as tshark reads it there.
        assert [m.offset_delta for m in msgs] == [off for off, _, _ in records]
        assert [kv(m) for m in msgs] == [(k, v) for _, k, v in records]
        assert [m.offset for m in msgs] == [base + off for off, _, _ in records]
        for m in msgs:
            # The consumer fetched the very same record at that offset (tshark's Fetch decode).
            assert ts["fetched"][(group[1], group[2], m.offset)] == kv(m)
        total += len(msgs)
    assert total == scenario_produced("kafka-python-pinned-2.5") == 401


@needs_tshark
def test_third_party_capture_offset_from_tshark() -> None:
    path = CAPS / "go-sniffer-kafka.pcap"
    out = subprocess.run(
        [
            "tshark", "-r", str(path), "-Y", "kafka.response_key == 0", "-T", "fields",
            "-e", "kafka.request_frame", "-e", "kafka.topic_name", "-e", "kafka.partition_id",
            "-e", "kafka.error", "-e", "kafka.offset",
        ],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    request, topic, partition, error, base = out
    assert error == "0"
    got = produced(frames_of(path))
    assert list(got) == [(int(request), topic, int(partition))]
    assert [(m.offset, m.offset_delta) for m in got[(int(request), topic, int(partition))]] == [
        (int(base), 0)
    ]


@pytest.mark.parametrize(
    "name",
    ["ck-compress-gzip", "ck-compress-lz4", "ck-compress-snappy", "ck-compress-zstd", "kafka-python-basic"],
)
def test_offsets_agree_with_the_records_fetched(name: str) -> None:
    frames = frames_of(CAPS / f"{name}.pcap")
    got = produced(frames)
    fetched = delivered(frames)
    msgs = [m for ms in got.values() for m in ms]
    assert len(msgs) == scenario_produced(name)
    places = Counter((m.topic, m.partition, m.offset) for m in msgs)
    assert max(places.values()) == 1  # no two produced records at one offset
    for (_, _, _), ms in got.items():
        assert [m.offset_delta for m in ms] == list(range(len(ms)))
        for m in ms:
            assert m.offset is not None
            assert fetched[(m.topic, m.partition, m.offset)] == (m.key, m.value)
    # Every record the consumer received was produced in this capture, at the offset given to it.
    assert set(fetched) == set(places)


@needs_tshark
def test_refused_produce_keeps_null_offsets() -> None:
    path = CAPS / "kafka-python-legacy-msgset.pcap"
    ts = tshark_kafka(path)
    assert ts["bases"] and {v for v in ts["bases"].values()} == {(59, -1)}  # UNKNOWN_PRODUCER_ID, no base
    got = produced(frames_of(path))
    msgs = [m for ms in got.values() for m in ms]
    assert len(msgs) == scenario_produced("kafka-python-legacy-msgset") == 120
    assert {m.offset for m in msgs} == {None}
    for ms in got.values():
        assert [m.offset_delta for m in ms] == list(range(len(ms)))


def test_unanswered_produce_keeps_null_offsets(tmp_path: Path) -> None:
    # The capture cut before the broker's answers: the requests are there, their answers are not.
    cap = variants.read(PINNED)
    full = produced(frames_of(PINNED))
    first_request = min(p for p, _, _ in full)
    cut = variants.write(cap, [r for r in cap.recs if r.orig <= first_request], tmp_path / "cut.pcap")
    got = produced(frames_of(cut))
    assert set(got) == {g for g in full if g[0] == first_request}
    for group, msgs in got.items():
        assert [m.offset for m in msgs] == [None] * len(msgs)
        assert [m.offset_delta for m in msgs] == [m.offset_delta for m in full[group]]


def test_request_released_by_the_hold_bound_keeps_null_offsets() -> None:
    # hold_frames=0: no frame waits for its answer, so the requests leave before the responses
    # are read; a response then never changes a frame already given to the sinks.
    full = produced(frames_of(PINNED))
    got = produced(frames_of(PINNED, Options(hold_frames=0)))
    assert set(got) == set(full)
    for group, msgs in got.items():
        assert {m.offset for m in msgs} == {None}
        assert [m.offset_delta for m in msgs] == [m.offset_delta for m in full[group]]


def test_messages_table_has_offset_and_delta(tmp_path: Path) -> None:
    tables = TableSet(tmp_path, fmt="parquet")
    tables.add_events(dissect([str(PINNED)], Options()))
    tables.close()
    t = pq.read_table(tmp_path / "messages.parquet")
    assert t.schema.equals(SCHEMAS["messages"])
    assert t.schema.field("offset_delta").type == "int64"
    rows = t.select(["packet", "direction", "topic", "partition", "offset", "offset_delta"]).to_pylist()
    full = produced(frames_of(PINNED))
    want = sorted(
        (p, topic, part, m.offset, m.offset_delta) for (p, topic, part), ms in full.items() for m in ms
    )
    produce_rows = sorted(
        (r["packet"], r["topic"], r["partition"], r["offset"], r["offset_delta"])
        for r in rows
        if r["direction"] == "produce"
    )
    assert produce_rows == want
    assert all(o is not None for *_, o, _ in produce_rows)
    deliver = [r for r in rows if r["direction"] == "deliver"]
    assert deliver and all(r["offset_delta"] is None and r["offset"] is not None for r in deliver)
