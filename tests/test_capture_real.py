"""CaptureReader + parse_tcp on the real captures, and crafted captures, checked against tshark."""

from __future__ import annotations

import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest
from crafted import (
    ETHERNET,
    IPV4,
    LOOP,
    NULL,
    RAW,
    SLL,
    SLL2,
    Iface,
    Rec,
    gso_record,
    link,
    tcp,
    write_pcap,
    write_pcapng,
)

from wiredump.dissect.capture import Record, open_capture
from wiredump.dissect.packet import parse_tcp

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")


def _ours(path: Path) -> tuple[int, int, int, int]:
    """(records, TCP segments with payload, payload bytes, records > 65,535 bytes)."""
    r = open_capture(str(path))
    recs = segs = nbytes = big = 0
    for rec in r:
        recs += 1
        big += len(rec.data) > 65535
        seg = parse_tcp(rec.linktype, rec.data)
        if seg is not None and seg.payload:
            segs += 1
            nbytes += len(seg.payload)
    assert r.truncated is None
    return recs, segs, nbytes, big


def _tshark(path: Path, *args: str) -> list[str]:
    out = subprocess.run(
        ["tshark", "-r", str(path), *args], capture_output=True, text=True, check=True
    ).stdout
    return out.splitlines()


# Counts checked with tshark 4.0.17 (`tshark -r X -T fields -e frame.number | wc -l` and the number and
# sum of `tcp.len` over `-Y tcp.len>0`).
KNOWN = {
    "kafka/go-sniffer-kafka.pcap": (20, 4, 1290),  # Linux SLL, 16 bytes of padding after each datagram
    "kafka/kafka-python-pinned-2.5.pcap": (272, 133, 96578),
    "pravega/p08-large-events.pcap": (262, 199, 8525472),  # loopback GSO records of 65,549 bytes
    "pulsar/s04-consumer.pcap": (263, 200, 32155),
    "tank/t02-bundles.pcap": (113, 59, 26168),
}


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_known_counts(captures: Path, name: str) -> None:
    path = captures / name
    if not path.exists():
        pytest.skip(f"{name} not present")
    recs, segs, nbytes, _big = _ours(path)
    assert (recs, segs, nbytes) == KNOWN[name]


def test_gso_records_read_whole(captures: Path) -> None:
    path = captures / "pravega" / "p08-large-events.pcap"
    if not path.exists():
        pytest.skip("p08-large-events.pcap not present")
    r = open_capture(str(path))
    rec = next(x for x in r if x.number == 22)
    # tshark: frame 22 has frame.len == frame.cap_len == 65549, ip.len 65535, tcp.len 65483.
    assert len(rec.data) == rec.orig_len == 65549
    seg = parse_tcp(rec.linktype, rec.data)
    assert seg is not None and len(seg.payload) == 65483


def _all_captures(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*") if p.suffix in (".pcap", ".pcapng") or p.name.endswith((".pcap.gz",))
    )


TSHARK_FIELDS = (
    "frame.time_epoch", "ip.src", "ipv6.src", "ip.dst", "ipv6.dst", "tcp.srcport", "tcp.dstport",
    "tcp.seq_raw", "tcp.ack_raw", "tcp.flags", "tcp.payload",
)  # fmt: skip


def _tshark_rows(path: Path) -> list[tuple]:
    """Per frame: (time µs, and for TCP: src, dst, ports, raw seq/ack, flags, payload) as tshark decodes it."""
    args = ["-T", "fields", "-E", "occurrence=f"]
    for f in TSHARK_FIELDS:
        args += ["-e", f]
    rows = []
    for line in _tshark(path, *args):
        t, ip4s, ip6s, ip4d, ip6d, sport, dport, seq, ack, flags, payload = line.split("\t")
        ts = int(Decimal(t) * 1_000_000)
        if not sport:
            rows.append((ts, None))
            continue
        tcp_fields = (
            ip4s or ip6s,
            ip4d or ip6d,
            int(sport),
            int(dport),
            int(seq),
            int(ack),
            int(flags, 16) & 0xFF,
        )
        rows.append((ts, (*tcp_fields, bytes.fromhex(payload))))
    return rows


def _our_row(rec: Record) -> tuple:
    seg = parse_tcp(rec.linktype, rec.data)
    if seg is None:
        return (rec.ts_us, None)
    return (rec.ts_us, (seg.src, seg.dst, seg.sport, seg.dport, seg.seq, seg.ack, seg.flags, seg.payload))


