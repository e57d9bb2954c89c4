"""Capture input in Python: pcap and pcapng records, streamed from a file or stdin.

Why a reader in Python beside the engine's (engine/src/capture.rs, which every dissection
uses): two things need the records themselves, which the engine does not hand out — `-w`
copies the packets of the matching frames into a new capture (`cli/pcapwrite.py`, with
`packet.parse_tcp`), and Spark's data source reads captures through pyarrow's file systems
(`split.py`, which reuses this module's formats and notes) and gives the records to the engine;
`show` reads the rest of a capture's records (not decoded) to learn whether it is cut short.
`CaptureError` is also the engine's error for a file that is no capture. Both readers give the
same records: tests/test_capture_readers.py.

Formats: pcap (µs and ns, both byte orders, the "modified" Kuznetsov variant) and pcapng
(several sections, interfaces and link types; EPB, SPB and the obsolete PB; other blocks
skipped). Either may be compressed with gzip, zstd or lz4 (as Wireshark reads them), or
xz / bzip2; the compression is recognised by its magic, never by the file name.

The file is read in large chunks and records are cut out of each chunk with
precompiled `struct` unpackers, so memory stays bounded by the largest record and a
400k-packet capture reads in well under a second. Records are yielded whole whatever
their length: loopback captures with segmentation offload hold records above 65,535
bytes, which some readers silently truncate.

Packet numbers count every packet record of the file from 1, as Wireshark does, so
that `packet` columns can be compared with tshark even when some records are skipped
(pcapng interfaces of an unsupported link type). Timestamps are exact integers in
microseconds whatever the file's resolution.

A time the sinks cannot represent (outside years 1–9999 UTC, the range of Python's
`datetime` and well inside Arrow's int64 microseconds) comes from a hostile or broken
file: a pcapng interface with an `if_tsoffset` of 2^62 s, an `if_tsresol` of seconds with
a 2^40 s timestamp. Such a record is still yielded whole, with the **last good time of the
capture** (0 when no packet before it had one, as for Simple Packet Blocks, which carry no
time) and `Record.ts_note` saying what was wrong; the pipeline turns the note into a
`bad_timestamp` anomaly on that packet. The previous time is chosen over a null so that
every consumer (reassembly, hold-back windows, latency) keeps an integer that never moves
backwards because of the bad record. A classic pcap record whose fraction is a second or
more (impossible in the format) keeps the time it spells (seconds plus the fraction carried
over) and gets the same anomaly.
"""

from __future__ import annotations

import bz2
import io
import lzma
import os
import struct
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from wiredump.dissect.packet import LINKTYPE_NAMES, SUPPORTED_LINKTYPES

__all__ = ["CaptureError", "Record", "CaptureReader", "open_capture"]

CHUNK = 1 << 20
"""Bytes read from the file at a time."""
GZIP_OUT_CHUNK = 1 << 20
"""Most bytes one gzip step may inflate to, so a compression bomb cannot blow up memory."""
MAX_RECORD = 16 << 20
"""A record claiming more than this is treated as corruption, not buffered."""
MAX_INTERFACES = 65_536
"""Interfaces of one pcapng section kept: each is a tuple (~16× the bytes of its block), so a file of
tiny interface blocks would otherwise cost memory per block. Real captures describe a handful; the
blocks past the bound are counted (`interfaces_not_kept`, one `interface_limit` anomaly) and a
packet naming one of them ends the capture as a packet naming an undescribed interface does."""
TS_MIN_US = -62_135_596_800_000_000
"""0001-01-01T00:00:00Z in microseconds: the earliest time every sink can represent."""
TS_MAX_US = 253_402_300_799_999_999
"""9999-12-31T23:59:59.999999Z in microseconds: the latest time every sink can represent."""

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D
PCAP_MAGIC_KUZNETSOV = 0xA1B2CD34  # "modified" pcap of old Red Hat tcpdump: 8 more bytes per record header
PCAPNG_SHB = 0x0A0D0D0A
PCAPNG_BOM = 0x1A2B3C4D
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
LZ4_MAGIC = b"\x04\x22\x4d\x18"
XZ_MAGIC = b"\xfd7zXZ\x00"
BZIP2_MAGIC = b"BZh"

