"""Bounds on what untrusted bytes may make us buffer or inflate.

Every declared length and every decompression goes through these numbers, so a
hostile or corrupt capture costs bounded memory whatever it claims.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024


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
    """Bytes one direction of a connection may hold while a frame completes."""
    max_out_of_order: int = 8 * MiB
    """Bytes of out-of-order segments held per direction before a gap is declared."""
    max_pending_requests: int = 65536
    """Outstanding requests remembered per connection."""
    max_depth: int = 16
    """Nesting depth for recursive structures (legacy message sets, protobuf)."""
    decompressed_total: int = 0

    def allowance(self, compressed_size: int) -> int:
        """Bytes the next decompression may produce."""
        by_ratio = max(self.ratio_floor, compressed_size * self.max_ratio)
        left = self.max_decompressed_total - self.decompressed_total
        return max(0, min(self.max_decompressed, by_ratio, left))
