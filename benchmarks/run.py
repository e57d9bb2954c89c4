"""Time wiredump against tshark on the same capture, in the same run.

Prints wall time, packets/s and peak RSS (from the kernel's rusage of each child
process) for:

* `tshark -r X -n > file` and `wiredump X > file` (the timeline)
* `tshark -r X -n -T fields -e kafka.api_key -e kafka.correlation_id > file` and
  `wiredump export X -o DIR` (full decode, correlation, all five tables)

and the ratios the project's goals are stated in. `--scale N` also builds a capture
N times larger (the same flows replayed with fresh ports, sequence numbers and
times, see `scale_capture.py`) and exports it, to show that memory stays flat.
`--spark` times `wiredump spark export` of a capture set with 1 and with 2 cores.

    python benchmarks/run.py benchmarks/data/kafka-large.pcap [--scale 10] [--spark]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Result:
    name: str
    seconds: float
    max_rss_mb: float
    packets: int
    rc: int

    @property
    def rate(self) -> float:
        return self.packets / self.seconds if self.seconds else 0.0


def count_packets(path: Path) -> int:
    from wiredump.dissect.capture import open_capture

    n = 0
    for rec in open_capture(str(path)):
        n = rec.number
    return n


def timed(name: str, argv: list[str], packets: int, stdout_path: Path | None = None) -> Result:
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    env = dict(os.environ, CI="true")
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if stdout_path:
        out.close()  # type: ignore[union-attr]
    if proc.returncode != 0:
        print(f"{name}: exit {proc.returncode}: {err.decode(errors='replace')[-500:]}", file=sys.stderr)
    return Result(name, seconds, usage.ru_maxrss / 1024, packets, proc.returncode)


def wiredump() -> list[str]:
    exe = shutil.which("wiredump")
    return [exe] if exe else [sys.executable, "-m", "wiredump"]


def table(results: list[Result]) -> str:
    lines = [f"{'command':<58} {'wall s':>8} {'packets/s':>11} {'peak RSS MB':>12}"]
    for r in results:
        flag = "" if r.rc == 0 else f"  (exit {r.rc})"
        lines.append(f"{r.name:<58} {r.seconds:>8.2f} {r.rate:>11,.0f} {r.max_rss_mb:>12.1f}{flag}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("capture", type=Path)
    ap.add_argument("--scale", type=int, default=0, help="also export a capture this many times larger")
    ap.add_argument("--spark", action="store_true", help="also time spark export with 1 and 2 cores")
    ap.add_argument("--workers", type=int, default=0, help="pass --workers N to wiredump export")
    args = ap.parse_args()
    cap = args.capture
    packets = count_packets(cap)
    tmp = Path(tempfile.mkdtemp(prefix="wiredump-bench-"))
    results: list[Result] = []
    have_tshark = shutil.which("tshark") is not None
    try:
        if have_tshark:
            results.append(
                timed("tshark -r X -n > file", ["tshark", "-r", str(cap), "-n"], packets, tmp / "t1.txt")
            )
            results.append(
                timed(
                    "tshark -r X -n -T fields -e kafka.api_key -e kafka.correlation_id",
                    [
                        "tshark",
                        "-r",
                        str(cap),
                        "-n",
                        "-T",
                        "fields",
                        "-e",
                        "kafka.api_key",
                        "-e",
                        "kafka.correlation_id",
                    ],
                    packets,
                    tmp / "t2.txt",
                )
            )
        results.append(timed("wiredump X > file", [*wiredump(), str(cap)], packets, tmp / "w1.txt"))
        export = [*wiredump(), "export", str(cap), "-o", str(tmp / "out")]
        if args.workers:
            export += ["--workers", str(args.workers)]
        results.append(timed("wiredump export X -o DIR", export, packets))
        if args.scale > 1:
            big = tmp / f"x{args.scale}.pcap"
            subprocess.run(
                [
                    sys.executable,
                    str(Path(__file__).with_name("scale_capture.py")),
                    str(cap),
                    str(big),
                    "-n",
                    str(args.scale),
                ],
                check=True,
            )
            results.append(
                timed(
                    f"wiredump export ({args.scale}x capture) -o DIR",
                    [*wiredump(), "export", str(big), "-o", str(tmp / "outbig")],
                    packets * args.scale,
                )
            )
            big.unlink()
        if args.spark:
            capset = [str(cap)] * 4
            for cores in (1, 2):
                results.append(
                    timed(
                        f"wiredump spark export (4 captures, local[{cores}])",
                        [
                            *wiredump(),
                            "spark",
                            "export",
                            *capset,
                            "-o",
                            str(tmp / f"spark{cores}"),
                            "--master",
                            f"local[{cores}]",
                        ],
                        packets * 4,
                    )
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"capture: {cap} ({packets:,} packets, {cap.stat().st_size / 1e6:.1f} MB)")
    print(table(results))
    by = {r.name.split(" (")[0] if "(" in r.name else r.name: r for r in results}
    if have_tshark:
        t_text, t_fields = results[0], results[1]
        w_text = by["wiredump X > file"]
        w_export = by["wiredump export X -o DIR"]
        print()
        print(f"timeline vs tshark -n:          {t_text.seconds / w_text.seconds:5.2f}x  (goal ≥ 1x)")
        print(f"export vs tshark -T fields:     {t_fields.seconds / w_export.seconds:5.2f}x  (goal ≥ 3x)")
        print(f"export peak RSS:                {w_export.max_rss_mb:6.1f} MB (goal ≤ 150 MB)")


if __name__ == "__main__":
    main()
