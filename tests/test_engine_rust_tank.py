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
import random
import struct
from functools import cache
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
        ): (
            r["msg_name"],
            int(r["request_id"]) if r["request_id"] else None,
            int(r["peer_frame"]) if r["peer_frame"] else None,
        )
        for r in rows
    }
    frames = [f for call in got.frames for f in call]
    mine = {
        (f.stream, f.role, f.first_packet, f.packet): (f.type, f.correlation_id, f.peer_packet)
        for f in frames
    }
    assert mine == want
    assert all(f.status == "ok" for f in frames)
    check_spans(R.record(path_of(name), "tank", monkeypatch), got)


LE_INTS = {
    "payload_size",
    "client_version",
    "request_id",
    "partition",
    "required_acks",
    "ack_timeout_ms",
    "max_wait_ms",
    "min_bytes",
    "seqnum",
    "fetch_size",
    "header_length",
    "error_or_flags",
    "base_seqnum",
    "high_watermark",
    "chunk_length",
    "timestamp_ms",
}
"""Fields read as one little-endian integer: their span's bytes are the value."""
STR8 = {"client_id", "name", "topic"}
"""Fields read as str8: their span is the length byte and the text."""


def value_at(fields: dict, path: str):  # type: ignore[no-untyped-def,type-arg]
    v = fields
    for part in path.split("."):
        v = v[int(part)] if isinstance(v, list) else v[part]
    return v


def check_spans(rec: R.Recording, got: R.Replayed, some: bool = True) -> None:
    """Every field span lies inside its frame, and the wire bytes under it are the value: the
    integers read as little-endian numbers, the str8 texts as their length byte and bytes."""
    checked = 0
    for call, frames, spans in zip(rec.calls, got.frames, got.spans, strict=True):
        data = call[3] if call[1] == "decode" else b""
        for f, fs in zip(frames, spans, strict=True):
            for path, start, end in fs:
                assert 0 <= start <= end <= len(data), (f.type, path, start, end)
                leaf, v = path.rsplit(".", 1)[-1], value_at(f.fields, path)
                if leaf in LE_INTS and isinstance(v, int) and not isinstance(v, bool):
                    assert int.from_bytes(data[start:end], "little") == v, (f.type, path)
                    checked += 1
                elif leaf in STR8 and isinstance(v, str):
                    assert (
                        data[start] == end - start - 1
                        and data[start + 1 : end].decode("utf-8", "replace") == v
                    ), (
                        f.type,
                        path,
                    )
                    checked += 1
    assert checked or not some


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
        assert_same(R.record(path, "tank", monkeypatch), f"{kind} #{i}:\n")


# -- the crafted frames ---------------------------------------------------------------------------

CRAFTED = [
    f
    for n, f in inspect.getmembers(crafted, inspect.isfunction)
    if n.startswith("test_") and "run(" in inspect.getsource(f)
]


def record_steps(steps, limits: Limits | None = None) -> tuple[R.Recording, crafted.Out]:  # type: ignore[no-untyped-def]
    """Feeds `(role, bytes[, ts_us])` steps as packets 1, 2, 3… of one connection through the
    Python framer (as `test_tank_crafted.run` does), recording the session's calls."""
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
    return rec, out


def assert_same(rec: R.Recording, what: str = "") -> None:
    """No difference between the engines, and the Rust spans hold the values (`check_spans`)."""
    got = R.replay(rec)
    diffs = R.differences(rec, got)
    assert diffs == [], what + "\n".join(diffs)
    check_spans(rec, got, some=False)


