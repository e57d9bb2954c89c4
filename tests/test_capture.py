"""CaptureReader on scapy-crafted pcap / pcapng files: formats, byte orders, timestamps, gzip, stdin, errors."""

from __future__ import annotations

import gzip
import io
import random
import struct
import subprocess
import sys
import types
from pathlib import Path

import pytest
from crafted import (
    ETHERNET,
    RAW,
    SLL,
    SLL2,
    Iface,
    Rec,
    gso_record,
    gzip_file,
    link,
    pcapng_epb,
    pcapng_idb,
    pcapng_shb,
    tcp,
    write_pcap,
    write_pcapng,
)

import wiredump.dissect.capture as capture_mod
from wiredump.dissect.capture import CaptureError, CaptureReader, Record, open_capture
from wiredump.dissect.packet import parse_tcp

T0 = 1_700_000_000_123_456  # µs since the epoch


def _recs(n: int = 3, linktype: int = ETHERNET) -> list[Rec]:
    return [
        Rec(link(linktype, tcp(seq=1000 + 10 * i, payload=b"p%09d" % i)), ts_us=T0 + 1_000_001 * i)
        for i in range(n)
    ]


def _read(path: str | Path) -> tuple[list[Record], CaptureReader]:
    r = open_capture(str(path))
    return list(r), r


@pytest.mark.parametrize("endian", ["<", ">"])
def test_pcap_microseconds(tmp_path: Path, endian: str) -> None:
    recs = _recs()
    p = write_pcap(tmp_path / "a.pcap", recs, endian=endian)
    magic = p.read_bytes()[:4]
    assert magic == (b"\xd4\xc3\xb2\xa1" if endian == "<" else b"\xa1\xb2\xc3\xd4")
    got, r = _read(p)
    assert [g.number for g in got] == [1, 2, 3]
    assert [g.ts_us for g in got] == [T0, T0 + 1_000_001, T0 + 2_000_002]
    assert [g.data for g in got] == [x.data for x in recs]
    assert all(g.linktype == ETHERNET and g.orig_len == len(g.data) for g in got)
    assert r.truncated is None and r.name == str(p)
    assert r.bytes_read == p.stat().st_size


@pytest.mark.parametrize("endian", ["<", ">"])
def test_pcap_nanoseconds_truncate_to_microseconds(tmp_path: Path, endian: str) -> None:
    ns = [1_700_000_000_123_456_789, 1_700_000_001_000_000_999, 1_700_000_002_999_999_999]
    recs = [Rec(link(ETHERNET, tcp(payload=b"x")), ts_units=t) for t in ns]
    p = write_pcap(tmp_path / "n.pcap", recs, nano=True, endian=endian)
    assert p.read_bytes()[:4] == (b"\x4d\x3c\xb2\xa1" if endian == "<" else b"\xa1\xb2\x3c\x4d")
    got, _ = _read(p)
    assert [g.ts_us for g in got] == [1_700_000_000_123_456, 1_700_000_001_000_000, 1_700_000_002_999_999]


def test_pcap_linktype_of_file(tmp_path: Path) -> None:
    for lt in (SLL, SLL2, RAW, 0, 108):
        p = write_pcap(tmp_path / f"{lt}.pcap", _recs(2, lt), linktype=lt)
        got, _ = _read(p)
        assert [g.linktype for g in got] == [lt, lt]
        seg = parse_tcp(got[1].linktype, got[1].data)
        assert seg is not None and seg.payload == b"p000000001"


def test_pcap_fcs_bits_in_linktype_field(tmp_path: Path) -> None:
    p = write_pcap(tmp_path / "f.pcap", _recs(1))
    b = bytearray(p.read_bytes())
    b[20:24] = struct.pack("<I", 0x1000_0000 | ETHERNET)  # "FCS length present" bits above the link type
    p.write_bytes(bytes(b))
    got, _ = _read(p)
    assert got[0].linktype == ETHERNET


def test_modified_pcap_kuznetsov(tmp_path: Path) -> None:
    data = link(ETHERNET, tcp(payload=b"hello"))
    hdr = struct.pack("<IHHiIII", 0xA1B2CD34, 2, 4, 0, 0, 65535, ETHERNET)
    rec = (
        struct.pack("<IIII", 1_700_000_000, 5, len(data), len(data))
        + struct.pack("<IHBx", 1, 0x0800, 0)
        + data
    )
    p = tmp_path / "k.pcap"
    p.write_bytes(hdr + rec + rec)
    got, r = _read(p)
    assert [g.data for g in got] == [data, data]
    assert got[0].ts_us == 1_700_000_000_000_005
    assert r.truncated is None


