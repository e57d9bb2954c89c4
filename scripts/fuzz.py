"""Longer fuzzing than the test suite runs: mutated real traffic through every decoder and the capture reader.

For each protocol, streams reassembled from the real captures are mutated (bytes
flipped, cut, inserted, duplicated, lengths zeroed or made huge) and pushed through
the protocol's session in random chunks; for the reader, whole capture files are
mutated and dissected end to end. Anything that raises (other than the reader's
own `CaptureError` for a file that is not a capture) is a finding: its input is
saved under `--findings` so it can become a regression test.

    python scripts/fuzz.py --seconds 60            # per target
    python scripts/fuzz.py --seconds 600 --target kafka
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import CAPTURES  # noqa: E402
from tests.fuzzing import drive, seed_streams  # noqa: E402
from wiredump.dissect.capture import CaptureError  # noqa: E402
from wiredump.dissect.pipeline import dissect  # noqa: E402

PROTOCOL_DIRS = {"kafka": "kafka", "pulsar": "pulsar", "pravega": "pravega", "tank": "tank"}


def mutate_bytes(rng: random.Random, b: bytes) -> bytes:
    b = bytearray(b)
    for _ in range(rng.randint(1, 8)):
        pos = rng.randrange(len(b) + 1)
        op = rng.choice(("flip", "cut", "insert", "dup", "zero", "huge", "swap"))
        if op == "flip" and b:
            b[min(pos, len(b) - 1)] ^= rng.randint(1, 255)
        elif op == "cut":
            del b[pos : pos + rng.randint(1, 256)]
        elif op == "insert":
            b[pos:pos] = rng.randbytes(rng.randint(1, 64))
        elif op == "dup":
            b[pos:pos] = b[pos : pos + rng.randint(1, 128)]
        elif op == "zero":
            b[pos : pos + 4] = b"\0\0\0\0"
        elif op == "huge":
            b[pos : pos + 4] = rng.choice((b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff", b"\x00\x00\x10\x00"))
        elif op == "swap" and len(b) > 8:
            i, j = rng.randrange(len(b)), rng.randrange(len(b))
            b[i], b[j] = b[j], b[i]
    return bytes(b)


def fuzz_protocol(name: str, seconds: float, rng: random.Random, findings: Path) -> tuple[int, int]:
    seeds = []
    for pcap in sorted((CAPTURES / PROTOCOL_DIRS[name]).glob("*.pcap")):
        if pcap.stat().st_size < 2_000_000:
            seeds.extend(s for s in seed_streams(pcap, cap=32768) if s)
    if not seeds:
        print(f"{name}: no seeds under {CAPTURES}", file=sys.stderr)
        return 0, 0
    runs = found = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        chunks = list(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(chunks))
            chunks[i] = (chunks[i][0], mutate_bytes(rng, chunks[i][1]))
        if rng.random() < 0.3:  # re-chunk
            chunks = [(r, b[i : i + 7]) for r, b in chunks for i in range(0, len(b), 7)]
        runs += 1
        try:
            drive(name, chunks)
        except Exception:
            found += 1
            out = findings / f"{name}-{runs}.txt"
            out.write_text(repr(chunks) + "\n\n" + traceback.format_exc())
            print(f"{name}: finding saved to {out}", file=sys.stderr)
    return runs, found


def fuzz_reader(seconds: float, rng: random.Random, findings: Path) -> tuple[int, int]:
    files = [p for p in sorted(CAPTURES.glob("*/*.pcap")) if p.stat().st_size < 200_000]
    runs = found = 0
    deadline = time.monotonic() + seconds
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "mutant.pcap"
        while time.monotonic() < deadline and files:
            src = rng.choice(files).read_bytes()
            data = (
                mutate_bytes(rng, src[:24]) + src[24:]
                if rng.random() < 0.2
                else src[:24] + mutate_bytes(rng, src[24:])
            )
            target.write_bytes(data)
            runs += 1
            try:
                for _ in dissect([str(target)]):
                    pass
            except CaptureError:
                pass
            except Exception:
                found += 1
                out = findings / f"reader-{runs}.pcap"
                out.write_bytes(data)
                (findings / f"reader-{runs}.txt").write_text(traceback.format_exc())
                print(f"reader: finding saved to {out}", file=sys.stderr)
    return runs, found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30.0, help="time per target")
    ap.add_argument("--target", choices=[*PROTOCOL_DIRS, "reader", "all"], default="all")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--findings", type=Path, default=Path("fuzz-findings"))
    args = ap.parse_args()
    args.findings.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    targets = [*PROTOCOL_DIRS, "reader"] if args.target == "all" else [args.target]
    print(f"{'target':<10} {'executions':>11} {'seconds':>8} {'exec/s':>8} {'findings':>9}")
    total_found = 0
    for t in targets:
        t0 = time.monotonic()
        runs, found = (
            fuzz_reader(args.seconds, rng, args.findings)
            if t == "reader"
            else fuzz_protocol(t, args.seconds, rng, args.findings)
        )
        dt = time.monotonic() - t0
        total_found += found
        print(f"{t:<10} {runs:>11} {dt:>8.1f} {runs / dt if dt else 0:>8.1f} {found:>9}")
    sys.exit(1 if total_found else 0)


if __name__ == "__main__":
    main()
