"""Kafka's generated decoder on bytes computed by hand (NOTES §2, §5): values, error paths, spans.

The engine's decoder walks plans that engine/build.rs generates from `wiredump/proto/kafka_schema.json`
(Kafka's own JSON specs); `_engine.kafka_decode` and `_engine.kafka_request_header` run one body or
header through it and give each field's bytes, which the tests of whole captures cannot see.
"""

from __future__ import annotations

from wiredump import _engine
from wiredump.dissect.protocols.kafka import schema


def test_the_generated_tables_know_every_api_version_the_schema_knows() -> None:
    for key, versions in schema.api_versions().items():
        for v in sorted(versions):
            for response in (False, True):
                assert _engine.kafka_decode(response, key, v, b"") is not None, (key, v, response)
    assert _engine.kafka_decode(False, 3, 32000, b"") is None
    assert _engine.kafka_decode(False, 999, 0, b"") is None


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


def test_hand_computed_request_header() -> None:
    """Metadata v12 request header v2 by hand: key 3, version 12, correlation 7, client "rd", no tags."""
    frame = bytes([0, 0, 0, 13, 0, 3, 0, 12, 0, 0, 0, 7, 0, 2, ord("r"), ord("d"), 0])
    assert _engine.kafka_request_header(frame, 2) == (
        {"api_key": 3, "api_version": 12, "correlation_id": 7, "client_id": "rd"},
        None,
        17,
    )