@pytest.mark.tshark
@needs_tshark
@pytest.mark.skipif(shutil.which("mergecap") is None, reason="mergecap is not installed")
def test_every_real_capture_matches_tshark(captures: Path, tmp_path: Path) -> None:
    """All captures concatenated by mergecap into one pcapng (one interface per capture, SLL and
    Ethernet mixed): one tshark run, compared packet by packet (time, addresses, ports, sequence
    numbers, flags, payload bytes), then capture by capture for the counts."""
    paths = _all_captures(captures)
    assert paths
    merged = tmp_path / "all.pcapng"
    subprocess.run(["mergecap", "-a", "-F", "pcapng", "-w", str(merged), *map(str, paths)], check=True)
    theirs = _tshark_rows(merged)
    r = open_capture(str(merged))
    ours = [_our_row(rec) for rec in r]
    assert r.truncated is None and r.skipped_unknown_link == 0
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a == b, f"packet {i + 1}"
    start = 0
    for path in paths:  # each capture alone holds the same records, in the same order
        recs, segs, nbytes, _ = _ours(path)
        part = [len(x[1][-1]) for x in theirs[start : start + recs] if x[1] is not None]
        assert (recs, segs, nbytes) == (
            min(recs, len(theirs) - start),
            sum(1 for x in part if x),
            sum(part),
        ), path
        start += recs
    assert start == len(theirs)


@pytest.mark.tshark
@needs_tshark
@pytest.mark.skipif(shutil.which("mergecap") is None, reason="mergecap is not installed")
def test_crafted_files_read_like_tshark(tmp_path: Path) -> None:
    """The crafted files are valid for tshark, and every packet reads the same with us and with it."""
    ifaces = [Iface(ETHERNET, tsresol=9), Iface(SLL2, tsresol=0x80 | 10), Iface(ETHERNET)]
    recs = [
        Rec(
            link(ETHERNET, tcp(payload=b"one"), vlans=(5, 7), qinq=True),
            ts_units=1_700_000_000_123_456_789,
            iface=0,
        ),
        Rec(
            link(SLL2, tcp("fd00::1", "fd00::2", payload=b"two", ext=("hop",))),
            ts_units=1_741_000_000 << 10,
            iface=1,
        ),
        Rec(gso_record(b"3" * 70000), ts_us=1_700_000_001_000_001, iface=2),
    ]
    files = [
        write_pcapng(tmp_path / f"x{endian == '<'}.pcapng", ifaces, recs, endian=endian) for endian in "<>"
    ]
    for nano in (False, True):
        for endian in "<>":
            files.append(
                write_pcap(
                    tmp_path / f"y{nano}{endian == '<'}.pcap",
                    [
                        Rec(link(ETHERNET, tcp(payload=b"abc")), ts_us=1_700_000_000_654_321 + i)
                        for i in range(3)
                    ],
                    nano=nano,
                    endian=endian,
                )
            )
    v4, v6 = tcp(payload=b"four"), tcp("fe80::1", "fe80::2", payload=b"six", ext=("routing", "dest"))
    for lt in (SLL, NULL, LOOP, RAW, IPV4):
        pkts = [v4] if lt == IPV4 else [v4, v6]
        files.append(
            write_pcap(
                tmp_path / f"lt{lt}.pcap",
                [Rec(link(lt, p, af=30 if lt == NULL and p is v6 else None)) for p in pkts],
                linktype=lt,
            )
        )
    # One tshark run (its start-up dominates): mergecap, which reads each file with tshark's own
    # library, concatenates them.
    merged = tmp_path / "all.pcapng"
    subprocess.run(["mergecap", "-a", "-F", "pcapng", "-w", str(merged), *map(str, files)], check=True)
    theirs = _tshark_rows(merged)
    start = 0
    for path in files:
        ours = [_our_row(rec) for rec in open_capture(str(path))]
        assert ours == theirs[start : start + len(ours)], path.name
        assert all(r[1] is not None for r in ours), path.name
        start += len(ours)
    assert start == len(theirs)


@pytest.mark.tshark
@needs_tshark
@pytest.mark.skipif(shutil.which("editcap") is None, reason="editcap is not installed")
def test_snap_length_cut_capture_matches_tshark(captures: Path, tmp_path: Path) -> None:
    """A real capture cut to 120 bytes per packet by editcap: wire and captured lengths, the payload
    captured, and the payload the headers declare (captured + missing) all agree with tshark."""
    src = captures / "kafka" / "kafka-python-basic.pcap"
    if not src.exists():
        pytest.skip("kafka-python-basic.pcap not present")
    cut = tmp_path / "snap.pcap"
    subprocess.run(["editcap", "-s", "120", str(src), str(cut)], check=True)
    fields = ["frame.len", "frame.cap_len", "tcp.len", "tcp.payload"]
    theirs = []
    for line in _tshark(cut, "-T", "fields", *[x for f in fields for x in ("-e", f)]):
        wire, cap, tcp_len, payload = line.split("\t")
        theirs.append((int(wire), int(cap), int(tcp_len), bytes.fromhex(payload)))
    ours = []
    for rec in open_capture(str(cut)):
        seg = parse_tcp(rec.linktype, rec.data)
        assert seg is not None
        ours.append((rec.orig_len, len(rec.data), len(seg.payload) + seg.missing, seg.payload))
    assert ours == theirs
    assert sum(1 for o in ours if o[0] > o[1]) > 20  # the cut did cut
