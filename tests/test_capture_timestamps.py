"""Timestamps no sink can represent: an anomaly on the packet, never a crash.

The captures are written byte by byte here from the pcapng specification
(draft-ietf-opsawg-pcapng: SHB 0x0A0D0D0A, IDB 1 with options if_tsresol = 9 (one byte:
bit 7 clear = 10^-n s, set = 2^-n s) and if_tsoffset = 14 (signed 64-bit seconds), EPB 6
with a 64-bit timestamp in two 32-bit halves, high first). Their packets are the packets of
a real Kafka capture (admin-kafka-python.pcap, read here with `struct`), so the Kafka frames
that must survive are those of its independent decode (`admin-kafka-python.pdus.tsv`, made
without wiredump). Some packets are moved onto interfaces whose clock is absurd; the packet
numbers and the times the reader must give them (the last good time) come from the test's
own layout and the original file's headers.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.cli_support import run_cli
from tests.conftest import CAPTURES, tsv_rows
from wiredump.dissect.capture import TS_MAX_US, TS_MIN_US, open_capture
from wiredump.dissect.pipeline import Options, dissect

SOURCE = CAPTURES / "kafka" / "admin-kafka-python.pcap"
DECODE = CAPTURES / "kafka" / "admin-kafka-python.pdus.tsv"

pytestmark = pytest.mark.skipif(not SOURCE.exists(), reason="real captures not found")

ETHERNET = 1
OPT_TSRESOL, OPT_TSOFFSET = 9, 14


# -- reading the real pcap by hand ----------------------------------------------------------------
def pcap_packets(path: Path) -> list[tuple[int, bytes, int]]:
    """(time in µs, captured bytes, original length) of every record of a little-endian µs pcap."""
    data = path.read_bytes()
    assert struct.unpack_from("<I", data)[0] == 0xA1B2C3D4
    assert struct.unpack_from("<I", data, 20)[0] == ETHERNET
    out, pos = [], 24
    while pos + 16 <= len(data):
        sec, usec, incl, orig = struct.unpack_from("<IIII", data, pos)
        out.append((sec * 1_000_000 + usec, data[pos + 16 : pos + 16 + incl], orig))
        pos += 16 + incl
    return out


# -- writing pcapng by hand -----------------------------------------------------------------------
def _pad(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 4)


def block(btype: int, body: bytes) -> bytes:
    """A pcapng block: type, total length, body padded to 32 bits, total length again."""
    body = _pad(body)
    n = 12 + len(body)
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def shb() -> bytes:
    """Section Header Block: byte-order magic, version 1.0, section length unknown (-1)."""
    return block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))


def idb(tsresol: int | None = None, tsoffset: int | None = None) -> bytes:
    """Interface Description Block for Ethernet, snap length 0 (none), with the given clock options."""
    opts = b""
    if tsresol is not None:
        opts += struct.pack("<HH", OPT_TSRESOL, 1) + _pad(bytes([tsresol]))
    if tsoffset is not None:
        opts += struct.pack("<HHq", OPT_TSOFFSET, 8, tsoffset)
    if opts:
        opts += struct.pack("<HH", 0, 0)  # opt_endofopt
    return block(1, struct.pack("<HHI", ETHERNET, 0, 0) + opts)


def epb(iface: int, ts: int, data: bytes, orig: int) -> bytes:
    """Enhanced Packet Block: interface id, timestamp (high, low 32 bits), captured and original length."""
    return block(6, struct.pack("<IIIII", iface, ts >> 32, ts & 0xFFFFFFFF, len(data), orig) + data)


# Interfaces of the crafted file: 0 is the real one (µs, no offset); the rest have absurd clocks.
IFACES = [
    idb(),  # 0: microseconds
    idb(tsoffset=2**62),  # 1: offset of 2^62 s
    idb(tsresol=0),  # 2: units of 1 s (10^-0)
    idb(tsresol=0x80),  # 3: units of 1 s (2^-0)
    idb(tsoffset=-(2**63)),  # 4: the most negative offset
    idb(tsresol=127),  # 5: units of 10^-127 s: every time rounds to 0 µs, representable
    idb(tsresol=0xFF),  # 6: units of 2^-127 s: likewise
]
# 1-based packet number -> (interface, raw timestamp) for the packets moved off interface 0.
MOVED = {
    3: (1, 0),  # 2^62 s from the offset alone
    7: (2, 2**40),  # 2^40 s
    12: (2, 2**64 - 1),  # 2^64 - 1 s
    20: (3, 2**63),  # 2^63 s, base 2
    25: (4, 0),  # -2^63 s
    30: (5, 2**64 - 1),
    31: (6, 2**64 - 1),
}
BAD = [3, 7, 12, 20, 25]  # beyond years 1..9999
FINE_BUT_ZERO = [30, 31]  # representable (0 µs): no anomaly


def crafted(path: Path) -> list[tuple[int, bytes, int]]:
    """Write the crafted pcapng and return the original packets."""
    packets = pcap_packets(SOURCE)
    out = [shb(), *IFACES]
    for n, (ts, data, orig) in enumerate(packets, 1):
        iface, raw = MOVED.get(n, (0, ts))
        out.append(epb(iface, raw, data, orig))
    path.write_bytes(b"".join(out))
    return packets


@pytest.fixture
def capture(tmp_path: Path) -> tuple[Path, list[tuple[int, bytes, int]]]:
    p = tmp_path / "absurd-clocks.pcapng"
    return p, crafted(p)


def expected_time(packets: list[tuple[int, bytes, int]], n: int) -> int:
    """The time the reader must give packet n: its own, or the last representable one before it."""
    for m in range(n, 0, -1):
        if m in BAD:
            continue
        if m in FINE_BUT_ZERO:
            return 0
        return packets[m - 1][0]
    return 0


def test_reader_gives_last_good_time_and_a_note(capture: tuple[Path, list]) -> None:
    path, packets = capture
    recs = list(open_capture(str(path)))
    assert len(recs) == len(packets)
    for r in recs:
        assert TS_MIN_US <= r.ts_us <= TS_MAX_US
        assert r.ts_us == expected_time(packets, r.number), r.number
        assert r.data == packets[r.number - 1][1]
    assert [r.number for r in recs if r.ts_note] == BAD
    notes = {r.number: r.ts_note for r in recs if r.ts_note}
    assert f"if_tsoffset {2**62} s" in notes[3]
    assert "if_tsresol 0: units of 10^-0 s" in notes[7]
    assert "if_tsresol 128: units of 2^-0 s" in notes[20]
    assert f"if_tsoffset {-(2**63)} s" in notes[25]
    assert f"puts it at {2**40} s" in notes[7]


def test_kafka_frames_survive_and_bad_times_are_anomalies(capture: tuple[Path, list]) -> None:
    path, _ = capture
    frames, anomalies = [], []
    for ev in dissect([str(path)], Options()):
        if ev.kind == "frame":
            frames.append(ev.obj)
        elif ev.kind == "anomaly":
            anomalies.append(ev.obj)
    got = {(f.first_packet, f.packet, f.type, f.correlation_id, f.status) for f in frames}
    want = {
        (int(r["first_frame"]), int(r["last_frame"]), r["api_name"], int(r["correlation_id"]), "ok")
        for r in tsv_rows(DECODE)
    }
    assert got == want
    bad = [a for a in anomalies if a.kind == "bad_timestamp"]
    assert [(a.packet, a.stream) for a in bad] == [(n, None) for n in BAD]
    assert all("not representable" in a.detail for a in bad)


def _no_traceback(text: str) -> None:
    assert "Traceback" not in text and "OverflowError" not in text


def test_timeline_stats_export_exit_0(capture: tuple[Path, list], tmp_path: Path, capsys) -> None:
    path, _ = capture
    r = run_cli(capsys, str(path))
    _no_traceback(r.out + r.err)
    assert r.code == 0, r.err
    r = run_cli(capsys, str(path), "-A")
    assert r.code == 0
    assert r.out.count("bad_timestamp") >= len(BAD)
    r = run_cli(capsys, "stats", str(path))
    _no_traceback(r.out + r.err)
    assert r.code == 0, r.err
    r = run_cli(capsys, "export", str(path), "-o", str(tmp_path / "out"))
    _no_traceback(r.out + r.err)
    assert r.code == 0, r.err
    an = pq.read_table(tmp_path / "out" / "anomalies.parquet").to_pylist()
    assert sorted(a["packet"] for a in an if a["kind"] == "bad_timestamp") == BAD
    frames = pq.read_table(tmp_path / "out" / "frames.parquet").to_pylist()
    assert len(frames) == len(tsv_rows(DECODE))


# -- classic pcap -------------------------------------------------------------------------------
def test_classic_pcap_absurd_fraction_and_extreme_seconds(tmp_path: Path, capsys) -> None:
    """Seconds 0 and 2^32-1 are representable; a fraction of a second or more is reported."""
    packets = pcap_packets(SOURCE)
    head = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, ETHERNET)
    out = [head]
    fields = {1: (0, 0), 2: (2**32 - 1, 999_999), 5: (100, 2**32 - 1), 9: (2**32 - 1, 2**32 - 1)}
    for n, (ts, data, orig) in enumerate(packets, 1):
        sec, frac = fields.get(n, divmod(ts, 1_000_000))
        out.append(struct.pack("<IIII", sec, frac, len(data), orig) + data)
    path = tmp_path / "absurd.pcap"
    path.write_bytes(b"".join(out))
    recs = {r.number: r for r in open_capture(str(path))}
    assert recs[1].ts_us == 0 and recs[1].ts_note is None
    assert recs[2].ts_us == (2**32 - 1) * 1_000_000 + 999_999 and recs[2].ts_note is None
    assert recs[5].ts_us == 100 * 1_000_000 + 2**32 - 1
    assert [n for n, r in recs.items() if r.ts_note] == [5, 9]
    assert "fraction 4294967295 µs is beyond a second" in recs[5].ts_note
    for args in ([str(path)], ["stats", str(path)], ["export", str(path), "-o", str(tmp_path / "o")]):
        r = run_cli(capsys, *args)
        _no_traceback(r.out + r.err)
        assert r.code == 0, (args, r.err)
    an = pq.read_table(tmp_path / "o" / "anomalies.parquet").to_pylist()
    assert sorted(a["packet"] for a in an if a["kind"] == "bad_timestamp") == [5, 9]
