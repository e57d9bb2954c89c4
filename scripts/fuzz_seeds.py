#!/usr/bin/env python3
"""Seed corpora for every fuzz target, from the real captures (nothing is committed in bulk).

Why generated: the corpora are derived data (thousands of files that change as the fuzzer
learns); the captures under /work/shared/captures and samples/ are the source of truth.

- the capture target (`capture_tcp`): the capture files themselves (under 200 KB, so an
  execution stays fast);
- session targets (`<proto>_session`): each connection of the protocol's captures, reassembled
  by the engine (tests/fuzzing.py), in the targets' chunk encoding (`encode_chunks`), with the
  default limits and again with the tiny message cap;
- `kafka_decode`: every real Kafka body (scripts/kafka_fuzz_seeds.py);
- any other target: the capture files (an unknown format still gets real bytes).

Usage: python scripts/fuzz_seeds.py OUT_ROOT TARGET...   (writes OUT_ROOT/TARGET/corpus/)
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fuzzing import seed_streams  # noqa: E402

from tests.conftest import CAPTURES  # noqa: E402

MAX_FILE = 200_000
"""Capture files above this are left out of the file corpora (slow executions)."""
STREAM_CAP = 8192
"""Bytes kept per direction of a connection in a session seed (small inputs, fast executions)."""
PROTOCOLS = ("kafka", "pulsar", "pravega", "tank")


def capture_files() -> list[Path]:
    """The real captures small enough to be seeds."""
    found = sorted(CAPTURES.glob("*/*.pcap*")) + sorted((ROOT / "samples").glob("*.pcap*"))
    return [p for p in found if p.stat().st_size <= MAX_FILE]


def protocol_of(target: str) -> str | None:
    """`kafka_session` is the session target of kafka; others are not."""
    for p in PROTOCOLS:
        if target == f"{p}_session":
            return p
    return None


def encode_chunks(chunks: list[tuple[str, bytes]], profile: int = 0) -> bytes:
    """A session target's input for (role, bytes) chunks: the profile byte (default limits or the
    tiny message cap), then per chunk its role (0 client, 1 server), its length (2 bytes, big
    endian) and its bytes; chunks over 65535 bytes are split (engine/fuzz/fuzz_targets/*_session.rs)."""
    out = bytearray([profile])
    for role, data in chunks:
        for i in range(0, max(len(data), 1), 0xFFFF):
            part = data[i : i + 0xFFFF]
            out += bytes([1 if role == "server" else 0]) + len(part).to_bytes(2, "big") + part
    return bytes(out)


def write(out: Path, data: bytes) -> None:
    (out / hashlib.sha1(data).hexdigest()).write_bytes(data)


def seed(root: Path, target: str) -> int:
    """Write `target`'s seeds under root/target/corpus; the number of seeds."""
    out = root / target / "corpus"
    out.mkdir(parents=True, exist_ok=True)
    if target == "kafka_decode":
        subprocess.run([sys.executable, str(ROOT / "scripts" / "kafka_fuzz_seeds.py"), str(out)], check=True)
    elif (proto := protocol_of(target)) is not None:
        for pcap in sorted((CAPTURES / proto).glob("*.pcap*")) + sorted(
            (ROOT / "samples").glob(f"{proto}*.pcap")
        ):
            for chunks in seed_streams(pcap, cap=STREAM_CAP):
                if chunks:
                    write(out, encode_chunks(chunks, 0))
                    write(out, encode_chunks(chunks, 1))
    else:
        for p in capture_files():
            shutil.copy(p, out / p.name)
    return len(list(out.iterdir()))


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(sys.argv[1])
    for target in sys.argv[2:]:
        print(f"{target}: {seed(root, target)} seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