# pcapng block types
BT_IDB = 1
BT_PB = 2  # obsolete Packet Block
BT_SPB = 3
BT_EPB = 6
OPT_END = 0
OPT_IF_TSRESOL = 9
OPT_IF_TSOFFSET = 14


_SUPPORTED_TEXT = "supported: " + ", ".join(
    f"{name} {'/'.join(str(k) for k, v in LINKTYPE_NAMES.items() if v == name)}"
    for name in dict.fromkeys(LINKTYPE_NAMES.values())
)


class CaptureError(Exception):
    """One clear sentence for the user (missing file, not a capture, unknown link type…)."""


@dataclass(slots=True)
class Record:
    """One captured packet record."""

    number: int  # 1-based packet number, as Wireshark counts
    ts_us: int  # microseconds since the epoch
    linktype: int  # LINKTYPE value of the record's interface
    data: bytes  # captured bytes, whole even when longer than 65,535
    orig_len: int  # length on the wire (> len(data) when the snap length cut it)
    ts_note: str | None = None  # why the file's time was unusable (ts_us is then the last good time)


def _refill(buf: bytes, pos: int, need: int, chunks: Iterator[bytes]) -> bytes:
    """The unread tail `buf[pos:]` followed by chunks until it holds `need` bytes or the input ends.

    The consumed part of `buf` is let go before the next chunk is read, so at most one
    record plus one chunk is in memory.
    """
    parts = [buf[pos:]]
    del buf
    have = len(parts[0])
    while have < need:
        b = next(chunks, b"")
        if not b:
            break
        parts.append(b)
        have += len(b)
    return b"".join(parts)


def _chunks_from_file(f: BinaryIO, first: bytes, interactive: bool, counter: list[int]) -> Iterator[bytes]:
    """Raw chunks: `first` (already read to sniff the magic), then the rest of the stream.

    `counter[0]` adds up the bytes read, for progress reports.
    """
    counter[0] = len(first)
    if first:
        yield first
    read = f.read1 if interactive and hasattr(f, "read1") else f.read
    while True:
        b = read(CHUNK)
        if not b:
            return
        counter[0] += len(b)
        yield b


def _gunzip(raw: Iterator[bytes]) -> Iterator[bytes]:
    """Inflate a gzip stream (several members allowed) chunk by chunk, bounded per step."""
    d = zlib.decompressobj(zlib.MAX_WBITS | 16)
    for chunk in raw:
        data = chunk
        while data:
            out = d.decompress(data, GZIP_OUT_CHUNK)
            if out:
                yield out
            if d.eof:
                data = d.unused_data
                d = zlib.decompressobj(zlib.MAX_WBITS | 16)
                if data[:2] != GZIP_MAGIC:
                    return  # trailing garbage after the last member, as gzip itself ignores it
            else:
                data = d.unconsumed_tail
    if not d.eof:
        rest = d.flush()
        if rest:
            yield rest


class _ChunkFile(io.RawIOBase):
    """A read-only file over an iterator of chunks, for the stream decompressors that want one."""

    def __init__(self, chunks: Iterator[bytes]):
        self._chunks = chunks
        self._view = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if not self._view:
            chunk = next(self._chunks, b"")
            if not chunk:
                return 0
            self._view = memoryview(chunk)
        n = min(len(b), len(self._view))
        b[:n] = self._view[:n]
        self._view = self._view[n:]
        return n


def _read_chunks(f: Any) -> Iterator[bytes]:
    """Chunks of at most CHUNK bytes from a decompressing file, so a bomb cannot blow up memory.

    `read1` hands over what one step decoded, so a stream cut short still yields what precedes the cut.
    """
    read = getattr(f, "read1", f.read)
    while True:
        b = read(CHUNK)
        if not b:
            return
        yield b


