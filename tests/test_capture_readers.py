"""The two capture readers agree: the engine's (every local command) and the Python one
(`wiredump.dissect.capture`: Spark's data source feeds its records to the engine, `-w` copies
packets with it), record for record.

For every capture the tests use (the real captures and samples, the files cut anywhere, each
container and compression, the crafted files of test_capture.py and test_capture_timestamps.py,
whose records those tests check by hand) both must give the same packet numbers and times, the
same notes (snap-length cuts, unusable clocks), the same end (truncation, records of unknown link
types skipped) or the same sentence for a file that is no capture. A difference would make a
Spark job's tables differ from the local export's.
"""

from __future__ import annotations

import gzip
import inspect
import io
import struct
from pathlib import Path
from typing import Any

import pytest

from tests import variants as V
from tests.conftest import CAPTURES, ROOT
from wiredump.dissect.capture import CaptureError, open_capture
from wiredump.dissect.pipeline import CAPTURE_END, Options, dissect_capture, open_source

REAL = sorted(CAPTURES.glob("*/*.pcap")) + sorted((ROOT / "samples").glob("*.pcap"))
REAL_IDS = [f"{p.parent.name}/{p.stem}" for p in REAL]
NOTES = ("truncated_packet", "bad_timestamp")
"""The per-packet anomalies that say what the reader noted of a record."""


def python_reader(path: str | Path) -> tuple | str:
    """(records as (number, ts_us), notes as (kind, packet), truncated, skipped) or the sentence."""
    try:
        reader = open_capture(str(path))
        recs, notes = [], []
        for r in reader:
            recs.append((r.number, r.ts_us))
            if r.orig_len > len(r.data):
                notes.append(("truncated_packet", r.number))
            if r.ts_note is not None:
                notes.append(("bad_timestamp", r.number))
        return recs, notes, reader.truncated, reader.skipped_unknown_link
    except CaptureError as e:
        return f"CaptureError: {e}"


def engine_reader(path: str | Path) -> tuple | str:
    """The same as the engine reads it (`on_record`, the capture's notes and its end)."""
    opts = Options(protocols=())
    try:
        dissector = open_source(str(path), opts)
        recs: list[tuple[int, int]] = []
        dissector.on_record = lambda number, ts_us: recs.append((number, ts_us))
        notes, end = [], None
        for ev in dissect_capture(dissector, opts):
            if ev.kind == "anomaly" and ev.obj.kind in NOTES:
                notes.append((ev.obj.kind, ev.obj.packet))
            elif ev.kind == CAPTURE_END:
                end = ev.obj
        assert end is not None
        return (
            recs,
            sorted(notes, key=lambda n: (n[1], NOTES.index(n[0]))),
            end.truncated,
            end.skipped_unknown_link,
        )
    except CaptureError as e:
        return f"CaptureError: {e}"


def assert_same(path: str | Path) -> tuple | str:
    py, rs = python_reader(path), engine_reader(path)
    if isinstance(py, tuple) and isinstance(rs, tuple):
        assert py[0] == rs[0], f"{path}: records differ"
        assert py[1:] == rs[1:], f"{path}: python {py[1:]} / engine {rs[1:]}"
    else:
        assert py == rs, f"{path}: python {str(py)[:300]!r} / engine {str(rs)[:300]!r}"
    return py


# -- the real captures and the samples ------------------------------------------------------------
@pytest.mark.parametrize("path", REAL, ids=REAL_IDS)
def test_real_captures(path: Path) -> None:
    got = assert_same(path)
    assert isinstance(got, tuple) and got[0]


def _variant_sources() -> list[Path]:
    """The captures test_variants.py rewrites (Ethernet ones)."""
    from tests.test_variants import ALL

    return [CAPTURES / proto / f"{name}.pcap" for proto, name in ALL]


VARIANT_SOURCES = _variant_sources()


@pytest.mark.parametrize("path", VARIANT_SOURCES[:6], ids=[p.stem for p in VARIANT_SOURCES[:6]])
def test_files_cut_anywhere(tmp_path: Path, path: Path) -> None:
    """The file cut at many byte offsets (inside headers and records): same records, same truncation."""
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
"""Test modules whose crafted capture files are read by both readers."""


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
    """Every file a test of test_capture.py (or test_capture_timestamps.py) opens, read by both readers."""
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
    assert isinstance(got, tuple) and any(kind == "bad_timestamp" for kind, _ in got[1])


def test_crafted_open_errors(tmp_path: Path) -> None:
    """The sentences for files that cannot be captures are the same."""
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
    """`-` reads Python's sys.stdin.buffer (a caller may replace it), compressed or not: the file's records."""
    path = CAPTURES / "kafka" / "kafka-python-basic.pcap"
    if not path.exists():
        pytest.skip("real captures not available")
    raw = path.read_bytes()
    expected = python_reader(path)
    assert isinstance(expected, tuple) and len(expected[0]) > 10
    for data in (raw, gzip.compress(raw)):
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
        assert engine_reader("-") == expected
