"""A capture cut into byte ranges that separate tasks read, giving the same records as one reader.

Why: a capture of gigabytes read by one task is one core's work and one task's memory. Here a
file is cut into ranges; each range's task finds the first record boundary at or after its
start and reads every record that *starts* before its end (so it reads past its end to finish
the last one). Packet numbers are the whole file's: a first pass counts the records of each
range, and prefix sums give each range its first number.

Finding a boundary in the middle of a file is a guess, as it is for RIPE NCC's hadoop-pcap:
- pcap: a record header whose lengths and time are plausible (both lengths within the largest
  record, but not origlen >= caplen: a real capture with padded records breaks that; the
  fraction below a second; the second within ten years of the file's first record) and whose
  next two successors are plausible too;
- pcapng: a 4-byte aligned block whose type is known and whose leading and trailing lengths
  agree, as do its successor's.
A wrong guess is never trusted: the range before it reads true records up to the first one
past its end, and `plan` checks that this is where the next range starts. Where they differ
(a wrong guess, a record larger than a range) the two ranges are merged and counted again, so
the union of the ranges is exactly the sequence of records one reader gives, whatever the
cut points. The same holds for the state a range needs from before its start (pcapng
interfaces and byte order, the last good time): the counting pass returns what each range
changes, and `plan` hands each range the state at its start.

Reading goes through pyarrow's file systems (local paths, `file://`, `hdfs://`, `s3://`/`s3a://`
where pyarrow has them) with `read_at` of bounded chunks: memory is one chunk plus the largest
record, whatever the file size. Compressed captures cannot be cut; they are one range, read by
`CaptureReader` (`whole`).

Users: `wiredump spark export --route ranges` (counting, planning and reading in its tasks,
the records then shuffled to the task that dissects them with the native engine), and, whole
files read from their first record (`whole_file`), Spark's data source and the capture date of
the default route.

The records (numbers, times, link types, bytes, notes) and the end-of-capture facts
(`truncated` text, `skipped_unknown_link`) equal those of `wiredump.dissect.capture`: the
tests compare them at every cut point of real captures.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
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

__all__ = [
    "CaptureFile",
    "Range",
    "RangeCount",
    "RangeEnd",
    "Task",
    "count_range",
    "cut",
    "plan",
    "probe",
    "read_range",
    "whole_file",
]

PLAUSIBLE_SPAN_S = 10 * 365 * 86400
"""A record header mid-file is believed only if its second is this close to the first record's."""
SUCCESSORS = 2
"""How many following headers must be plausible too before a boundary is believed."""
PCAPNG_TYPES = frozenset({PCAPNG_SHB, BT_IDB, BT_PB, BT_SPB, 4, 5, BT_EPB, 7, 8, 9, 10, 0xBAD, 0x40000BAD})
"""Block types a pcapng boundary may start with (SHB, IDB, PB, SPB, NRB, ISB, EPB, IRIG, AFDX,
systemd journal, decryption secrets, custom)."""
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
    """pcap: the second of the first record (None without records), for plausibility mid-file."""
    data_start: int = 24
    ifaces: tuple[tuple[int, int, int, int, int, int, str], ...] = ()
    """pcapng: the interfaces described before the first packet, for counting ranges mid-file (a
    range that meets an interface block it was not told about is still counted right; only the
    time it reports as its last good one may be off, which `read_range` does not rely on for
    numbering)."""


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
        cf = CaptureFile(name, uri, size, "pcapng", endian=endian, data_start=0)
        return CaptureFile(name, uri, size, "pcapng", endian=endian, data_start=0, ifaces=_first_ifaces(cf))
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


