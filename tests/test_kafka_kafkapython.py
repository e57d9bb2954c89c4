"""Kafka: wiredump agrees with kafka-python's own decoders on every captured frame it can read.

kafka-python (3.x) carries an independent implementation of the protocol (its own copy
of the JSON specs, its own walker) and of the record formats (`kafka.record`). Every
request/response body of every capture is decoded by both and compared field by field
(after normalising representations: kafka-python turns null uuids and the INT32_MIN
sentinel into None, authorized-operation bit fields into sets, and fills absent tagged
fields with their defaults). Every record set is iterated by `MemoryRecords` and compared
with wiredump's messages (offsets, keys, values, timestamps, headers) and batch CRCs.
Skipped when kafka-python is not installed (it is not a wiredump dependency).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

kafka_protocol = pytest.importorskip("kafka.protocol.api_message")
pytest.importorskip("kafka.record")

import kafka.protocol.admin  # noqa: E402,F401  (registers the message classes)
import kafka.protocol.consumer  # noqa: E402,F401
import kafka.protocol.metadata  # noqa: E402,F401
import kafka.protocol.producer  # noqa: E402,F401
import kafka.protocol.sasl  # noqa: E402,F401
from kafka.record import MemoryRecords  # noqa: E402

from wiredump.dissect.model import Frame  # noqa: E402
from wiredump.dissect.pipeline import Options, dissect  # noqa: E402

CAPS = Path("/work/shared/captures/kafka")
NAMES = sorted(p.stem for p in CAPS.glob("*.pcap")) if CAPS.exists() else []
pytestmark = pytest.mark.skipif(not NAMES, reason="Kafka captures not available")
NULL_UUID = "00000000-0000-0000-0000-000000000000"
INT32_MIN = -(2**31)


def _subclasses(c: type) -> list[type]:
    out = []
    for s in c.__subclasses__():
        out.append(s)
        out.extend(_subclasses(s))
    return out


@cache
def classes() -> tuple[dict[int, Any], dict[int, Any]]:
    reqs: dict[int, Any] = {}
    resps: dict[int, Any] = {}
    for c in _subclasses(kafka_protocol.ApiMessage):
        try:
            if c._class_version is not None:
                continue
            (reqs if c.is_request() else resps)[c.API_KEY] = c
        except Exception:
            continue
    return reqs, resps


def mine(o: Any) -> Any:
    if isinstance(o, dict):
        if "batches" in o and "size" in o:
            return ("records", o["size"])
        return {
            k: mine(v)
            for k, v in o.items()
            if not k.startswith("_") and not k.endswith("_decoded") and "authorized_operations" not in k
        }
    if isinstance(o, list):
        return [mine(v) for v in o]
    return None if o in (NULL_UUID, INT32_MIN) else o


def theirs(o: Any, key: str = "") -> Any:
    if isinstance(o, dict):
        return {k: theirs(v, k) for k, v in o.items() if "authorized_operations" not in k}
    if isinstance(o, list):
        return [theirs(v) for v in o]
    if isinstance(o, bytes | bytearray | memoryview):
        return ("records", len(o)) if key == "records" else bytes(o)
    if hasattr(o, "size_in_bytes"):
        return ("records", o.size_in_bytes())
    if type(o).__name__ == "UUID":
        return None if str(o) == NULL_UUID else str(o)
    return None if o == INT32_MIN else o


def _default(v: Any) -> bool:
    if isinstance(v, dict):
        return all(_default(x) for x in v.values())
    return v in ([], None, -1, 0, "", False)


def same(a: Any, b: Any, path: str = "") -> str | None:
    """None when equal, else the path of the first difference (absent tagged defaults allowed)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in b:
                if not _default(a[k]):
                    return f"{path}.{k} missing"
            elif k not in a:
                return f"{path}.{k} extra"
            elif (d := same(a[k], b[k], f"{path}.{k}")) is not None:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path} length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if (d := same(x, y, f"{path}[{i}]")) is not None:
                return d
        return None
    return None if a == b else f"{path}: {a!r} != {b!r}"


@cache
def frames(name: str) -> list[Frame]:
    return [
        ev.obj for ev in dissect([str(CAPS / f"{name}.pcap")], Options(keep_bytes=True)) if ev.kind == "frame"
    ]


@pytest.mark.parametrize("name", NAMES)
def test_bodies_agree_with_kafka_python(name: str) -> None:
    reqs, resps = classes()
    checked = 0
    for f in frames(name):
        body = f.fields.get("body")
        cls = (reqs if f.kind == "request" else resps).get(f.type_code)
        version = f.fields["header"].get("body_version", f.version)
        if body is None or cls is None or version > cls.max_version:
            continue
        assert f.data is not None
        if f.kind == "request":
            decoded = cls.decode(f.data, version=version, header=True, framed=True)
        else:
            header_v0 = f.type_code == 18 or "header_version" in f.fields["header"]
            start = 8 if header_v0 or not cls.flexible_version_q(version) else 9
            decoded = cls.decode(f.data[start:], version=version)
        diff = same(theirs(decoded.to_dict(json=False)), mine(body))
        assert diff is None, (f.packet, f.type, f.version, f.kind, diff)
        checked += 1
    assert checked >= len(frames(name)) * 0.8


def _record_sets(o: Any, out: list[tuple[int, Any]]) -> None:
    """(partition, raw record set) for every struct holding a `records` field, in order."""
    if isinstance(o, dict):
        if "records" in o:
            part = next(o[k] for k in ("index", "partition_index", "partition") if k in o)
            out.append((part, o["records"]))
        for k, v in o.items():
            if k != "records":
                _record_sets(v, out)
    elif isinstance(o, list):
        for v in o:
            _record_sets(v, out)