def _decompressor(first: bytes, raw: Iterator[bytes]) -> tuple[str | None, Iterator[bytes]]:
    """(compression name, decompressed chunks) for a stream starting with `first`."""
    if first[:2] == GZIP_MAGIC:
        return "gzip", _gunzip(raw)
    if first[:4] == ZSTD_MAGIC:
        import zstandard

        reader = zstandard.ZstdDecompressor().stream_reader(_ChunkFile(raw), read_across_frames=True)
        return "zstd", _read_chunks(reader)
    if first[:4] == LZ4_MAGIC:
        import lz4.frame

        return "lz4", _read_chunks(lz4.frame.LZ4FrameFile(_ChunkFile(raw)))
    if first[:6] == XZ_MAGIC:
        return "xz", _read_chunks(lzma.LZMAFile(_ChunkFile(raw)))
    if first[:3] == BZIP2_MAGIC:
        return "bzip2", _read_chunks(bz2.BZ2File(_ChunkFile(raw)))
    return None, raw


def _decompress_errors() -> tuple[type[BaseException], ...]:
    """Exceptions the stream decompressors raise on damaged or cut input."""
    errors: list[type[BaseException]] = [zlib.error, EOFError, lzma.LZMAError, RuntimeError]
    zstandard = sys.modules.get("zstandard")
    if zstandard is not None:
        errors.append(zstandard.ZstdError)
    return tuple(errors)


def _ts_scale(resol: int) -> tuple[int, int, int]:
    """(multiplier, divisor, right shift) turning pcapng timestamp units into microseconds exactly."""
    n = resol & 0x7F
    if resol & 0x80:  # 2^-n seconds
        return 1_000_000, 1, n
    if n <= 6:
        return 10 ** (6 - n), 1, 0
    return 1, 10 ** (n - 6), 0


def _pcap_fraction_note(sec: int, frac: int, nano: bool) -> str:
    """The anomaly text for a classic pcap record whose sub-second part is a second or more.

    Both fields are unsigned 32-bit, so the sum is always representable: the time is kept
    as spelled and only the impossible fraction is reported.
    """
    unit = "ns" if nano else "µs"
    top = "999999999" if nano else "999999"
    return (
        f"timestamp fraction {frac} {unit} is beyond a second (at most {top}): "
        f"the time is {sec} s plus that fraction"
    )


def _time_note(t_us: int, iface: int, desc: str) -> str:
    """The anomaly text for a pcapng packet whose time falls outside years 1–9999."""
    return (
        f"packet time is not representable: interface {iface} ({desc}) puts it at {t_us // 1_000_000} s"
        " from 1970, outside years 1-9999; the capture's last good time is used"
    )


def _unknown_iface(number: int, ifid: int, kept: int, bound: int) -> str:
    """Why the capture ends at a packet naming interface `ifid` when `kept` are known: never
    described, or described past the interfaces kept per section (its block was counted, not kept)."""
    if kept >= bound:
        return (
            f"packet {number} names interface {ifid}, which was never described or is past "
            f"the {bound} interfaces kept per section"
        )
    return f"packet {number} names interface {ifid}, which was never described"


