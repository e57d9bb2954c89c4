"""The Rust Pulsar session against the Python reference, call by call (`tests/replay_support.py`).

Every Pulsar capture of the shared set, and the variants a user's captures show (out of order,
retransmitted, tiny segments, begun mid-stream, lossy) plus byte mutations of the real traffic
(which drive the decoder through its error paths: broken protobuf, bad checksums, impossible
sizes, codecs that fail): the Python pipeline runs with recording sessions, the same calls are
replayed into the Rust session, and every frame, message, anomaly, exchange and report must be
the same. A difference is a bug of one side.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests import variants as V
from tests.conftest import CAPTURES
from tests.replay_support import differences, record, replay

_engine = pytest.importorskip("wiredump._engine")
pytestmark = pytest.mark.skipif(
    "pulsar" not in _engine.rust_protocols(), reason="the Rust engine has no Pulsar session"
)

FOLDER = CAPTURES / "pulsar"
NAMES = sorted(p.stem for p in FOLDER.glob("*.pcap")) if FOLDER.exists() else []
SMALL = [n for n in ("s08-broker-entry-metadata", "s02-producer-batching", "s04-consumer") if n in NAMES]


def same(path: Path, monkeypatch: pytest.MonkeyPatch, **kw: bool) -> int:
    """Records the Python decode of `path`, replays it in Rust, asserts no difference; the
    number of frames compared (so that a test cannot pass on an empty recording)."""
    rec = record(path, "pulsar", monkeypatch, framing=True, **kw)
    got = replay(rec)
    diffs = differences(rec, got)
    assert diffs == [], "\n".join(diffs)
    return sum(len(fs) for fs in rec.frames)


@pytest.mark.parametrize("name", NAMES)
def test_every_capture(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    assert same(FOLDER / f"{name}.pcap", monkeypatch) > 10


@pytest.mark.parametrize("name", SMALL)
def test_secrets_shown_and_frames_only(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    assert same(FOLDER / f"{name}.pcap", monkeypatch, show_secrets=True) > 10
    assert same(FOLDER / f"{name}.pcap", monkeypatch, messages=False) > 10


def _variants(cap: V.Capture) -> dict[str, list[V.Rec]]:
    n = len(cap.recs)
    out = {
        "ooo": V.out_of_order(cap.recs, places=6)[0],
        "ooo-ack": V.out_of_order(cap.recs, places=6, across_acks=True)[0],
        "retrans": V.retransmitted(cap.recs, dups=5)[0],
        "tiny": V.tiny_segments(cap.recs),
        "mid30": cap.recs[int(n * 0.3) :],
        "mid60": cap.recs[int(n * 0.6) :],
    }
    ok = V.losable(cap.recs)
    for p in (ok[len(ok) // 3], ok[2 * len(ok) // 3]) if ok else ():
        out[f"lost{p}"] = V.drop(cap.recs, {p})
    return out


@pytest.mark.parametrize("name", NAMES)
def test_variants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    cap = V.read(FOLDER / f"{name}.pcap")
    for label, recs in _variants(cap).items():
        path = V.write(cap, recs, tmp_path / f"{label}.pcap")
        assert same(path, monkeypatch) > 0, label


def mutated(cap: V.Capture, seed: int, flips: int) -> list[V.Rec]:
    """The capture with `flips` random payload bytes changed (sizes, types, protobuf, payloads)."""
    rnd = random.Random(seed)
    recs = list(cap.recs)
    data = V.data_indexes(recs)
    for _ in range(flips):
        i = rnd.choice(data)
        t = recs[i].tcp()
        assert t is not None and t.payload
        p = bytearray(t.payload)
        at = rnd.randrange(len(p))
        # Early bytes of a segment are where frame headers and commands sit: favour them.
        if rnd.random() < 0.6:
            at = rnd.randrange(min(len(p), 64))
        p[at] = rnd.choice((0x00, 0xFF, 0x08, 0x80, 0x0E, p[at] ^ (1 << rnd.randrange(8))))
        recs[i] = V.rebuild(recs[i], t.seq, bytes(p))
    return recs


@pytest.mark.parametrize("name", NAMES)
def test_mutations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    cap = V.read(FOLDER / f"{name}.pcap")
    for seed in range(8):
        path = V.write(cap, mutated(cap, seed, 4 + seed * 3), tmp_path / f"m{seed}.pcap")
        assert same(path, monkeypatch) > 0, seed
