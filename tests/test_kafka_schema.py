"""The committed Kafka schema tables are exactly what the generator makes of the reference specs."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REFERENCE
from wiredump import _engine
from wiredump.dissect.protocols.kafka import schema

ROOT = Path(__file__).resolve().parent.parent
REF = REFERENCE / "kafka"


@pytest.mark.skipif(not REF.exists(), reason="reference specs not available")
def test_generator_reproduces_committed_tables(tmp_path: Path) -> None:
    out = tmp_path / "kafka_schema.json"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_kafka_schema.py"), "--ref", str(REF), "-o", str(out)],
        check=True,
    )
    committed = (ROOT / "wiredump" / "proto" / "kafka_schema.json").read_text(encoding="utf-8")
    assert out.read_text(encoding="utf-8") == committed


def test_versions_merge_trunk_and_3_9() -> None:
    # NOTES §3: Produce 0-11 in 3.9 and 3-12 in trunk; Fetch 0-17; LeaderAndIsr only in 3.9; 88-90 only in trunk.
    v = schema.api_versions()
    assert v[0] == frozenset(range(0, 13))
    assert v[1] == frozenset(range(0, 18))
    assert v[4] == frozenset(range(0, 8))
    assert v[90] == frozenset({0})
    assert schema.api_names()[75] == "DescribeTopicPartitions"
    assert len(v) == 91


def test_error_names_from_errors_tsv() -> None:
    assert schema.error_name(35) == "UNSUPPORTED_VERSION"
    assert schema.error_name(3) == "UNKNOWN_TOPIC_OR_PARTITION"
    assert schema.error_name(-1) == "UNKNOWN_SERVER_ERROR"


def test_generated_plans_respect_field_versions() -> None:
    """The engine's plans (engine/build.rs, from the same tables) on bodies built by hand (NOTES §4)."""
    # ProduceRequest: TransactionalId from v3 (nullable), then Acks, TimeoutMs, TopicData (empty).
    v2 = _engine.kafka_decode(False, 0, 2, struct.pack(">hii", -1, 1000, 0))
    v3 = _engine.kafka_decode(False, 0, 3, struct.pack(">hhii", -1, -1, 1000, 0))
    assert list(v2[0]) == ["acks", "timeout_ms", "topic_data"] and v2[3] == 10
    assert v3[0] == {"transactional_id": None, "acks": -1, "timeout_ms": 1000, "topic_data": []}
    # v9 is flexible: a compact nullable string (0: null), a compact array (1: empty), no tags.
    v9 = _engine.kafka_decode(False, 0, 9, bytes([0]) + struct.pack(">hi", -1, 1000) + bytes([1, 0]))
    assert v9[0] == v3[0] and v9[2] is None and v9[3] == 9
    # FetchResponse v12+: CurrentLeader is tag 1 of each partition (leader id 7, epoch 3).
    leader = struct.pack(">ii", 7, 3) + b"\x00"
    part = struct.pack(">ihqqq", 0, 0, 10, 10, 0) + b"\x00" + struct.pack(">i", -1) + b"\x00"
    part += bytes([1, 1, len(leader)]) + leader
    body = struct.pack(">ihi", 0, 0, 0) + bytes([2, 2]) + b"t" + bytes([2]) + part + b"\x00\x00"
    fields, errors, error, end = _engine.kafka_decode(True, 1, 12, body)
    assert error is None and end == len(body)
    assert fields["responses"][0]["partitions"][0]["current_leader"] == {"leader_id": 7, "leader_epoch": 3}
