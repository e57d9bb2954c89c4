"""The native engine (the whole capture dissected in Rust) against the Python reference, event for event.

`--engine native` runs `wiredump._engine.Dissector`: capture reading, reassembly, detection,
framing, decoding, correlation and release order all in Rust, with the protocols of the Rust
registry only. So that the two engines are compared on what both have, the Python engine is
restricted to the same protocols (`Options.protocols`): each test runs a capture through both
and asserts identical events — frames with every field, message and anomaly, exchanges,
anomalies, connection rows and the capture end, in order.

- `test_no_protocols`: every capture with no protocol at all in either engine. What is compared
  then is the whole pipeline without decoders: connection rows (released in stream order, with
  the counters, state and `protocol` None), TCP anomalies (gaps, out-of-order), the truncation
  anomalies and the capture end. Also the variants of tests/variants.py and the options that
  change the pipeline (limits, shards, hold bounds).
- `test_registry_protocols`: every capture with the protocols the Rust registry has (as each
  protocol port lands in the registry, its captures are decoded by both and compared here:
  detection, framing, decoding, pairing, hold and release order); skipped while it is empty.

The expected values are the Python reference's, which the other tests check against tshark and
the decodes beside the captures.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import variants as V
from tests.conftest import CAPTURES, ROOT
from wiredump.dissect.capture import CaptureError
from wiredump.dissect.limits import Limits
from wiredump.dissect.pipeline import Options, dissect

_engine = pytest.importorskip("wiredump._engine")

NATIVE: tuple[str, ...] = tuple(_engine.rust_protocols())
"""The protocols the native engine's registry has."""

REAL = sorted(CAPTURES.glob("*/*.pcap")) + sorted((ROOT / "samples").glob("*.pcap"))
REAL_IDS = [f"{p.parent.name}/{p.stem}" for p in REAL]


PRIVATE = frozenset({"context", "flagged"})
"""Frame fields never compared: `context` is private to the protocol's session, never exported
(the Rust sessions keep theirs as Rust values); `flagged` is `Frame.flag`'s bookkeeping for its
per-kind cap (what it produces, the anomalies, is compared)."""


def _norm(o: Any, skip: frozenset[str] = PRIVATE) -> Any:
    """A comparable value for an event object: every dataclass field, recursively, but `skip`."""
    if is_dataclass(o):
        return (type(o).__name__, *(_norm(getattr(o, f.name), skip) for f in fields(o) if f.name not in skip))
    if isinstance(o, list | tuple):
        return tuple(_norm(x, skip) for x in o)
    if isinstance(o, dict):
        return tuple(sorted((k, _norm(v, skip)) for k, v in o.items()))
    return o


def events(path: str | Path, engine: str, skip: frozenset[str] = PRIVATE, **kw: Any) -> list[tuple] | str:
    """Every event of the capture, normalised; or the error sentence (CaptureError, ValueError)."""
    try:
        return [
            (e.kind, e.capture, _norm(e.obj, skip), _norm(e.frame, skip))
            for e in dissect([str(path)], Options(engine=engine, **kw))
        ]
    except (CaptureError, ValueError) as e:
        return f"{type(e).__name__}: {e}"


def assert_same(path: str | Path, skip: frozenset[str] = PRIVATE, **kw: Any) -> list[tuple] | str:
    py = events(path, "python", skip, **kw)
    rs = events(path, "native", skip, **kw)
    if py != rs:
        if isinstance(py, str) or isinstance(rs, str):
            raise AssertionError(f"{path}: python {str(py)[:300]!r} / native {str(rs)[:300]!r}")
        for i, (a, b) in enumerate(zip(py, rs, strict=False)):
            assert a == b, f"{path}: event {i} differs\n python: {a}\n native: {b}"
        assert len(py) == len(rs), f"{path}: {len(py)} python events, {len(rs)} native events"
    return py


# -- every capture, no protocol in either engine ----------------------------------------------------
@pytest.mark.parametrize("path", REAL, ids=REAL_IDS)
def test_no_protocols(path: Path) -> None:
    got = assert_same(path, protocols=())
    assert isinstance(got, list)
    rows = [obj for kind, _, obj, _ in got if kind == "connection"]
    assert rows, "every capture here has connections"
    assert not any(kind == "frame" for kind, *_ in got)


def test_the_knob_restricts_the_python_engine() -> None:
    """`protocols=()` really takes the protocols away from the reference (the comparison above
    would be vacuous otherwise): the Kafka sample is decoded with them, undecoded without."""
    path = ROOT / "samples" / "kafka-basic.pcap"
    full = list(dissect([str(path)], Options(engine="python")))
    bare = list(dissect([str(path)], Options(engine="python", protocols=())))
    assert any(e.kind == "frame" for e in full)
    assert not any(e.kind == "frame" for e in bare)
    assert {e.obj.protocol for e in bare if e.kind == "connection"} == {None}