def test_records_longer_than_65535_are_read_whole(tmp_path: Path) -> None:
    big = gso_record(bytes(range(256)) * 300)  # 76,800 bytes of payload
    assert len(big) > 65535
    p = write_pcap(tmp_path / "big.pcap", [Rec(big), Rec(link(ETHERNET, tcp(payload=b"after")))])
    assert struct.unpack_from("<I", p.read_bytes(), 24 + 8)[0] == len(big)  # scapy wrote it whole
    got, r = _read(p)
    assert got[0].data == big and got[0].orig_len == len(big)
    seg = parse_tcp(ETHERNET, got[0].data)
    assert seg is not None and len(seg.payload) == 76800 and seg.missing == 0
    assert parse_tcp(ETHERNET, got[1].data).payload == b"after"
    assert r.truncated is None


def test_snap_length_cut_records_keep_their_wire_length(tmp_path: Path) -> None:
    full = link(ETHERNET, tcp(payload=b"A" * 1000))
    p = write_pcap(tmp_path / "snap.pcap", [Rec(full[:200], orig_len=len(full))])
    (g,), _ = _read(p)
    assert len(g.data) == 200 and g.orig_len == len(full)
    seg = parse_tcp(g.linktype, g.data)
    assert seg is not None and seg.payload == b"A" * 146 and seg.missing == 854


def test_record_boundaries_across_small_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recs = _recs(20)
    p = write_pcap(tmp_path / "c.pcap", recs)
    g = gzip_file(p)
    for chunk in (1, 7, 61, 4096):
        monkeypatch.setattr(capture_mod, "CHUNK", chunk)
        for path in (p, g):
            got, r = _read(path)
            assert [x.data for x in got] == [x.data for x in recs], (chunk, path)
            assert r.truncated is None


# -- pcapng ------------------------------------------------------------------------------------------


def _two_interface_pcapng(path: Path, endian: str = "<", block: str = "epb") -> list[Rec]:
    ifaces = [Iface(ETHERNET), Iface(SLL2, tsresol=9)]
    recs = [
        Rec(link(ETHERNET, tcp(payload=b"eth-1")), ts_us=T0, iface=0),
        Rec(
            link(SLL2, tcp("fd00::1", "fd00::2", payload=b"sll2-1")),
            ts_units=1_700_000_000_987_654_321,
            iface=1,
        ),
        Rec(link(ETHERNET, tcp(payload=b"eth-2")), ts_us=T0 + 7, iface=0),
    ]
    write_pcapng(
        path,
        ifaces,
        recs,
        endian=endian,
        block=block,
        extra_blocks=[(0x0BAD, b"unknown block body"), (5, b"")],
    )
    return recs


@pytest.mark.parametrize("endian", ["<", ">"])
def test_pcapng_two_interfaces_and_resolutions(tmp_path: Path, endian: str) -> None:
    recs = _two_interface_pcapng(tmp_path / "a.pcapng", endian)
    got, r = _read(tmp_path / "a.pcapng")
    assert [g.number for g in got] == [1, 2, 3]
    assert [g.linktype for g in got] == [ETHERNET, SLL2, ETHERNET]
    assert [g.ts_us for g in got] == [T0, 1_700_000_000_987_654, T0 + 7]
    assert [g.data for g in got] == [x.data for x in recs]
    assert parse_tcp(got[1].linktype, got[1].data).payload == b"sll2-1"
    assert r.truncated is None and r.skipped_unknown_link == 0


def test_pcapng_binary_resolution_and_offset(tmp_path: Path) -> None:
    ifaces = [Iface(ETHERNET, tsresol=0x80 | 20, tsoffset_s=1_000), Iface(RAW, tsresol=3)]
    data = link(ETHERNET, tcp(payload=b"x"))
    # 2^-20 s units: 3.5 s = 3.5 * 2^20 units; ms units: 1234567 ms.
    recs = [
        Rec(data, ts_units=int(3.5 * (1 << 20)), iface=0),
        Rec(bytes(tcp(payload=b"y")), ts_units=1_234_567, iface=1),
    ]
    write_pcapng(tmp_path / "b.pcapng", ifaces, recs)
    got, _ = _read(tmp_path / "b.pcapng")
    assert [g.ts_us for g in got] == [1_003_500_000, 1_234_567_000]