def _first_ifaces(cf: CaptureFile) -> tuple[tuple[int, int, int, int, int, int, str], ...]:
    """The interfaces a pcapng file describes before its first packet block (within its first MiB)."""
    fs, path = filesystem(cf.uri)
    out = []
    with fs.open_input_file(path) as f:
        b = _Bytes(f, cf.size)
        pos = 0
        endian = cf.endian
        while pos < min(cf.size, 1 << 20):
            h = b.get(pos, 12)
            if len(h) < 12:
                break
            btype, blen = struct.unpack_from(endian + "II", h)
            if btype in (BT_EPB, BT_PB, BT_SPB) or blen < 12 or blen & 3 or blen > MAX_RECORD:
                break
            if btype == BT_IDB and blen >= 20:
                out.append(CaptureReader._parse_idb(None, b.get(pos, blen), 0, blen, endian))  # type: ignore[arg-type]
            pos += blen
    return tuple(out)


# -- ranges ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Range:
    """Records starting in [start, end) of file `file` (an index into the plan's files)."""

    file: int
    start: int
    end: int


def cut(cf: CaptureFile, index: int, split_size: int) -> list[Range]:
    """The ranges of one file: `split_size` bytes each (one range for a file that cannot be cut)."""
    if cf.format == "whole" or cf.size <= cf.data_start + split_size:
        return [Range(index, cf.data_start, cf.size)]
    out = []
    start = cf.data_start
    while start < cf.size:
        end = min(cf.size, start + split_size)
        out.append(Range(index, start, end))
        start = end
    return out


@dataclass(slots=True)
class NgState:
    """What a pcapng range needs from before its start."""

    endian: str = "<"
    ifaces: list[tuple[int, int, int, int, int, int, str]] = field(default_factory=list)
    last_ts: int = 0


@dataclass(slots=True)
class RangeCount:
    """What the counting pass learns of one range (small: it travels back to the driver)."""

    first: int | None
    """Offset of the first record boundary in the range (None: no record starts in it)."""
    next: int
    """Offset where reading stopped: the first boundary at or past the end (or where the file ended)."""
    packets: int
    truncated: bool
    """Reading stopped early (damage or a cut-short file): no later range is read."""
    reset: bool = False
    """pcapng: a section header in the range started new interfaces."""
    endian: str | None = None
    ifaces: list[tuple[int, int, int, int, int, int, str]] = field(default_factory=list)
    last_ts: int | None = None


def _pcap_plausible(cf: CaptureFile, b: _Bytes, pos: int, depth: int) -> bool:
    h = b.get(pos, cf.hsize)
    if len(h) < cf.hsize:
        return len(h) == 0 and depth > 0  # the file ends exactly at a successor's boundary
    sec, frac, incl, orig = struct.unpack_from(cf.endian + "IIII", h)
    if incl > MAX_RECORD or orig > MAX_RECORD or frac >= (1_000_000_000 if cf.nano else 1_000_000):
        return False
    if cf.first_sec is not None and abs(sec - cf.first_sec) > PLAUSIBLE_SPAN_S:
        return False
    if depth >= SUCCESSORS:
        return True
    return _pcap_plausible(cf, b, pos + cf.hsize + incl, depth + 1)


def _pcapng_plausible(cf: CaptureFile, b: _Bytes, pos: int, depth: int) -> bool:
    h = b.get(pos, 12)
    if len(h) < 12:
        return len(h) == 0 and depth > 0
    btype, blen = struct.unpack_from(cf.endian + "II", h)
    if btype == PCAPNG_SHB:
        # A section header carries its own byte order: reading from it is right if its mark is.
        return h[8:12] in (b"\x4d\x3c\x2b\x1a", b"\x1a\x2b\x3c\x4d") if len(h) >= 12 else False
    if btype not in PCAPNG_TYPES or blen < 12 or blen & 3 or blen > MAX_RECORD:
        return False
    tail = b.get(pos + blen - 4, 4)
    if len(tail) < 4 or struct.unpack_from(cf.endian + "I", tail)[0] != blen:
        return False
    if depth >= SUCCESSORS:
        return True
    return _pcapng_plausible(cf, b, pos + blen, depth + 1)