def test_options_no_protocols() -> None:
    path = CAPTURES / "kafka" / "kafka-python-basic.pcap"
    if not path.exists():
        pytest.skip("real captures not available")
    assert_same(path, protocols=(), limits=Limits(max_out_of_order=3000))
    assert_same(path, protocols=(), limits=Limits(closed_linger_us=1000, half_open_us=1000))
    assert_same(
        path, protocols=(), limits=Limits(closed_linger_us=1000, half_open_us=1000, max_connections=2)
    )
    assert_same(path, protocols=(), limits=Limits(max_connections=1))
    for k in range(3):
        assert_same(path, protocols=(), shard=(k, 3))
    # decode-as naming a protocol the run does not have: the same error from both.
    got = assert_same(path, protocols=(), decode_as={9092: "kafka"})
    assert isinstance(got, str) and got.startswith("ValueError: unknown protocol 'kafka'")


def _variant_sources() -> list[Path]:
    from tests.test_variants import ALL

    return [CAPTURES / proto / f"{name}.pcap" for proto, name in ALL]


VARIANT_SOURCES = _variant_sources()


def _variants(cap: V.Capture) -> list[tuple[str, list[V.Rec]]]:
    from tests.test_engine_rust import _variants as rust_variants

    return rust_variants(cap)


@pytest.mark.parametrize(
    "path", VARIANT_SOURCES[:4], ids=[f"{p.parent.name}/{p.stem}" for p in VARIANT_SOURCES[:4]]
)
def test_variants_no_protocols(tmp_path: Path, path: Path) -> None:
    cap = V.read(path)
    for name, recs in _variants(cap):
        assert_same(V.write(cap, recs, tmp_path / f"{name}.pcap"), protocols=())


# -- the protocols the Rust registry has ------------------------------------------------------------
needs_protocols = pytest.mark.skipif(not NATIVE, reason="the Rust registry has no protocol yet")


@needs_protocols
@pytest.mark.parametrize("path", REAL, ids=REAL_IDS)
def test_registry_protocols(path: Path) -> None:
    got = assert_same(path, protocols=NATIVE)
    proto = (
        path.parent.name
        if path.parent.name in ("kafka", "pulsar", "pravega", "tank")
        else path.stem.split("-")[0]
    )
    if proto in NATIVE:
        assert isinstance(got, list) and any(k == "frame" for k, *_ in got)


@needs_protocols
def test_registry_protocols_keep_bytes_and_frames_only() -> None:
    for path in REAL:
        assert_same(path, protocols=NATIVE, keep_bytes=True, messages=False, hold_frames=3)


@needs_protocols
@pytest.mark.parametrize("path", VARIANT_SOURCES, ids=[f"{p.parent.name}/{p.stem}" for p in VARIANT_SOURCES])
def test_registry_variants(tmp_path: Path, path: Path) -> None:
    if path.parent.name not in NATIVE:
        pytest.skip(f"{path.parent.name} is not in the Rust registry yet")
    cap = V.read(path)
    for name, recs in _variants(cap):
        assert_same(V.write(cap, recs, tmp_path / f"{name}.pcap"), protocols=NATIVE)


# -- detection by the first bytes: the captures moved off their protocols' ports ---------------------
def _moved(recs: list[V.Rec], base: int = 2000, span: int = 1000) -> list[V.Rec]:
    """The records with every well-known server port moved (9092 → 2092…): no port decides, the
    connections' first bytes are scored (and, seen mid-stream, the roles may be swapped)."""
    import struct

    from wiredump.dissect.protocols import all_protocols

    known = {p for spec in all_protocols().values() for p in spec.ports}
    out = []
    for r in recs:
        t = r.tcp()
        if t is None:
            out.append(r)
            continue
        data = bytearray(r.data)
        ihl = (data[14] & 0x0F) * 4
        tcp_at = 14 + ihl
        sport, dport = struct.unpack_from(">HH", data, tcp_at)
        sport = base + sport % span if sport in known else sport
        dport = base + dport % span if dport in known else dport
        struct.pack_into(">HH", data, tcp_at, sport, dport)
        out.append(V.replace(r, data=bytes(data)))
    return out


