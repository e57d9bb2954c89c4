"""Kafka: the optimised record-set decoder gives what the reference decoder gave.

`tests/kafka_records_ref.py` is `records.py` as it was before the speed work. Both decode
every record set of the real captures, crafted sets (every codec, headers, nulls, control
batches, legacy messages) and damaged ones (cut, bytes flipped, records rewritten with a
valid CRC); compared are the fields, the messages, anomalies, status and statistics, and
the BadRecord raised when only trying a layout. With `messages=False` (the timeline) a
valid batch gives the same fields and no messages.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path
from typing import Any

import pytest

from tests import kafka_records_ref as ref
from tests.conftest import CAPTURES, ROOT
from tests.test_kafka_crafted import batch_v2, legacy, record
from wiredump.dissect.limits import Limits
from wiredump.dissect.model import Frame
from wiredump.dissect.pipeline import Options, dissect
from wiredump.dissect.protocols.kafka import records, session


def run(mod: Any, data: bytes, partial_ok: bool, emit: bool, messages: bool = True) -> tuple[Any, ...]:
    """(fields or the BadRecord, messages, anomalies, status, stats) of one decode."""
    f = Frame("kafka", "x", 0)
    stats: dict[str, int] = {}
    args = (f, "deliver", Limits(), "t", 3, partial_ok, 100, emit, stats)
    rc = mod.RecordContext(*args, messages=messages) if mod is records else mod.RecordContext(*args)
    try:
        out = mod.decode_record_set(data, rc)
    except (records.BadRecord, ref.BadRecord) as e:
        return (("BadRecord", str(e), e.offset), f.messages, f.anomalies, f.status, _as_ref(stats))
    return (out, f.messages, f.anomalies, f.status, _as_ref(stats))


def _as_ref(stats: dict[str, int]) -> dict[str, int]:
    """The statistics the reference computes: `control_records` (the exact count of control
    records, added with their cap for issue 17) is not in it and is tested on its own in
    tests/test_kafka_limits.py."""
    return {k: v for k, v in stats.items() if k != "control_records"}


def decode(mod: Any, data: bytes, partial_ok: bool, emit: bool, messages: bool = True) -> str:
    return repr(run(mod, data, partial_ok, emit, messages))


def same(data: bytes) -> None:
    for partial_ok in (False, True):
        for emit in (True, False):
            assert decode(records, data, partial_ok, emit) == decode(ref, data, partial_ok, emit), data


def crafted(rnd: random.Random) -> bytes:
    """A record set of one to three batches or legacy messages with random content."""
    out = b""
    for _ in range(rnd.randint(1, 3)):
        if rnd.random() < 0.2:
            out += legacy(
                rnd.randint(0, 99),
                rnd.choice([None, b"k"]),
                rnd.choice([None, b"", b"v" * 30]),
                rnd.choice([0, 1]),
            )
            continue
        recs = []
        for i in range(rnd.randint(0, 6)):
            key = rnd.choice([None, b"", b"key", rnd.randbytes(200)])
            value = rnd.choice([None, b"", b"x" * 40, rnd.randbytes(300)])
            headers = rnd.choice([(), (("h", b"1"),), (("a", None), ("bb", b"2" * 130))])
            recs.append(record(i, key, value, rnd.choice([0, 5, -3, 100_000]), headers))
        if recs and rnd.random() < 0.3:  # a damaged record, under a valid CRC
            i = rnd.randrange(len(recs))
            r = bytearray(recs[i])
            r[rnd.randrange(len(r))] = rnd.choice([0x00, 0x7F, 0x80, 0xFF, rnd.randrange(256)])
            recs[i] = bytes(r)
        codec, comp = rnd.choice([(0, None), (0, None), (1, gzip.compress)])
        extra = rnd.choice([0, 0, 8, 16])
        out += batch_v2(rnd.randint(0, 10**6), recs, codec, comp, attributes_extra=extra)
    return out


def damaged(data: bytes, rnd: random.Random) -> list[bytes]:
    out = [data[: rnd.randrange(len(data) + 1)] for _ in range(2)]
    for _ in range(3):
        b = bytearray(data)
        for _ in range(rnd.randint(1, 3)):
            b[rnd.randrange(len(b))] = rnd.choice([0x00, 0x01, 0x7F, 0x80, 0xFF, rnd.randrange(256)])
        out.append(bytes(b))
    return out


def test_crafted_and_damaged_record_sets_decode_as_before() -> None:
    rnd = random.Random(21)
    for _ in range(400):
        data = crafted(rnd)
        same(data)
        for d in damaged(data, rnd):
            same(d)


def test_control_batch_decodes_as_before() -> None:
    marker = record(0, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05")
    same(batch_v2(7, [marker], attributes_extra=32 | 16))


def test_without_messages_valid_batches_keep_their_fields() -> None:
    rnd = random.Random(4)
    for _ in range(200):
        recs = [record(i, b"k", b"v" * rnd.randint(0, 200), i) for i in range(rnd.randint(0, 8))]
        data = batch_v2(rnd.randint(0, 1000), recs) + batch_v2(5, recs[:1])
        fields, msgs, anomalies, status, stats = run(records, data, True, True)
        assert len(msgs) == len(recs) + min(1, len(recs)) and not anomalies
        assert fields["record_count"] == len(msgs)
        quick = decode(records, data, True, True, messages=False)
        assert quick == repr((fields, [], anomalies, status, stats))


def test_without_messages_a_damaged_batch_is_still_reported() -> None:
    recs = [record(i, b"k", b"v" * 10) for i in range(3)]
    bad = bytearray(recs[1])
    bad[0] += 2  # the record claims two more bytes than it has
    data = batch_v2(0, [recs[0], bytes(bad), recs[2]])
    quick = decode(records, data, False, True, messages=False)
    assert "malformed" in quick and "Message(" not in quick


def _captures() -> list[Path]:
    paths = sorted((CAPTURES / "kafka").glob("*.pcap")) if (CAPTURES / "kafka").is_dir() else []
    return [ROOT / "samples" / "kafka-basic.pcap", *paths]


@pytest.mark.parametrize("path", _captures(), ids=lambda p: p.stem)
def test_every_captured_record_set_decodes_as_before(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = 0
    real = records.decode_record_set

    def checked(data: bytes, rc: records.RecordContext, depth: int = 0) -> dict[str, Any]:
        nonlocal seen
        seen += 1
        same(data)
        return real(data, rc, depth)

    monkeypatch.setattr(session, "decode_record_set", checked)
    for _ in dissect([str(path)], Options(engine="python")):  # the Python session's record sets
        pass
    if path.stem not in {"go-sniffer-kafka"}:
        assert seen > 0