@pytest.mark.parametrize("test", CRAFTED, ids=[f.__name__ for f in CRAFTED])
def test_crafted(test, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Runs the crafted test with its `run` recording the Python session's calls; each run is
    replayed in Rust (runs with non-default limits are left to the Rust unit tests: the replay
    uses the default limits)."""

    def run(steps, limits: Limits | None = None) -> crafted.Out:  # type: ignore[no-untyped-def]
        rec, out = record_steps(steps, limits)
        if limits is None:
            assert_same(rec)
        return out

    monkeypatch.setattr(crafted, "run", run)
    test()


# -- hostile bytes: real frames damaged ----------------------------------------------------------


@cache
def captured_frames() -> dict[str, list[list[tuple[str, bytes]]]]:
    """Per capture, per connection: the (role, bytes) of every whole frame the Python framer
    decoded, in order."""
    out: dict[str, list[list[tuple[str, bytes]]]] = {}
    with pytest.MonkeyPatch.context() as mp:
        for name in NAMES:
            rec = R.record(path_of(name), "tank", mp)
            conns: dict[int, list[tuple[str, bytes]]] = {}
            for call in rec.calls:
                if call[1] == "decode" and call[4]:
                    conns.setdefault(call[0], []).append((call[2], call[3]))
            out[name] = list(conns.values())
    return out


def damaged(rng: random.Random, data: bytes) -> bytes:
    """`data` with one kind of damage: bytes flipped (mostly in the payload, where framing stays),
    a payload cut short or grown (the header still declaring the old size), or the size changed."""
    b = bytearray(data)
    how = rng.randrange(5)
    if how <= 1 and len(b) > 5:
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(5, len(b))] = rng.randrange(256)
    elif how == 2 and len(b) > 6:
        cut = rng.randrange(5, len(b))
        b = b[:cut] + bytes(len(b) - cut)  # zeros where the tail was: lengths and counts of 0
    elif how == 3:
        b[rng.randrange(min(len(b), 12))] = rng.randrange(256)
    else:
        b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 9)))
        b[1:5] = struct.pack("<I", len(b) - 5)
    return bytes(b)


@pytest.mark.parametrize("name", NAMES)
def test_damaged_frames(name: str) -> None:
    """Every connection of the capture replayed with a third of its frames damaged (five seeds):
    the Python framer frames and decodes them (resync included), the Rust session must decode
    the same calls identically."""
    for seed in range(5):
        rng = random.Random(f"{name}-{seed}")
        for conn in captured_frames()[name]:
            steps = [(role, damaged(rng, data) if rng.random() < 0.33 else data) for role, data in conn]
            rec, _ = record_steps(steps)
            assert_same(rec, f"seed {seed}: ")


def framing_inputs() -> list[bytes]:
    rng = random.Random(1015)
    frames = [d for conns in captured_frames().values() for conn in conns for _, d in conn]
    bufs: list[bytes] = []
    for d in frames:
        bufs += [d, d[:5], d[:4], rng.randbytes(rng.randrange(1, 9)) + d[:40], damaged(rng, d)[:64]]
    bufs += [rng.randbytes(rng.randrange(0, 64)) for _ in range(2000)]
    # Headers of every id and role with small and large sizes, and a payload's first bytes.
    for msg_id in range(0, 16):
        for size in (
            0,
            3,
            4,
            9,
            13,
            20,
            1 << 16,
            (1 << 16) + 1,
            1 << 20,
            (1 << 20) + 1,
            1 << 28,
            (1 << 28) + 1,
        ):
            bufs.append(bytes([msg_id]) + struct.pack("<I", size) + rng.randbytes(rng.randrange(0, 12)))
    return bufs


def test_framing_answers_match() -> None:
    """frame_length (before and after a side is synced), resync and sniff give the Python answers
    on real frame heads, damaged ones, junk before a frame, random bytes and every id's header."""
    from wiredump.dissect.protocols.tank.session import TankSession

    for buf in framing_inputs():
        for role in ("client", "server"):
            py = TankSession(None)  # type: ignore[arg-type]
            assert _engine.tank_frame_length(buf, role, False) == py.frame_length(buf, 0, role), (buf, role)
            py._synced.add(role)
            assert _engine.tank_frame_length(buf, role, True) == py.frame_length(buf, 0, role), (buf, role)
            assert _engine.tank_resync(buf, role) == TankSession(None).resync(buf, 0, role), (buf, role)  # type: ignore[arg-type]
            assert _engine.tank_sniff(buf, role) == SPEC.sniff(buf, role), (buf, role)


def test_sequence_numbers_wrap_and_int64_overflow_is_left_out() -> None:
    """TANK's seqnums are uint64_t: a sparse bundle starting near 2**64 numbers on modulo 2**64 (as
    the broker's own arithmetic does); offsets and timestamps at or above 2**63 do not fit the int64
    columns and are None in the model (the tables would null them). Both engines, same values."""
    top = 1 << 64
    msgs = [crafted.M(b"a", seq=top - 3, ts=top - 1), crafted.M(b"b", seq=top - 2, ts=1 << 63)]
    msgs.append(crafted.M(b"c", seq=top + 5, ts=(1 << 63) - 1))
    req = crafted.produce_req(
        2, [("t", [(0, crafted.bundle(msgs, sparse=True))])], with_seqnum={("t", 0): top - 3}
    )
    rec, out = record_steps([(crafted.C, req)])
    assert_same(rec)
    (f,) = out.frames
    assert [(m.offset, m.timestamp_ms) for m in f.messages] == [
        (None, None),
        (None, None),
        (5, (1 << 63) - 1),
    ]
    b = f.fields["topics"][0]["partitions"][0]["bundle"]
    assert (b["first_seqnum"], b["last_seqnum"]) == (top - 3, 5)
    assert [m["seqnum"] for m in b["messages"]] == [top - 3, top - 2, 5]
    assert f.summary == f"req 2 t/0 3 msgs seq {top - 3}..5"


def test_message_cap_and_decompression_limit_under_default_limits() -> None:
    """A Produce carrying 30,000 messages (over `Limits.max_messages`, 25,000: the rest are read
    and counted, a `message_limit` anomaly, status ok) and a snappy bundle whose preamble declares
    2 MiB from a few compressed bytes (over the 1 MiB ratio floor: `decompression_limit`, not the
    frame's fault), then a Consume response with both in one chunk: same in both engines."""
    many = [crafted.M(b"", ts=1_700_000_000_000) for _ in range(30_000)]
    big = crafted.bundle(many)
    bomb = bytes([1 | (1 << 2)]) + crafted.varint(2 << 20) + b"\x00" * 8
    req = crafted.produce_req(4, [("t", [(0, big), (1, bomb)])])
    consume = crafted.consume_req(5, [("t", [(0, 10)])])
    entry = crafted.entry(0, 0, crafted.q(10), crafted.q(30_011), crafted.u32(len(crafted.chunk(big, bomb))))
    resp = crafted.consume_resp(5, [("t", [entry])], [crafted.chunk(big, bomb)])
    rec, out = record_steps([(crafted.C, req), (crafted.C, consume), (crafted.S, resp)])
    assert_same(rec)
    produce, _, response = out.frames
    for f in (produce, response):
        assert f.status == "ok"
        assert len(f.messages) == 25_000
        kinds = [a.kind for a in f.anomalies]
        assert kinds == ["decompression_limit", "message_limit"], f.anomalies
        assert f.anomalies[1].detail.startswith("30000 messages in the frame; the first 25000 are kept")
        assert f.anomalies[0].detail.endswith("snappy: declares 2097152 bytes, over the limit of 1048576")
    # Deliveries are numbered from the entry's base sequence number.
    assert [m.offset for m in response.messages[:3]] == [10, 11, 12]
