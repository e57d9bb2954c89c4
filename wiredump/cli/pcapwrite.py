"""`-w OUT.pcap`: the packets of the frames a filter keeps, as a small capture that decodes the same.

Two passes over the capture. The first decodes it and notes, for every frame the
filter keeps, its connection, its direction and the packets that carried its first
and last byte — plus, for a kept response, the same for the request it answers (a
protocol may need the request to decode the response). The second reads the packets
again and writes, unchanged:

- every packet of a kept frame's connection and direction, between the packets of
  its first and last byte, that carries TCP payload (the frame's bytes travelled
  there; a packet shared with a neighbouring frame carries that one's bytes too);
- every packet of the connection that carries no payload: its handshake (SYN,
  SYN-ACK, ACK), its ACKs, FIN and RST. They are small, and they are what lets a
  reader order the two sides across the bytes left out: an ACK tells that the
  bytes before a kept request were sent, so the request is decoded before its
  answer and the two are paired as in the original.

The output is a classic pcap in the capture's link type; its time precision is the
capture's (µs, or ns for a nanosecond pcap — wiredump reads times to the µs, so the
last three digits of a nanosecond time are zero). Bytes between kept frames are
missing from the small capture: its timeline shows a gap before a kept frame, and
every kept frame decodes as in the original.
"""

from __future__ import annotations

import bisect
import struct
import sys
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import BinaryIO

import typer

from wiredump.cli.entry import UsageError
from wiredump.dissect.capture import CaptureError, open_capture
from wiredump.dissect.filter import DisplayFilter
from wiredump.dissect.model import CLIENT, Frame
from wiredump.dissect.packet import SYN, parse_tcp
from wiredump.dissect.pipeline import FRAME, Options

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D
MAX_REQUESTS = 200_000
"""Requests remembered while waiting for their response (the oldest are forgotten past this)."""

Endpoint = tuple[str, int]


@dataclass
class Selection:
    """What the first pass found: per connection, the packet spans of kept frames in each direction."""

    conns: dict[int, tuple[Endpoint, Endpoint]] = field(default_factory=dict)  # stream -> (client, server)
    spans: dict[tuple[int, str], list[tuple[int, int]]] = field(default_factory=dict)
    frames: int = 0

    def add(self, stream: int, role: str, first: int, last: int) -> None:
        self.spans.setdefault((stream, role), []).append((first, last))

    def finish(self) -> dict[tuple[int, str], tuple[list[int], list[int]]]:
        """Merged spans per (stream, role), as parallel start/end lists for bisect."""
        out = {}
        for key, spans in self.spans.items():
            spans.sort()
            merged: list[list[int]] = []
            for a, b in spans:
                if merged and a <= merged[-1][1] + 1:
                    merged[-1][1] = max(merged[-1][1], b)
                else:
                    merged.append([a, b])
            out[key] = ([m[0] for m in merged], [m[1] for m in merged])
        return out


def _endpoints(f: Frame) -> tuple[Endpoint, Endpoint]:
    if f.role == CLIENT:
        return (f.src, f.src_port), (f.dst, f.dst_port)
    return (f.dst, f.dst_port), (f.src, f.src_port)


def select(path: str, flt: DisplayFilter | None, options: Options, progress: bool) -> Selection:
    """First pass: decode and note where the kept frames (and the requests they answer) travelled."""
    from wiredump.cli.source import Run

    options.messages = bool(flt and flt.needs_messages)
    run = Run([path], options, progress=progress)
    sel = Selection()
    # (stream, packet) of each recent request -> (its role, the packet of its first byte)
    requests: OrderedDict[tuple[int, int], tuple[str, int]] = OrderedDict()
    started = False
    for ev in run.events():
        if ev.kind != FRAME:
            continue
        f: Frame = ev.obj
        if not started and flt is not None:
            flt.start_capture(run.info.first_ts_us)
            started = True
        if f.kind == "request":
            requests[(f.stream, f.packet)] = (f.role, f.first_packet)
            if len(requests) > MAX_REQUESTS:
                requests.popitem(last=False)
        if flt is not None and not flt.matches(f, ev.capture):
            continue
        sel.frames += 1
        sel.conns.setdefault(f.stream, _endpoints(f))
        sel.add(f.stream, f.role, f.first_packet, f.packet)
        if f.kind == "response" and f.peer_packet is not None:
            req = requests.get((f.stream, f.peer_packet))
            if req is not None:
                sel.add(f.stream, req[0], req[1], f.peer_packet)
    return sel


