"""TANK in the Rust engine gives exactly what the Python reference gives, call by call.

The Python pipeline runs on every TANK capture in `shared/captures/tank` and on variants of each
made by record surgery (`tests/variants.py`: segments reordered, retransmitted, cut into tiny
pieces, packets lost, the capture begun mid-stream or ended inside a frame); every decode/close
call its framer makes of the TANK session is recorded and replayed into the Rust session
(`tests/replay_support.py`), and every frame (fields in order with their types, messages,
anomalies, pairing), exchange and report must agree. The crafted frames of
`tests/test_tank_crafted.py` (sparse bundles, snappy, every error layout, cuts, garbage) are
replayed the same way while that module's own assertions run on the Python side.

Besides the equality, the Rust frames of the original captures are checked against the
independent decodes beside them (`X.pdus.tsv`: type, request id and peer packet of every PDU).
"""

from __future__ import annotations

import csv
import inspect
from pathlib import Path

import pytest

from tests import replay_support as R
from tests import test_tank_crafted as crafted
from tests import variants as V
from tests.conftest import CAPTURES
from wiredump.dissect.correlation import Correlator
from wiredump.dissect.framing import ConnectionFramer
from wiredump.dissect.limits import Limits
from wiredump.dissect.protocols.base import ConnContext
from wiredump.dissect.protocols.tank import SPEC

_engine = pytest.importorskip("wiredump._engine")
if "tank" not in _engine.rust_protocols():
    pytest.skip("the Rust engine has no TANK session", allow_module_level=True)

NAMES = sorted(p.stem for p in (CAPTURES / "tank").glob("*.pcap")) if (CAPTURES / "tank").is_dir() else []


def path_of(name: str) -> Path:
    return CAPTURES / "tank" / f"{name}.pcap"


def same_as_python(path: Path, monkeypatch: pytest.MonkeyPatch) -> R.Replayed:
    """Records the Python TANK session on `path`, replays it in Rust and asserts no difference."""
    rec = R.record(path, "tank", monkeypatch)
    assert rec.calls, f"no TANK frame decoded in {path.name}"
    got = R.replay(rec)
    diffs = R.differences(rec, got)
    assert diffs == [], "\n".join(diffs)
    return got


@pytest.mark.parametrize("name", NAMES)
def test_capture(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    got = same_as_python(path_of(name), monkeypatch)
    # The independent decode: every PDU's type, request id and peer packet, by (role, packets).
    with (CAPTURES / "tank" / f"{name}.pdus.tsv").open() as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    want = {
        (
            int(r["stream"]),
            "client" if r["dir"] == "c>s" else "server",
            int(r["first_frame"]),
            int(r["last_frame"]),
        ): (r["msg_name"], int(r["request_id"]) if r["request_id"] else None, int(r["peer_frame"]) if r["peer_frame"] else None)
        for r in rows
    }
    frames = [f for call in got.frames for f in call]
    mine = {
        (f.stream, f.role, f.first_packet, f.packet): (f.type, f.correlation_id, f.peer_packet) for f in frames
    }
    assert mine == want
    assert all(f.status == "ok" for f in frames)


def variant_recs(cap: V.Capture, kind: str) -> list[list[V.Rec]]:
    recs = cap.recs
    if kind == "out_of_order":
        return [V.out_of_order(recs)[0], V.out_of_order(recs, across_acks=True)[0]]
    if kind == "retransmitted":
        return [V.retransmitted(recs)[0]]
    if kind == "tiny_segments":
        return [V.tiny_segments(recs)]
    if kind == "lossy":
        return [V.drop(recs, {p}) for p in V.spread(V.losable(recs), 4)]
    if kind == "mid_stream":
        return [recs[int(len(recs) * f) :] for f in (0.2, 0.3, 0.45, 0.6, 0.8)]
    if kind == "ends_inside":
        data = V.data_indexes(recs)
        return [recs[: i + 1] for i in V.spread(data, 5)]
    raise AssertionError(kind)


KINDS = ("out_of_order", "retransmitted", "tiny_segments", "lossy", "mid_stream", "ends_inside")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", NAMES)
def test_variant(name: str, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cap = V.read(path_of(name))
    for i, recs in enumerate(variant_recs(cap, kind)):
        path = V.write(cap, recs, tmp_path / f"{kind}-{i}.pcap")
        rec = R.record(path, "tank", monkeypatch)
        diffs = R.differences(rec, R.replay(rec))
        assert diffs == [], f"{kind} #{i}:\n" + "\n".join(diffs)


# -- the crafted frames ---------------------------------------------------------------------------

CRAFTED = [
    f
    for n, f in inspect.getmembers(crafted, inspect.isfunction)
    if n.startswith("test_") and "run(" in inspect.getsource(f)
]


@pytest.mark.parametrize("test", CRAFTED, ids=[f.__name__ for f in CRAFTED])
def test_crafted(test, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs the crafted test with its `run` recording the Python session's calls; each run is
    replayed in Rust (runs with non-default limits are left to the Rust unit tests: the replay
    uses the default limits)."""
    replayed: list[int] = []

    def run(steps, limits: Limits | None = None) -> crafted.Out:  # type: ignore[no-untyped-def]
        rec = R.Recording("tank", (False, True, False))
        out = crafted.Out()
        ctx = ConnContext(
            "crafted", 0, "10.0.0.1", 40000, "10.0.0.2", 11011, Correlator(0, "tank"), limits or Limits()
        )
        session = R._Recorder(SPEC.new_session(ctx), rec)
        framer = ConnectionFramer(SPEC, session, ctx, out)
        for i, step in enumerate(steps, 1):
            ts = step[2] if len(step) > 2 else crafted.TS0 + i * 1000
            framer.feed(step[0], step[1], i, ts)
        framer.finish()
        rec.exchanges = list(out.exchanges)
        if limits is None:
            diffs = R.differences(rec, R.replay(rec))
            assert diffs == [], "\n".join(diffs)
            replayed.append(len(rec.calls))
        return out

    monkeypatch.setattr(crafted, "run", run)
    test()
