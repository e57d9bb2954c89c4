"""Capture reading + TCP reassembly alone: the Python reference against the Rust engine.

Times, on one capture, in one run (each in a child process, peak RSS from rusage):

* python: CaptureReader → parse_tcp → TcpReassembler with a listener that only counts
* rust (via Python): wiredump._engine.StreamReader, every batch of event tuples taken in Python
  (what the pipeline receives with `--engine rust`)
* rust (alone): engine/examples/read_capture.rs, no Python at all (built with `cargo build --release`)

    python benchmarks/engine_read.py CAPTURE [--repeat 3]

Make a large capture from a real one with scale_capture.py, e.g.
`python benchmarks/scale_capture.py /work/shared/captures/kafka/ck-compress-zstd.pcap big.pcap -n 1000`.
The Rust module must be a release build (`maturin develop --release`) for the figures to mean anything.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PY_CHILD = """
import sys, time, json
from wiredump.dissect.capture import open_capture
from wiredump.dissect.packet import parse_tcp
from wiredump.dissect.limits import Limits
from wiredump.dissect.tcp import TcpReassembler

class Count:
    events = 0
    bytes = 0
    def on_data(self, conn, role, data, packet, ts_us):
        self.events += 1
        self.bytes += len(data)
    def on_gap(self, *a):
        self.events += 1
    def on_close(self, conn):
        self.events += 1
    def on_anomaly(self, a):
        self.events += 1

t0 = time.perf_counter()
c = Count()
tcp = TcpReassembler(c, Limits(), frozenset({9092, 6650, 12345, 11011}))
n = 0
for rec in open_capture(sys.argv[1]):
    n = rec.number
    seg = parse_tcp(rec.linktype, rec.data)
    if seg is not None:
        tcp.segment(seg, rec.number, rec.ts_us)
tcp.finish()
print(json.dumps([n, c.events, c.bytes, time.perf_counter() - t0]))
"""

RS_CHILD = """
import sys, time, json
from wiredump import _engine

t0 = time.perf_counter()
r = _engine.StreamReader(sys.argv[1], [], 0)
r.configure([6650, 9092, 11011, 12345], 8 << 20)
events = nbytes = 0
for batch in r:
    for ev in batch:
        if ev[0] in (3, 4, 5, 6):  # data, gap, close, anomaly: the Python listener's calls
            events += 1
            if ev[0] == 3:
                nbytes += len(ev[3])
print(json.dumps([r.packets, events, nbytes, time.perf_counter() - t0]))
"""


def timed(argv: list[str]) -> tuple[str, float, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    out = proc.stdout.read()  # type: ignore[union-attr]
    err = proc.stderr.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{argv[:3]}: failed: {err.decode()[-400:]}")
    return out.decode().strip(), wall, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("capture", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    size_mb = args.capture.stat().st_size / 1e6
    example = (
        Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "engine" / "target")) / "release/examples/read_capture"
    )
    subprocess.run(
        ["cargo", "build", "--release", "--example", "read_capture", "-q"], cwd=ROOT / "engine", check=True
    )
    runs = {
        "python: CaptureReader + parse_tcp + TcpReassembler": [
            sys.executable,
            "-c",
            PY_CHILD,
            str(args.capture),
        ],
        "rust via Python: StreamReader batches": [sys.executable, "-c", RS_CHILD, str(args.capture)],
        "rust alone: examples/read_capture": [str(example), str(args.capture)],
    }
    print(f"{args.capture} ({size_mb:.1f} MB), best of {args.repeat}")
    print(f"{'engine':<52} {'packets':>9} {'events':>9} {'s':>7} {'packets/s':>11} {'MB/s':>7} {'RSS MB':>7}")
    results = {}
    for name, argv in runs.items():
        best = None
        for _ in range(args.repeat):
            out, wall, rss = timed(argv)
            vals = json.loads(out) if out.startswith("[") else [int(x) for x in out.split()[:3]]
            if best is None or wall < best[1]:
                best = (vals, wall, rss)
        assert best is not None
        (packets, events, _nbytes, *_), wall, rss = best
        results[name] = (packets, events)
        print(
            f"{name:<52} {packets:>9,} {events:>9,} {wall:>7.2f} {packets / wall:>11,.0f}"
            f" {size_mb / wall:>7.1f} {rss:>7.1f}"
        )
    counts = set(results.values())
    print("same packets and events in all three:", len(counts) == 1, sorted(counts))


if __name__ == "__main__":
    main()
