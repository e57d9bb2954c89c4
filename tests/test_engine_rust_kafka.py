"""Kafka in the Rust engine gives exactly what the Python reference gives.

The reference is the plan walker (`body.walk_body`) over the same schema (`kafka_schema.json`,
from Kafka's JSON specs); the Rust decoder (`wiredump._engine.kafka_decode`) walks plans that
`engine/build.rs` generates from that file. Both run on every body of every captured Kafka frame
(each body the session decodes, resync and guess attempts included), on random bodies of every
(api key, version, direction) and data structure with tagged fields, nulls and record sets, and on
those bodies cut short and with bytes flipped. Compared as text (repr, so key order and bool/int
types count): the fields (the partial decode when the bytes do not fit), the error codes with their
paths, the end position, and the error's class, message and offset.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import pytest

from tests import kafka_gen
from tests.conftest import CAPTURES, ROOT
from tests.kafka_gen import gen_struct, uv
from tests.test_kafka_compiled import mutations
from wiredump.dissect.limits import Limits
from wiredump.dissect.model import Frame
from wiredump.dissect.pipeline import Options, dissect
from wiredump.dissect.protocols.kafka import embedded, schema, session, summary, topics
from wiredump.dissect.protocols.kafka.body import Bad, BodyDecoder, walk_body
from wiredump.dissect.protocols.kafka.records import RecordContext, decode_record_set
from wiredump.dissect.wire import Cursor, Short

_engine = pytest.importorskip("wiredump._engine")
SECRETS = session.SECRET_FIELDS


def reference(data: bytes, start: int, plan: schema.Plan, secrets: frozenset[str]) -> str:
    """What the Python walker gives (no records hook: a record set decodes to its size)."""
    try:
        out, errors, end = walk_body(data, start, plan, None, secrets)
    except (Short, Bad) as e:
        return repr((type(e).__name__, str(e), e.offset, getattr(e, "partial", None), e.errors))
    return repr((out, errors, end))


def rust(got: Any) -> str:
    assert got is not None, "the Rust tables lack a plan the Python schema has"
    fields, errors, error, end = got
    if error is not None:
        kind, msg, offset = error
        return repr((kind, msg, offset, fields, errors))
    return repr((fields, errors, end))


def same_api(data: bytes, start: int, key: int, v: int, kind: str, what: Any) -> None:
    plan = schema.plan(key, v, kind)
    assert plan is not None
    for secrets in (frozenset(), SECRETS):
        ref = reference(data, start, plan, secrets)
        got = rust(_engine.kafka_decode(kind == "response", key, v, data, start, sorted(secrets)))
        assert got == ref, (what, secrets)


def same_locations(data: bytes, start: int, key: int, v: int, kind: str, what: Any) -> None:
    """The record sets and the topic/partition each belongs to (as `session._locate` finds them
    from the enclosing structs, with no topic ids learnt yet) are the same."""
    plan = schema.plan(key, v, kind)
    assert plan is not None
    ref: list[tuple[Any, ...]] = []

    def hook(rec: bytes, at: int, stack: list[dict[str, Any]]) -> Any:
        ref.append((at, at + len(rec), *session._locate(stack, topics.TopicNames())))
        return {"size": len(rec)}

    try:
        walk_body(data, start, plan, hook)
    except (Short, Bad):
        pass
    got = _engine.kafka_record_sets(kind == "response", key, v, data, start)
    assert [(s, e, t if t is not None else tid, p) for s, e, t, tid, p in got] == ref, what


def every_plan() -> list[tuple[int, int, str]]:
    return [
        (key, v, kind)
        for key, versions in sorted(schema.api_versions().items())
        for v in sorted(versions)
        for kind in ("request", "response")
    ]


def test_the_generated_tables_know_every_api_version_the_schema_knows() -> None:
    for key, v, kind in every_plan():
        assert _engine.kafka_decode(kind == "response", key, v, b"") is not None, (key, v, kind)
    assert _engine.kafka_decode(False, 3, 32000, b"") is None
    assert _engine.kafka_decode(False, 999, 0, b"") is None


@pytest.mark.parametrize("kind", ["request", "response"])
def test_random_bodies_of_every_api_version_decode_the_same(kind: str) -> None:
    rnd = random.Random(21 if kind == "request" else 22)
    checked = 0
    for key, v, k in every_plan():
        if k != kind:
            continue
        plan = schema.plan(key, v, kind)
        assert plan is not None
        for _ in range(3):
            _, data = gen_struct(plan, rnd, 0, records=True)
            for m in [data, *mutations(data, rnd)]:
                same_api(m, 0, key, v, kind, (key, v, kind, m))
                if key in (0, 1):  # the APIs with record sets
                    same_locations(m, 0, key, v, kind, (key, v, kind, m))
            checked += 1
    assert checked > 1000


def test_data_plans_decode_the_same() -> None:
    rnd = random.Random(25)
    for name, d in sorted(schema.schema()["data"].items()):
        for v in d["versions"]:
            plan = schema.data_plan(name, v)
            assert plan is not None
            for _ in range(5):
                _, data = gen_struct(plan, rnd, 0, records=True)
                for m in [data, *mutations(data, rnd)]:
                    ref = reference(m, 0, plan, frozenset())
                    assert rust(_engine.kafka_decode_data(name, v, m)) == ref, (name, v, m)


def test_body_start_inside_the_buffer() -> None:
    """Offsets are buffer offsets when the body starts after a header."""
    rnd = random.Random(23)
    plan = schema.plan(1, 12, "response")
    assert plan is not None
    for _ in range(30):
        _, data = gen_struct(plan, rnd, 0, records=True)
        head = rnd.randbytes(rnd.randint(1, 12))
        for m in [data, *mutations(data, rnd)]:
            same_api(head + m, len(head), 1, 12, "response", "offset")


def test_hand_computed_body_and_spans() -> None:
    """FindCoordinator v3 response by hand: values, error path and each field's bytes."""
    body = bytes([0, 0, 0, 5, 0, 15, 0, 0, 0, 0, 1, 2, ord("h"), 0, 0, 0x23, 0x84, 0])
    fields, errors, error, end, spans = _engine.kafka_decode(True, 10, 3, body, spans=True)
    assert error is None and end == len(body)
    assert fields == {
        "throttle_time_ms": 5,
        "error_code": 15,
        "error_message": None,
        "node_id": 1,
        "host": "h",
        "port": 9092,
    }
    assert errors == [("error_code", 15)]
    assert dict((p, (s, e)) for p, s, e in spans) == {
        "throttle_time_ms": (0, 4),
        "error_code": (4, 6),
        "error_message": (6, 7),
        "node_id": (7, 11),
        "host": (11, 13),
        "port": (13, 17),
    }


