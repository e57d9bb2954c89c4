"""Damaged input never raises past CaptureError: random corruption of valid captures and random records."""

from __future__ import annotations

import gzip
from pathlib import Path

from crafted import ETHERNET, SLL2, Iface, Rec, link, tcp, write_pcap, write_pcapng
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wiredump.dissect.capture import CaptureError, open_capture
from wiredump.dissect.packet import SUPPORTED_LINKTYPES, parse_tcp

_SAMPLES: list[bytes] = []


def _samples(tmp: Path) -> list[bytes]:
    """A pcap, a pcapng and a gzip'd pcap (built once: scapy is slow next to the reader)."""
    if _SAMPLES:
        return _SAMPLES
    recs = [
        Rec(link(ETHERNET, tcp(seq=i, payload=b"%d" % i * 20)), ts_us=1_700_000_000_000_000 + i)
        for i in range(4)
    ]
    pcap = write_pcap(tmp / "a.pcap", recs).read_bytes()
    ng = write_pcapng(
        tmp / "b.pcapng",
        [Iface(ETHERNET, tsresol=9), Iface(SLL2)],
        [Rec(link(ETHERNET, tcp(payload=b"x" * 30))), Rec(link(SLL2, tcp(payload=b"y")), iface=1)],
    ).read_bytes()
    _SAMPLES.extend([pcap, ng, gzip.compress(pcap)])
    return _SAMPLES


def _read_all(path: Path) -> None:
    try:
        r = open_capture(str(path))
    except CaptureError:
        return
    for rec in r:
        assert len(rec.data) <= 16 << 20
        parse_tcp(rec.linktype, rec.data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    which=st.integers(0, 2),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=6),
    cut=st.none() | st.integers(0, 10_000),
)
def test_corrupted_captures_never_raise(
    tmp_path: Path, which: int, edits: list[tuple[int, int]], cut: int | None
) -> None:
    data = bytearray(_samples(tmp_path)[which])
    for pos, val in edits:
        data[pos % len(data)] = val
    if cut is not None:
        data = data[: cut % (len(data) + 1)]
    p = tmp_path / "fuzz.bin"
    p.write_bytes(bytes(data))
    _read_all(p)


@settings(max_examples=300, deadline=None)
@given(linktype=st.sampled_from(sorted(SUPPORTED_LINKTYPES)), data=st.binary(max_size=120))
def test_random_records_never_raise(linktype: int, data: bytes) -> None:
    seg = parse_tcp(linktype, data)
    assert seg is None or (0 <= seg.sport < 65536 and len(seg.payload) <= len(data))


_V6_RECORDS = {
    lt: link(lt, tcp("fd00::1", "fd00::2", payload=b"p" * 40, ext=("hop", "dest"))) for lt in (ETHERNET, SLL2)
}


@settings(max_examples=200, deadline=None)
@given(
    linktype=st.sampled_from([ETHERNET, SLL2]),
    cut=st.integers(0, 200),
    flip=st.tuples(st.integers(0, 200), st.integers(0, 255)),
)
def test_damaged_headers_never_raise(linktype: int, cut: int, flip: tuple[int, int]) -> None:
    rec = bytearray(_V6_RECORDS[linktype])
    rec[flip[0] % len(rec)] = flip[1]
    seg = parse_tcp(linktype, bytes(rec[:cut]))
    assert seg is None or seg.missing >= 0
