"""A capture read through pyarrow's file systems, for Spark: the same records as the local reader.

Why: Spark's data source (`wiredump.spark.source`) and the capture date of `wiredump spark
export` (`wiredump.spark.export._first_date`) open captures where executors find them — local
paths, `file://`, `hdfs://`, `s3://`/`s3a://` where pyarrow has them — and hand their records to
the engine (`Dissector.from_records`). `probe` says what a file is (with the user's name for it in
every error), `read_range` reads its records with `read_at` of bounded chunks: memory is one
chunk plus the largest record, whatever the file size. Compressed captures are read by
`CaptureReader` (`whole`: local files directly, others copied to a temporary file first).

The records (numbers, times, link types, bytes, notes) and the end-of-capture facts (`truncated`
text, `skipped_unknown_link`) equal those of `wiredump.dissect.capture`: tests/test_split.py
compares them on real and damaged captures.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from wiredump.dissect.capture import (
    _SUPPORTED_TEXT,
    BT_EPB,
    BT_IDB,
    BT_PB,
    BT_SPB,
    BZIP2_MAGIC,
    CHUNK,
    GZIP_MAGIC,
    LZ4_MAGIC,
    MAX_RECORD,
    PCAP_MAGIC_KUZNETSOV,
    PCAP_MAGIC_NS,
    PCAP_MAGIC_US,
    PCAPNG_SHB,
    TS_MAX_US,
    TS_MIN_US,
    XZ_MAGIC,
    ZSTD_MAGIC,
    CaptureError,
    CaptureReader,
    Record,
    _pcap_fraction_note,
    _time_note,
)
from wiredump.dissect.packet import SUPPORTED_LINKTYPES

__all__ = ["CaptureFile", "RangeEnd", "Task", "probe", "read_range", "whole_file"]

COMPRESSED = (GZIP_MAGIC, ZSTD_MAGIC, LZ4_MAGIC, XZ_MAGIC, BZIP2_MAGIC)


# -- file systems ------------------------------------------------------------------------------------
def filesystem(uri: str) -> tuple[Any, str]:
    """(pyarrow FileSystem, path in it) for a plain path or a URI; `s3a://` and `s3n://` read as `s3://`."""
    from pyarrow import fs

    if "://" not in uri:
        return fs.LocalFileSystem(), os.path.abspath(uri)
    scheme, rest = uri.split("://", 1)
    if scheme in ("s3a", "s3n"):
        uri = "s3://" + rest
    return fs.FileSystem.from_uri(uri)


def absolute(path: str) -> str:
    """A path every executor resolves the same way: URIs as they are, plain paths made absolute."""
    return path if "://" in path else os.path.abspath(path)


class _Bytes:
    """Random access to a file through `read_at`, keeping one window of at most a chunk plus a record."""

    def __init__(self, f: Any, size: int, chunk: int = CHUNK) -> None:
        self.f = f
        self.size = size
        self.chunk = chunk
        self.base = 0
        self.buf = b""

    def get(self, pos: int, n: int) -> bytes:
        """Bytes [pos, pos+n), fewer at the end of the file."""
        off = pos - self.base
        if off < 0 or off + n > len(self.buf):
            want = min(max(n, self.chunk), max(0, self.size - pos))
            self.buf = self.f.read_at(want, pos) if want else b""
            self.base = pos
            off = 0
        return self.buf[off : off + n]


# -- what a file is ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CaptureFile:
    """One capture as the driver found it: how to open it and how its records are laid out."""

    name: str
    """As the user gave it (the `capture` column)."""
    uri: str
    """Absolute path or URI: what executors open."""
    size: int
    format: str
    """`pcap`, `pcapng`, or `whole` (compressed: read by CaptureReader, not cut)."""
    endian: str = "<"
    nano: bool = False
    hsize: int = 16
    linktype: int = 0
    first_sec: int | None = None
    """pcap: the second of the first record (None without records)."""
    data_start: int = 24


def probe(name: str, uri: str | None = None) -> CaptureFile:
    """Open a capture's start and say how to read it; raises CaptureError with the user's name for it."""
    uri = uri or absolute(name)
    try:
        fs, path = filesystem(uri)
        info = fs.get_file_info(path)
    except Exception as e:  # noqa: BLE001 - pyarrow raises several types for a bad URI
        raise CaptureError(f"{name}: cannot be read ({e})") from None
    from pyarrow.fs import FileType

    if info.type == FileType.NotFound:
        raise CaptureError(f"{name}: no such file")
    if info.type == FileType.Directory:
        raise CaptureError(f"{name}: is a directory, not a capture file")
    size = info.size or 0
    if size == 0:
        raise CaptureError(f"{name}: is empty, not a capture")
    try:
        with fs.open_input_file(path) as f:
            head = f.read_at(min(size, 64), 0)
    except Exception as e:  # noqa: BLE001
        raise CaptureError(f"{name}: cannot be read ({e})") from None
    if head.startswith(COMPRESSED):
        cf = CaptureFile(name, uri, size, "whole", data_start=0)
        if "://" not in uri or uri.startswith("file://"):
            _whole_reader(cf).close()  # a local file: check what it holds now (the header only)
        return cf
    if len(head) >= 4 and struct.unpack_from("<I", head)[0] == PCAPNG_SHB:
        if len(head) < 12 or head[8:12] not in (b"\x4d\x3c\x2b\x1a", b"\x1a\x2b\x3c\x4d"):
            raise CaptureError(f"{name}: not a capture (pcapng section header with a bad byte-order mark)")
        endian = "<" if head[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
        return CaptureFile(name, uri, size, "pcapng", endian=endian, data_start=0)
    for endian in "<>":
        magic = struct.unpack_from(endian + "I", head)[0] if len(head) >= 4 else 0
        if magic in (PCAP_MAGIC_US, PCAP_MAGIC_NS, PCAP_MAGIC_KUZNETSOV):
            if len(head) < 24:
                raise CaptureError(f"{name}: pcap file cut short inside its 24-byte header")
            lt = struct.unpack_from(endian + "I", head, 20)[0] & 0x03FFFFFF
            if lt not in SUPPORTED_LINKTYPES:
                raise CaptureError(f"{name}: link type {lt} is not supported ({_SUPPORTED_TEXT})")
            first_sec = struct.unpack_from(endian + "I", head, 24)[0] if len(head) >= 28 else None
            return CaptureFile(
                name,
                uri,
                size,
                "pcap",
                endian=endian,
                nano=magic == PCAP_MAGIC_NS,
                hsize=24 if magic == PCAP_MAGIC_KUZNETSOV else 16,
                linktype=lt,
                first_sec=first_sec,
            )
    raise CaptureError(f"{name}: not a pcap or pcapng capture")


# -- reading ------------------------------------------------------------------------------------------
@dataclass(slots=True)
class NgState:
    """What a pcapng range needs from before its start."""

    endian: str = "<"
    ifaces: list[tuple[int, int, int, int, int, int, str]] = field(default_factory=list)
    last_ts: int = 0


# -- walking records ----------------------------------------------------------------------------------
@dataclass(slots=True)
class _Walk:
    """What a walk ends with (filled in as it goes)."""

    truncated: str | None = None
    skipped_unknown_link: int = 0


def _walk_pcap(cf: CaptureFile, b: _Bytes, pos: int, end: int, number: int, w: _Walk) -> Iterator[Record]:
    hsize, lt, nano = cf.hsize, cf.linktype, cf.nano
    unpack = struct.Struct(cf.endian + "IIII").unpack_from
    scale, limit = (1000, 1_000_000_000) if nano else (1, 1_000_000)
    while pos < end:
        h = b.get(pos, hsize)
        if len(h) < hsize:
            if h:
                w.truncated = f"capture cut short in the middle of the header of record {number + 1}"
            break
        sec, frac, incl, orig = unpack(h)
        if incl > MAX_RECORD:
            w.truncated = (
                f"record {number + 1} declares {incl} bytes, beyond any real packet: the file is corrupt"
            )
            break
        data = b.get(pos + hsize, incl)
        if len(data) < incl:
            w.truncated = f"capture cut short in the middle of record {number + 1} ({len(data)} of {incl} bytes present)"
            break
        number += 1
        ts = sec * 1_000_000 + frac // scale
        yield Record(
            number, ts, lt, data, orig, None if frac < limit else _pcap_fraction_note(sec, frac, nano)
        )
        pos += hsize + incl


def _walk_pcapng(
    cf: CaptureFile,
    b: _Bytes,
    pos: int,
    end: int,
    number: int,
    state: NgState,
    w: _Walk,
) -> Iterator[Record]:
    endian = state.endian
    ifaces = list(state.ifaces)
    last_ts = state.last_ts
    supported = SUPPORTED_LINKTYPES
    parse_idb = CaptureReader._parse_idb
    try:
        while pos < end:
            h = b.get(pos, 12)
            if len(h) < 12:
                if h:
                    w.truncated = f"capture cut short in the middle of a block header after packet {number}"
                break
            btype, blen = struct.unpack_from(endian + "II", h)
            if btype == PCAPNG_SHB:
                bom = h[8:12]
                endian = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">" if bom == b"\x1a\x2b\x3c\x4d" else ""
                if not endian:
                    w.truncated = f"corrupt pcapng section header after packet {number}"
                    break
                blen = struct.unpack_from(endian + "I", h, 4)[0]
            if blen < 12 or blen & 3 or blen > MAX_RECORD:
                w.truncated = f"corrupt pcapng block (length {blen}) after packet {number}"
                break
            blk = b.get(pos, blen)
            if len(blk) < blen:
                w.truncated = (
                    f"capture cut short in the middle of a block after packet {number}"
                    f" ({len(blk)} of {blen} bytes present)"
                )
                break
            if btype in (BT_EPB, BT_PB):
                if blen < 32:
                    if btype == BT_EPB:
                        w.truncated = f"corrupt pcapng packet block after packet {number}"
                    else:
                        w.truncated = f"corrupt pcapng packet block (packet {number + 1})"
                    break
                if btype == BT_EPB:
                    ifid, hi, lo, caplen, origlen = struct.unpack_from(endian + "IIIII", blk, 8)
                else:
                    ifid = struct.unpack_from(endian + "H", blk, 8)[0]
                    hi, lo, caplen, origlen = struct.unpack_from(endian + "IIII", blk, 12)
                number += 1
                if ifid >= len(ifaces):
                    w.truncated = f"packet {number} names interface {ifid}, which was never described"
                    number -= 1
                    break
                lt, mult, div, shift, offset_us, _snap, desc = ifaces[ifid]
                if lt not in supported:
                    w.skipped_unknown_link += 1
                else:
                    if caplen > blen - 32:
                        w.truncated = f"corrupt pcapng packet block (packet {number})"
                        number -= 1
                        break
                    ts_us = ((((hi << 32) | lo) * mult) >> shift) // div + offset_us
                    data = blk[28 : 28 + caplen]
                    if TS_MIN_US <= ts_us <= TS_MAX_US:
                        last_ts = ts_us
                        yield Record(number, ts_us, lt, data, origlen)
                    else:
                        yield Record(number, last_ts, lt, data, origlen, _time_note(ts_us, ifid, desc))
            elif btype == BT_SPB:
                number += 1
                if blen < 16:
                    w.truncated = f"corrupt pcapng packet block (packet {number})"
                    number -= 1
                    break
                if not ifaces:
                    w.truncated = f"packet {number} names interface 0, which was never described"
                    number -= 1
                    break
                lt, mult, div, shift, offset_us, snap, desc = ifaces[0]
                if lt not in supported:
                    w.skipped_unknown_link += 1
                else:
                    origlen = struct.unpack_from(endian + "I", blk, 8)[0]
                    caplen = min(origlen, blen - 16)
                    if snap:
                        caplen = min(caplen, snap)
                    yield Record(number, 0, lt, blk[12 : 12 + caplen], origlen)
            elif btype == BT_IDB:
                if blen < 20:
                    w.truncated = f"corrupt pcapng interface block after packet {number}"
                    break
                idb = parse_idb(None, blk, 0, blen, endian)  # type: ignore[arg-type]
                ifaces.append(idb)
            elif btype == PCAPNG_SHB:
                ifaces = []
            pos += blen
    except struct.error:
        w.truncated = f"corrupt capture data after packet {number}"


def _open(cf: CaptureFile) -> tuple[Any, _Bytes]:
    fs, path = filesystem(cf.uri)
    f = fs.open_input_file(path)
    return f, _Bytes(f, cf.size)


@dataclass(frozen=True, slots=True)
class Task:
    """A stretch of a file to read: where, from which packet number, with what state."""

    file: int
    start: int
    end: int
    first_number: int
    """Packets before the range (its first record is number first_number + 1)."""
    state: NgState | None = None
    last: bool = False
    """The capture's last range: it reports the capture's end (truncation, skipped records)."""


def whole_file(cf: CaptureFile) -> Task:
    """The task that reads all of `cf` from its first record, numbered from 1."""
    state = NgState(endian=cf.endian) if cf.format == "pcapng" else None
    return Task(0, cf.data_start, cf.size, 0, state, True)


@dataclass(slots=True)
class RangeEnd:
    """The end of a capture: what the local reader says after its last record."""

    truncated: str | None
    skipped_unknown_link: int


def read_range(cf: CaptureFile, task: Task, end: RangeEnd | None = None) -> Iterator[Record]:
    """The records of one task's stretch, numbered as in the whole file.

    `end`, if given, is filled with the truncation text and skipped-record count.
    """
    if cf.format == "whole":
        reader = _whole_reader(cf)
        yield from reader
        if end is not None:
            end.truncated, end.skipped_unknown_link = reader.truncated, reader.skipped_unknown_link
        return
    f, b = _open(cf)
    try:
        w = _Walk()
        if cf.format == "pcap":
            yield from _walk_pcap(cf, b, task.start, task.end, task.first_number, w)
        else:
            yield from _walk_pcapng(
                cf, b, task.start, task.end, task.first_number, task.state or NgState(), w
            )
        if end is not None:
            end.truncated, end.skipped_unknown_link = w.truncated, w.skipped_unknown_link
    finally:
        f.close()


def _whole_reader(cf: CaptureFile) -> CaptureReader:
    """A compressed capture, read whole by the local reader (local files directly, others copied
    to a temporary file in chunks first: never whole in memory)."""
    if "://" not in cf.uri or cf.uri.startswith("file://"):
        path = cf.uri.removeprefix("file://")
        try:
            reader = CaptureReader(path)
        except CaptureError as e:
            raise CaptureError(str(e).replace(path, cf.name)) from None
        reader.name = cf.name
        return reader
    import tempfile

    fs, path = filesystem(cf.uri)
    fd, tmp = tempfile.mkstemp(prefix="wiredump-", suffix=".cap")
    with os.fdopen(fd, "wb") as out, fs.open_input_stream(path) as src:
        while True:
            chunk = src.read(CHUNK)
            if not chunk:
                break
            out.write(chunk)
    try:
        reader = CaptureReader(tmp)
    except CaptureError as e:  # name the capture, not the temporary copy
        raise CaptureError(str(e).replace(tmp, cf.name)) from None
    finally:
        os.unlink(tmp)  # the reader holds the file open; the name goes at once
    reader.name = cf.name
    return reader
