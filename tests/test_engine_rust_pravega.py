"""Pravega: the Rust session against the Python reference, call by call (`tests/replay_support.py`).

Every Pravega capture in shared/captures is decoded by the Python pipeline with its sessions
recorded; the same decode/close calls go through the Rust session and every frame (fields in
order, messages, anomalies, statuses, pairing), exchange and frame-less report must be the same.
The variants a user's captures show (packets lost, the capture begun mid-stream, tiny
segments, out of order) change which bytes each call gets, so they are replayed too, and the
crafted frames of `test_pravega_crafted.py` are decoded by both engines.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import variants as V
from tests.conftest import CAPTURES
from tests.replay_support import Recording, Replayed, _Recorder, differences, record, replay
from wiredump.dissect.protocols.pravega.codec import java_utf

pytest.importorskip("wiredump._engine")
from wiredump import _engine  # noqa: E402

FOLDER = CAPTURES / "pravega"
NAMES = sorted(p.stem for p in FOLDER.glob("*.pcap")) if FOLDER.is_dir() else []
pytestmark = [
    pytest.mark.skipif(not NAMES, reason="Pravega captures not available"),
    pytest.mark.skipif("pravega" not in _engine.rust_protocols(), reason="no Rust Pravega session"),
]


FRAME_LENGTH_BYTES = 8 + 16 * 1024
"""Bytes of the buffer a Pravega `frame_length` can read (a first frame up to RESYNC_WAIT_MAX is
decoded whole; beyond, only its header): recorded so, the answers stay the same."""
RESYNC_BYTES = 4 * 1024 * 1024
"""Resync buffers beyond this are not recorded (their answers are still checked by the decode
calls that follow)."""


def record_framing(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, str, str, bytes, int | None]]:
    """Has every recorded session also note its framing questions and its answers:
    `(stream, op, role, bytes from pos, answer relative to pos)`."""
    calls: list[tuple[int, str, str, bytes, int | None]] = []
    frame_length, resync = _Recorder.frame_length, _Recorder.resync
    sessions = itertools.count()

    def key(self: _Recorder) -> int:
        # One key per session (crafted tests make several sessions on stream 0).
        return self.__dict__.setdefault("_framing_key", next(sessions))

    def fl(self: _Recorder, buf: bytes | bytearray, pos: int, role: str) -> int:
        answer = frame_length(self, buf, pos, role)
        calls.append((key(self), "frame_length", role, bytes(buf[pos : pos + FRAME_LENGTH_BYTES]), answer))
        return answer

    def rs(self: _Recorder, buf: bytes | bytearray, pos: int, role: str) -> int | None:
        answer = resync(self, buf, pos, role)
        if len(buf) - pos <= RESYNC_BYTES:
            at = None if answer is None else answer - pos
            calls.append((key(self), "resync", role, bytes(buf[pos:]), at))
        return answer

    monkeypatch.setattr(_Recorder, "frame_length", fl)
    monkeypatch.setattr(_Recorder, "resync", rs)
    return calls


def framing_differences(calls: list[tuple[int, str, str, bytes, int | None]]) -> list[str]:
    """Each framing question whose Rust answer differs from the Python one."""
    got = _engine.replay_framing("pravega", [c[:4] for c in calls])
    return [
        f"call {i}: session {c[0]} {c[1]} {c[2]} on {c[3][:16].hex()}… ({len(c[3])} B): Python {c[4]}, Rust {g}"
        for i, (c, g) in enumerate(zip(calls, got, strict=True))
        if c[4] != g
    ][:20]


def check(path: Path, monkeypatch: pytest.MonkeyPatch, *, asked: bool = True, **kw: object) -> int:
    """Records the Python calls on `path`, replays them in Rust (decodes and framing questions);
    returns the frames compared."""
    framing = record_framing(monkeypatch)
    rec = record(path, "pravega", monkeypatch, **kw)  # type: ignore[arg-type]
    got = replay(rec)
    diffs = differences(rec, got) + framing_differences(framing)
    assert diffs == [], "\n".join(diffs)
    assert framing or not asked, "the Python framer asked nothing"
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
def test_many_cuts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """The capture begun at 25 places spread through it (each start is a different mid-frame or
    frame-boundary case for the first-frame check and resync)."""
    cap = V.read(FOLDER / f"{name}.pcap")
    if len(cap.recs) > 3000:
        pytest.skip("a large capture: the five fractions of test_mid_stream cover it")
    for cut in V.spread(list(range(1, len(cap.recs) - 1)), 25):
        with pytest.MonkeyPatch.context() as mp:
            # A late start may leave no Pravega bytes at all: nothing asked is then right.
            check(V.write(cap, cap.recs[cut:], tmp_path / f"cut{cut}.pcap"), mp, asked=False)


@pytest.mark.parametrize("name", NAMES)
def test_retransmitted_and_reordered_across_acks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    cap = V.read(FOLDER / f"{name}.pcap")
    recs, _, _ = V.retransmitted(cap.recs)
    with pytest.MonkeyPatch.context() as mp:
        check(V.write(cap, recs, tmp_path / "retx.pcap"), mp)
    recs, _ = V.out_of_order(cap.recs, across_acks=True)
    check(V.write(cap, recs, tmp_path / "ooo-acks.pcap"), monkeypatch)


@pytest.mark.parametrize("name", NAMES)
def test_lossy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    cap = V.read(FOLDER / f"{name}.pcap")
    points = V.losable(cap.recs)
    assert points
    for lost in V.spread(points, 6):
        with pytest.MonkeyPatch.context() as mp:
            check(V.write(cap, V.drop(cap.recs, {lost}), tmp_path / f"lost{lost}.pcap"), mp)


@pytest.mark.parametrize("name", NAMES)
def test_tiny_segments_and_out_of_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    cap = V.read(FOLDER / f"{name}.pcap")
    if len(cap.recs) > 3000:
        pytest.skip("tiny segments of a large capture take long in the Python engine")
    with pytest.MonkeyPatch.context() as mp:
        check(V.write(cap, V.tiny_segments(cap.recs), tmp_path / "tiny.pcap"), mp)
    recs, _ = V.out_of_order(cap.recs)
    check(V.write(cap, recs, tmp_path / "ooo.pcap"), monkeypatch)


# -- the crafted frames of test_pravega_crafted.py, decoded by both engines ---------------------
def _crafted_tests() -> list[str]:
    from tests import test_pravega_crafted as crafted

    return sorted(n for n in dir(crafted) if n.startswith("test_") and callable(getattr(crafted, n)))


def check_crafted(monkeypatch: pytest.MonkeyPatch, body: Callable[[], object]) -> None:
    """Runs `body` (which feeds crafted bytes to the Python framer through
    `test_pravega_crafted.run`), recording the session calls its framers make, then replays them
    into the Rust session: decodes, exchanges and framing answers must be the same."""
    from tests import test_pravega_crafted as crafted

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

    framing = record_framing(monkeypatch)
    monkeypatch.setattr(crafted.SPEC, "new_session", new_session)
    monkeypatch.setattr(crafted.Out, "exchange", exchange)
    body()
    monkeypatch.undo()
    assert framing_differences(framing) == []
    if not any(rec.calls for rec in recordings):
        pytest.skip("no session calls made")
    for rec in recordings:
        if not rec.calls:
            continue
        got = replay(rec)
        diffs = differences(rec, got)
        assert diffs == [], "\n".join(diffs)
        check_spans(rec, got)


@pytest.mark.parametrize("test_name", _crafted_tests())
def test_crafted(test_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs one crafted test (its own assertions on the Python decode hold) through both engines."""
    from tests import test_pravega_crafted as crafted

    check_crafted(monkeypatch, getattr(crafted, test_name))


