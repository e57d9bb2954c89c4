"""Kafka: the fields of an undecoded answer (`kafka.body_length`, `kafka.raw_body`) are declared,
so filters can name them (issue 14 item 9).
"""

from __future__ import annotations

from pathlib import Path

from tests.crafted import write_pcap
from tests.test_kafka_trust import conversation, request, response
from wiredump.dissect.filter import DisplayFilter
from wiredump.dissect.model import Frame
from wiredump.dissect.pipeline import Options, dissect


def decode(path: Path) -> list[Frame]:
    return [ev.obj for ev in dissect([str(path)], Options()) if ev.kind == "frame"]


def test_undecoded_answer_fields_are_declared_and_filter(tmp_path: Path) -> None:
    # An unknown API key (999) and its 2-byte answer: the answer's body is kept undecoded.
    recs = conversation([(request(999, 0, 2, "cli"), response(2, b"\xab\xcd"))], 40001, 1_700_000_000_000_000)
    path = write_pcap(tmp_path / "unknown.pcap", recs)
    frames = decode(path)
    resp = next(f for f in frames if f.kind == "response")
    assert resp.fields["body_length"] == 2 and resp.fields["raw_body"] == b"\xab\xcd"
    for text in ("kafka.body_length == 2", "kafka.raw_body", "kafka.body_length"):
        flt = DisplayFilter(text)
        assert [f.packet for f in frames if flt.matches(f)] == [resp.packet], text
    assert [f for f in frames if DisplayFilter("kafka.body_length == 3").matches(f)] == []
