"""Pravega: the Rust session against the Python reference, call by call (`tests/replay_support.py`).

Every Pravega capture in shared/captures is decoded by the Python pipeline with its sessions
recorded; the same decode/close calls go through the Rust session and every frame (fields in
order, messages, anomalies, statuses, pairing), exchange and frame-less report must be the same.
The variants a user's captures show (packets lost, the capture begun mid-stream, tiny
segments, out of order) change which bytes each call gets, so they are replayed too, and the
crafted frames of `test_pravega_crafted.py` are decoded by both engines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import variants as V
from tests.conftest import CAPTURES
from tests.replay_support import differences, record, replay

pytest.importorskip("wiredump._engine")
from wiredump import _engine  # noqa: E402

FOLDER = CAPTURES / "pravega"
NAMES = sorted(p.stem for p in FOLDER.glob("*.pcap")) if FOLDER.is_dir() else []
pytestmark = [
    pytest.mark.skipif(not NAMES, reason="Pravega captures not available"),
    pytest.mark.skipif("pravega" not in _engine.rust_protocols(), reason="no Rust Pravega session"),
]


def check(path: Path, monkeypatch: pytest.MonkeyPatch, **kw: object) -> int:
    """Records the Python calls on `path`, replays them in Rust; returns the frames compared."""
    rec = record(path, "pravega", monkeypatch, **kw)  # type: ignore[arg-type]
    got = replay(rec)
    diffs = differences(rec, got)
    assert diffs == [], "\n".join(diffs)
    return sum(len(fs) for fs in rec.frames)


@pytest.mark.parametrize("name", NAMES)
def test_capture(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert check(FOLDER / f"{name}.pcap", monkeypatch) > 10


@pytest.mark.parametrize("name", NAMES)
def test_without_messages(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    check(FOLDER / f"{name}.pcap", monkeypatch, messages=False)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("fraction", [0.1, 0.3, 0.5, 0.6, 0.85])
def test_mid_stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, fraction: float) -> None:
    cap = V.read(FOLDER / f"{name}.pcap")
    cut = int(len(cap.recs) * fraction)
    check(V.write(cap, cap.recs[cut:], tmp_path / "mid.pcap"), monkeypatch)


@pytest.mark.parametrize("name", NAMES)
def test_lossy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    cap = V.read(FOLDER / f"{name}.pcap")
    points = V.losable(cap.recs)
    assert points
    for lost in V.spread(points, 6):
        check(V.write(cap, V.drop(cap.recs, {lost}), tmp_path / f"lost{lost}.pcap"), monkeypatch)


@pytest.mark.parametrize("name", NAMES)
def test_tiny_segments_and_out_of_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    cap = V.read(FOLDER / f"{name}.pcap")
    if len(cap.recs) > 3000:
        pytest.skip("tiny segments of a large capture take long in the Python engine")
    check(V.write(cap, V.tiny_segments(cap.recs), tmp_path / "tiny.pcap"), monkeypatch)
    recs, _ = V.out_of_order(cap.recs)
    check(V.write(cap, recs, tmp_path / "ooo.pcap"), monkeypatch)


# -- the crafted frames of test_pravega_crafted.py, decoded by both engines ---------------------
def _crafted_tests() -> list[str]:
    from tests import test_pravega_crafted as crafted

    return sorted(n for n in dir(crafted) if n.startswith("test_") and callable(getattr(crafted, n)))


@pytest.mark.parametrize("test_name", _crafted_tests())
def test_crafted(test_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs one crafted test (its own assertions on the Python decode hold), recording the
    session calls its framer makes, then replays them into the Rust session."""
    from tests import test_pravega_crafted as crafted
    from tests.replay_support import Recording, _Recorder

    recordings: list[Recording] = []
    original_new_session = crafted.SPEC.new_session
    original_exchange = crafted.Out.exchange

    def new_session(ctx: object) -> object:
        rec = Recording("pravega", (False, True, False))
        recordings.append(rec)
        return _Recorder(original_new_session(ctx), rec)  # type: ignore[arg-type]

    def exchange(self: object, ex: object) -> None:
        if recordings:
            recordings[-1].exchanges.append(ex)  # type: ignore[arg-type]
        original_exchange(self, ex)  # type: ignore[arg-type]

    monkeypatch.setattr(crafted.SPEC, "new_session", new_session)
    monkeypatch.setattr(crafted.Out, "exchange", exchange)
    getattr(crafted, test_name)()
    monkeypatch.undo()
    if not any(rec.calls for rec in recordings):
        pytest.skip("the crafted test makes no session calls")
    for rec in recordings:
        if not rec.calls:
            continue
        diffs = differences(rec, replay(rec))
        assert diffs == [], "\n".join(diffs)