def find_boundary(cf: CaptureFile, b: _Bytes, start: int, end: int) -> int | None:
    """The first offset in [start, end) that looks like a record boundary (see the module's doc)."""
    if start == cf.data_start:
        return start
    # A record is at most MAX_RECORD long, so a sound file has a boundary within that of any
    # offset; past it the file is damaged, and the range before reads on (the ranges merge).
    end = min(end, start + MAX_RECORD + 64)
    if cf.format == "pcap":
        for pos in range(start, end):
            if _pcap_plausible(cf, b, pos, 0):
                return pos
        return None
    pos = start + (-start % 4)
    while pos < end:
        if _pcapng_plausible(cf, b, pos, 0):
            return pos
        pos += 4
    return None


# -- walking records ----------------------------------------------------------------------------------
@dataclass(slots=True)
class _Walk:
    """What a walk ends with (filled in as it goes)."""

    next: int = 0
    packets: int = 0
    truncated: str | None = None
    skipped_unknown_link: int = 0
    reset: bool = False
    endian: str | None = None
    added: list[tuple[int, int, int, int, int, int, str]] = field(default_factory=list)
    last_ts: int | None = None


def _walk_pcap(cf: CaptureFile, b: _Bytes, pos: int, end: int, number: int, w: _Walk) -> Iterator[Record]:
    hsize, lt, nano = cf.hsize, cf.linktype, cf.nano
    unpack = struct.Struct(cf.endian + "IIII").unpack_from
    scale, limit = (1000, 1_000_000_000) if nano else (1, 1_000_000)
    start_number = number
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
    w.next = pos
    w.packets = number - start_number


def _walk_pcapng(
    cf: CaptureFile,
    b: _Bytes,
    pos: int,
    end: int,
    number: int,
    state: NgState,
    w: _Walk,
    counting: bool = False,
) -> Iterator[Record]:
    endian = state.endian
    ifaces = list(state.ifaces)
    last_ts = state.last_ts
    start_number = number
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
                if ifid >= len(ifaces) and counting:
                    continue_at = pos + blen  # counted; the reading pass decides (see count_range)
                    pos = continue_at
                    continue
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
                        w.last_ts = ts_us
                        yield Record(number, ts_us, lt, data, origlen)
                    else:
                        yield Record(number, last_ts, lt, data, origlen, _time_note(ts_us, ifid, desc))
            elif btype == BT_SPB:
                number += 1
                if blen < 16:
                    w.truncated = f"corrupt pcapng packet block (packet {number})"
                    number -= 1
                    break
                if not ifaces and counting:
                    pos += blen
                    continue
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
                w.added.append(idb)
            elif btype == PCAPNG_SHB:
                ifaces = []
                w.reset = True
                w.added = []
                w.endian = endian
            pos += blen
    except struct.error:
        w.truncated = f"corrupt capture data after packet {number}"
    w.next = pos
    w.packets = number - start_number


def _open(cf: CaptureFile) -> tuple[Any, _Bytes]:
    fs, path = filesystem(cf.uri)
    f = fs.open_input_file(path)
    return f, _Bytes(f, cf.size)


def count_range(cf: CaptureFile, rng: Range) -> RangeCount:
    """The counting pass over one range (run in a task): where its records start and end, how many."""
    if cf.format == "whole":
        n = 0
        reader = _whole_reader(cf)
        for _ in reader:
            n += 1
        return RangeCount(rng.start, cf.size, n, reader.truncated is not None)
    f, b = _open(cf)
    try:
        first = find_boundary(cf, b, rng.start, rng.end)
        if first is None:
            return RangeCount(None, rng.end, 0, False)
        w = _Walk()
        if cf.format == "pcap":
            walk = _walk_pcap(cf, b, first, rng.end, 0, w)
        else:
            start = NgState(endian=cf.endian, ifaces=list(cf.ifaces)) if first else NgState()
            walk = _walk_pcapng(cf, b, first, rng.end, 0, start, w, counting=True)
        for _ in walk:
            pass
        return RangeCount(
            first, w.next, w.packets, w.truncated is not None, w.reset, w.endian, w.added, w.last_ts
        )
    finally:
        f.close()


