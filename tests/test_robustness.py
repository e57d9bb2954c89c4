"""No input crashes it, stalls it or makes it eat memory (issue 11), on every protocol.

Property-based: real streams from the captures, mutated (bytes flipped, cut,
duplicated, garbage inserted) and re-chunked, sent through the whole engine as one
connection, must always come out as frames with a valid status and anomalies — never
an internal error. A bounded number of examples keeps the regular run fast; `scripts/fuzz`
fuzzes the engine's sessions coverage-guided, for longer (engine/fuzz, docs/fuzzing.md).
"""

from __future__ import annotations

import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import CAPTURES
from tests.fuzzing import drive, seed_streams

SEEDS = {
    "kafka": [
        "kafka/kafka-python-basic.pcap",
        "kafka/ck-compress-zstd.pcap",
        "kafka/kafka-python-legacy-msgset.pcap",
    ],
    "pulsar": [
        "pulsar/s02-producer-batching.pcap",
        "pulsar/s03-compression-zlib.pcap",
        "pulsar/s04-consumer.pcap",
    ],
    "pravega": ["pravega/p01-writer-reader-basic.pcap", "pravega/p02-batching-multi-segment.pcap"],
    "tank": ["tank/t02-bundles.pcap", "tank/t03-compressed.pcap", "tank/t07-errors.pcap"],
}
PROTOCOLS = sorted(SEEDS)


@cache
def seeds(protocol: str) -> list[list[tuple[str, bytes]]]:
    out = []
    for rel in SEEDS[protocol]:
        path = CAPTURES / rel
        if path.exists():
            out.extend(s for s in seed_streams(path, cap=16384) if s)
    return out


def _need(protocol: str) -> list[list[tuple[str, bytes]]]:
    s = seeds(protocol)
    if not s:
        pytest.skip(f"no real {protocol} captures at {CAPTURES}")
    return s


def mutate(chunks: list[tuple[str, bytes]], data: st.DataObject) -> list[tuple[str, bytes]]:
    out = [list(c) for c in chunks]
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(0, len(out) - 1))
        role, b = out[i]
        b = bytearray(b)
        op = data.draw(st.sampled_from(["flip", "cut", "insert", "dup", "zero_len", "huge_len"]))
        pos = data.draw(st.integers(0, max(0, len(b) - 1)))
        if op == "flip" and b:
            b[pos] ^= data.draw(st.integers(1, 255))
        elif op == "cut":
            b = b[:pos]
        elif op == "insert":
            b[pos:pos] = data.draw(st.binary(min_size=1, max_size=64))
        elif op == "dup" and b:
            b[pos:pos] = b[pos : pos + data.draw(st.integers(1, 64))]
        elif op == "zero_len" and len(b) >= pos + 4:
            b[pos : pos + 4] = b"\x00\x00\x00\x00"
        elif op == "huge_len" and len(b) >= pos + 4:
            b[pos : pos + 4] = b"\x7f\xff\xff\xf0"
        out[i] = [role, bytes(b)]
    return [(r, b) for r, b in out]


FUZZ = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@FUZZ
@given(data=st.data())
def test_mutated_real_streams_never_raise(protocol: str, data: st.DataObject) -> None:
    streams = _need(protocol)
    chunks = streams[data.draw(st.integers(0, len(streams) - 1))]
    result = drive(protocol, mutate(chunks, data))
    # Whatever came out is accounted for: every non-ok frame says why.
    for f in result.frames:
        assert f.status == "ok" or f.anomalies, (f.type, f.status)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@FUZZ
@given(
    garbage=st.lists(st.tuples(st.sampled_from(["client", "server"]), st.binary(max_size=512)), max_size=12)
)
def test_random_bytes_never_raise(protocol: str, garbage: list[tuple[str, bytes]]) -> None:
    drive(protocol, garbage)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_giant_declared_length_is_not_buffered(protocol: str) -> None:
    """Garbage announcing a huge frame: resynchronised and reported, nothing buffered to that size."""
    streams = _need(protocol)
    real = streams[0]
    junk = b"\x7f\xff\xff\xf0" * 4 + b"\xff" * 4096
    chunks = [("client", junk)] + real + [("client", junk * 64)]
    result = drive(protocol, chunks)
    kinds = {a.kind for a in result.anomalies} | {a.kind for f in result.frames for a in f.anomalies}
    assert kinds & {"resync", "oversize_frame", "malformed", "unknown_type"}, kinds
    assert any(f.status == "ok" for f in result.frames)


def test_chunking_does_not_change_the_decode() -> None:
    """The same stream fed whole per packet or one byte at a time gives the same frames."""
    for protocol in PROTOCOLS:
        streams = seeds(protocol)
        if not streams:
            continue
        chunks = streams[0][:40]
        whole = drive(protocol, chunks)
        tiny = drive(protocol, [(r, b[i : i + 1]) for r, b in chunks for i in range(len(b))])
        assert [(f.type, f.status, f.correlation_id, f.length) for f in whole.frames] == [
            (f.type, f.status, f.correlation_id, f.length) for f in tiny.frames
        ], protocol


# -- damaged captures through the CLI: one clear line, exit 2, never a traceback -----------------
def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wiredump", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    "content",
    [b"", b"hello, this is not a capture\n", b"\xd4\xc3\xb2\xa1\x02\x00"],
    ids=["empty", "text", "short-header"],
)
def test_bad_files_exit_2_without_traceback(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "bad.pcap"
    p.write_bytes(content)
    r = _cli(str(p))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and r.stderr.startswith("wiredump: ")
    assert len(r.stderr.strip().splitlines()) == 1


def test_missing_file_exits_2(tmp_path: Path) -> None:
    r = _cli(str(tmp_path / "nope.pcap"))
    assert r.returncode == 2 and "Traceback" not in r.stderr and "nope.pcap" in r.stderr


def test_unknown_link_type_exits_2(tmp_path: Path) -> None:
    import struct

    p = tmp_path / "odd.pcap"
    p.write_bytes(
        struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 147)
        + struct.pack("<IIII", 0, 0, 4, 4)
        + b"abcd"
    )
    r = _cli(str(p))
    assert r.returncode == 2 and "Traceback" not in r.stderr and "147" in r.stderr


@pytest.mark.parametrize("cut", [24 + 8, 24 + 16 + 40, -7])
def test_truncated_capture_decodes_what_it_holds_then_exits_2(tmp_path: Path, cut: int) -> None:
    src = CAPTURES / "kafka" / "kafka-python-basic.pcap"
    if not src.exists():
        pytest.skip("real captures missing")
    data = src.read_bytes()
    p = tmp_path / "cut.pcap"
    p.write_bytes(data[:cut])
    r = _cli(str(p))
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "truncated" in r.stderr
    if cut < 0:
        # Everything but the last packet is there: the frames before it are printed.
        assert "ApiVersions" in r.stdout


@pytest.mark.parametrize("args", [["--engine", "python", "SAMPLE"], ["stats", "SAMPLE", "--engine=rust"]])
def test_a_leftover_engine_option_is_a_usage_error(args: list[str]) -> None:
    """There is one engine: `--engine` (which selected the former Python one) is refused, exit 2."""
    sample = str(Path(__file__).resolve().parents[1] / "samples" / "kafka-basic.pcap")
    r = _cli(*(sample if a == "SAMPLE" else a for a in args))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "No such option: --engine" in r.stderr
