"""The Rust engine (capture reading + TCP reassembly) against the Python reference, event for event.

Both engines run the same pipeline after reassembly, so any difference in the events
(frames, anomalies, exchanges, messages, connections, capture ends — every field, in order)
is a difference in what the two engines read and reassembled. The inputs are every capture
the tests use: the real captures and samples, their damaged and re-encoded variants
(tests/variants.py), the crafted files of test_capture.py and the segment sequences of
test_tcp.py. The expected values are the Python reference's, which the other tests check
against tshark and the decodes beside the captures.
"""

from __future__ import annotations

import gzip
import inspect
import io
import itertools
import struct
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import variants as V
from tests.conftest import CAPTURES, ROOT
from wiredump.dissect.capture import CaptureError
from wiredump.dissect.pipeline import Options, dissect

_engine = pytest.importorskip("wiredump._engine")

REAL = sorted(CAPTURES.glob("*/*.pcap")) + sorted((ROOT / "samples").glob("*.pcap"))
REAL_IDS = [f"{p.parent.name}/{p.stem}" for p in REAL]


def _norm(o: Any) -> Any:
    """A comparable value for an event object: every dataclass field, recursively."""
    if is_dataclass(o):
        return (type(o).__name__, *(_norm(getattr(o, f.name)) for f in fields(o)))
    if isinstance(o, list | tuple):
        return tuple(_norm(x) for x in o)
    if isinstance(o, dict):
        return tuple(sorted((k, _norm(v)) for k, v in o.items()))
    return o


def events(path: str | Path, engine: str, **kw: Any) -> list[tuple] | str:
    """Every event of the capture, normalised; or the CaptureError sentence."""
    try:
        return [
            (e.kind, e.capture, _norm(e.obj), _norm(e.frame))
            for e in dissect([str(path)], Options(engine=engine, **kw))
        ]
    except CaptureError as e:
        return f"CaptureError: {e}"


def assert_same(path: str | Path, **kw: Any) -> list[tuple] | str:
    py = events(path, "python", **kw)
    rs = events(path, "rust", **kw)
    if py != rs:
        if isinstance(py, str) or isinstance(rs, str):
            raise AssertionError(f"{path}: python {str(py)[:300]!r} / rust {str(rs)[:300]!r}")
        for i, (a, b) in enumerate(zip(py, rs, strict=False)):
            assert a == b, f"{path}: event {i} differs\n python: {a}\n rust:   {b}"
        assert len(py) == len(rs), f"{path}: {len(py)} python events, {len(rs)} rust events"
    return py


# -- the real captures and the samples ------------------------------------------------------------
@pytest.mark.parametrize("path", REAL, ids=REAL_IDS)
def test_real_captures(path: Path) -> None:
    got = assert_same(path)
    assert isinstance(got, list) and any(k == "frame" for k, *_ in got)


def test_options_that_change_reassembly_inputs() -> None:
    """Server ports from --decode-as, a small out-of-order bound, sharding: same events."""
    from wiredump.dissect.limits import Limits

    path = CAPTURES / "kafka" / "kafka-python-basic.pcap"
    if not path.exists():
        pytest.skip("real captures not available")
    assert_same(path, decode_as={9999: "kafka"})
    assert_same(path, limits=Limits(max_out_of_order=3000))
    # Connections released early: closed ones after 1 ms, quiet ones after 1 ms, at most 2 or 1 at once.
    assert_same(path, limits=Limits(closed_linger_us=1000, half_open_us=1000))
    assert_same(path, limits=Limits(closed_linger_us=1000, half_open_us=1000, max_connections=2))
    assert_same(path, limits=Limits(max_connections=1))
    for k in range(3):
        assert_same(path, shard=(k, 3))


# -- the variants of test_variants.py ---------------------------------------------------------------
def _variant_sources() -> list[Path]:
    """The captures test_variants.py rewrites (Ethernet ones)."""
    from tests.test_variants import ALL

    return [CAPTURES / proto / f"{name}.pcap" for proto, name in ALL]


VARIANT_SOURCES = _variant_sources()