@dataclass(frozen=True, slots=True)
class Task:
    """One range as it is read in the second pass: where, from which packet number, with what state."""

    file: int
    start: int
    end: int
    first_number: int
    """Packets before the range (its first record is number first_number + 1)."""
    state: NgState | None = None
    last: bool = False
    """The capture's last range: it reports the capture's end (truncation, skipped records)."""


def plan(
    files: Sequence[CaptureFile], ranges: Sequence[Range], counts: Sequence[RangeCount]
) -> tuple[list[Task], list[Range]]:
    """Tasks for the ranges whose counts chain up, and the merged ranges that must be counted again.

    When the second list is empty the first is final. See the module's doc for the rule.
    """
    tasks: list[Task] = []
    redo: list[Range] = []
    by_file: dict[int, list[tuple[Range, RangeCount]]] = {}
    for r, c in zip(ranges, counts, strict=True):
        by_file.setdefault(r.file, []).append((r, c))
    for idx, items in sorted(by_file.items()):
        items.sort(key=lambda rc: rc[0].start)
        cf = files[idx]
        groups: list[tuple[Range, RangeCount]] = [items[0]]
        bad = False
        for r, c in items[1:]:
            g, gc = groups[-1]
            if gc.truncated:
                break  # reading stops where the file is damaged, as the local reader does
            if c.first is not None and c.first == gc.next:
                groups.append((r, c))
            elif c.first is None and gc.next >= r.end:
                groups[-1] = (Range(idx, g.start, r.end), gc)
            else:
                # The guess for r was wrong (or no record starts where it looked): merge r into
                # the group; the file's ranges are then counted again.
                groups[-1] = (Range(idx, g.start, r.end), gc)
                bad = True
        if bad:
            redo.extend(g for g, _ in groups)
            continue
        number = 0
        state = NgState(endian=cf.endian) if cf.format == "pcapng" else None
        for i, (g, gc) in enumerate(groups):
            tasks.append(
                Task(
                    idx,
                    gc.first if gc.first is not None else g.start,
                    g.end,
                    number,
                    state,
                    i == len(groups) - 1,
                )
            )
            number += gc.packets
            if state is not None:
                state = NgState(
                    gc.endian or state.endian,
                    list(gc.ifaces) if gc.reset else [*state.ifaces, *gc.ifaces],
                    gc.last_ts if gc.last_ts is not None else state.last_ts,
                )
    return tasks, redo


def whole_file(cf: CaptureFile) -> Task:
    """The task that reads all of `cf` from its first record, numbered from 1 (no counting pass)."""
    state = NgState(endian=cf.endian) if cf.format == "pcapng" else None
    return Task(0, cf.data_start, cf.size, 0, state, True)


@dataclass(slots=True)
class RangeEnd:
    """The end of a capture's last range: what the local reader says after its last record."""

    truncated: str | None
    skipped_unknown_link: int


def read_range(cf: CaptureFile, task: Task, end: RangeEnd | None = None) -> Iterator[Record]:
    """The records of one planned range, numbered as in the whole file (run in a task).

    `end`, if given, is filled with the range's truncation text and skipped-record count.
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


def plan_file_locally(cf: CaptureFile, index: int, split_size: int) -> list[Task]:
    """Count and plan one file in this process (what a Spark job does across tasks): for tests and tools."""
    ranges = cut(cf, index, split_size)
    files = {index: cf}
    while True:
        counts = [count_range(files[r.file], r) for r in ranges]
        tasks, redo = plan(_Files(files), ranges, counts)
        if not redo:
            return tasks
        ranges = redo


class _Files(dict):
    """A sparse list of files by index."""

    def __getitem__(self, i: int) -> CaptureFile:  # type: ignore[override]
        return dict.__getitem__(self, i)
