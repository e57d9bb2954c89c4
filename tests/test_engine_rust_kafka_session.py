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
from typing import Any

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


# -- variants (tests/variants.py): reordered, retransmitted, re-segmented, cut, lossy -------------
VARIANT_NAMES = [
    n
    for n in (
        "admin-kafka-python",
        "kafka-python-basic",
        "kafka-python-pinned-2.5",
        "kafka-python-legacy-msgset",
        "ck-compress-zstd",
        "ck-compress-gzip",
        "ck-compress-lz4",
        "ck-compress-snappy",
    )
    if (KAFKA / f"{n}.pcap").exists()
]


def _variants(name: str) -> list[tuple[str, list]]:
    """The variants of one capture: every kind once, cuts and losses at a dozen places each
    (the regressions of `test_variants.py` included)."""
    from tests import variants as V

    cap = V.read(KAFKA / f"{name}.pcap")
    recs = cap.recs
    out = [
        ("out-of-order", V.out_of_order(recs)[0]),
        ("out-of-order-across-acks", V.out_of_order(recs, across_acks=True)[0]),
        ("retransmitted", V.retransmitted(recs)[0]),
        ("tiny-segments", V.tiny_segments(recs)),
    ]
    cuts = set(V.spread(list(range(1, len(recs) - 1)), 12)) | {int(len(recs) * f) for f in (0.3, 0.6)}
    cuts |= {21, 165, 208} & set(range(1, len(recs) - 1))
    out += [(f"cut-{c}", recs[c:]) for c in sorted(cuts)]
    out += [(f"lost-{p}", V.drop(recs, {p})) for p in V.spread(V.losable(recs), 12)]
    out += [(f"head-{n}", recs[:n]) for n in V.spread(list(range(2, len(recs))), 6)]
    return out


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_variants_identical(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests import variants as V

    cap = V.read(KAFKA / f"{name}.pcap")
    failures = []
    for label, recs in _variants(name):
        path = V.write(cap, recs, tmp_path / f"{label}.pcap")
        rec = replay_support.record(path, "kafka", monkeypatch)
        diffs = replay_support.differences(rec, replay_support.replay(rec), limit=3)
        if diffs:
            failures.append(f"{label}: " + "; ".join(diffs))
    assert not failures, "\n".join(failures)


# -- the crafted cases of tests/test_kafka_crafted.py ------------------------------------------------
FRAME_SEEN = (
    "type",
    "type_code",
    "kind",
    "version",
    "correlation_id",
    "status",
    "error_code",
    "error",
    "summary",
    "partitions",
)


def _crafted_cases() -> list[tuple[str, dict[str, Any]]]:
    """Every test of `test_kafka_crafted` with each of its parameter sets."""
    import inspect

    from tests import test_kafka_crafted as crafted

    cases: list[tuple[str, dict[str, Any]]] = []
    for name, fn in vars(crafted).items():
        if not name.startswith("test_") or not callable(fn):
            continue
        if getattr(fn, "is_hypothesis_test", False):
            continue  # random inputs: not a repeatable comparison (see the corrupt-gzip case below)
        params = list(inspect.signature(fn).parameters)
        combos: list[dict[str, Any]] = [{}]
        for mark in reversed(getattr(fn, "pytestmark", [])):
            if mark.name != "parametrize":
                continue
            argnames, values = mark.args[0], mark.args[1]
            names = [a.strip() for a in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
            rows = [v.values if hasattr(v, "values") else v for v in values]
            rows = [tuple(r) if len(names) > 1 else (r,) for r in rows]
            combos = [{**c, **dict(zip(names, r, strict=True))} for c in combos for r in rows]
        if any(p not in combos[0] for p in params):
            continue  # needs a fixture: not replayable here
        cases += [(f"{name}[{i}]", c) for i, c in enumerate(combos)]
    return cases


@pytest.mark.parametrize(("case", "kwargs"), _crafted_cases(), ids=[c for c, _ in _crafted_cases()])
def test_crafted_identical(case: str, kwargs: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each crafted test's Kafka sessions, replayed call by call: the same frames (pairing stamps
    aside: most crafted sessions run without the framer that stamps them)."""
    from tests import test_kafka_crafted as crafted
    from wiredump.dissect.limits import Limits
    from wiredump.dissect.protocols.kafka.session import KafkaSession

    sessions: list[tuple[Any, list[tuple[str, bytes, bool, list[Any]]]]] = []
    init, decode = KafkaSession.__init__, KafkaSession.decode

    def rec_init(self: Any, ctx: Any) -> None:
        init(self, ctx)
        self._calls = []
        sessions.append((self, self._calls))

    framing: dict[int, tuple[list[tuple[Any, ...]], list[Any]]] = {}
    frame_length, resync = KafkaSession.frame_length, KafkaSession.resync

    def note(self: Any, call: tuple[Any, ...], answer: Any) -> None:
        calls, answers = framing.setdefault(id(self), ([], []))
        calls.append((0, *call))
        answers.append(answer)

    def rec_decode(self: Any, data: bytes, role: str, complete: bool = True) -> Any:
        frames = decode(self, data, role, complete)
        self._calls.append((role, bytes(data), complete, list(frames)))
        note(self, ("decode", role, bytes(data), complete), len(frames))
        return frames

    def rec_frame_length(self: Any, buf: Any, pos: int, role: str) -> int:
        got = frame_length(self, buf, pos, role)
        note(self, ("frame_length", role, bytes(buf[pos:])), got)
        return got

    def rec_resync(self: Any, buf: Any, pos: int, role: str) -> int | None:
        got = resync(self, buf, pos, role)
        note(self, ("resync", role, bytes(buf[pos:])), None if got is None else got - pos)
        return got

    monkeypatch.setattr(KafkaSession, "__init__", rec_init)
    monkeypatch.setattr(KafkaSession, "decode", rec_decode)
    monkeypatch.setattr(KafkaSession, "frame_length", rec_frame_length)
    monkeypatch.setattr(KafkaSession, "resync", rec_resync)
    try:
        getattr(crafted, case.split("[")[0])(**kwargs)
    except AssertionError:
        pass  # the crafted test's own verdict is its business; the frames are compared here
    monkeypatch.undo()
    compared = 0
    for s, calls in sessions:
        ctx = s.ctx
        if ctx.limits != Limits() or not calls:
            continue  # a crafted limit the replay does not take
        options = (bool(ctx.options.get("show_secrets")), bool(ctx.options.get("messages", True)), False)
        fcalls, fanswers = framing.get(id(s), ([], []))
        assert _engine.kafka_framing_replay(fcalls, options) == fanswers, "framing answers differ"
        replay_calls = [(0, "decode", role, data, complete, 0, 0, 0) for role, data, complete, _ in calls]
        frames, *_ = _engine.replay(
            "kafka", [(0, "10.0.0.1", 40000, "10.0.0.2", 9092)], replay_calls, options
        )
        for i, ((_, data, complete, py), rs) in enumerate(zip(calls, frames, strict=True)):
            assert len(py) == len(rs), f"call {i}"
            for a, b in zip(py, rs, strict=True):
                # A cut frame's `truncated` status is the framer's stamp, which the replay applies.
                attrs = FRAME_SEEN if complete else tuple(x for x in FRAME_SEEN if x != "status")
                for attr in attrs:
                    assert replay_support._same(getattr(a, attr), getattr(b, attr)), (
                        i,
                        attr,
                        getattr(a, attr),
                        getattr(b, attr),
                    )
                assert replay_support._same(a.fields, b.fields), (
                    i,
                    replay_support._where(a.fields, b.fields),
                )
                am = [[getattr(m, n) for n in replay_support.MESSAGE_ATTRS] for m in a.messages]
                bm = [[getattr(m, n) for n in replay_support.MESSAGE_ATTRS] for m in b.messages]
                assert replay_support._same(am, bm), (i, "messages")
                aa = [(x.kind, x.detail, x.offset) for x in a.anomalies]
                ba = [(x.kind, x.detail, x.offset) for x in b.anomalies]
                stamp = ("truncated", f"frame cut after {len(data)} bytes", len(data))
                for got in (aa, ba):
                    if not complete and stamp in got:
                        got.remove(stamp)  # the framer's (absent where no framer ran), as the status
                assert aa == ba, (i, aa, ba)
                compared += 1
    if not compared:
        pytest.skip("no Kafka session with default limits decoded anything")


# -- framing and resynchronisation, call by call ---------------------------------------------------
def record_framing(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[tuple[Any, ...]], list[Any]]:
    """Every frame_length/resync/decode/close call the Python framer makes of the Kafka sessions
    on `path` (the buffer from the position asked about on) and the session's answer to each."""
    from wiredump.dissect.pipeline import Options, dissect
    from wiredump.dissect.protocols.kafka.session import KafkaSession

    calls: list[tuple[Any, ...]] = []
    answers: list[Any] = []
    orig = {n: getattr(KafkaSession, n) for n in ("frame_length", "resync", "decode", "close")}

    def mine(s: Any) -> bool:
        return s.ctx.stream >= 0 and not s.ctx.options.get("observe")

    def frame_length(self: Any, buf: Any, pos: int, role: str) -> int:
        got = orig["frame_length"](self, buf, pos, role)
        if mine(self):
            calls.append((self.ctx.stream, "frame_length", role, bytes(buf[pos:])))
            answers.append(got)
        return got

    def resync(self: Any, buf: Any, pos: int, role: str) -> int | None:
        got = orig["resync"](self, buf, pos, role)
        if mine(self):
            calls.append((self.ctx.stream, "resync", role, bytes(buf[pos:])))
            answers.append(None if got is None else got - pos)
        return got

    def decode(self: Any, data: bytes, role: str, complete: bool = True) -> Any:
        got = orig["decode"](self, data, role, complete)
        if mine(self):
            calls.append((self.ctx.stream, "decode", role, bytes(data), complete))
            answers.append(len(got))
        return got

    def close(self: Any) -> Any:
        got = orig["close"](self)
        if mine(self):
            calls.append((self.ctx.stream, "close"))
            answers.append(len(got))
        return got

    for name, fn in (
        ("frame_length", frame_length),
        ("resync", resync),
        ("decode", decode),
        ("close", close),
    ):
        monkeypatch.setattr(KafkaSession, name, fn)
    for _ in dissect([str(path)], Options(engine="python")):
        pass
    monkeypatch.undo()
    return calls, answers


def framing_differences(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls, answers = record_framing(path, monkeypatch)
    got = _engine.kafka_framing_replay(calls)
    out = []
    for i, (call, a, b) in enumerate(zip(calls, answers, got, strict=True)):
        if a != b:
            out.append(
                f"call {i} {call[:3]} ({len(call[3]) if len(call) > 3 else ''} bytes): Python {a}, Rust {b}"
            )
    return out[:10]


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_framing_identical(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert framing_differences(path, monkeypatch) == []


@pytest.mark.parametrize("name", VARIANT_NAMES)
def test_framing_variants_identical(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests import variants as V

    cap = V.read(KAFKA / f"{name}.pcap")
    failures = []
    for label, recs in _variants(name):
        diffs = framing_differences(V.write(cap, recs, tmp_path / f"{label}.pcap"), monkeypatch)
        if diffs:
            failures.append(f"{label}: " + "; ".join(diffs))
    assert not failures, "\n".join(failures)


@pytest.mark.xfail(
    strict=True,
    reason="known difference in the shared codecs: a corrupt gzip payload's detail is zlib's message "
    "in Python ('Error -3 while decompressing data: …') and flate2's reader's in Rust ('corrupt deflate stream')",
)
def test_corrupt_gzip_detail_identical() -> None:
    """A legacy gzip wrapper whose deflate data is damaged (found by the hypothesis crafted test)."""
    import gzip as gzip_mod

    from tests import test_kafka_crafted as crafted

    inner = crafted.legacy(0, b"k", b"v" * 64)
    packed = bytearray(gzip_mod.compress(inner))
    packed[12] ^= 0xFF  # inside the deflate data, after the 10-byte gzip header
    frame = crafted.produce_v3(3, "old", 0, crafted.legacy(0, None, bytes(packed), 1, 1), api_version=2)
    s, _ = crafted.new_session()
    py = crafted.one(s, frame)
    frames = _engine.replay(
        "kafka", [(0, "10.0.0.1", 40000, "10.0.0.2", 9092)], [(0, "decode", "client", frame, True, 0, 0, 0)]
    )[0]
    (rs,) = frames[0]
    details = [(a.kind, a.detail) for a in py.anomalies]
    assert any(k == "decompression_failed" for k, _ in details), details
    assert details == [(a.kind, a.detail) for a in rs.anomalies]


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_observer_pairs_as_the_decoder(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In observe mode (a connection another worker decodes) the session returns no frame but
    keeps the state as when decoding: the same requests are answered, unanswered, unexpected."""
    rec = replay_support.record(path, "kafka", monkeypatch)
    frames, exchanges, *_ = _engine.replay(
        "kafka", list(rec.conns.values()), replay_support.replay_calls(rec), (False, True, True)
    )
    assert all(not f for f in frames)

    def rows(ex: list[Any]) -> list[tuple[Any, ...]]:
        return sorted(((e.stream, e.type, e.correlation_id, e.status) for e in ex), key=replay_support.key_t)

    assert rows(exchanges) == rows(rec.exchanges)


def _damaged(compress: Any, at: int) -> Any:
    """`compress`, then one byte of its output flipped at `at` (counted from the end if negative)."""

    def damaged(payload: bytes) -> bytes:
        out = bytearray(compress(payload))
        out[at] ^= 0x5A
        return bytes(out)

    return damaged


@pytest.mark.parametrize(
    ("codec", "at"),
    [(3, 20), (3, 4), (4, 12), (2, 10)],
    ids=["lz4-block", "lz4-magic", "zstd", "snappy"],
)
def test_damaged_compressed_batch_identical(codec: int, at: int) -> None:
    """A v2 batch whose compressed records are damaged: the same anomalies, in the same words
    (each codec library reports its failure its own way; the Rust side words them as the
    reference's libraries do)."""
    import cramjam
    import lz4.frame
    import zstandard

    from tests import test_kafka_crafted as crafted

    compress = {
        2: lambda b: bytes(cramjam.snappy.compress_raw(b)),
        3: lz4.frame.compress,
        4: lambda b: zstandard.ZstdCompressor().compress(b),
    }[codec]
    records = [crafted.record(i, b"k", b"value-%d" % i * 20) for i in range(8)]
    frame = crafted.produce_v9(7, "zipped", 1, crafted.batch_v2(50, records, codec, _damaged(compress, at)))
    s, _ = crafted.new_session()
    py = crafted.one(s, frame)
    frames = _engine.replay(
        "kafka", [(0, "10.0.0.1", 40000, "10.0.0.2", 9092)], [(0, "decode", "client", frame, True, 0, 0, 0)]
    )[0]
    (rs,) = frames[0]
    details = [(a.kind, a.detail, a.offset) for a in py.anomalies]
    assert any(k in ("decompression_failed", "malformed") for k, _, _ in details), details
    assert details == [(a.kind, a.detail, a.offset) for a in rs.anomalies]
    assert (py.status, len(py.messages)) == (rs.status, len(rs.messages))


FLIP_NAMES = [
    n
    for n in VARIANT_NAMES
    # The gzip captures are left out: a damaged gzip payload's detail differs in words (see
    # `test_corrupt_gzip_detail_identical`, a strict xfail until the shared codecs match zlib's).
    if n not in ("ck-compress-gzip", "kafka-python-legacy-msgset")
]


@pytest.mark.parametrize("name", FLIP_NAMES)
def test_flipped_bytes_identical(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three bytes of one data packet replaced (a dozen packets through the capture, one at a
    time): malformed bodies, broken framing and resynchronisation, damaged records — the same
    frames and the same framing answers."""
    import random

    from tests import variants as V

    cap = V.read(KAFKA / f"{name}.pcap")
    rnd = random.Random(name)
    failures = []
    for k in V.spread(V.data_indexes(cap.recs), 12):
        r = cap.recs[k]
        t = r.tcp()
        assert t is not None
        payload = bytearray(t.payload)
        for _ in range(3):
            payload[rnd.randrange(len(payload))] = rnd.randrange(256)
        recs = list(cap.recs)
        recs[k] = V.rebuild(r, t.seq, bytes(payload))
        path = V.write(cap, recs, tmp_path / f"flip{k}.pcap")
        rec = replay_support.record(path, "kafka", monkeypatch)
        diffs = replay_support.differences(rec, replay_support.replay(rec), limit=3)
        diffs += framing_differences(path, monkeypatch)
        if diffs:
            failures.append(f"packet {k + 1}: " + "; ".join(diffs))
    assert not failures, "\n".join(failures)