class CaptureReader:
    """Iterates the packet records of one pcap or pcapng capture (optionally gzip'd, or stdin).

    Opening reads and checks the file header (raising CaptureError); iteration is single-pass.
    After iteration `truncated` says why the file ended early (else None) and
    `skipped_unknown_link` counts pcapng records of interfaces with an unsupported link type and
    `interfaces_not_kept` the interface blocks past `max_interfaces` in their section.
    """

    def __init__(self, path: str, max_interfaces: int = MAX_INTERFACES):
        self.path = path
        self.name = "stdin" if path == "-" else path
        self.truncated: str | None = None
        self.skipped_unknown_link = 0
        self.max_interfaces = max_interfaces
        self.interfaces_not_kept = 0
        self.records = 0
        self.compression: str | None = None  # "gzip", "zstd", "lz4", "xz", "bzip2"
        self.format = ""
        self.linktype: int | None = None  # pcap only: the file's single link type
        self._file: BinaryIO | None = None
        self._consumed = [0]
        self._iterated = False
        self._open()

    # -- opening -------------------------------------------------------------------------------------
    def _open(self) -> None:
        path = self.path
        interactive = False
        if path == "-":
            stdin = getattr(sys.stdin, "buffer", None)
            if stdin is None:
                raise CaptureError("stdin: no standard input to read a capture from")
            f: BinaryIO = stdin
            interactive = True
        else:
            try:
                if os.path.isdir(path):
                    raise CaptureError(f"{path}: is a directory, not a capture file")
                f = open(path, "rb", buffering=0)  # noqa: SIM115 - closed by close()
            except FileNotFoundError:
                raise CaptureError(f"{path}: no such file") from None
            except IsADirectoryError:
                raise CaptureError(f"{path}: is a directory, not a capture file") from None
            except PermissionError:
                raise CaptureError(f"{path}: permission denied") from None
            except OSError as e:
                raise CaptureError(f"{path}: cannot be read ({e.strerror or e})") from None
            self._file = f
        try:
            read = f.read1 if interactive and hasattr(f, "read1") else f.read
            first = read(CHUNK)
            while 0 < len(first) < 4:  # a pipe may deliver fewer bytes than the magic needs
                more = read(CHUNK)
                if not more:
                    break
                first += more
        except OSError as e:
            self.close()
            raise CaptureError(f"{self.name}: cannot be read ({e.strerror or e})") from None
        if not first:
            self.close()
            raise CaptureError(f"{self.name}: is empty, not a capture")
        raw = _chunks_from_file(f, first, interactive, self._consumed)
        self.compression, chunks = _decompressor(first, raw)
        self._chunks = chunks
        # Read enough for the file header.
        head = b""
        try:
            while len(head) < 28:
                b = next(chunks, b"")
                if not b:
                    break
                head += b
        except (OSError, *_decompress_errors()) as e:
            self.close()
            raise CaptureError(f"{self.name}: damaged {self.compression} data ({e})") from None
        self._buf = head
        self._check_header(head)

    def _check_header(self, head: bytes) -> None:
        what = f"{self.compression}-compressed file" if self.compression else "file"
        if len(head) < 4:
            self.close()
            if self.compression and not head:
                raise CaptureError(f"{self.name}: {self.compression} data holds nothing (empty or cut short)")
            raise CaptureError(
                f"{self.name}: not a pcap or pcapng capture ({what} of only {len(head)} bytes)"
            )
        magic_le = struct.unpack_from("<I", head)[0]
        magic_be = struct.unpack_from(">I", head)[0]
        if magic_le == PCAPNG_SHB:
            self.format = "pcapng"
            if len(head) < 12:
                self.close()
                raise CaptureError(f"{self.name}: pcapng file cut short inside its section header")
            bom = head[8:12]
            if bom not in (b"\x4d\x3c\x2b\x1a", b"\x1a\x2b\x3c\x4d"):
                self.close()
                raise CaptureError(
                    f"{self.name}: not a capture (pcapng section header with a bad byte-order mark)"
                )
            return
        for magic, endian in ((magic_le, "<"), (magic_be, ">")):
            if magic in (PCAP_MAGIC_US, PCAP_MAGIC_NS, PCAP_MAGIC_KUZNETSOV):
                if len(head) < 24:
                    self.close()
                    raise CaptureError(f"{self.name}: pcap file cut short inside its 24-byte header")
                self.format = "pcap"
                self._endian = endian
                self._nano = magic == PCAP_MAGIC_NS
                self._rec_hdr = 24 if magic == PCAP_MAGIC_KUZNETSOV else 16
                lt_field = struct.unpack_from(endian + "I", head, 20)[0]
                lt = lt_field & 0x03FFFFFF  # the top bits may say how long an FCS is (LT_LINKTYPE of libpcap)
                self.linktype = lt
                if lt not in SUPPORTED_LINKTYPES:
                    self.close()
                    raise CaptureError(f"{self.name}: link type {lt} is not supported ({_SUPPORTED_TEXT})")
                return
        self.close()
        raise CaptureError(f"{self.name}: not a pcap or pcapng capture")

    # -- iteration -----------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Record]:
        if self._iterated:
            raise RuntimeError("a CaptureReader can be iterated only once")
        self._iterated = True
        try:
            if self.format == "pcap":
                yield from self._pcap_records()
            else:
                yield from self._pcapng_records()
        except struct.error:  # a field beyond its block: corrupt input, never a traceback
            self.truncated = f"corrupt capture data after packet {self.records}"
        except OSError as e:
            what = f"damaged {self.compression} data" if self.compression else "read error"
            self.truncated = f"{what} after packet {self.records} ({e.strerror or e})"
        except _decompress_errors() as e:
            self.truncated = f"damaged {self.compression} data after packet {self.records} ({e})"
        finally:
            self.close()

    def _pcap_records(self) -> Iterator[Record]:
        hdr = struct.Struct(self._endian + "IIII")
        hsize = self._rec_hdr
        unpack_from = hdr.unpack_from
        nano = self._nano
        lt = self.linktype
        chunks = self._chunks
        buf = self._buf
        pos = 24
        number = 0
        n = len(buf)
        rec = Record
        while True:
            # Cut every whole record out of the buffer (two copies of the loop: the common µs
            # case pays no per-record test for the timestamp unit).
            limit = n - hsize
            if nano:
                while pos <= limit:
                    sec, frac, incl, orig = unpack_from(buf, pos)
                    start = pos + hsize
                    end = start + incl
                    if end > n:
                        break
                    number += 1
                    if frac < 1_000_000_000:
                        yield rec(number, sec * 1_000_000 + frac // 1000, lt, buf[start:end], orig)
                    else:
                        note = _pcap_fraction_note(sec, frac, True)
                        yield rec(number, sec * 1_000_000 + frac // 1000, lt, buf[start:end], orig, note)
                    pos = end
            else:
                while pos <= limit:
                    sec, frac, incl, orig = unpack_from(buf, pos)
                    start = pos + hsize
                    end = start + incl
                    if end > n:
                        break
                    number += 1
                    if frac < 1_000_000:
                        yield rec(number, sec * 1_000_000 + frac, lt, buf[start:end], orig)
                    else:
                        note = _pcap_fraction_note(sec, frac, False)
                        yield rec(number, sec * 1_000_000 + frac, lt, buf[start:end], orig, note)
                    pos = end
            self.records = number
            # Need more bytes: the next header, or the rest of a record.
            need = hsize
            if pos + hsize <= n:
                incl = unpack_from(buf, pos)[2]
                if incl > MAX_RECORD:
                    self.truncated = f"record {number + 1} declares {incl} bytes, beyond any real packet: the file is corrupt"
                    return
                need = hsize + incl
            buf = _refill(buf, pos, need, chunks)
            have = n = len(buf)
            pos = 0
            if have < need:
                if have == 0:
                    return
                if have < hsize:
                    self.truncated = f"capture cut short in the middle of the header of record {number + 1}"
                else:
                    self.truncated = (
                        f"capture cut short in the middle of record {number + 1}"
                        f" ({have - hsize} of {need - hsize} bytes present)"
                    )
                return

    def _pcapng_records(self) -> Iterator[Record]:
        chunks = self._chunks
        buf = self._buf
        n = len(buf)
        pos = 0
        number = 0
        endian = "<"
        u32 = struct.Struct("<I")
        bhdr = struct.Struct("<II")
        epb = struct.Struct("<IIIII")
        # per interface: (linktype, mult, div, shift, offset_us, snaplen, description of its clock)
        ifaces: list[tuple[int, int, int, int, int, int, str]] = []
        max_ifaces = self.max_interfaces
        ts_min, ts_max = TS_MIN_US, TS_MAX_US
        last_ts = 0  # the last representable time, given to a packet whose own time is not
        supported = SUPPORTED_LINKTYPES
        rec = Record
        max_block = MAX_RECORD
        while True:
            while pos + 12 <= n:
                btype, blen = bhdr.unpack_from(buf, pos)
                # Fast path: a well-formed Enhanced Packet Block of a known interface and link type.
                if btype == 6 and 32 <= blen <= max_block and not blen & 3 and pos + blen <= n:
                    ifid, hi, lo, caplen, origlen = epb.unpack_from(buf, pos + 8)
                    if ifid < len(ifaces) and caplen <= blen - 32:
                        lt, mult, div, shift, offset_us, _snap, desc = ifaces[ifid]
                        if lt in supported:
                            number += 1
                            ts = (hi << 32) | lo
                            if mult != 1 or shift or div != 1:
                                ts = ((ts * mult) >> shift) // div
                            ts += offset_us
                            start = pos + 28
                            if ts_min <= ts <= ts_max:
                                last_ts = ts
                                yield rec(number, ts, lt, buf[start : start + caplen], origlen)
                            else:
                                note = _time_note(ts, ifid, desc)
                                yield rec(number, last_ts, lt, buf[start : start + caplen], origlen, note)
                            pos += blen
                            continue
                if btype == PCAPNG_SHB:
                    bom = buf[pos + 8 : pos + 12]
                    endian = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">" if bom == b"\x1a\x2b\x3c\x4d" else ""
                    if not endian:
                        self.truncated = f"corrupt pcapng section header after packet {number}"
                        self.records = number
                        return
                    blen = struct.unpack_from(endian + "I", buf, pos + 4)[0]
                    u32 = struct.Struct(endian + "I")
                    bhdr = struct.Struct(endian + "II")
                    epb = struct.Struct(endian + "IIIII")
                if blen < 12 or blen & 3 or blen > MAX_RECORD:
                    self.truncated = f"corrupt pcapng block (length {blen}) after packet {number}"
                    self.records = number
                    return
                end = pos + blen
                if end > n:
                    break
                if btype == BT_EPB:
                    if blen < 32:
                        self.truncated = f"corrupt pcapng packet block after packet {number}"
                        self.records = number
                        return
                    ifid, hi, lo, caplen, origlen = epb.unpack_from(buf, pos + 8)
                    number += 1
                    if ifid >= len(ifaces):
                        self.truncated = _unknown_iface(number, ifid, len(ifaces), max_ifaces)
                        self.records = number - 1
                        return
                    lt, mult, div, shift, offset_us, _snap, desc = ifaces[ifid]
                    if lt not in supported:
                        self.skipped_unknown_link += 1
                    else:
                        if caplen > blen - 32:
                            self.truncated = f"corrupt pcapng packet block (packet {number})"
                            self.records = number - 1
                            return
                        ts = (hi << 32) | lo
                        ts_us = ((ts * mult) >> shift) // div + offset_us
                        data = buf[pos + 28 : pos + 28 + caplen]
                        if ts_min <= ts_us <= ts_max:
                            last_ts = ts_us
                            yield Record(number, ts_us, lt, data, origlen)
                        else:
                            yield Record(number, last_ts, lt, data, origlen, _time_note(ts_us, ifid, desc))
                elif btype == BT_SPB:
                    number += 1
                    if blen < 16:
                        self.truncated = f"corrupt pcapng packet block (packet {number})"
                        self.records = number - 1
                        return
                    if not ifaces:
                        self.truncated = f"packet {number} names interface 0, which was never described"
                        self.records = number - 1
                        return
                    lt, mult, div, shift, offset_us, snap, desc = ifaces[0]
                    if lt not in supported:
                        self.skipped_unknown_link += 1
                    else:
                        origlen = u32.unpack_from(buf, pos + 8)[0]
                        caplen = min(origlen, blen - 16)
                        if snap:
                            caplen = min(caplen, snap)
                        yield Record(number, 0, lt, buf[pos + 12 : pos + 12 + caplen], origlen)  # no time
                elif btype == BT_PB:
                    number += 1
                    if blen < 32:
                        self.truncated = f"corrupt pcapng packet block (packet {number})"
                        self.records = number - 1
                        return
                    ifid = struct.unpack_from(endian + "H", buf, pos + 8)[0]
                    hi, lo, caplen, origlen = struct.unpack_from(endian + "IIII", buf, pos + 12)
                    if ifid >= len(ifaces):
                        self.truncated = _unknown_iface(number, ifid, len(ifaces), max_ifaces)
                        self.records = number - 1
                        return
                    lt, mult, div, shift, offset_us, _snap, desc = ifaces[ifid]
                    if lt not in supported:
                        self.skipped_unknown_link += 1
                    else:
                        if caplen > blen - 32:
                            self.truncated = f"corrupt pcapng packet block (packet {number})"
                            self.records = number - 1
                            return
                        ts_us = ((((hi << 32) | lo) * mult) >> shift) // div + offset_us
                        data = buf[pos + 28 : pos + 28 + caplen]
                        if ts_min <= ts_us <= ts_max:
                            last_ts = ts_us
                            yield Record(number, ts_us, lt, data, origlen)
                        else:
                            yield Record(number, last_ts, lt, data, origlen, _time_note(ts_us, ifid, desc))
                elif btype == BT_IDB:
                    if blen < 20:
                        self.truncated = f"corrupt pcapng interface block after packet {number}"
                        self.records = number
                        return
                    if len(ifaces) < max_ifaces:
                        ifaces.append(self._parse_idb(buf, pos, blen, endian))
                    else:
                        self.interfaces_not_kept += 1
                elif btype == PCAPNG_SHB:
                    ifaces = []  # a new section describes its own interfaces
                pos = end
            self.records = number
            need = 12
            if pos + 12 <= n:
                btype, blen = bhdr.unpack_from(buf, pos)
                if btype == PCAPNG_SHB and pos + 12 <= n:
                    bom = buf[pos + 8 : pos + 12]
                    e2 = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">"
                    blen = struct.unpack_from(e2 + "I", buf, pos + 4)[0]
                if blen > MAX_RECORD or blen < 12:
                    self.truncated = f"corrupt pcapng block (length {blen}) after packet {number}"
                    return
                need = blen
            buf = _refill(buf, pos, need, chunks)
            have = n = len(buf)
            pos = 0
            if have < need:
                if have == 0:
                    return
                if have < 12:
                    self.truncated = (
                        f"capture cut short in the middle of a block header after packet {number}"
                    )
                else:
                    self.truncated = (
                        f"capture cut short in the middle of a block after packet {number}"
                        f" ({have} of {need} bytes present)"
                    )
                return

    def _parse_idb(
        self, buf: bytes, pos: int, blen: int, endian: str
    ) -> tuple[int, int, int, int, int, int, str]:
        """Link type, timestamp scale, snap length and a description of the clock of an Interface
        Description Block.

        Any `if_tsresol` byte is accepted (10^-0 … 10^-127 s, 2^-0 … 2^-127 s) and any signed
        64-bit `if_tsoffset`: the arithmetic is on Python integers, so nothing overflows here;
        a time that lands outside what the sinks can hold is caught per packet.
        """
        lt, _res, snap = struct.unpack_from(endian + "HHI", buf, pos + 8)
        resol = 6
        offset_s = 0
        p = pos + 16
        end = pos + blen - 4
        while p + 4 <= end:
            code, olen = struct.unpack_from(endian + "HH", buf, p)
            p += 4
            if code == OPT_END:
                break
            if p + olen > end:
                break
            if code == OPT_IF_TSRESOL and olen >= 1:
                resol = buf[p]
            elif code == OPT_IF_TSOFFSET and olen >= 8:
                offset_s = struct.unpack_from(endian + "q", buf, p)[0]
            p += (olen + 3) & ~3
        mult, div, shift = _ts_scale(resol)
        unit = f"2^-{resol & 0x7F}" if resol & 0x80 else f"10^-{resol}"
        desc = f"if_tsresol {resol}: units of {unit} s, if_tsoffset {offset_s} s"
        return (lt, mult, div, shift, offset_s * 1_000_000, snap, desc)

    @property
    def gzipped(self) -> bool:
        return self.compression == "gzip"

    @property
    def bytes_read(self) -> int:
        """Bytes taken from the file or stdin so far (compressed bytes for gzip): for progress bars.

        Runs up to one read chunk ahead of the records yielded.
        """
        return self._consumed[0]

    # -- resources -----------------------------------------------------------------------------------
    def close(self) -> None:
        """Release the file (stdin is left open)."""
        f = self._file
        self._file = None
        if f is not None:
            f.close()

    def __enter__(self) -> CaptureReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_capture(path: str) -> CaptureReader:
    """Open a capture (path, or "-" for stdin); raises CaptureError at once when it cannot be one."""
    return CaptureReader(path)