def test_pcapng_unknown_link_type_is_skipped_and_counted(tmp_path: Path) -> None:
    ifaces = [Iface(147), Iface(ETHERNET)]
    recs = [
        Rec(b"user-dlt-data", iface=0),
        Rec(link(ETHERNET, tcp(payload=b"z")), iface=1),
        Rec(b"more", iface=0),
    ]
    write_pcapng(tmp_path / "u.pcapng", ifaces, recs)
    got, r = _read(tmp_path / "u.pcapng")
    assert [g.number for g in got] == [2]  # numbering still counts the skipped records, as Wireshark does
    assert r.skipped_unknown_link == 2


def test_pcapng_simple_and_obsolete_packet_blocks(tmp_path: Path) -> None:
    recs = _two_interface_pcapng(tmp_path / "pb.pcapng", block="pb")
    got, _ = _read(tmp_path / "pb.pcapng")
    assert [g.data for g in got] == [x.data for x in recs]
    assert [g.ts_us for g in got] == [T0, 1_700_000_000_987_654, T0 + 7]
    data = link(ETHERNET, tcp(payload=b"spb!"))
    # An SPB's captured length is the smaller of its wire length and the interface's snap length.
    write_pcapng(
        tmp_path / "spb.pcapng",
        [Iface(ETHERNET, snaplen=50)],
        [Rec(data[:50], orig_len=len(data))],
        block="spb",
    )
    (g,), _ = _read(tmp_path / "spb.pcapng")
    assert g.data == data[:50] and g.orig_len == len(data)
    small = link(ETHERNET, tcp(payload=b"s"))  # 55 bytes: the block pads it to 56
    write_pcapng(tmp_path / "spb2.pcapng", [Iface(ETHERNET)], [Rec(small), Rec(data)], block="spb")
    got, _ = _read(tmp_path / "spb2.pcapng")
    assert [g.data for g in got] == [small, data]


def test_pcapng_snaplen_cut_and_big_record(tmp_path: Path) -> None:
    big = gso_record(b"G" * 70000)
    recs = [Rec(big), Rec(big[:100], orig_len=len(big))]
    write_pcapng(tmp_path / "s.pcapng", [Iface(ETHERNET)], recs)
    got, _ = _read(tmp_path / "s.pcapng")
    assert got[0].data == big
    assert len(got[1].data) == 100 and got[1].orig_len == len(big)


def test_pcapng_second_section_resets_interfaces(tmp_path: Path) -> None:
    e = "<"
    a = link(ETHERNET, tcp(payload=b"one"))
    b = link(SLL, tcp(payload=b"two"))
    out = pcapng_shb(e) + pcapng_idb(e, Iface(ETHERNET)) + pcapng_epb(e, Rec(a), Iface(ETHERNET))
    out += pcapng_shb(">") + pcapng_idb(">", Iface(SLL)) + pcapng_epb(">", Rec(b, ts_us=T0), Iface(SLL))
    (tmp_path / "two.pcapng").write_bytes(out)
    got, r = _read(tmp_path / "two.pcapng")
    assert [(g.number, g.linktype, g.data) for g in got] == [(1, ETHERNET, a), (2, SLL, b)]
    assert got[1].ts_us == T0 and r.truncated is None


# -- gzip and stdin ----------------------------------------------------------------------------------


def test_gzip_pcap_and_pcapng(tmp_path: Path) -> None:
    recs = _recs(5)
    g = gzip_file(write_pcap(tmp_path / "a.pcap", recs), tmp_path / "a.pcap.gz")
    got, r = _read(g)
    assert [x.data for x in got] == [x.data for x in recs] and r.gzipped
    _two_interface_pcapng(tmp_path / "b.pcapng")
    got, r = _read(gzip_file(tmp_path / "b.pcapng"))
    assert [x.linktype for x in got] == [ETHERNET, SLL2, ETHERNET]


def test_gzip_multi_member(tmp_path: Path) -> None:
    raw = write_pcap(tmp_path / "a.pcap", _recs(4)).read_bytes()
    p = tmp_path / "m.pcap.gz"
    p.write_bytes(gzip.compress(raw[:100]) + gzip.compress(raw[100:]))
    got, r = _read(p)
    assert len(got) == 4 and r.truncated is None


def _fake_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=io.BufferedReader(io.BytesIO(data))))


@pytest.mark.parametrize("compress", [False, True])
def test_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compress: bool) -> None:
    recs = _recs(4)
    raw = write_pcap(tmp_path / "a.pcap", recs).read_bytes()
    _fake_stdin(monkeypatch, gzip.compress(raw) if compress else raw)
    r = open_capture("-")
    assert r.name == "stdin"
    assert [x.data for x in r] == [x.data for x in recs]


