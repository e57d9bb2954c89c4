"""Seeds for the `kafka_session` fuzz target: the frames of the real Kafka captures, per connection,
in the target's chunk format (a head byte, low bit the role, `(len - 1) / 3` above it, then the
bytes). Starting from real traffic lets the fuzzer reach the decoders' deep paths at once.

Usage (from the repository root): python engine/fuzz/kafka_session_seeds.py engine/fuzz/corpus/kafka_session
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests import replay_support  # noqa: E402

CAPTURES = Path("/work/shared/captures/kafka")
MAX_CHUNK = 382
"""The longest chunk a head byte can announce (127 * 3 + 1)."""


def chunks(data: bytes, role: int) -> bytes:
    """`data` sent by `role` (0 client, 1 server) as chunks of lengths 3k + 1."""
    out = bytearray()
    pos = 0
    while pos < len(data):
        n = min(MAX_CHUNK, len(data) - pos)
        n -= (n - 1) % 3
        out.append((((n - 1) // 3) << 1) | role)
        out += data[pos : pos + n]
        pos += n
    return bytes(out)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    mp = pytest.MonkeyPatch()
    for path in sorted(CAPTURES.glob("*.pcap")):
        rec = replay_support.record(path, "kafka", mp)
        streams: dict[int, bytearray] = {}
        for call in rec.calls:
            if call[1] == "decode":
                streams.setdefault(call[0], bytearray()).extend(
                    chunks(call[3], 0 if call[2] == "client" else 1)
                )
        for seed in streams.values():
            for i in range(0, len(seed), 16384):
                piece = bytes(seed[i : i + 16384])
                (out / hashlib.sha1(piece).hexdigest()).write_bytes(piece)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
