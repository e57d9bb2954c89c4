"""Kafka: damaged variants of the real captures still decode every frame they can.

Each variant is the real capture with packets removed (the start cut away: a capture
that begins mid-connection; one request packet lost: a gap), written back as pcap by
copying the original records. The expected frames are the rows of the independent
decode (`X.pdus.tsv`) that survive the cut, with packet numbers shifted.
"""

from __future__ import annotations

import csv
import struct
from pathlib import Path

import pytest

from tests.conftest import CAPTURES
from wiredump.dissect.model import Frame
from wiredump.dissect.pipeline import Options, dissect

CAPS = CAPTURES / "kafka"
NAMES = [
    n
    for n in ("kafka-python-basic", "kafka-python-pinned-2.5", "ck-compress-zstd", "admin-kafka-python")
    if (CAPS / f"{n}.pcap").exists()
]
pytestmark = pytest.mark.skipif(not NAMES, reason="Kafka captures not available")


def read_records(path: Path) -> tuple[bytes, list[bytes]]:
    """The pcap global header and each record (header + data) as raw bytes."""
    raw = path.read_bytes()
    endian = "<" if raw[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    records, pos = [], 24
    while pos + 16 <= len(raw):
        (incl,) = struct.unpack_from(endian + "I", raw, pos + 8)
        records.append(raw[pos : pos + 16 + incl])
        pos += 16 + incl
    return raw[:24], records


def write_variant(tmp: Path, name: str, keep: list[int]) -> Path:
    head, records = read_records(CAPS / f"{name}.pcap")
    out = tmp / f"{name}-variant.pcap"
    out.write_bytes(head + b"".join(records[i - 1] for i in keep))
    return out


def rows(name: str) -> list[dict[str, str]]:
    with (CAPS / f"{name}.pdus.tsv").open() as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def frames_of(path: Path) -> tuple[list[Frame], list]:
    frames, anomalies = [], []
    for ev in dissect([str(path)], Options()):
        if ev.kind == "frame":
            frames.append(ev.obj)
        elif ev.kind == "anomaly":
            anomalies.append(ev.obj)
    return frames, anomalies


def key(stream: int, kind: str, first: int, last: int, api: int, version: int, corr: int) -> tuple:
    return (stream, kind, first, last, api, version, corr)


@pytest.mark.parametrize("name", NAMES)
def test_capture_starting_mid_stream(tmp_path: Path, name: str) -> None:
    all_rows = rows(name)
    total = len(read_records(CAPS / f"{name}.pcap")[1])
    cut = total * 2 // 5  # drop the first 40% of the packets (SYNs included)
    path = write_variant(tmp_path, name, list(range(cut + 1, total + 1)))
    frames, _ = frames_of(path)
    by_first = {int(r["first_frame"]): r for r in all_rows}
    expected = set()
    orphans = set()
    for r in all_rows:
        first, last = int(r["first_frame"]), int(r["last_frame"])
        if first <= cut:
            continue
        k = key(
            int(r["stream"]),
            r["dir"],
            first - cut,
            last - cut,
            int(r["api_key"]),
            int(r["api_version"]),
            int(r["correlation_id"]),
        )
        peer = int(r["peer_frame"]) if r["peer_frame"] else None
        if r["dir"] == "resp" and peer is not None and peer <= cut:
            orphans.add(k)  # its request was cut away
        else:
            expected.add(k)
    got = {
        key(
            f.stream,
            "req" if f.kind == "request" else "resp",
            f.first_packet,
            f.packet,
            f.type_code,
            f.version,
            f.correlation_id,
        )
        for f in frames
    }
    # Stream numbers restart in the variant: compare without them, then check no frame is bad.
    strip = lambda s: {k[1:] for k in s}  # noqa: E731
    assert strip(expected) <= strip(got)
    extra = strip(got) - strip(expected)
    orphan_spots = {(k[1], k[2], k[3], k[6]) for k in orphans}
    assert all((k[0], k[1], k[2], k[5]) in orphan_spots for k in extra), extra
    assert [f.status for f in frames if f.status not in ("ok",) and f.kind != "response"] == []
    assert by_first  # the decode has rows


@pytest.mark.parametrize("name", NAMES)
def test_lost_request_segment(tmp_path: Path, name: str) -> None:
    all_rows = rows(name)
    total = len(read_records(CAPS / f"{name}.pcap")[1])
    reqs = [r for r in all_rows if r["dir"] == "req" and r["segments"] == "1" and r["peer_frame"]]
    lost = reqs[len(reqs) // 2]
    lost_packet = int(lost["first_frame"])
    if any(int(r["first_frame"]) == lost_packet and r is not lost for r in all_rows):
        pytest.skip("the packet holds more than one frame")
    path = write_variant(tmp_path, name, [i for i in range(1, total + 1) if i != lost_packet])
    frames, anomalies = frames_of(path)
    shift = lambda p: p - 1 if p > lost_packet else p  # noqa: E731
    expected = {
        (
            int(r["stream"]),
            r["dir"],
            shift(int(r["first_frame"])),
            shift(int(r["last_frame"])),
            int(r["correlation_id"]),
        )
        for r in all_rows
        if r is not lost
    }
    got = {
        (f.stream, "req" if f.kind == "request" else "resp", f.first_packet, f.packet, f.correlation_id)
        for f in frames
    }
    assert got == expected
    orphan = next(f for f in frames if f.kind == "response" and f.packet == shift(int(lost["peer_frame"])))
    assert orphan.peer_packet is None and orphan.fields.get("no_request")
    assert orphan.type == lost["api_name"]  # layout guessed from what the connection uses
    assert [f for f in frames if f.status != "ok"] == []
    assert "resync" not in {a.kind for a in anomalies}  # the next request starts right after the gap