def _not_printable_edges() -> list[str]:
    """Characters on both sides of every boundary of Python's `str.isprintable()`."""
    edges: set[int] = set()
    previous = True
    for cp in range(0x110000):
        printable = chr(cp).isprintable()
        if printable != previous:
            edges.update((cp - 1, cp))
        previous = printable
    return [chr(cp) for cp in sorted(edges) if cp >= 0 and not 0xD800 <= cp <= 0xDFFF]


def test_table_keys_shown_as_text_exactly_when_python_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """`key_text` follows `str.isprintable()`: keys made of the characters at every edge of the
    printable ranges, in TableRead replies (≤ 1000 entries each, all kept in `fields`)."""
    from tests import test_pravega_crafted as crafted

    chars = _not_printable_edges()
    assert len(chars) > 1000

    def entry(key: bytes) -> bytes:
        return (
            crafted.i32(len(key) + 8)
            + crafted.i32(len(key))
            + key
            + crafted.i64(3)
            + crafted.i32(0)
            + crafted.i32(0)
        )

    def body() -> None:
        chunks = [crafted.c(crafted.HELLO_C), crafted.sv(crafted.HELLO_S)]
        for rid, at in enumerate(range(0, len(chars), 900), 1):
            keys = [("k" + ch).encode() for ch in chars[at : at + 900]]
            payload = (
                crafted.i64(rid)
                + crafted.s(crafted.SEG)
                + crafted.i32(len(keys))
                + b"".join(map(entry, keys))
            )
            chunks.append(crafted.sv(crafted.cmd(79, payload)))
        out = crafted.run(*chunks)
        reads = out.of("TableRead")
        assert len(reads) == len(range(0, len(chars), 900))
        shown = sum("key_text" in e["key"] for f in reads for e in f.fields["entries"])
        assert 0 < shown < len(chars)

    check_crafted(monkeypatch, body)