@needs_protocols
@pytest.mark.parametrize("path", VARIANT_SOURCES, ids=[f"{p.parent.name}/{p.stem}" for p in VARIANT_SOURCES])
def test_registry_detection_off_port(tmp_path: Path, path: Path) -> None:
    if path.parent.name not in NATIVE:
        pytest.skip(f"{path.parent.name} is not in the Rust registry yet")
    cap = V.read(path)
    recs = _moved(cap.recs)
    got = assert_same(V.write(cap, recs, tmp_path / "moved.pcap"), protocols=NATIVE)
    assert isinstance(got, list) and any(k == "frame" for k, *_ in got)
    for cut in sorted({1, 3, len(recs) // 3, len(recs) // 2}):
        assert_same(V.write(cap, recs[cut:], tmp_path / f"moved-mid{cut}.pcap"), protocols=NATIVE)
    assert_same(V.write(cap, recs, tmp_path / "moved.pcap"), protocols=NATIVE, hold_us=1000)


@needs_protocols
@pytest.mark.parametrize("path", VARIANT_SOURCES, ids=[f"{p.parent.name}/{p.stem}" for p in VARIANT_SOURCES])
def test_registry_roles_swapped_before_the_row(tmp_path: Path, path: Path) -> None:
    """Server ports moved above the clients' (65xxx) and the captures cut mid-stream: without a
    SYN the reassembler takes the higher port for the client, detection swaps the roles, and in
    these small captures (one batch of stream events) the connection's row was taken before the
    swap: its byte counts must still come out turned, in both Rust-backed engines."""
    if path.parent.name not in NATIVE:
        pytest.skip(f"{path.parent.name} is not in the Rust registry yet")
    cap = V.read(path)
    recs = _moved(cap.recs, base=65000, span=500)
    swapped = 0
    for cut in sorted({1, len(recs) // 3}):
        f = V.write(cap, recs[cut:], tmp_path / f"high-mid{cut}.pcap")
        got = assert_same(f, protocols=NATIVE)
        assert events(f, "rust", protocols=NATIVE) == got
        assert isinstance(got, list)
        swapped += sum(1 for kind, _, obj, _ in got if kind == "connection" and obj[5] >= 65000)
    assert swapped, "some connection's roles were swapped by detection"


@needs_protocols
@pytest.mark.parametrize("proto", ["kafka", "pulsar", "pravega", "tank"])
def test_registry_decode_as_the_wrong_protocol(proto: str) -> None:
    """Each protocol's captures decoded as each other protocol (decode-as on the server ports):
    resync, oversize frames, undecodable and truncated frames through the framing engine."""
    if proto not in NATIVE:
        pytest.skip(f"{proto} is not in the Rust registry yet")
    for path in REAL:
        if path.parent.name == proto or path.parent.name not in NATIVE:
            continue
        conns = [
            e.obj
            for e in dissect([str(path)], Options(engine="python", protocols=()))
            if e.kind == "connection"
        ]
        ports = {c.server_port for c in conns}
        assert_same(path, protocols=NATIVE, decode_as=dict.fromkeys(ports, proto))
        break  # one capture of each other protocol


@needs_protocols
def test_registry_options() -> None:
    """Options that change the pipeline's choices: secrets, tiny hold bounds, shards (observing
    framers for protocols that share run state), early releases, tight decompression limits, a
    capture-wide bound of two requests waiting for their answer."""
    firsts = {}
    for path in REAL:
        if path.parent.name in NATIVE:
            firsts.setdefault(path.parent.name, path)
    for path in firsts.values():
        assert_same(path, protocols=NATIVE, show_secrets=True, hold_us=1000, hold_bytes=4096)
        for k in range(2):
            assert_same(path, protocols=NATIVE, shard=(k, 2))
        assert_same(
            path,
            protocols=NATIVE,
            limits=Limits(max_connections=1, closed_linger_us=1000, half_open_us=1000),
        )
        assert_same(path, protocols=NATIVE, limits=Limits(max_decompressed=4096, max_messages=3))
        assert_same(path, protocols=NATIVE, limits=Limits(max_pending_total=2))


def test_record_hook_sees_every_record_and_may_read_the_reader() -> None:
    """`on_record` (the CLI's packet times and progress) gets every record's number and time, the
    Python reader's, before the events of that record, and may read the reader meanwhile."""
    from wiredump.dissect.capture import open_capture
    from wiredump.dissect.pipeline import dissect_capture, open_source

    path = str(ROOT / "samples" / "kafka-basic.pcap")
    expected = [(r.number, r.ts_us) for r in open_capture(path)]
    reader = open_source(path, Options(engine="native", protocols=()))
    seen: list[tuple[int, int]] = []

    def on_record(number: int, ts_us: int) -> None:
        assert reader.bytes_read > 0
        seen.append((number, ts_us))

    reader.on_record = on_record
    for ev in dissect_capture(reader, Options(engine="native", protocols=())):
        packet = getattr(ev.obj, "packet", None) or getattr(ev.obj, "packets", 0)
        assert seen and seen[-1][0] >= packet, "an event before its packet's record"
    assert seen == expected
