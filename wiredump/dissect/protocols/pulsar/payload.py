"""The payload part of SEND and MESSAGE frames: metadata blocks, checksum, batches, codecs.

After the command of a payload frame come, in this order: the optional broker-entry
metadata block (magic 0x0e02, size, BrokerEntryMetadata), the optional checksum block
(magic 0x0e01, CRC32C over everything after it), the MessageMetadata with its size,
and the payload. The payload may be compressed (raw LZ4 block, Java's unterminated
zlib stream, zstd, raw snappy), and once decompressed may be a batch of
SingleMessageMetadata entries. All of it is untrusted: sizes are checked against the
bytes left and decompression goes through the limited codecs.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import crc32c

from wiredump.dissect import codecs
from wiredump.dissect.limits import Limits
from wiredump.dissect.protocols.pulsar import schema
from wiredump.dissect.wire import Cursor, Short

MAGIC_BROKER_ENTRY_METADATA = 0x0E02
MAGIC_CRC32C = 0x0E01


@dataclass(slots=True)
class PayloadSection:
    """What follows the command of a SEND/MESSAGE frame, parsed and checked."""

    broker_entry_metadata: Any = None
    checksum: int | None = None
    checksum_computed: int | None = None
    metadata: Any = None
    metadata_offset: int = 0
    payload: bytes = b""
    payload_offset: int = 0
    problems: list[tuple[str, str, int]] = field(default_factory=list)
    """(status/kind, detail, offset in frame) for everything that went wrong."""

    @property
    def checksum_ok(self) -> bool | None:
        if self.checksum is None or self.checksum_computed is None:
            return None
        return self.checksum == self.checksum_computed


def parse_section(frame: bytes, start: int) -> PayloadSection:
    """Parse the bytes of `frame` from `start` (just after the command)."""
    s = PayloadSection()
    c = Cursor(frame, start)
    try:
        if c.left >= 2 and int.from_bytes(frame[c.pos : c.pos + 2], "big") == MAGIC_BROKER_ENTRY_METADATA:
            at = c.pos
            c.skip(2)
            n = c.u32("brokerEntryMetadataSize")
            raw = c.take(n, "BrokerEntryMetadata")
            s.broker_entry_metadata, err = schema.parse(schema.BrokerEntryMetadata, raw)
            if err:
                s.problems.append(("malformed", err, at))
        if c.left >= 2 and int.from_bytes(frame[c.pos : c.pos + 2], "big") == MAGIC_CRC32C:
            c.skip(2)
            s.checksum = c.u32("checksum")
            # CRC32C over metadataSize + metadata + payload: every byte after the checksum.
            s.checksum_computed = crc32c.crc32c(memoryview(frame)[c.pos :])
        s.metadata_offset = c.pos
        n = c.u32("metadataSize")
        raw = c.take(n, "MessageMetadata")
        s.metadata, err = schema.parse(schema.MessageMetadata, raw)
        if err:
            s.problems.append(("malformed", err, s.metadata_offset + 4))
        s.payload_offset = c.pos
        s.payload = c.rest()
    except Short as e:
        s.problems.append(("malformed", f"payload section: {e}", e.offset))
    return s


@dataclass(slots=True)
class Entry:
    """One logical message out of a payload (the whole payload, or one batch entry)."""

    value: bytes | None
    value_size: int
    batch_index: int | None = None
    single: Any = None  # SingleMessageMetadata when from a batch
    single_dict: dict[str, Any] | None = None


@dataclass(slots=True)
class Unpacked:
    entries: list[Entry]
    compression: str | None
    encrypted: bool = False
    decompressed: bool = True
    problems: list[tuple[str, str]] = field(default_factory=list)
    """(anomaly kind, detail)."""
    size: int | None = None
    """Bytes after decompression (None when it failed or the payload is encrypted)."""
    read: int = -1
    """Logical messages read, kept in `entries` or not (see `Limits.max_messages`); -1: as many
    as `entries` holds."""
    value_bytes: int = -1
    """Payload bytes of every message read; -1: the sum over `entries`."""

    def __post_init__(self) -> None:
        if self.read < 0:
            self.read = len(self.entries)
        if self.value_bytes < 0:
            self.value_bytes = sum(e.value_size for e in self.entries)


def decompress(meta: Any, payload: bytes, limits: Limits) -> tuple[bytes | None, codecs.Problem]:
    """The payload as Pulsar clients really compress it (see NOTES §4.3)."""
    codec = meta.compression
    if codec == 0:
        return payload, None
    size = meta.uncompressed_size
    name = schema.COMPRESSION_NAMES.get(codec, str(codec))
    if codec == 1:  # LZ4: raw block, size from the metadata
        out, problem = codecs.lz4_block(payload, size, limits)
    elif codec == 2:  # ZLIB: Java leaves the stream unterminated (sync flush, no trailer)
        out, problem = codecs.zlib_stream(payload, limits)
        if out is not None and problem is None and meta.HasField("uncompressed_size") and len(out) > size:
            return None, (codecs.LIMIT, f"zlib: output {len(out)} bytes exceeds uncompressed_size {size}")
    elif codec == 3:
        out, problem = codecs.zstd(payload, limits)
    elif codec == 4:  # SNAPPY: one raw block
        out, problem = codecs.snappy_raw(payload, limits)
    else:
        return None, (codecs.FAILED, f"unknown compression type {codec}")
    if out is not None and problem is None and meta.HasField("uncompressed_size") and len(out) != size:
        problem = (codecs.FAILED, f"{name}: {len(out)} bytes out, metadata says {size}")
    return out, problem


def unpack(meta: Any, payload: bytes, limits: Limits, show_secrets: bool = False) -> Unpacked:
    """Split a (whole, joined) payload into its logical messages."""
    compression = schema.COMPRESSION_NAMES.get(meta.compression) if meta.compression else None
    if len(meta.encryption_keys):
        # Ciphertext: neither decompressible nor splittable by a passive observer.
        return Unpacked(
            [Entry(payload, len(payload))],
            compression,
            encrypted=True,
            decompressed=False,
        )
    data, problem = decompress(meta, payload, limits)
    if data is None:
        kind, detail = problem or (codecs.FAILED, "no output")
        return Unpacked(
            [Entry(payload, len(payload))], compression, decompressed=False, problems=[(kind, detail)]
        )
    problems = [problem] if problem else []
    if not meta.HasField("num_messages_in_batch"):
        return Unpacked([Entry(data, len(data))], compression, problems=problems, size=len(data))
    entries, batch_problems, read, value_bytes = split_batch(meta, data, show_secrets, limits.max_messages)
    return Unpacked(
        entries,
        compression,
        problems=problems + batch_problems,
        size=len(data),
        read=read,
        value_bytes=value_bytes,
    )


def split_batch(
    meta: Any, data: bytes, show_secrets: bool = False, keep: int | None = None
) -> tuple[list[Entry], list[tuple[str, str]], int, int]:
    """num_messages_in_batch × [u32 size][SingleMessageMetadata][payload].

    Returns the entries (at most `keep`), the problems, how many entries were read and their
    payload bytes: entries past `keep` are parsed and checked the same way (their metadata
    gives the next one's place), only not kept.
    """
    count_cap = keep if keep is not None else 1 << 62
    count = meta.num_messages_in_batch
    indexes = list(meta.compacted_batch_indexes)
    if indexes:
        count = len(indexes)
    entries: list[Entry] = []
    problems: list[tuple[str, str]] = []
    c = Cursor(data)
    read = value_bytes = 0
    try:
        for i in range(max(count, 0)):
            if not c.left:
                break
            n = c.u32("singleMetaSize")
            raw = c.take(n, "SingleMessageMetadata")
            single, err = schema.parse(schema.SingleMessageMetadata, raw)
            if single is None:
                problems.append(("malformed", f"batch entry {i}: {err}"))
                break
            value = c.take(single.payload_size, "batch entry payload")
            read += 1
            value_bytes += len(value)
            if i >= count_cap:
                continue
            entries.append(
                Entry(
                    value=None if single.null_value else value,
                    value_size=len(value),
                    batch_index=indexes[i] if indexes else i,
                    single=single,
                    single_dict=schema.to_dict(single, show_secrets),
                )
            )
    except Short as e:
        problems.append(("malformed", f"batch entry {read}: {e}"))
    if read != count and not problems:
        problems.append(("malformed", f"batch holds {read} entries, metadata says {count}"))
    elif c.left and not problems:
        problems.append(("malformed", f"{c.left} bytes after the last of {count} batch entries"))
    return entries, problems, read, value_bytes


def key_of(partition_key: str | bytes, b64: bool) -> bytes | None:
    """The message key as bytes (Pulsar base64-encodes binary keys and says so)."""
    if not partition_key:
        return None
    if isinstance(partition_key, bytes):  # not UTF-8: the runtime gives the raw bytes
        return partition_key
    if b64:
        try:
            return base64.b64decode(partition_key, validate=True)
        except ValueError:
            pass
    return partition_key.encode()
