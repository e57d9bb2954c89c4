"""The Kafka session in Rust gives exactly what the Python reference session gives.

`replay_support` records every decode/close call the Python framer makes of the Kafka sessions
on a capture (bytes, role, completeness, in order) and replays them into the Rust session
(`wiredump._engine.replay`); every frame (type, status, ids, summary, fields in order with their
values, messages with their offsets, anomalies with their offsets), the exchanges and the
frame-less reports must be identical. Run on every Kafka capture in the shared captures, with
and without messages and secrets, and on the mutated variants of `tests/variants.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import replay_support

_engine = pytest.importorskip("wiredump._engine")
KAFKA = Path("/work/shared/captures/kafka")
CAPTURES = sorted(KAFKA.glob("*.pcap")) if KAFKA.is_dir() else []


def check(path: Path, monkeypatch: pytest.MonkeyPatch, **options: bool) -> None:
    rec = replay_support.record(path, "kafka", monkeypatch, **options)
    assert rec.calls, f"no Kafka decode calls on {path.name}"
    got = replay_support.replay(rec)
    diffs = replay_support.differences(rec, got)
    assert not diffs, "\n".join(diffs)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_captures_identical(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check(path, monkeypatch)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_captures_identical_without_messages_with_secrets(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check(path, monkeypatch, messages=False, show_secrets=True)