def test_stdin_through_a_pipe(tmp_path: Path) -> None:
    _two_interface_pcapng(tmp_path / "p.pcapng")
    code = (
        "from wiredump.dissect.capture import open_capture\n"
        "r = open_capture('-')\n"
        "print(r.name, [(x.number, x.linktype, len(x.data)) for x in r], r.truncated)\n"
    )
    with open(tmp_path / "p.pcapng", "rb") as f:
        out = subprocess.run(
            [sys.executable, "-c", code], stdin=f, capture_output=True, check=True, text=True
        )
    lens = [
        len(link(ETHERNET, tcp(payload=b"eth-1"))),
        len(link(SLL2, tcp("fd00::1", "fd00::2", payload=b"sll2-1"))),
    ]
    assert out.stdout.strip() == f"stdin [(1, 1, {lens[0]}), (2, 276, {lens[1]}), (3, 1, {lens[0]})] None"


def test_empty_stdin_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_stdin(monkeypatch, b"")
    with pytest.raises(CaptureError, match="stdin: is empty"):
        open_capture("-")


# -- errors and truncation ---------------------------------------------------------------------------


def test_missing_directory_empty_text(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="no such file"):
        open_capture(str(tmp_path / "nope.pcap"))
    with pytest.raises(CaptureError, match="is a directory"):
        open_capture(str(tmp_path))
    (tmp_path / "empty.pcap").write_bytes(b"")
    with pytest.raises(CaptureError, match="is empty"):
        open_capture(str(tmp_path / "empty.pcap"))
    (tmp_path / "t.txt").write_text("hello, this is not a capture at all\n")
    with pytest.raises(CaptureError, match="not a pcap or pcapng capture"):
        open_capture(str(tmp_path / "t.txt"))
    (tmp_path / "t.txt.gz").write_bytes(gzip.compress(b"plain text, gzip'd\n"))
    with pytest.raises(CaptureError, match="not a pcap or pcapng capture"):
        open_capture(str(tmp_path / "t.txt.gz"))
    (tmp_path / "bad.gz").write_bytes(b"\x1f\x8b\x08\x00garbage garbage garbage garbage")
    with pytest.raises(CaptureError, match="gzip"):
        open_capture(str(tmp_path / "bad.gz"))


def test_unreadable_file(tmp_path: Path) -> None:
    import os

    p = write_pcap(tmp_path / "x.pcap", _recs(1))
    p.chmod(0)
    if os.access(p, os.R_OK):
        pytest.skip("running as a user who can read anything")
    with pytest.raises(CaptureError, match="permission denied"):
        open_capture(str(p))


def test_header_cut_short(tmp_path: Path) -> None:
    raw = write_pcap(tmp_path / "a.pcap", _recs(1)).read_bytes()
    (tmp_path / "h.pcap").write_bytes(raw[:10])
    with pytest.raises(CaptureError, match="cut short inside its 24-byte header"):
        open_capture(str(tmp_path / "h.pcap"))
    (tmp_path / "h2.pcap").write_bytes(raw[:3])
    with pytest.raises(CaptureError, match="not a pcap or pcapng capture .file of only 3 bytes"):
        open_capture(str(tmp_path / "h2.pcap"))


def test_unknown_pcap_link_type(tmp_path: Path) -> None:
    p = write_pcap(tmp_path / "u.pcap", [Rec(b"whatever")], linktype=147)
    with pytest.raises(CaptureError, match="link type 147 is not supported"):
        open_capture(str(p))


def test_header_only_pcap_has_no_records(tmp_path: Path) -> None:
    raw = write_pcap(tmp_path / "a.pcap", _recs(1)).read_bytes()
    (tmp_path / "h.pcap").write_bytes(raw[:24])
    got, r = _read(tmp_path / "h.pcap")
    assert got == [] and r.truncated is None


@pytest.mark.parametrize("compress", [False, True])
def test_cut_in_record_header_and_body(tmp_path: Path, compress: bool) -> None:
    recs = _recs(3)
    raw = write_pcap(tmp_path / "a.pcap", recs).read_bytes()
    third = len(raw) - (16 + len(recs[2].data))
    for cut, what in ((third + 9, "header of record 3"), (third + 16 + 20, "middle of record 3")):
        p = tmp_path / "cut.pcap"
        p.write_bytes(gzip.compress(raw[:cut]) if compress else raw[:cut])
        got, r = _read(p)
        assert [g.data for g in got] == [recs[0].data, recs[1].data]
        assert r.truncated is not None and what in r.truncated