@pytest.mark.parametrize("name", NAMES)
def test_records_agree_with_kafka_python(name: str) -> None:
    reqs, resps = classes()
    total = 0
    for f in frames(name):
        if f.type_code not in (0, 1) or "body" not in f.fields:
            continue
        cls = (reqs if f.kind == "request" else resps)[f.type_code]
        if f.kind == "request":
            decoded = cls.decode(f.data, version=f.version, header=True, framed=True).to_dict(json=False)
        else:
            start = 9 if cls.flexible_version_q(f.version) else 8
            decoded = cls.decode(f.data[start:], version=f.version).to_dict(json=False)
        sets: list[tuple[int, Any]] = []
        _record_sets(decoded, sets)
        expected = []
        for partition, raw in sets:
            if raw is None:
                continue
            records = MemoryRecords(bytes(raw) if not hasattr(raw, "next_batch") else raw._buffer)
            while (batch := records.next_batch()) is not None:
                assert batch.validate_crc()
                for r in batch:
                    expected.append(
                        (
                            partition,
                            r.offset,
                            r.key,
                            r.value,
                            r.timestamp,
                            [(k, v) for k, v in (r.headers or [])],
                        )
                    )
        # A produced record's offset is the broker's (from the answer; see test_kafka_offsets.py); on
        # the wire it has the producer's numbering from 0, which wiredump keeps as offset_delta.
        got = [
            (m.partition, m.offset if f.kind == "response" else m.offset_delta)
            + (m.key, m.value, m.timestamp_ms, m.headers or [])
            for m in f.messages
        ]
        assert got == expected, (f.packet, f.type)
        total += len(got)
    assert total > 0


# -- random bodies from wiredump's tables, read back by kafka-python ------------------------

import random  # noqa: E402

from tests.kafka_gen import gen_body  # noqa: E402  (random bodies encoded from Kafka's specs)
from wiredump import _engine  # noqa: E402
from wiredump.dissect.protocols.kafka import schema  # noqa: E402

# ListClientMetricsResources (74): kafka-python's newer spec renamed the field (same layout).
RENAMED = {74}


def test_random_bodies_of_every_shared_api_version_read_the_same_by_kafka_python() -> None:
    """Encode random bodies (arrays, nulls, tagged fields) from Kafka's specs; the engine and kafka-python
    must both read them back as built."""
    reqs, resps = classes()
    rnd = random.Random(7)
    checked = 0
    for key, versions in sorted(schema.api_versions().items()):
        for v in sorted(versions):
            for kind, reg in (("request", reqs), ("response", resps)):
                cls = reg.get(key)
                if cls is None or key in RENAMED or not 0 <= v <= cls.max_version:
                    continue
                for _ in range(3):
                    built = gen_body(key, v, kind, rnd)
                    assert built is not None
                    value, data = built
                    if key == 18 and kind == "response" and value.get("error_code"):
                        continue  # kafka-python reads any failed ApiVersions response as v0
                    decoded, _, error, end = _engine.kafka_decode(kind == "response", key, v, data)
                    assert error is None and end == len(data), (key, v, kind, error)
                    assert same(mine(value), mine(decoded)) is None
                    diff = same(theirs(cls.decode(data, version=v).to_dict(json=False)), mine(decoded))
                    assert diff is None, (key, v, kind, diff)
                    checked += 1
    assert checked > 1000


# -- record sets built by kafka-python's own writers ------------------------------------------

from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402
from kafka.record.legacy_records import LegacyRecordBatchBuilder  # noqa: E402

from tests.test_kafka_crafted import fetch_v4_request, fetch_v4_response, new_session  # noqa: E402

CODEC_NAMES = {0: None, 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def _kafka_python_set(magic: int, codec: int) -> bytes:
    rows = [
        (i, 1_700_000_000_000 + i, f"k{i}".encode() if i % 2 else None, f"value-{i}".encode() * (i + 1))
        for i in range(5)
    ]
    if magic == 2:
        b = DefaultRecordBatchBuilder(2, codec, False, 77, 1, 10, 1 << 20)
        for off, ts, key, value in rows:
            b.append(off, timestamp=ts, key=key, value=value, headers=[("h", b"1")] if off == 3 else [])
    else:
        b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
        for off, ts, key, value in rows:
            b.append(off, timestamp=ts if magic == 1 else None, key=key, value=value)
    return bytes(b.build())


@pytest.mark.parametrize(
    "magic,codec",
    [(0, c) for c in (0, 1, 2, 3)] + [(1, c) for c in (0, 1, 2, 3)] + [(2, c) for c in (0, 1, 2, 3, 4)],
)
def test_record_sets_written_by_kafka_python(magic: int, codec: int) -> None:
    """Magic 0/1/2 in every codec kafka-python writes (magic-0 LZ4 with its broken header checksum included)."""
    data = _kafka_python_set(magic, codec)
    s, _ = new_session()
    s.one(fetch_v4_request(1, "t"))
    frame = s.one(fetch_v4_response(1, "t", data), "server")  # delivered by a Fetch v4 response
    assert frame.status == "ok", frame.anomalies
    expected = []
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        for r in batch:
            expected.append((r.offset, r.key, r.value, r.timestamp, list(r.headers or [])))
    got = [(m.offset, m.key, m.value, m.timestamp_ms, m.headers or []) for m in frame.messages]
    assert got == expected and len(got) == 5
    assert {m.compression for m in frame.messages} == {CODEC_NAMES[codec]}
    assert all(m.checksum_ok for m in frame.messages)
    assert frame.fields["body"]["responses"][0]["partitions"][0]["records"]["record_count"] == 5
