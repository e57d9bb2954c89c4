"""Bounds on what untrusted bytes may make us buffer or inflate.

Every declared length and every decompression goes through these numbers, so a
hostile or corrupt capture costs bounded memory whatever it claims.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024

MESSAGE_LIMIT = "message_limit"
"""Anomaly kind: a frame carried more application messages than `Limits.max_messages`.
Not the frame's fault: its status is what the decode of every message says (the messages past
the cap are still read and checked where the protocol allows, only not kept as rows)."""

BATCH_LIMIT = "batch_limit"
"""Anomaly kind: a frame carried more batches of messages than `Limits.max_batches` (not the
frame's fault either: its status stays what its decode says)."""

ELEMENT_LIMIT = "element_limit"
"""Anomaly kind: a frame's body held more array elements than `Limits.max_elements` (not the
frame's fault: its status stays what its decode says)."""


@dataclass(slots=True)
class Limits:
    max_decompressed: int = 64 * MiB
    """Largest output of one decompression (one batch, one payload, one bundle)."""
    max_decompressed_total: int = 2048 * MiB
    """Total decompressed output allowed for one capture."""
    max_ratio: int = 1000
    """Largest output/input ratio once the output passes `ratio_floor` bytes."""
    ratio_floor: int = 1 * MiB
    max_stream_buffer: int = 128 * MiB
    """Bytes one direction of a connection may hold while a frame completes. The framer also
    holds no more than the protocol's largest frame (it skips the rest of a frame declared
    larger); this is the engine's own ceiling over every protocol's maximum (see
    engine/src/framing.rs)."""
    max_messages: int = 25_000
    """Application messages one frame keeps as `Message` rows. A compressed batch under the
    ratio cap can hold millions of empty records (a 26 KB Kafka gzip batch: 2.4M); each row is a
    few hundred bytes of Python, so past this the rest are read, checked and counted, not kept
    (a `message_limit` anomaly). The frame's status does not change."""
    max_batches: int = 10_000
    """Batches of messages one frame lists in its fields (the bundles of a TANK Produce or of
    the chunks of a Consume response). A batch costs its fields whatever it holds, and hostile
    bytes can make one of two bytes (a chunk of `01 04` pairs: a million malformed one-byte
    bundles in 2 MiB), so past this the rest are still read, checked (their problems reported)
    and their messages counted, but not listed (a `batch_limit` anomaly). A well-formed batch
    holds at least one message, so a frame within `max_messages` is within this too."""
    max_elements: int = 100_000
    """Array elements one frame's body keeps in its decoded tree, counted over all its arrays in
    the order they are read (Kafka bodies). An element costs a dict or a node of its fields (and
    a partitions row) whatever its size, and an empty Metadata topic is 8 bytes: 1M of them in
    an 8 MB frame cost over 1 GB. Real frames hold a few thousand (a Metadata response of a big
    cluster: ~10,000 partitions). Past this the rest are still read and checked but not kept (an
    `element_limit` anomaly); the record sets inside them are not decoded."""
    max_command_bytes: int = 2 * MiB
    """Bytes of a frame's structured command (Pulsar's protobuf BaseCommand, its payload apart)
    that are parsed. A repeated field of 6-byte entries makes 20M objects of a 120 MB command
    (9.6 GB in either engine); real commands are a few KB (an ACK of 1,000 ids: ~20 KB; a
    namespace's topic list of 2 MiB is ~40,000 names). Past it the frame is named and sized, its
    command not decoded (`command_limit`); the status stays ok."""
    max_interfaces: int = 65_536
    """pcapng interface description blocks kept per section (`capture.MAX_INTERFACES`): each kept
    one costs ~16× its bytes, and real captures describe a handful. The blocks past it are counted
    in one `interface_limit` anomaly; a packet naming one of them ends the capture (`truncated_capture`)
    as a packet naming an undescribed interface does."""
    max_connections: int = 16_384
    """Connections whose state the reassembler keeps at once (closed ones waiting for their
    last packets, half-open ones waiting for data). Past this the oldest is released: its
    summary is emitted and a later packet of its 4-tuple would start a new stream. An open connection
    that carried data costs ~6.5 KB (its framer and session; measured on 100k Kafka connections
    with a partial frame pending each), so 16k of them stay within the hostile set's 300 MB."""
    half_open_us: int = 60_000_000
    """Capture time after which a connection that never carried a byte of payload (a SYN
    without data, a handshake nobody used) is released and counted (`half_open_released`)."""
    closed_linger_us: int = 10_000_000
    """Capture time a closed or reset connection is kept after its last packet, so that the
    last ACK, a retransmitted FIN or a late RST still count in its row (as tshark counts them)."""
    max_out_of_order: int = 8 * MiB
    """Bytes of out-of-order segments held per direction before a gap is declared."""
    max_pending_requests: int = 65536
    """Outstanding requests remembered per connection."""
    max_pending_total: int = 65536
    """Outstanding requests remembered over all connections of a capture. A request waiting for
    its answer keeps its frame (~1.4-1.9 KB for the smallest); past this, the connection that
    sends another request gives up its own oldest one as unanswered (an `unanswered` exchange row,
    as at its per-connection bound)."""
    max_depth: int = 16
    """Nesting depth for recursive structures (legacy message sets, protobuf)."""
    decompressed_total: int = 0

    def over_messages(self, kept: int, total: int) -> tuple[str, str] | None:
        """The `message_limit` anomaly (kind, detail) for a frame that carried `total` messages of
        which `kept` were kept, or None when none were left out."""
        if total <= kept:
            return None
        return (
            MESSAGE_LIMIT,
            f"{total} messages in the frame; the first {kept} are kept as rows, "
            f"{total - kept} more were read and counted only (limit {self.max_messages} per frame)",
        )

    def over_batches(self, listed: int, total: int) -> tuple[str, str] | None:
        """The `batch_limit` anomaly (kind, detail) for a frame that carried `total` batches of
        which `listed` are listed in its fields, or None when none were left out."""
        if total <= listed:
            return None
        return (
            BATCH_LIMIT,
            f"{total} batches in the frame; the first {listed} are listed in its fields, "
            f"{total - listed} more were read and counted only (limit {self.max_batches} per frame)",
        )

    def over_elements(self, kept: int, dropped: int, where: str) -> tuple[str, str] | None:
        """The `element_limit` anomaly (kind, detail) for a body that kept `kept` array elements and
        read `dropped` more past the limit, the first of them at path `where`; None when none was."""
        if not dropped:
            return None
        return (
            ELEMENT_LIMIT,
            f"{kept + dropped} array elements in the body; the first {kept} are kept in its fields, "
            f"{dropped} more were read and not listed, from {where} on (limit {self.max_elements} per frame)",
        )

    def allowance(self, compressed_size: int) -> int:
        """Bytes the next decompression may produce."""
        by_ratio = max(self.ratio_floor, compressed_size * self.max_ratio)
        left = self.max_decompressed_total - self.decompressed_total
        return max(0, min(self.max_decompressed, by_ratio, left))