def _captures() -> list[Path]:
    paths = sorted((CAPTURES / "kafka").glob("*.pcap")) if (CAPTURES / "kafka").is_dir() else []
    return [*sorted((ROOT / "samples").glob("kafka*.pcap")), *paths]


@pytest.mark.parametrize("path", _captures(), ids=lambda p: p.stem)
def test_every_captured_body_decodes_the_same(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = 0
    real = session.decode_body
    layouts: dict[int, tuple[int, int, str]] = {}
    for key, v, kind in every_plan():
        p = schema.plan(key, v, kind)
        layouts.setdefault(id(p), (key, v, kind))

    def checked(
        data: bytes,
        start: int,
        plan: schema.Plan,
        hook: Any,
        secrets: frozenset[str] = frozenset(),
        elements: Any = None,
    ):
        nonlocal seen
        seen += 1
        key, v, kind = layouts[id(plan)]
        same_api(bytes(data), start, key, v, kind, (path.name, seen))
        same_locations(bytes(data), start, key, v, kind, (path.name, seen))
        return real(data, start, plan, hook, secrets, elements)

    monkeypatch.setattr(session, "decode_body", checked)
    for _ in dissect([str(path)], Options(engine="python")):  # the Python session is spied on
        pass
    assert seen > 0


# -- record sets ---------------------------------------------------------------------------------


def reference_records(
    data: bytes,
    partial_ok: bool,
    topic: Any,
    partition: Any,
    base: int,
    max_messages: int = 25_000,
    prior: int = 0,
) -> tuple:
    """What `records.decode_record_set` gives with messages wanted, on a fresh frame and limits
    (`prior`: records the frame counted before this set, against its `max_messages` cap)."""
    f = Frame("kafka", "Produce", 0)
    stats = {"records": prior} if prior else {}
    limits = Limits(max_messages=max_messages)
    rc = RecordContext(f, "client", limits, topic, partition, partial_ok, base, True, stats, True)
    out = decode_record_set(data, rc)
    if prior:
        del stats["records"]  # the Rust decoder counts this set only
    msgs = [
        (
            m.value_size,
            m.offset,
            m.key,
            m.value,
            m.timestamp_ms,
            m.headers,
            m.compression,
            m.checksum_ok,
            m.detail,
        )
        for m in f.messages
    ]
    anomalies = [(a.kind, a.detail, a.offset) for a in f.anomalies]
    return out, msgs, anomalies, f.status, rc.stats


def comparable(result: tuple, ignore_records: bool = False) -> str:
    """The library's own words for broken compressed data differ (zlib vs flate2…): keep the codec."""
    out, msgs, anomalies, status, stats = result
    if ignore_records:
        stats = {k: v for k, v in stats.items() if k != "records"}
    anomalies = [
        (k, ": ".join(d.split(": ")[:2]) if k == "decompression_failed" else d, o) for k, d, o in anomalies
    ]
    return repr((out, msgs, anomalies, status, sorted(stats.items())))


def lz4_offset_zero(ref: tuple, got: tuple) -> bool:
    """The one known difference: a corrupted LZ4 block with a match offset of 0.

    The LZ4 block format says an offset of 0 means a corrupted block; lz4_flex refuses it, the
    liblz4 under the Python reference copies from the current position and goes on. It only
    happens on corrupted data, which both sides already flag with a bad CRC-32C.
    """
    got_failed = [d for k, d, _ in got[2] if k == "decompression_failed"]
    return (
        any(d.endswith("lz4: DecompressionError(OffsetZero)") for d in got_failed)
        and not any(k == "decompression_failed" for k, _, _ in ref[2])
        and any(k == "bad_checksum" for k, _, _ in ref[2])
        and any(k == "bad_checksum" for k, _, _ in got[2])
    )


def same_records(data: bytes, partial_ok: bool, topic: Any, partition: Any, base: int, what: Any) -> bool:
    """Rust == Python on one record set; False for the known LZ4 leniency (see `lz4_offset_zero`)."""
    ref = reference_records(data, partial_ok, topic, partition, base)
    got = _engine.kafka_records(data, partial_ok, topic, partition, base)
    if comparable(got) != comparable(ref) and lz4_offset_zero(ref, got):
        return False
    assert comparable(got) == comparable(ref), what
    return True


NO_RECORDS: set[str] = set()
"""Captures without any record set (none today: every Kafka capture produces or fetches)."""


def _record_sets(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[bytes, bool, Any, Any, int]]:
    """Every record set the session hands to the record decoder while dissecting `path`."""
    seen: list[tuple[bytes, bool, Any, Any, int]] = []
    real = session.decode_record_set

    def spy(data: bytes, rc: RecordContext) -> Any:
        seen.append((bytes(data), rc.partial_ok, rc.topic, rc.partition, rc.base))
        return real(data, rc)

    monkeypatch.setattr(session, "decode_record_set", spy)
    for _ in dissect([str(path)], Options(engine="python")):  # the Python session is spied on
        pass
    monkeypatch.undo()
    return seen


@pytest.mark.parametrize("path", _captures(), ids=lambda p: p.stem)
def test_every_captured_record_set_decodes_the_same(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same entries, messages (keys, values, headers, offsets, timestamps, CRC verdicts, codec),
    anomalies and counters; cut and mutated copies of each set too."""
    sets = _record_sets(path, monkeypatch)
    assert sets or path.stem in NO_RECORDS
    rnd = random.Random(path.name)
    compared = lenient = 0
    for i, (data, partial_ok, topic, partition, base) in enumerate(sets):
        assert same_records(data, partial_ok, topic, partition, base, (path.name, i))
        if i < 60:
            for m in mutations(data, rnd):
                for ok in (partial_ok, not partial_ok):
                    compared += 1
                    lenient += not same_records(m, ok, topic, partition, base, (path.name, i, m))
    assert lenient <= compared // 10


@pytest.mark.parametrize(
    "path", [*_captures()[1:4], CAPTURES / "kafka" / "kafka-python-legacy-msgset.pcap"], ids=lambda p: p.stem
)
def test_the_frame_message_cap_applies_the_same(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past `Limits.max_messages` per frame, records are read and checked but not kept (a
    `message_limit` note), counting the records of the frame's earlier sets too."""
    noted = 0
    for data, partial_ok, topic, partition, base in _record_sets(path, monkeypatch):
        for cap, prior in ((3, 0), (5, 2), (0, 0), (2, 7)):
            ref = reference_records(data, partial_ok, topic, partition, base, cap, prior)
            got = _engine.kafka_records(data, partial_ok, topic, partition, base, cap, prior)
            assert comparable(got, bool(prior)) == comparable(ref, bool(prior)), (path.name, cap, prior)
            noted += any(k == "message_limit" for k, _, _ in got[2])
    assert noted > 0


def test_records_seen_on_the_compressed_and_legacy_captures() -> None:
    """The captures that teach codecs and legacy sets really exercise them in the Rust decoder."""
    kafka = CAPTURES / "kafka"
    if not kafka.is_dir():
        pytest.skip("no captures")
    codecs_seen: set[Any] = set()
    magics: set[int] = set()
    mp = pytest.MonkeyPatch()
    for name in [
        "ck-compress-gzip",
        "ck-compress-snappy",
        "ck-compress-lz4",
        "ck-compress-zstd",
        "kafka-python-legacy-msgset",
    ]:
        for data, partial_ok, *_ in _record_sets(kafka / f"{name}.pcap", mp):
            out, msgs, anomalies, status, stats = _engine.kafka_records(data, partial_ok)
            codecs_seen |= {m[6] for m in msgs}
            magics |= {b["magic"] for b in out["batches"]}
            assert status == "ok", (name, anomalies)
    assert {"gzip", "snappy", "lz4", "zstd"} <= codecs_seen
    assert {0, 1, 2} & magics >= {2}


# -- headers and embedded structures ----------------------------------------------------------


def reference_request_header(frame: bytes, hv: int) -> tuple:
    """What the session reads: the fixed 12 bytes, then `session._request_header`."""
    api_key, version, corr = struct.unpack_from(">hhi", frame, 4)
    header: dict[str, Any] = {"api_key": api_key, "api_version": version, "correlation_id": corr}
    try:
        start = session._request_header(frame, hv, header)
    except (Short, Bad) as e:
        return None, (type(e).__name__, str(e), e.offset), None
    return header, None, start


def reference_response_header(frame: bytes, hv: int) -> tuple:
    """The header part of `session._response`: correlation id, then tags in header v1."""
    header: dict[str, Any] = {"correlation_id": struct.unpack_from(">i", frame, 4)[0]}
    start = 8
    if hv == 1:
        if len(frame) > 8 and frame[8] == 0:
            start = 9
        else:
            cur = Cursor(frame, 8)
            try:
                BodyDecoder(cur, None).tagged({}, header, [])
            except (Short, Bad) as e:
                return None, (type(e).__name__, str(e), e.offset), None
            start = cur.pos
    return header, None, start


def random_header_frames(rnd: random.Random, request: bool) -> list[bytes]:
    """Frames with client ids (null, empty, text, invalid UTF-8) and tag sections, cut and flipped."""
    out = []
    for _ in range(200):
        head = struct.pack(">ihhi", 0, rnd.randrange(-2, 80), rnd.randrange(-1, 20), rnd.randrange(-9, 9))
        if not request:
            head = head[:8]
        if request:
            cid = rnd.choice([None, b"", b"rdkafka", b"\xff\xfeid", rnd.randbytes(5)])
            head += struct.pack(">h", -1) if cid is None else struct.pack(">h", len(cid)) + cid
        tags = bytes([0])
        if rnd.random() < 0.6:
            n = rnd.randint(1, 3)
            tags = uv(n) + b"".join(
                uv(rnd.randrange(0, 300)) + uv(k) + rnd.randbytes(k) for k in [1, 0, 4][:n]
            )
        frame = head + tags + rnd.randbytes(rnd.randint(0, 4))
        out += [frame, *[m for m in mutations(frame, rnd) if len(m) >= (12 if request else 8)]]
    return out


def test_request_headers_decode_the_same() -> None:
    rnd = random.Random(31)
    for frame in random_header_frames(rnd, True):
        for hv in (0, 1, 2):
            ref = reference_request_header(frame, hv)
            assert repr(_engine.kafka_request_header(frame, hv)) == repr(ref), (frame, hv)


def test_response_headers_decode_the_same() -> None:
    rnd = random.Random(32)
    for frame in random_header_frames(rnd, False):
        for hv in (0, 1):
            ref = reference_response_header(frame, hv)
            assert repr(_engine.kafka_response_header(frame, hv)) == repr(ref), (frame, hv)


def test_hand_computed_request_header() -> None:
    """Metadata v12 request header v2 by hand: key 3, version 12, correlation 7, client "rd", no tags."""
    frame = bytes([0, 0, 0, 13, 0, 3, 0, 12, 0, 0, 0, 7, 0, 2, ord("r"), ord("d"), 0])
    assert _engine.kafka_request_header(frame, 2) == (
        {"api_key": 3, "api_version": 12, "correlation_id": 7, "client_id": "rd"},
        None,
        17,
    )


def reference_embedded(data: bytes, start: int, key: int, v: int, kind: str, ptype: Any) -> str:
    plan = schema.plan(key, v, kind)
    assert plan is not None
    try:
        out, errors, end = walk_body(data, start, plan, None)
    except (Short, Bad) as e:
        return repr((type(e).__name__, str(e), e.offset, getattr(e, "partial", None), e.errors))
    embedded.annotate(key, kind, out, ptype)
    return repr((out, errors, end))


def consumer_protocol(rnd: random.Random, name: str) -> bytes:
    """A ConsumerProtocolSubscription/Assignment of a random known version, as a client sends it."""
    versions = schema.schema()["data"][name]["versions"]
    v = rnd.choice(versions)
    plan = schema.data_plan(name, v)
    assert plan is not None
    _, data = gen_struct(plan, rnd, 0)
    return struct.pack(">h", rnd.choice([v, v, v + 7])) + data


def test_consumer_protocol_inside_join_and_sync_group_decodes_the_same() -> None:
    """JoinGroup/SyncGroup bodies whose BYTES hold the consumer protocol (valid, newer, cut, other)."""
    rnd = random.Random(33)
    cases = [
        (11, "request", "metadata", "ConsumerProtocolSubscription"),
        (11, "response", "metadata", "ConsumerProtocolSubscription"),
        (14, "request", "assignment", "ConsumerProtocolAssignment"),
        (14, "response", "assignment", "ConsumerProtocolAssignment"),
    ]
    decoded = 0
    for key, kind, field, name in cases:
        for v in sorted(schema.api_versions()[key]):
            plan = schema.plan(key, v, kind)
            assert plan is not None
            for _ in range(6):
                blobs = [consumer_protocol(rnd, name) for _ in range(3)]
                blobs.append(rnd.choice([b"", b"\x00", blobs[0][:-1]]))
                body = _with_bytes(plan, rnd, field, blobs)
                for ptype in (None, "consumer", "connect"):
                    ref = reference_embedded(body, 0, key, v, kind, ptype)
                    got = rust(
                        _engine.kafka_decode(
                            kind == "response", key, v, body, embedded=True, protocol_type=ptype
                        )
                    )
                    assert got == ref, (key, v, kind, body, ptype)
                    decoded += "_decoded" in ref
    assert decoded > 50


def _with_bytes(plan: schema.Plan, rnd: random.Random, field: str, blobs: list[bytes]) -> bytes:
    """A random body of `plan` whose BYTES fields named `field` hold the given blobs in turn."""
    orig = kafka_gen.gen
    it = iter(blobs * 50)

    def gen(op: Any, r: random.Random, depth: int, records: bool = False) -> tuple[Any, bytes]:
        if op.code == schema.BYTES and op.name == field:
            b = next(it)
            return b, kafka_gen.enc_len(len(b), op.compact, True) + b
        if op.code == schema.STRING and op.name == "protocol_type":
            s = rnd.choice(["consumer", "consumer", "connect"])
            return s, kafka_gen.enc_len(len(s), op.compact, False) + s.encode()
        return orig(op, r, depth, records)

    kafka_gen.gen = gen  # type: ignore[assignment]
    try:
        _, data = kafka_gen.gen_struct(plan, rnd, 0)
    finally:
        kafka_gen.gen = orig  # type: ignore[assignment]
    return data


def test_damaged_utf8_is_replaced_as_python_does() -> None:
    """Strings with broken UTF-8 (overlong forms, surrogates, cut sequences, stray bytes) come out
    as Python's `decode("utf-8", "replace")` gives them (one U+FFFD per maximal bad subpart)."""
    rnd = random.Random(41)
    pool = [
        b"\xf0\x80\x80",
        b"\xed\xa0\x80",
        b"\xe0\x80",
        b"\xf4\x90\x80\x80",
        b"\xc0\xaf",
        b"\xe2\x82",
        b"\xf5",
    ]
    for _ in range(3000):
        s = b"".join(
            rnd.choice([*pool, bytes([rnd.randrange(256)]), "é€😀".encode()])
            for _ in range(rnd.randint(1, 6))
        )
        body = struct.pack(">ih", 1, len(s)) + s  # Metadata v1 request: one topic name
        assert _engine.kafka_decode(False, 3, 1, body)[0]["topics"][0]["name"] == s.decode("utf-8", "replace")


# -- summaries -------------------------------------------------------------------------------


def reference_summary(data: bytes, start: int, key: int, v: int, kind: str, ptype: Any, names: Any) -> Any:
    """`summary.summarize` of the walker's decode (record sets decoded, consumer protocol annotated)."""
    plan = schema.plan(key, v, kind)
    assert plan is not None

    def hook(rec: bytes, at: int, stack: list[dict[str, Any]]) -> Any:
        rc = RecordContext(Frame("kafka", "x", 0), "client", Limits(), None, None, False, at, True, {}, True)
        return decode_record_set(rec, rc)

    try:
        out, _, _ = walk_body(data, start, plan, hook)
    except (Short, Bad):
        return None
    embedded.annotate(key, kind, out, ptype)
    f = Frame("kafka", schema.api_names()[key], key, kind=kind, version=v)
    return summary.summarize(f, out, None, names)


def same_summary(
    data: bytes, start: int, key: int, v: int, kind: str, ptype: Any, names: Any, what: Any
) -> None:
    ref = reference_summary(data, start, key, v, kind, ptype, names)
    known = dict(names._names) if names is not None else None
    got = _engine.kafka_summary(kind == "response", key, v, data, start, ptype, known)
    assert got == ref, what


@pytest.mark.parametrize("kind", ["request", "response"])
def test_random_bodies_summarise_the_same(kind: str) -> None:
    rnd = random.Random(51 if kind == "request" else 52)
    for key, v, k in every_plan():
        if k != kind:
            continue
        plan = schema.plan(key, v, kind)
        assert plan is not None
        for _ in range(3):
            _, data = gen_struct(plan, rnd, 0, records=True)
            for m in [data, *mutations(data, rnd)[:2]]:
                same_summary(
                    m, 0, key, v, kind, rnd.choice([None, "consumer"]), topics.TopicNames(), (key, v, m)
                )


@pytest.mark.parametrize("path", _captures(), ids=lambda p: p.stem)
def test_every_captured_body_summarises_the_same(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each captured body, with the topic names learnt from the responses before it."""
    layouts = {id(schema.plan(k, v, kind)): (k, v, kind) for k, v, kind in reversed(every_plan())}
    names = topics.TopicNames()
    real = session.decode_body
    seen = 0

    def checked(
        data: bytes,
        start: int,
        plan: schema.Plan,
        hook: Any,
        secrets: frozenset[str] = frozenset(),
        elements: Any = None,
    ):
        nonlocal seen
        seen += 1
        key, v, kind = layouts[id(plan)]
        same_summary(bytes(data), start, key, v, kind, "consumer", names, (path.name, seen))
        try:
            out, _, _ = walk_body(bytes(data), start, plan, None)
            if kind == "response":
                names.learn(out)
        except (Short, Bad):
            pass
        return real(data, start, plan, hook, secrets, elements)

    monkeypatch.setattr(session, "decode_body", checked)
    for _ in dissect([str(path)], Options(engine="python")):  # the Python session is spied on
        pass
    assert seen > 0
