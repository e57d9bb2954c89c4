"""Issue 17 leftovers: totals count every message a frame carried, and Kafka control records
past the cap are counted, not kept.

* `wiredump stats` totals: a frame past `Limits.max_messages` keeps the cap as rows and counts
  the rest (`Frame.messages_counted`); the message totals are the number of messages on the
  wire, the same with or without the cap. Expected counts are the ones the builders of
  tests/test_hostile_memory.py chose (N messages), checked by hand against what they write.
* A compressed Kafka control batch can hold millions of control records: the frame keeps at
  most the cap of their dicts (all its batches together) and counts every one
  (`record_stats["control_records"]`, and the `message_limit` anomaly says how many).
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import crc32c
import pytest
from cli_support import run_cli
from test_hostile_memory import CAP, CASES, N, capture, decode, kafka_produce, the_frame, zz

from wiredump.dissect.limits import Limits
from wiredump.dissect.stats import StatsCollector


def stats_of(path: Path, limits: Limits) -> dict:
    events, _ = decode(path, limits)
    s = StatsCollector()
    for ev in events:
        s.add(ev)
    return s.result()


@pytest.mark.parametrize("proto", sorted(CASES))
def test_stats_totals_count_the_messages_past_the_cap(proto: str, tmp_path: Path) -> None:
    port, frames, type_ = CASES[proto]
    path = capture(tmp_path, f"{proto}.pcap", port, frames())
    capped, free = stats_of(path, Limits(max_messages=CAP)), stats_of(path, Limits())
    # The builder wrote N messages in one frame of type_: every one is in the totals.
    (row,) = [t for t in capped["types"] if t["type"] == type_]
    assert row["messages"] == N
    assert capped["totals"]["messages"] == free["totals"]["messages"]
    # Only CAP of them were kept as rows (the bound the totals must not undo).
    events, _ = decode(path, Limits(max_messages=CAP))
    f = the_frame(events, type_)
    assert len(f.messages) == CAP and f.messages_counted == N - CAP


def test_stats_cli_counts_every_record_of_a_kafka_bomb_batch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Past the default cap (25,000): one gzip batch of 30,000 empty records, 30,000 messages."""
    n = 30_000
    path = capture(tmp_path, "bomb.pcap", 9092, [(True, kafka_produce(n))])
    res = run_cli(capsys, "stats", "--json", str(path))
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    assert doc["totals"]["messages"] == n
    (row,) = [t for t in doc["types"] if t["type"] == "Produce"]
    assert row["messages"] == n


def control_batch(base_offset: int, n: int) -> bytes:
    """A gzip v2 control batch (attributes: gzip | transactional | control) of `n` COMMIT
    markers (key: version 0, type 1; value: version 0, coordinator epoch 5)."""
    key, value = struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 5)
    body = b"\x00" + zz(0) + zz(0) + zz(len(key)) + key + zz(len(value)) + value + zz(0)
    raw = (zz(len(body)) + body) * n
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    records = c.compress(raw) + c.flush()
    attributes = 1 | 0x10 | 0x20
    after_crc = struct.pack(">hiqqqhii", attributes, n - 1, 0, 0, 77, 0, -1, n) + records
    tail = struct.pack(">ibI", 0, 2, crc32c.crc32c(after_crc)) + after_crc
    return struct.pack(">qi", base_offset, len(tail)) + tail


def produce(batches: bytes) -> bytes:
    header = struct.pack(">hhih", 0, 3, 1, 4) + b"test"
    body = struct.pack(">hhi", -1, 1, 30000) + struct.pack(">ih", 1, 1) + b"t"
    body += struct.pack(">ii", 1, 0) + struct.pack(">i", len(batches)) + batches
    msg = header + body
    return struct.pack(">i", len(msg)) + msg


def test_control_records_past_the_cap_are_counted_not_kept(tmp_path: Path) -> None:
    # Two control batches of N markers in one frame: 2N control records, CAP dicts kept.
    path = capture(tmp_path, "ctl.pcap", 9092, [(True, produce(control_batch(0, N) + control_batch(N, N)))])
    events, _ = decode(path, Limits(max_messages=CAP))
    f = the_frame(events, "Produce")
    b1, b2 = f.fields["body"]["topic_data"][0]["partition_data"][0]["records"]["batches"]
    assert b1["is_control"] and b2["is_control"]
    assert b1["records_count"] == b2["records_count"] == N  # declared, exact
    assert len(b1["control_records"]) == CAP and "control_records" not in b2
    assert b1["control_records"][0] == {
        "version": 0,
        "type": "COMMIT",
        "marker_version": 0,
        "coordinator_epoch": 5,
    }
    assert f.fields["record_stats"]["control_records"] == 2 * N
    (limit,) = [a for a in f.anomalies if a.kind == "message_limit"]
    assert f"({N - CAP} of {N})" in limit.detail and "control records" in limit.detail
    assert f.status == "ok" and f.messages == [] and f.messages_counted == 0
    # Without the cap every marker is kept: the cap alone made the difference.
    free = the_frame(decode(path, Limits())[0], "Produce")
    fb1, fb2 = free.fields["body"]["topic_data"][0]["partition_data"][0]["records"]["batches"]
    assert len(fb1["control_records"]) == len(fb2["control_records"]) == N
    assert not [a for a in free.anomalies if a.kind == "message_limit"]
