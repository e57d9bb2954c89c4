"""Helpers for the terminal tests: run the CLI in-process, read independent decodes and pcap headers."""

from __future__ import annotations

import csv
import re
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest

from wiredump.cli.entry import main


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    """`wiredump ARGS…` in this process, with its exit code, stdout and stderr."""
    capsys.readouterr()
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    cap = capsys.readouterr()
    return Result(code, cap.out, cap.err)


def read_tsv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def pcap_times(path: Path) -> list[int]:
    """Every record's timestamp in microseconds, read straight from a little-endian µs pcap."""
    data = path.read_bytes()
    magic = struct.unpack_from("<I", data)[0]
    assert magic == 0xA1B2C3D4, "test helper reads little-endian microsecond pcaps only"
    out, pos = [], 24
    while pos + 16 <= len(data):
        sec, usec, incl, _ = struct.unpack_from("<IIII", data, pos)
        out.append(sec * 1_000_000 + usec)
        pos += 16 + incl
    return out


def pcap_payload(path: Path, packet: int) -> bytes:
    """TCP payload of one packet of an Ethernet/IPv4 pcap (1-based number), by the IP total length."""
    data = path.read_bytes()
    pos, n = 24, 0
    while pos + 16 <= len(data):
        _, _, incl, _ = struct.unpack_from("<IIII", data, pos)
        n += 1
        if n == packet:
            rec = data[pos + 16 : pos + 16 + incl]
            ip = rec[14:]
            ihl = (ip[0] & 0x0F) * 4
            total = struct.unpack_from(">H", ip, 2)[0] or len(ip)
            tcp = ip[ihl:total]
            return tcp[(tcp[12] >> 4) * 4 :]
        pos += 16 + incl
    raise IndexError(packet)


LINE = re.compile(
    r"^\s*(?P<packet>\d+)\s+(?P<time>\S+)\s+(?P<stream>\d+) (?P<client>\S+) (?P<arrow>[→←]) (?P<server>\S+) "
    r"(?P<protocol>\S+)\s+(?P<type>\S+)(?: v(?P<version>-?\d+))?(?: id=(?P<cid>-?\d+))?"
    r"(?: (?P<peer>[→←] #\d+(?: \S+)?))?(?: \[(?P<badges>[^\]]*)\])?(?:  (?P<summary>.*))?$"
)


def parse_lines(text: str) -> list[dict[str, str | None]]:
    """The frame lines of a plain timeline, split into their columns (anomaly lines skipped)."""
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            out.append(m.groupdict())
    return out
