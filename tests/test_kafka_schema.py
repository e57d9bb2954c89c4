"""The committed Kafka schema tables are exactly what the generator makes of the reference specs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REFERENCE
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


def test_header_versions_follow_notes() -> None:
    assert schema.request_header_version(7, 0) == 0  # ControlledShutdown v0: no client id
    assert schema.request_header_version(0, 8) == 1
    assert schema.request_header_version(0, 9) == 2
    assert schema.request_header_version(17, 1) == 1  # SaslHandshake is never flexible
    assert schema.response_header_version(18, 3) == 0  # ApiVersions response header is always v0
    assert schema.response_header_version(3, 9) == 1
    assert schema.response_header_version(3, 8) == 0


def test_error_names_from_errors_tsv() -> None:
    assert schema.error_name(35) == "UNSUPPORTED_VERSION"
    assert schema.error_name(3) == "UNKNOWN_TOPIC_OR_PARTITION"
    assert schema.error_name(-1) == "UNKNOWN_SERVER_ERROR"


def names(plan: schema.Plan) -> list[str]:
    out: list[str] = []
    for o in plan.ops:
        out.extend(o.names if o.code == schema.FIXED_RUN else [o.name or ""])
    return out


def test_plans_respect_field_versions() -> None:
    # ProduceRequest: TransactionalId from v3 (nullable), then Acks, TimeoutMs, TopicData.
    p2 = schema.plan(0, 2, "request")
    p3 = schema.plan(0, 3, "request")
    assert p2 is not None and p3 is not None
    assert names(p2) == ["acks", "timeout_ms", "topic_data"]
    assert names(p3) == ["transactional_id", "acks", "timeout_ms", "topic_data"]
    assert p3.ops[0].nullable and not p3.ops[0].compact
    p9 = schema.plan(0, 9, "request")
    assert p9 is not None and p9.flexible and p9.ops[0].compact
    # FetchResponse v12+: CurrentLeader (tag 1) and SnapshotId (tag 2) are tagged per partition.
    f12 = schema.plan(1, 12, "response")
    assert f12 is not None
    responses = next(o for o in f12.ops if o.name == "responses")
    parts = next(o for o in responses.elem.struct.ops if o.name == "partitions")
    assert set(parts.elem.struct.tags) == {0, 1, 2}
