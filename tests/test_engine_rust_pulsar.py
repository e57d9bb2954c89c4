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


# -- the crafted cases of tests/test_pulsar_crafted.py, each connection replayed in Rust ---------------
def _crafted_cases() -> list[tuple[str, object]]:
    from tests import test_pulsar_crafted as C

    cases: list[tuple[str, object]] = []
    for name in sorted(dir(C)):
        fn = getattr(C, name)
        if not name.startswith("test_") or not callable(fn) or name == "test_sniff":
            continue
        marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
        if marks:
            for v in marks[0].args[1]:
                cases.append((f"{name}[{v}]", v))
        else:
            cases.append((name, None))
    return cases


CRAFTED = _crafted_cases()


@pytest.mark.parametrize(("name", "arg"), CRAFTED, ids=[c[0] for c in CRAFTED])
def test_crafted(monkeypatch: pytest.MonkeyPatch, name: str, arg: object) -> None:
    from tests import test_pulsar_crafted as C
    from tests.replay_support import Recording, _Recorder
    from wiredump.dissect.limits import Limits

    recs: list[Recording] = []
    skipped = []
    original = C.SPEC.new_session

    def new_session(ctx):  # type: ignore[no-untyped-def]
        inner = original(ctx)
        if ctx.limits != Limits():
            skipped.append(ctx)  # the replay runs with the default limits
            return inner
        opts = (bool(ctx.options.get("show_secrets")), bool(ctx.options.get("messages", True)), False)
        rec = Recording("pulsar", opts, framing=True)
        recs.append(rec)
        return _Recorder(inner, rec)

    init, exchange = C.Conn.__init__, C.Out.exchange

    def conn_init(self, *a, **kw):  # type: ignore[no-untyped-def]
        n = len(recs)
        init(self, *a, **kw)
        self.out._rec = recs[-1] if len(recs) > n else None

    def out_exchange(self, e):  # type: ignore[no-untyped-def]
        exchange(self, e)
        if getattr(self, "_rec", None) is not None:
            self._rec.exchanges.append(e)

    monkeypatch.setattr(C.SPEC, "new_session", new_session)
    monkeypatch.setattr(C.Conn, "__init__", conn_init)
    monkeypatch.setattr(C.Out, "exchange", out_exchange)
    fn = getattr(C, name.split("[")[0])
    fn(arg) if arg is not None else fn()
    monkeypatch.undo()
    assert recs or skipped
    for rec in recs:
        diffs = differences(rec, replay(rec))
        assert diffs == [], "\n".join(diffs)