def _inside(spans: tuple[list[int], list[int]], packet: int) -> bool:
    starts, ends = spans
    i = bisect.bisect_right(starts, packet) - 1
    return i >= 0 and packet <= ends[i]


def _file_header(nano: bool, linktype: int) -> bytes:
    """A little-endian pcap 2.4 file header (snap length 262144, as tcpdump writes)."""
    return struct.pack("<IHHiIII", PCAP_MAGIC_NS if nano else PCAP_MAGIC_US, 2, 4, 0, 0, 262144, linktype)


def write_packets(path: str, fh: BinaryIO, sel: Selection) -> int:
    """Second pass: copy the selected packets to `fh`; the number written."""
    spans = sel.finish()
    by_tuple: dict[tuple[Endpoint, Endpoint], list[int]] = {}
    for stream, (client, server) in sel.conns.items():
        by_tuple.setdefault((client, server), []).append(stream)
    reader = open_capture(path)
    nano = bool(getattr(reader, "_nano", False))
    linktype: int | None = reader.linktype
    written = 0
    header_written = False
    for rec in reader:
        seg = parse_tcp(rec.linktype, rec.data)
        if seg is None:
            continue
        a, b = (seg.src, seg.sport), (seg.dst, seg.dport)
        if (a, b) in by_tuple:
            conn, role = (a, b), CLIENT
        elif (b, a) in by_tuple:
            conn, role = (b, a), "server"
        else:
            continue
        keep = False
        if seg.flags & SYN:
            keep = True
        elif seg.payload or seg.missing:
            keep = any(
                (s := spans.get((stream, role))) is not None and _inside(s, rec.number)
                for stream in by_tuple[conn]
            )
        else:
            keep = True  # handshake, ACKs, FIN, RST: what lets the reader order the two sides
        if not keep:
            continue
        if linktype is None:
            linktype = rec.linktype
        elif rec.linktype != linktype:
            raise UsageError(
                f"-w: the kept packets use several link types ({linktype}, {rec.linktype}); "
                "a pcap file holds one"
            )
        if not header_written:
            fh.write(_file_header(nano, linktype))
            header_written = True
        sec, us = divmod(rec.ts_us, 1_000_000)
        size = len(rec.data)
        fh.write(
            struct.pack("<IIII", sec & 0xFFFFFFFF, us * 1000 if nano else us, size, max(rec.orig_len, size))
        )
        fh.write(rec.data)
        written += 1
    if not header_written:
        fh.write(_file_header(nano, linktype or 1))
    return written


def write_matching(
    captures: list[str], out_path: str, flt: DisplayFilter | None, options: Options, progress: bool
) -> None:
    """`-w`: select, write, and say on stderr what was written."""
    from wiredump.cli.source import Progress

    if len(captures) != 1 or captures[0] == "-":
        raise UsageError("-w reads one capture file (not stdin: it is read twice)")
    show = progress and Progress.wanted()
    try:
        fh = open(out_path, "wb")  # noqa: SIM115 - closed below; opened first so a bad path fails at once
    except OSError as e:
        raise UsageError(f"-w {out_path}: cannot be written ({e.strerror or e})") from None
    try:
        with fh:
            sel = select(captures[0], flt, options, show)
            n = write_packets(captures[0], fh, sel)
    except CaptureError as e:
        raise UsageError(str(e)) from None
    frames = "frame" if sel.frames == 1 else "frames"
    packets = "packet" if n == 1 else "packets"
    typer.echo(f"wiredump: wrote {n} {packets} ({sel.frames} {frames}) to {out_path}", err=True)
    sys.stdout.flush()