def test_cut_gzip_stream(tmp_path: Path) -> None:
    raw = write_pcap(tmp_path / "a.pcap", _recs(50)).read_bytes()
    gz = gzip.compress(raw)
    (tmp_path / "c.gz").write_bytes(gz[: len(gz) // 2])
    got, r = _read(tmp_path / "c.gz")
    assert 0 < len(got) < 50
    assert r.truncated is not None


def test_record_length_beyond_the_file(tmp_path: Path) -> None:
    recs = _recs(3)
    raw = bytearray(write_pcap(tmp_path / "a.pcap", recs).read_bytes())
    third = len(raw) - (16 + len(recs[2].data))
    for incl in (1_000_000, 0xFFFFFFF0):
        raw[third + 8 : third + 12] = struct.pack("<I", incl)
        (tmp_path / "b.pcap").write_bytes(bytes(raw))
        got, r = _read(tmp_path / "b.pcap")
        assert len(got) == 2
        assert r.truncated is not None and "record 3" in r.truncated


def test_pcapng_cut_and_corrupt(tmp_path: Path) -> None:
    _two_interface_pcapng(tmp_path / "a.pcapng")
    raw = (tmp_path / "a.pcapng").read_bytes()
    (tmp_path / "cut.pcapng").write_bytes(raw[:-10])
    got, r = _read(tmp_path / "cut.pcapng")
    assert len(got) == 2 and r.truncated is not None and "after packet 2" in r.truncated
    bad = bytearray(raw)
    last = len(raw) - struct.unpack_from("<I", raw, len(raw) - 4)[0]
    bad[last + 4 : last + 8] = struct.pack("<I", 13)  # not a multiple of 4
    (tmp_path / "bad.pcapng").write_bytes(bytes(bad))
    got, r = _read(tmp_path / "bad.pcapng")
    assert len(got) == 2 and r.truncated is not None and "corrupt" in r.truncated


def test_iterating_twice_is_refused(tmp_path: Path) -> None:
    r = open_capture(str(write_pcap(tmp_path / "a.pcap", _recs(1))))
    assert len(list(r)) == 1
    with pytest.raises(RuntimeError):
        list(r)


@pytest.mark.parametrize("compress", [False, True])
def test_memory_stays_bounded(tmp_path: Path, compress: bool) -> None:
    """A 24 MB capture is streamed: peak memory stays near the read chunk, not the file size."""
    import tracemalloc

    one = write_pcap(tmp_path / "one.pcap", [Rec(link(ETHERNET, tcp(payload=b"m" * 1400)))]).read_bytes()
    body = one[24:] * (24_000_000 // (len(one) - 24))
    p = tmp_path / "big.pcap"
    p.write_bytes(gzip.compress(one[:24] + body, 1) if compress else one[:24] + body)
    del body
    tracemalloc.start()
    try:
        count = sum(1 for _ in open_capture(str(p)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 24_000_000 // (len(one) - 24)
    assert peak < 8_000_000, peak


def _compressors() -> dict[str, object]:
    import bz2
    import lzma

    import lz4.frame
    import zstandard

    return {
        "zstd": zstandard.ZstdCompressor().compress,
        "lz4": lz4.frame.compress,
        "xz": lzma.compress,
        "bzip2": lambda b: bz2.compress(b, 1),  # 100 kB blocks
        "gzip": gzip.compress,
    }


@pytest.mark.parametrize("kind", ["zstd", "lz4", "xz", "bzip2", "gzip"])
def test_other_compressions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """Wireshark 4.2 reads zstd and lz4 captures too; xz and bzip2 are what people compress with."""
    compress = _compressors()[kind]
    rnd = random.Random(7)
    recs = [
        Rec(link(ETHERNET, tcp(seq=i, payload=rnd.randbytes(2000)))) for i in range(150)
    ]  # 300 kB, incompressible
    raw = write_pcap(tmp_path / "a.pcap", recs).read_bytes()
    p = tmp_path / f"a.{kind}"
    p.write_bytes(compress(raw))
    got, r = _read(p)
    assert r.compression == kind and r.truncated is None
    assert [g.data for g in got] == [x.data for x in recs]
    # Streamed from stdin in small pieces as well.
    monkeypatch.setattr(capture_mod, "CHUNK", 100)
    _fake_stdin(monkeypatch, compress(raw))
    assert [g.data for g in open_capture("-")] == [x.data for x in recs]
    # Cut in the middle: what came before is read, the cut is reported.
    data = compress(raw)
    p.write_bytes(data[: len(data) * 2 // 3])
    got, r = _read(p)
    assert 0 < len(got) < 150 and r.truncated is not None
    assert [g.data for g in got] == [x.data for x in recs[: len(got)]]
    # Not a capture inside.
    p.write_bytes(compress(b"just some text that is long enough to have a header"))
    with pytest.raises(CaptureError, match="not a pcap or pcapng capture"):
        open_capture(str(p))