@functools.cache
def _capture_frames(name: str, limit: int = 400) -> list[tuple[str, bytes]]:
    """The first whole frames of a capture, by role, as the Python framer cut them."""
    mp = pytest.MonkeyPatch()
    try:
        rec = record(FOLDER / f"{name}.pcap", "pravega", mp)
    finally:
        mp.undo()
    out = [(c[2], c[3]) for c in rec.calls if c[1] == "decode" and c[4] and len(c[3]) <= 4096]
    return out[:limit]


@pytest.mark.parametrize("seed", range(40))
def test_mutated_frames(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile bytes: real frames with bytes flipped, lengths and counts bent, pieces cut or
    repeated, sent as odd-sized chunks. Both engines must still agree on every frame, anomaly
    text and offset, pairing, and framing answer (resync included)."""
    import random

    from tests import test_pravega_crafted as crafted

    rng = random.Random(seed)
    frames = [f for name in NAMES for f in _capture_frames(name, 250)]
    assert frames

    def mutate(data: bytes) -> bytes:
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            op = rng.randrange(6)
            at = rng.randrange(len(b)) if b else 0
            if op == 0 and b:  # flip a byte
                b[at] ^= 1 << rng.randrange(8)
            elif op == 1 and len(b) >= 8:  # bend the header's length
                b[4:8] = (
                    int.from_bytes(b[4:8], "big", signed=True) + rng.choice((-9, -1, 1, 7, 300))
                ).to_bytes(4, "big", signed=True)
            elif op == 2 and len(b) > 12:  # a count or length field made huge or negative
                at = rng.randrange(8, len(b) - 4)
                b[at : at + 4] = rng.choice((b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\x00\x00\x10\x00"))
            elif op == 3:  # cut
                del b[at:]
            elif op == 4:  # repeat a piece
                b[at:at] = b[at : at + rng.randint(1, 24)]
            else:  # garbage in front
                b[0:0] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 12)))
        return bytes(b)

    def body() -> None:
        chunks: list[tuple[str, bytes]] = [crafted.c(crafted.HELLO_C), crafted.sv(crafted.HELLO_S)]
        for role, data in rng.sample(frames, min(60, len(frames))):
            wire = mutate(data) if rng.random() < 0.5 else data
            while wire:
                n = rng.choice((1, 3, 8, 40, 500, 5000))
                chunks.append((role, wire[:n]))
                wire = wire[n:]
        crafted.run(*chunks)

    check_crafted(monkeypatch, body)


def _openers(name: str, limit: int = 8192) -> list[tuple[bytes, bytes]]:
    """Each connection's first bytes each way, as the Python framer was given them."""
    mp = pytest.MonkeyPatch()
    try:
        rec = record(FOLDER / f"{name}.pcap", "pravega", mp)
    finally:
        mp.undo()
    sides: dict[tuple[int, str], bytearray] = {}
    for c in rec.calls:
        if c[1] == "decode":
            buf = sides.setdefault((c[0], c[2]), bytearray())
            if len(buf) < limit:
                buf += c[3]
    return [
        (bytes(sides.get((s, "client"), b""))[:limit], bytes(sides.get((s, "server"), b""))[:limit])
        for s in sorted({k[0] for k in sides})
    ]


@pytest.mark.parametrize("name", NAMES)
def test_detection(name: str) -> None:
    """The Rust `score` and `sniff` against the Python ones on each connection's first bytes,
    whole, begun mid-stream (cut at several places), one side missing, and mutated; the trial
    (the common part, ported elsewhere) is the Python one given to both."""
    import random

    from wiredump.dissect.protocols.pravega import SPEC
    from wiredump.dissect.protocols.trial import trial

    rng = random.Random(name)
    cases: list[tuple[bytes, bytes, bool]] = []
    for client, server in _openers(name):
        cases.append((client, server, True))
        cases.append((client, server, False))
        cases.append((client, b"", True))
        for cut in (1, 3, 8, 16, 17, 40, 301):
            cases.append((client[cut:], server[cut:], False))
        for _ in range(6):
            b = bytearray(client)
            if b:
                b[rng.randrange(min(len(b), 24))] ^= 1 << rng.randrange(8)
            cases.append((bytes(b), server, True))
    seen = set()
    for client, server, opened in cases:
        t = trial(SPEC, client, server, opened)
        side = lambda s: (list(s.frames), s.skipped, s.broken, s.partial, s.misplaced)  # noqa: E731
        got = _engine.replay_detection(
            "pravega", (side(t.client), side(t.server), t.answered, t.points()), client, server, opened
        )
        want = (
            SPEC.score(client, server, opened),
            SPEC.sniff(client, "client"),
            SPEC.sniff(server, "server"),
        )
        assert got == want, (client[:24].hex(), server[:24].hex(), opened)
        seen.add(want[0])
    assert len(seen) > 2  # high, low and in-between scores were all compared


def _at(fields: object, path: str) -> object:
    for part in path.split("."):
        fields = fields[int(part)] if isinstance(fields, list) else fields[part]  # type: ignore[index]
    return fields


def check_spans(rec: Recording, got: Replayed) -> int:
    """Every field span the Rust session gave lies inside its frame, and the wire bytes at the
    span are the value: ints and bools re-read big-endian, strings as their u16 length and text,
    UUIDs as their 16 bytes, bytes as the head of what the span holds (a blob after its length
    prefix). Returns the leaves checked."""
    checked = 0
    for call, frames, spans in zip(rec.calls, got.frames, got.spans, strict=True):
        if call[1] != "decode" or len(frames) != 1:
            continue
        data: bytes = call[3]
        for path, start, end in spans[0]:
            assert 0 <= start <= end <= len(data), (path, start, end, len(data))
            value = _at(frames[0].fields, path)
            raw = data[start:end]
            leaf = path.rsplit(".", 1)[-1]
            if leaf in ("trailing_bytes", "padding") or isinstance(value, (dict, list)):
                continue
            if isinstance(value, bool):
                assert len(raw) == 1 and (raw[0] != 0) == value, path
            elif isinstance(value, int):
                assert len(raw) in (1, 4, 8), path
                assert int.from_bytes(raw, "big", signed=True) == value, path
            elif isinstance(value, str) and len(raw) == 16 and len(value) == 36:
                assert raw.hex() == value.replace("-", ""), path
            elif isinstance(value, str) and leaf == "key_text":
                assert raw.decode() == value, path
            elif isinstance(value, str) and len(raw) == 1:
                continue  # an attribute update type shown by name
            elif isinstance(value, str):
                assert int.from_bytes(raw[:2], "big") == len(raw) - 2, path
                assert java_utf(raw[2:]) == (value, True), path
            elif isinstance(value, bytes):
                assert value in (raw[: len(value)], raw[4 : 4 + len(value)]), path
            checked += 1
    return checked


@pytest.mark.parametrize("name", NAMES)
def test_spans_hold_the_values(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = record(FOLDER / f"{name}.pcap", "pravega", monkeypatch)
    assert check_spans(rec, replay(rec)) > 50
