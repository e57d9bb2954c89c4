"""Decompression with hard output limits, for every codec the four brokers use.

Well-kept libraries do the work (zlib, cramjam's snappy, lz4, zstandard, xxhash);
this module only frames them the way each broker does and refuses to produce more
than the `Limits` allow, so a bomb becomes an anomaly instead of a memory blow-up.

Every function returns `(output, problem)`: output is None when nothing usable came
out; problem is None or `(anomaly_kind, detail)` with kind `decompression_failed` or
`decompression_limit`.
"""

from __future__ import annotations

import struct
import zlib

import cramjam
import lz4.block
import lz4.frame
import xxhash
import zstandard

from wiredump.dissect.limits import Limits

Problem = tuple[str, str] | None
Result = tuple[bytes | None, Problem]

FAILED = "decompression_failed"
LIMIT = "decompression_limit"

XERIAL_MAGIC = b"\x82SNAPPY\x00"
LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"


def _limited(limits: Limits, compressed: int, produced: int, cap: int, codec: str) -> Result | None:
    """Account for `produced` bytes; return a limit result when the cap was hit."""
    limits.decompressed_total += produced
    if produced > cap:
        return None, (LIMIT, f"{codec}: output exceeds {cap} bytes (from {compressed} compressed bytes)")
    return None


def _inflate(data: bytes, wbits: int, limits: Limits, codec: str, partial_ok: bool) -> Result:
    cap = limits.allowance(len(data))
    out = bytearray()
    rest = data
    try:
        while rest:
            d = zlib.decompressobj(wbits)
            out += d.decompress(rest, cap + 1 - len(out))
            if len(out) > cap:
                break
            if not d.eof:
                if d.unconsumed_tail:
                    out += d.decompress(d.unconsumed_tail, cap + 1 - len(out))
                if not partial_ok and not d.eof and len(out) <= cap:
                    limits.decompressed_total += len(out)
                    return bytes(out), (FAILED, f"{codec}: stream ends without its final block")
                break
            rest = d.unused_data
            # gzip allows several members back to back; zlib has one stream.
            if wbits != 31 and wbits != 47:
                break
    except zlib.error as e:
        limits.decompressed_total += len(out)
        return (bytes(out) or None), (FAILED, f"{codec}: {e}")
    hit = _limited(limits, len(data), len(out), cap, codec)
    return hit if hit else (bytes(out), None)


def gzip(data: bytes, limits: Limits) -> Result:
    """One or more gzip members (Kafka codec 1)."""
    return _inflate(data, 31, limits, "gzip", partial_ok=False)


def zlib_stream(data: bytes, limits: Limits) -> Result:
    """A zlib stream, possibly never finished (Java's Deflater with SYNC_FLUSH, Pulsar ZLIB)."""
    return _inflate(data, 15, limits, "zlib", partial_ok=True)


def snappy_raw(data: bytes, limits: Limits) -> Result:
    """One raw Snappy block (Pulsar SNAPPY, TANK, librdkafka)."""
    cap = limits.allowance(len(data))
    size = _snappy_length(data)
    if size is None:
        return None, (FAILED, "snappy: bad length preamble")
    if size > cap:
        limits.decompressed_total += 0
        return None, (LIMIT, f"snappy: declares {size} bytes, over the limit of {cap}")
    try:
        out = bytes(cramjam.snappy.decompress_raw(data))
    except Exception as e:  # cramjam raises its own DecompressionError
        return None, (FAILED, f"snappy: {e}")
    limits.decompressed_total += len(out)
    return out, None


def _snappy_length(data: bytes) -> int | None:
    value = shift = 0
    for i in range(min(5, len(data))):
        b = data[i]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value
        shift += 7
    return None


def snappy_kafka(data: bytes, limits: Limits) -> Result:
    """Kafka snappy: xerial stream framing (Java producers) or one raw block (librdkafka)."""
    if not data.startswith(XERIAL_MAGIC):
        return snappy_raw(data, limits)
    pos = 16
    out = bytearray()
    cap = limits.allowance(len(data))
    while pos < len(data):
        if pos + 4 > len(data):
            return bytes(out), (FAILED, f"snappy: xerial block header cut at byte {pos}")
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            return bytes(out), (
                FAILED,
                f"snappy: xerial block of {n} bytes at byte {pos - 4} runs past the data",
            )
        block, problem = snappy_raw(data[pos : pos + n], limits)
        if problem:
            return (bytes(out) or None), problem
        assert block is not None
        out += block
        if len(out) > cap:
            return None, (LIMIT, f"snappy: output exceeds {cap} bytes")
        pos += n
    return bytes(out), None


def fix_lz4_legacy_checksum(data: bytes) -> bytes:
    """Rewrite the header checksum Kafka's magic-0 writer computed over the magic too."""
    if len(data) < 7 or not data.startswith(LZ4_FRAME_MAGIC):
        return data
    flg = data[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(data) <= end:
        return data
    hc = (xxhash.xxh32_intdigest(data[4:end], 0) >> 8) & 0xFF
    if data[end] == hc:
        return data
    return data[:end] + bytes([hc]) + data[end + 1 :]


def lz4_frame(data: bytes, limits: Limits, legacy_checksum: bool = False) -> Result:
    """LZ4 frame format (Kafka codec 3); `legacy_checksum` for magic-0 messages."""
    if legacy_checksum:
        data = fix_lz4_legacy_checksum(data)
    cap = limits.allowance(len(data))
    out = bytearray()
    rest = data
    try:
        while rest:
            d = lz4.frame.LZ4FrameDecompressor()
            out += d.decompress(rest, max_length=cap + 1 - len(out))
            if len(out) > cap:
                break
            if not d.eof:
                return (bytes(out) or None), (FAILED, "lz4: frame ends without its end mark")
            rest = d.unused_data
    except RuntimeError as e:
        limits.decompressed_total += len(out)
        return (bytes(out) or None), (FAILED, f"lz4: {e}")
    hit = _limited(limits, len(data), len(out), cap, "lz4")
    return hit if hit else (bytes(out), None)


def lz4_block(data: bytes, size: int, limits: Limits) -> Result:
    """A raw LZ4 block whose decompressed size is known from elsewhere (Pulsar LZ4)."""
    cap = limits.allowance(len(data))
    if size < 0 or size > cap:
        return None, (LIMIT, f"lz4: declared size {size} over the limit of {cap}")
    try:
        out = lz4.block.decompress(data, uncompressed_size=size)
    except lz4.block.LZ4BlockError:
        # Not the library's words: liblz4's "Error code" is where its decoder stopped, which no
        # other LZ4 implementation reproduces; both engines say the same (engine/src/codecs.rs).
        return None, (FAILED, f"lz4: corrupt block (or more than {size} bytes out)")
    limits.decompressed_total += len(out)
    return out, None


def zstd(data: bytes, limits: Limits) -> Result:
    """One or more zstd frames (Kafka codec 4, Pulsar ZSTD)."""
    cap = limits.allowance(len(data))
    out = bytearray()
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
        while len(out) <= cap:
            chunk = reader.read(min(1 << 20, cap + 1 - len(out)))
            if not chunk:
                break
            out += chunk
    except zstandard.ZstdError as e:
        limits.decompressed_total += len(out)
        return (bytes(out) or None), (FAILED, f"zstd: {e}")
    hit = _limited(limits, len(data), len(out), cap, "zstd")
    return hit if hit else (bytes(out), None)
