"""Kafka: wiredump agrees with tshark field by field on kafka-python-pinned-2.5.pcap.

That capture stays at API versions tshark 4.0 decodes completely. For every Kafka
PDU tshark shows, the PDU wiredump puts at the same packet has the same api key,
correlation id and length, the same topic names and partition ids, the same non-zero
error codes, the same record-batch CRCs, the same number of records, and record
offsets that tshark also shows.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter, defaultdict
from typing import Any

import pytest

from tests.conftest import CAPTURES
from wiredump.dissect.model import Frame
from wiredump.dissect.pipeline import Options, dissect

CAP = CAPTURES / "kafka" / "kafka-python-pinned-2.5.pcap"

pytestmark = [
    pytest.mark.tshark,
    pytest.mark.skipif(
        shutil.which("tshark") is None or not CAP.exists(), reason="tshark or capture missing"
    ),
]


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, list[Any]]:
    d: dict[str, list[Any]] = defaultdict(list)
    for k, v in pairs:
        d[k].append(v)  # tshark repeats keys inside one object
    return dict(d)


def _leaves(o: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(o, dict):
        for k, vs in o.items():
            for v in vs:
                if isinstance(v, dict | list):
                    _leaves(v, out)
                elif k.startswith("kafka."):
                    out.append((k, v))
    elif isinstance(o, list):
        for v in o:
            _leaves(v, out)


def _tshark_pdus() -> dict[int, list[list[tuple[str, str]]]]:
    raw = subprocess.run(
        ["tshark", "-r", str(CAP), "-T", "json", "-J", "frame kafka"], capture_output=True, check=True
    ).stdout
    out: dict[int, list[list[tuple[str, str]]]] = {}
    for pkt in json.loads(raw, object_pairs_hook=_pairs_hook):
        layers = pkt["_source"][0]["layers"][0]
        if "kafka" not in layers:
            continue
        number = int(layers["frame"][0]["frame.number"][0])
        pdus = []
        for k in layers["kafka"]:
            leaves: list[tuple[str, str]] = []
            _leaves(k, leaves)
            pdus.append(leaves)
        out[number] = pdus
    return out


def _walk(o: Any, keys: set[str], out: list[Any], path_ok: bool = True) -> None:
    if isinstance(o, dict):
        for k, v in o.items():
            if k in keys and not isinstance(v, dict | list):
                out.append(v)
            elif k not in ("records", "_errors"):
                _walk(v, keys, out)
    elif isinstance(o, list):
        for v in o:
            _walk(v, keys, out)


def _mine() -> dict[int, list[Frame]]:
    by_packet: dict[int, list[Frame]] = defaultdict(list)
    for ev in dissect([str(CAP)], Options()):
        if ev.kind == "frame":
            by_packet[ev.obj.packet].append(ev.obj)
    return by_packet


TOPIC_APIS = {0, 1, 2, 3, 8, 9, 19}


def test_pinned_capture_agrees_with_tshark() -> None:
    theirs = _tshark_pdus()
    mine = _mine()
    assert sorted(theirs) == sorted(mine)
    checked = Counter()
    for packet, pdus in theirs.items():
        frames = mine[packet]
        assert len(frames) == len(pdus), packet
        for f, leaves in zip(frames, pdus, strict=True):
            t = defaultdict(list)
            for k, v in leaves:
                t[k].append(v)
            assert int(t["kafka.len"][0]) == f.length - 4
            assert int(t["kafka.correlation_id"][0]) == f.correlation_id
            if "kafka.api_key" in t:
                assert int(t["kafka.api_key"][0]) == f.type_code
            body = f.fields.get("body", {})
            api = f.type_code
            if api in TOPIC_APIS and "kafka.topic_name" in t:
                names: list[Any] = []
                _walk(body, {"name", "topic"}, names)
                assert set(names) == set(t["kafka.topic_name"]), packet
                checked["topics"] += 1
            if api in (0, 1, 2) and "kafka.partition_id" in t:
                parts: list[Any] = []
                _walk(body, {"index", "partition_index", "partition"}, parts)
                assert Counter(parts) == Counter(int(x) for x in t["kafka.partition_id"]), packet
                checked["partitions"] += 1
            # Error codes: tshark lists zeros too; compare the non-zero ones.
            their_errors = Counter(int(x) for x in t.get("kafka.error", []) if int(x) != 0)
            my_errors = Counter(e["error_code"] for e in f.fields.get("_errors", []))
            assert my_errors == their_errors, packet
            checked["errors"] += bool(their_errors)
            # Record batches: CRCs and record counts.
            crcs = [b["crc"] for b in _batches(body)]
            assert sorted(crcs) == sorted(int(x, 16) for x in t.get("kafka.batch_crc", [])), packet
            n_values = len(t.get("kafka.message_value", []))
            assert len(f.messages) == n_values, packet
            if f.messages:
                their_offsets = Counter(int(x) for x in t.get("kafka.offset", []))
                # Produced records: tshark shows the producer's numbering (offset_delta); the broker's
                # offsets (m.offset) come from the answer, checked in test_kafka_offsets.py.
                ours = [m.offset if f.kind == "response" else m.offset_delta for m in f.messages]
                missing = Counter(ours) - their_offsets
                assert not missing, packet
                checked["records"] += len(f.messages)
    assert checked["records"] == 802  # 401 produced + 401 consumed (scenario)
    assert checked["topics"] > 20 and checked["partitions"] > 10
    assert checked["errors"] >= 1


def _batches(body: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            rec = o.get("records")
            if isinstance(rec, dict) and "batches" in rec:
                out.extend(rec["batches"])
            for k, v in o.items():
                if k != "records":
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(body)
    return out
