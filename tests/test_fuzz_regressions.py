"""The atheris targets (fuzz/atheris) as tests: every minimised finding replays clean, and the
harness itself catches what it must (a test that could not fail would hide a blind fuzzer).

Findings are minimised by `scripts/fuzz` into tests/data/fuzz_regressions/<target>/; each file
is replayed here through the same one-input function the fuzzer ran, under the autouse
no-internal-errors rule.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import CAPTURES
from tests.fuzzing import seed_streams

ROOT = Path(__file__).resolve().parents[1]
ATHERIS = ROOT / "fuzz" / "atheris"
REGRESSIONS = Path(__file__).parent / "data" / "fuzz_regressions"
sys.path.insert(0, str(ATHERIS))

from _harness import TINY_MESSAGES, decode_chunks, encode_chunks  # noqa: E402


@cache
def target(name: str) -> Callable[[bytes], None]:
    """The one-input function of fuzz/atheris/<name>.py (imported without atheris)."""
    spec = importlib.util.spec_from_file_location(f"fuzz_target_{name}", ATHERIS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make()


def _regressions() -> list[Path]:
    return sorted(p for p in REGRESSIONS.glob("*/*") if p.is_file() and not p.name.startswith("."))


@pytest.mark.parametrize("path", _regressions(), ids=lambda p: f"{p.parent.name}/{p.name[:20]}")
def test_regression_input_replays_clean(path: Path) -> None:
    target(path.parent.name)(path.read_bytes())


def test_every_regression_folder_names_a_target() -> None:
    targets = {p.stem for p in ATHERIS.glob("*.py") if not p.stem.startswith("_")}
    assert {"py_capture", "py_kafka", "py_pulsar", "py_pravega", "py_tank"} <= targets
    for folder in REGRESSIONS.glob("*"):
        if folder.is_dir():
            assert folder.name in targets, f"{folder} replays through no target"


def test_chunk_encoding_round_trips() -> None:
    chunks = [("client", b"abc"), ("server", b""), ("client", bytes(70000))]
    profile, back = decode_chunks(encode_chunks(chunks, 1))
    # 70000 bytes are split at 65535: the framer sees the same stream bytes per role.
    assert profile == 1
    assert [r for r, _ in back] == ["client", "server", "client", "client"]
    assert back[:2] == chunks[:2] and back[2][1] + back[3][1] == bytes(70000)
    # A record cut short keeps what is left; no input is refused.
    assert decode_chunks(b"\x00\x01\x00\x09xy") == (0, [("server", b"xy")])
    assert decode_chunks(b"") == (0, [])


@pytest.mark.parametrize(
    ("name", "capture"),
    [
        ("py_kafka", "kafka/kafka-python-basic.pcap"),
        ("py_pulsar", "pulsar/s02-producer-batching.pcap"),
        ("py_pravega", "pravega/p01-writer-reader-basic.pcap"),
        ("py_tank", "tank/t02-bundles.pcap"),
    ],
)
def test_session_target_runs_real_streams(name: str, capture: str) -> None:
    """The seeds (real connections, both limit profiles) pass: the harness is not crying wolf."""
    path = CAPTURES / capture
    if not path.exists():
        pytest.skip(f"no capture {path}")
    streams = [s for s in seed_streams(path, cap=8192) if s]
    assert streams
    for chunks in streams[:3]:
        for profile in (0, 1):
            target(name)(encode_chunks(chunks, profile))


def test_capture_target_refuses_quietly_and_reads_real_files() -> None:
    run = target("py_capture")
    run(b"")  # CaptureError: not a capture, the expected refusal
    run(b"\xd4\xc3\xb2\xa1" + bytes(20))  # a pcap header cut short
    path = CAPTURES / "kafka" / "go-sniffer-kafka.pcap"
    if path.exists():
        run(path.read_bytes())


@pytest.mark.internal_error_expected
def test_session_target_reports_a_decoder_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """A decoder that raises is caught by the shield as an internal_error anomaly: the target
    must turn that into a failure, or the fuzzer would be blind to every bug the shield hides."""
    from wiredump.dissect.protocols.tank.session import TankSession

    def broken(self: object, data: bytes, role: str, complete: bool = True) -> list:
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(TankSession, "decode", broken)
    path = CAPTURES / "tank" / "t01-basic.pcap"
    if not path.exists():
        pytest.skip(f"no capture {path}")
    chunks = next(s for s in seed_streams(path, cap=8192) if s)
    with pytest.raises(Exception, match="planted"):
        target("py_tank")(encode_chunks(chunks))


def test_tiny_profile_reaches_the_message_cap() -> None:
    """Profile 1 really lowers the cap: a real batch of more than TINY_MESSAGES messages makes a
    message_limit anomaly (so the fuzzer explores the counted-not-kept paths)."""
    from tests.fuzzing import drive
    from wiredump.dissect.limits import Limits

    path = CAPTURES / "tank" / "t02-bundles.pcap"
    if not path.exists():
        pytest.skip(f"no capture {path}")
    kinds = set()
    for chunks in seed_streams(path, cap=1 << 20):
        out = drive("tank", chunks, Limits(max_messages=TINY_MESSAGES))
        kinds |= {a.kind for f in out.frames for a in f.anomalies}
    assert "message_limit" in kinds
