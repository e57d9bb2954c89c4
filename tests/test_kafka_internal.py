"""Kafka: a bug in wiredump is an `internal_error`, bad input stays a status (issue 14 item 9).

The trial decodes that ask "is this that layout?" (sniffing, resynchronising, pairing, guessing
the layout of an answer whose request is missing, the consumer protocol inside JoinGroup and
SyncGroup, KRaft control records) take only the decoder's own "does not fit" exceptions
(`Short`, `Bad`, `BadRecord`) as a no; anything else propagates to the engine's shield or is
reported on the frame. Also: the fields of an undecoded answer (`kafka.body_length`,
`kafka.raw_body`) are declared, so filters can name them.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tests.conftest import CAPTURES
from tests.crafted import write_pcap
from tests.test_kafka_trust import conversation, request, response
from wiredump.dissect import internal
from wiredump.dissect.correlation import Correlator
from wiredump.dissect.filter import DisplayFilter
from wiredump.dissect.limits import Limits
from wiredump.dissect.model import Anomaly, Frame
from wiredump.dissect.pipeline import Options, dissect
from wiredump.dissect.protocols.base import ConnContext
from wiredump.dissect.protocols.kafka import embedded, schema, summary
from wiredump.dissect.protocols.kafka import session as ks
from wiredump.dissect.wire import Short

BASIC = CAPTURES / "kafka" / "kafka-python-basic.pcap"
needs_captures = pytest.mark.skipif(not BASIC.exists(), reason="Kafka captures not available")


def decode(path: Path, engine: str | None = None) -> tuple[list[Frame], list[Anomaly]]:
    """Frames and anomalies by the default engine, or by `engine` ("python" where a test patches
    the Python reference's internals: a patch cannot reach the native engine)."""
    frames, anomalies = [], []
    for ev in dissect([str(path)], Options(engine=engine) if engine else Options()):
        if ev.kind == "frame":
            frames.append(ev.obj)
        elif ev.kind == "anomaly":
            anomalies.append(ev.obj)
    return frames, anomalies


def session() -> ks.KafkaSession:
    ctx = ConnContext("t", 0, "10.0.0.1", 40000, "10.0.0.2", 9092, Correlator(0, "kafka"), Limits())
    return ks.KafkaSession(ctx)


class Boom(Exception):
    """Stands for a bug in wiredump's code (not an exception the decoder uses for bad input)."""


# An ApiVersions v0 request and its answer, whole: what the trial decodes are asked about.
API_VERSIONS_REQ = request(18, 0, 7, "cli")
API_VERSIONS_RESP = response(7, struct.pack(">hi", 0, 1) + struct.pack(">hhh", 18, 0, 3))


def test_trial_decodes_say_no_to_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    s = session()
    plan = schema.plan(18, 0, "response")
    assert plan is not None
    # The real bytes fit (a control: the trial decodes do say yes).
    assert s._request_fits(API_VERSIONS_REQ, 18, 0)
    assert s._fits(API_VERSIONS_RESP, plan, 8)
    assert s._try(API_VERSIONS_RESP, 18, 0) is not None

    def short(*args: object, **kwargs: object) -> object:
        raise Short("field", 8, 4, 0)

    monkeypatch.setattr(ks, "decode_body", short)
    assert s._request_fits(API_VERSIONS_REQ, 18, 0) is False
    assert s._fits(API_VERSIONS_RESP, plan, 8) is False
    assert s._try(API_VERSIONS_RESP, 18, 0) is None


def test_trial_decodes_do_not_hide_a_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    s = session()
    plan = schema.plan(18, 0, "response")
    assert plan is not None

    def boom(*args: object, **kwargs: object) -> object:
        raise Boom("a bug")

    monkeypatch.setattr(ks, "decode_body", boom)
    with pytest.raises(Boom):
        s._request_fits(API_VERSIONS_REQ, 18, 0)
    with pytest.raises(Boom):
        s._fits(API_VERSIONS_RESP, plan, 8)
    with pytest.raises(Boom):
        s._try(API_VERSIONS_RESP, 18, 0)
    big = request(0, 3, 9, "cli", b"\0" * 64)
    with pytest.raises(Boom):
        s._prefix_reads(big, 0, 0, 3, "request")


def test_embedded_structures_say_no_to_bad_input_and_not_to_a_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    # Bytes that are not a consumer-protocol subscription: no decode, no anomaly.
    assert embedded.decode_data("ConsumerProtocolSubscription", b"\0\1\xff\xff\xff\xf0") is None
    assert embedded.decode_control_value(2, b"\0") is None

    def boom(*args: object, **kwargs: object) -> object:
        raise Boom("a bug")

    monkeypatch.setattr(embedded, "decode_body", boom)
    with pytest.raises(Boom):
        embedded.decode_data("ConsumerProtocolSubscription", b"\0\1\0\0\0\0")
    with pytest.raises(Boom):
        embedded.decode_control_value(2, b"\0\0\0\0\0\0\0\0")


@needs_captures
@pytest.mark.internal_error_expected
def test_a_bug_in_the_consumer_protocol_is_an_internal_error_on_the_frame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def boom(*args: object, **kwargs: object) -> object:
        raise Boom("a bug")

    def carries_consumer_protocol(f: Frame) -> bool:
        return "_decoded" in repr(f.fields)

    frames, _ = decode(BASIC)
    embedding = {(f.packet, f.kind) for f in frames if carries_consumer_protocol(f)}
    assert {t for f in frames if (f.packet, f.kind) in embedding for t in [f.type]} == {
        "JoinGroup",
        "SyncGroup",
    }
    monkeypatch.setattr(embedded, "decode_data", boom)
    frames, anomalies = decode(BASIC, engine="python")
    for f in frames:
        if (f.packet, f.kind) not in embedding:
            assert not f.anomalies
            continue
        # The frame keeps its status and its decode, and says what went wrong in wiredump.
        assert f.status == "ok" and f.fields["body"] and not carries_consumer_protocol(f)
        assert [a.kind for a in f.anomalies] == ["internal_error"]
        assert "Boom in kafka.embedded.annotate" in f.anomalies[0].detail
    assert sum(a.kind == internal.INTERNAL_ERROR for a in anomalies) == len(embedding)


@needs_captures
@pytest.mark.internal_error_expected
def test_a_bug_in_a_summary_is_an_internal_error_on_the_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> str:
        raise Boom("a bug")

    monkeypatch.setitem(summary._BY_KEY, 0, boom)  # Produce
    frames, _ = decode(BASIC, engine="python")
    produce = [f for f in frames if f.type == "Produce"]
    assert produce
    for f in produce:
        assert f.status == "ok"
        assert [a.kind for a in f.anomalies] == ["internal_error"]
        assert "Boom in kafka.summarize" in f.anomalies[0].detail
    # The records are all there (201 produced, kafka-python-basic.scenario.json).
    assert sum(len(f.messages) for f in produce if f.kind == "request") == 201


def test_undecoded_answer_fields_are_declared_and_filter(tmp_path: Path) -> None:
    # An unknown API key (999) and its 2-byte answer: the answer's body is kept undecoded.
    recs = conversation([(request(999, 0, 2, "cli"), response(2, b"\xab\xcd"))], 40001, 1_700_000_000_000_000)
    path = write_pcap(tmp_path / "unknown.pcap", recs)
    frames, _ = decode(path)
    resp = next(f for f in frames if f.kind == "response")
    assert resp.fields["body_length"] == 2 and resp.fields["raw_body"] == b"\xab\xcd"
    for text in ("kafka.body_length == 2", "kafka.raw_body", "kafka.body_length"):
        flt = DisplayFilter(text)
        assert [f.packet for f in frames if flt.matches(f)] == [resp.packet], text
    assert [f for f in frames if DisplayFilter("kafka.body_length == 3").matches(f)] == []