def _variants(cap: V.Capture) -> list[tuple[str, list[V.Rec]]]:
    recs = cap.recs
    out = [
        ("ooo", V.out_of_order(recs, places=6)[0]),
        ("ooo-ack", V.out_of_order(recs, places=6, across_acks=True)[0]),
        ("retrans", V.retransmitted(recs, dups=5)[0]),
    ]
    if len(recs) < 400:
        out.append(("tiny", V.tiny_segments(recs)))
    for lost in V.spread(V.losable(recs), 6):
        out.append((f"lost{lost}", V.drop(recs, {lost})))
    lossy = V.spread(V.losable(recs), 12)
    out.append(("lost-many", V.drop(recs, set(lossy))))
    for cut in sorted({1, 2, 3, len(recs) // 3, len(recs) // 2, len(recs) - 2}):
        if 0 < cut < len(recs):
            out.append((f"mid{cut}", recs[cut:]))
    # Every record reversed in pairs: out-of-order everywhere, holes the receiver acknowledged.
    swapped = list(recs)
    for i in range(1, len(swapped) - 1, 2):
        swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
    out.append(("pairs-swapped", swapped))
    # Records cut by a snap length (data cut, wire length kept).
    out.append(("snap", [V.replace(r, data=r.data[:90]) if len(r.data) > 90 else r for r in recs]))
    return out


@pytest.mark.parametrize("path", VARIANT_SOURCES, ids=[f"{p.parent.name}/{p.stem}" for p in VARIANT_SOURCES])
def test_variants(tmp_path: Path, path: Path) -> None:
    cap = V.read(path)
    for name, recs in _variants(cap):
        assert_same(V.write(cap, recs, tmp_path / f"{name}.pcap"))


@pytest.mark.parametrize("path", VARIANT_SOURCES[:6], ids=[p.stem for p in VARIANT_SOURCES[:6]])
def test_files_cut_anywhere(tmp_path: Path, path: Path) -> None:
    """The file cut at many byte offsets (inside headers and records): same events, same truncation."""
    raw = path.read_bytes()
    cuts = sorted({1, 3, 4, 20, 24, 30, 40, 100, *range(200, len(raw), max(1, len(raw) // 25))})
    for cut in cuts:
        p = tmp_path / f"cut{cut}.pcap"
        p.write_bytes(raw[:cut])
        assert_same(p)


@pytest.mark.parametrize("path", VARIANT_SOURCES[:4], ids=[p.stem for p in VARIANT_SOURCES[:4]])
def test_containers(tmp_path: Path, path: Path) -> None:
    """pcapng (editcap or the test writer), ns pcap, big-endian pcap, each compression."""
    from tests.test_variants import as_pcapng

    ng = as_pcapng(path, tmp_path / "x.pcapng")
    assert_same(ng)
    cap = V.read(path)
    # Big-endian µs pcap of the same records.
    e = cap.endian
    be = bytearray(struct.pack(">IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
    for r in cap.recs:
        sec, frac = struct.unpack(e + "II", r.ts)
        be += struct.pack(">IIII", sec, frac, len(r.data), r.orig_len) + r.data
    (tmp_path / "be.pcap").write_bytes(bytes(be))
    assert_same(tmp_path / "be.pcap")
    raw = path.read_bytes()
    import bz2
    import lzma

    import lz4.frame
    import zstandard

    packed = {
        "gz": gzip.compress(raw),
        "gz2": gzip.compress(raw[: len(raw) // 2]) + gzip.compress(raw[len(raw) // 2 :]) + b"junk",
        "zst": zstandard.ZstdCompressor().compress(raw),
        "lz4": lz4.frame.compress(raw),
        "xz": lzma.compress(raw),
        "bz2": bz2.compress(raw),
        "ng.gz": gzip.compress(ng.read_bytes()),
    }
    for ext, data in packed.items():
        p = tmp_path / f"x.{ext}"
        p.write_bytes(data)
        assert_same(p)
        # Cut short: the gzip stream simply ends; the others report the damage.
        p.write_bytes(data[: len(data) * 2 // 3])
        assert_same(p)


# -- the crafted files of test_capture.py ---------------------------------------------------------
def _calls(fn: Any) -> list[dict[str, Any]]:
    """Keyword sets for each parametrization of a test function."""
    combos: list[dict[str, Any]] = [{}]
    for mark in getattr(fn, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names = (
            [n.strip() for n in mark.args[0].split(",")] if isinstance(mark.args[0], str) else mark.args[0]
        )
        values = [v if len(names) > 1 else (v,) for v in mark.args[1]]
        combos = [{**c, **dict(zip(names, v, strict=True))} for c in combos for v in values]
    return combos


CRAFTED_MODULES = ("test_capture", "test_capture_timestamps")
"""Test modules whose crafted capture files are read by both engines."""


def _capture_tests() -> list[tuple[str, dict[str, Any]]]:
    import importlib

    out = []
    for mod_name in CRAFTED_MODULES:
        mod = importlib.import_module(f"tests.{mod_name}")
        for name, fn in inspect.getmembers(mod, inspect.isfunction):
            if name.startswith("test_") and "stdin" not in name and "twice" not in name:
                if fn.__module__ != mod.__name__:
                    continue
                for kw in _calls(fn):
                    if set(inspect.signature(fn).parameters) <= {"tmp_path", "monkeypatch", *kw}:
                        out.append((f"{mod_name}.{name}", kw))
    return out


CAPTURE_TESTS = _capture_tests()


@pytest.mark.parametrize(
    ("name", "kw"), CAPTURE_TESTS, ids=[f"{n}{list(kw.values()) or ''}" for n, kw in CAPTURE_TESTS]
)
def test_crafted_capture_files(tmp_path: Path, name: str, kw: dict[str, Any]) -> None:
    """Every file a test of test_capture.py (or test_capture_timestamps.py) opens, read by both engines."""
    import importlib

    mod_name, _, name = name.partition(".")
    test_capture = importlib.import_module(f"tests.{mod_name}")
    opened: list[str] = []
    real_open = test_capture.open_capture

    def recording(path: str) -> Any:
        opened.append(path)
        return real_open(path)

    fn = getattr(test_capture, name)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(test_capture, "open_capture", recording)
        args: dict[str, Any] = dict(kw)
        params = inspect.signature(fn).parameters
        if "tmp_path" in params:
            args["tmp_path"] = tmp_path
        if "monkeypatch" in params:
            args["monkeypatch"] = mp
        fn(**args)
    for path in dict.fromkeys(opened):
        if path != "-" and Path(path).exists() and not Path(path).is_dir():
            assert_same(path)


def test_absurd_clocks(tmp_path: Path) -> None:
    """test_capture_timestamps.py's pcapng of unrepresentable times: same times, same bad_timestamp notes."""
    from tests import test_capture_timestamps

    path = tmp_path / "absurd-clocks.pcapng"
    test_capture_timestamps.crafted(path)
    got = assert_same(path)
    assert isinstance(got, list) and any(k == "anomaly" and "bad_timestamp" in str(o) for k, _, o, _ in got)


def test_crafted_open_errors(tmp_path: Path) -> None:
    """The sentences for files that cannot be captures are the same (the reference's)."""
    (tmp_path / "empty.pcap").write_bytes(b"")
    (tmp_path / "t.txt").write_bytes(b"hello, not a capture\n")
    (tmp_path / "t.txt.gz").write_bytes(gzip.compress(b"hello, not a capture\n"))
    (tmp_path / "e.gz").write_bytes(gzip.compress(b""))
    (tmp_path / "tiny").write_bytes(b"\xd4\xc3")
    (tmp_path / "ng").write_bytes(b"\x0a\x0d\x0d\x0a\x1c\x00")
    (tmp_path / "ngbom").write_bytes(b"\x0a\x0d\x0d\x0a\x1c\x00\x00\x00\x11\x22\x33\x44" + bytes(16))
    (tmp_path / "lt").write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 147))
    (tmp_path / "short").write_bytes(struct.pack("<IHHiI", 0xA1B2C3D4, 2, 4, 0, 0))
    for name in (
        "nope.pcap",
        "empty.pcap",
        "t.txt",
        "t.txt.gz",
        "e.gz",
        "tiny",
        "ng",
        "ngbom",
        "lt",
        "short",
    ):
        got = assert_same(tmp_path / name)
        assert isinstance(got, str) and got.startswith("CaptureError"), (name, got)
    assert isinstance(assert_same(tmp_path), str)


def test_stdin_and_file_objects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`-` reads Python's sys.stdin.buffer (a caller may replace it), compressed or not."""
    path = CAPTURES / "kafka" / "kafka-python-basic.pcap"
    if not path.exists():
        pytest.skip("real captures not available")
    raw = path.read_bytes()
    for data in (raw, gzip.compress(raw)):
        got = {}
        for engine in ("python", "rust"):
            monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
            got[engine] = [(e.kind, _norm(e.obj)) for e in dissect(["-"], Options(engine=engine))]
        assert got["python"] == got["rust"] and len(got["rust"]) > 10


# -- the segment sequences of test_tcp.py -------------------------------------------------------------
def _tcp_tests() -> list[str]:
    from tests import test_tcp

    return [n for n, _ in inspect.getmembers(test_tcp, inspect.isfunction) if n.startswith("test_")]


def _pcap(records: list[tuple[bytes, int]]) -> bytes:
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
    for data, ts in records:
        out += struct.pack("<IIII", ts // 1_000_000, ts % 1_000_000, len(data), len(data)) + data
    return bytes(out)


@pytest.mark.parametrize("name", _tcp_tests())
def test_tcp_cases(name: str) -> None:
    """Each test of test_tcp.py runs as written; every reassembler it makes is shadowed by the Rust
    one fed the same packets (as a pcap), and the listener calls must be the same."""
    from tests import test_tcp
    from wiredump.dissect.tcp import TcpReassembler

    raw_of: dict[int, bytes] = {}
    runs: list[Any] = []
    real_parse = test_tcp.parse_tcp

    def parse(linktype: int, data: bytes) -> Any:
        s = real_parse(linktype, data)
        raw_of[id(s)] = data
        return s

    class Tap:
        def __init__(self, inner: Any, calls: list[tuple]) -> None:
            self.inner, self.calls = inner, calls

        def on_data(self, conn: Any, role: str, data: bytes, packet: int, ts_us: int) -> None:
            self.calls.append((3, conn.stream, role, bytes(data), packet, ts_us))
            self.inner.on_data(conn, role, data, packet, ts_us)

        def on_gap(self, conn: Any, role: str, size: int, packet: int, ts_us: int) -> None:
            self.calls.append((4, conn.stream, role, size, packet, ts_us))
            self.inner.on_gap(conn, role, size, packet, ts_us)

        def on_close(self, conn: Any) -> None:
            self.calls.append((5, conn.stream))
            self.inner.on_close(conn)

        def on_anomaly(self, a: Any) -> None:
            self.calls.append((6, a.kind, a.detail, a.packet, a.stream))
            self.inner.on_anomaly(a)

    class Shadowed(TcpReassembler):
        def __init__(self, listener: Any, limits: Any, server_ports: frozenset[int] = frozenset()) -> None:
            self.calls: list[tuple] = []
            super().__init__(Tap(listener, self.calls), limits, server_ports)
            self.fed: list[tuple[bytes, int, int]] = []
            self.finished = False
            runs.append(self)

        def segment(self, seg: Any, packet: int, ts_us: int) -> None:
            self.fed.append((raw_of[id(seg)], packet, ts_us))
            super().segment(seg, packet, ts_us)

        def finish(self) -> None:
            self.calls.append((7,))
            self.finished = True
            super().finish()

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(test_tcp, "parse_tcp", parse)
        mp.setattr(test_tcp, "TcpReassembler", Shadowed)
        getattr(test_tcp, name)()
    assert runs
    for run in runs:
        numbers = [p for _, p, _ in run.fed]
        reader = _engine.StreamReader(
            io.BytesIO(_pcap([(d, ts) for d, _, ts in run.fed])), [], 0, name="segments"
        )
        reader.configure(sorted(run.server_ports), run.limits.max_out_of_order)
        got: list[tuple] = []
        released: list[tuple] = []
        for ev in itertools.chain.from_iterable(reader):
            if ev[0] == 11:  # a release: the connection's counters, its state dropped
                released.append((ev[1], *ev[2][:5], ev[3]))
                continue
            if ev[0] in (0, 2, 9, 10):  # records, openings, later packets, SYNs: no call
                continue
            ev = tuple(ev) if ev[0] != 5 else (5, ev[1])
            # Packet numbers: the pcap numbers records 1..n; the test may have fed others.
            if ev[0] in (3, 4):
                ev = (*ev[:4], numbers[ev[4] - 1], ev[5])
            elif ev[0] == 6:
                ev = (*ev[:3], numbers[ev[3] - 1] if ev[3] else ev[3], ev[4])
            got.append(ev)
        want = run.calls if run.finished else run.calls
        if not run.finished:
            got = got[: got.index((7,))]
        assert got == want
        # The connection counters the summaries carry (every connection is released by the end).
        rs = sorted(released)
        py = [
            (c.stream, c.packets, c.c2s.bytes, c.s2c.bytes, c.gaps, c.retransmissions, c.state)
            for c in run.all
        ]
        if run.finished:
            assert rs == py


# -- the switch ---------------------------------------------------------------------------------------
def test_cli_engine_switch(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`--engine rust` (any position) and WIREDUMP_ENGINE give the timeline `--engine python` gives."""
    from tests.cli_support import run_cli

    sample = str(ROOT / "samples" / "kafka-basic.pcap")
    monkeypatch.delenv("WIREDUMP_ENGINE", raising=False)
    py = run_cli(capsys, "--engine", "python", sample)
    rs = run_cli(capsys, sample, "--engine=rust")
    assert py.code == rs.code == 0 and py.out == rs.out and "Produce" in rs.out
    monkeypatch.setenv("WIREDUMP_ENGINE", "rust")
    assert run_cli(capsys, "stats", sample).out == run_cli(capsys, "stats", sample, "--engine", "python").out
    bad = run_cli(capsys, sample, "--engine", "java")
    assert bad.code == 2 and "--engine takes native, python or rust, not 'java'" in bad.err
    # Neither the option nor the variable: the default engine (pipeline.DEFAULT_ENGINE), same timeline.
    monkeypatch.delenv("WIREDUMP_ENGINE")
    from wiredump.dissect.pipeline import Options

    assert Options().engine == "python"
    default = run_cli(capsys, sample)
    assert default.code == 0 and default.out == py.out == run_cli(capsys, sample, "--engine", "native").out
