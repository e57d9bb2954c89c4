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

    python benchmarks/run.py benchmarks/data/kafka-large.pcap [--scale 10 [--scaled X10.pcap]] [--spark] [--repeat 3]

`--repeat N` runs each command N times in turn with the others and keeps its least time (and its
highest peak RSS): on a shared machine a single run of the same command varies by a third.
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
    cpu: float = 0.0
    """User + system CPU seconds of the child (the machine is shared: wall time alone misleads)."""
    nbytes: int = 0
    """Size of the capture read, for MB/s."""

    @property
    def rate(self) -> float:
        return self.packets / self.seconds if self.seconds else 0.0

    @property
    def per_core(self) -> float:
        """Packets per CPU second: the rate one core sustains, whatever the load."""
        return self.packets / self.cpu if self.cpu else 0.0

    @property
    def mb_s(self) -> float:
        return self.nbytes / 1e6 / self.seconds if self.seconds else 0.0


COUNT_PACKETS = """
import sys
from wiredump._engine import StreamReader

n = 0
for batch in StreamReader(sys.argv[1], [], 8 << 20):
    for t in batch:
        if t[0] == 0:  # RECORD: (0, number, ts_us)
            n = t[1]
print(n)
"""


def count_packets(path: Path) -> int:
    """Packet records in the capture, read by the native engine's reader (`RECORD` tuples).

    Counted in a child process: this process must stay small. A child's peak RSS as the kernel
    reports it (`ru_maxrss`) is at least what its parent held when it forked (the copied address
    space's high-water mark is kept across `exec`): counting here once made every timed command,
    `true` included, report 98 MB."""
    out = subprocess.run(
        [sys.executable, "-c", COUNT_PACKETS, str(path)], capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


def timed(
    name: str,
    argv: list[str],
    packets: int,
    stdout_path: Path | None = None,
    nbytes: int = 0,
    extra_env: dict[str, str] | None = None,
) -> Result:
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    env = dict(os.environ, CI="true", **(extra_env or {}))
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
    cpu = usage.ru_utime + usage.ru_stime
    return Result(name, seconds, usage.ru_maxrss / 1024, packets, proc.returncode, cpu, nbytes)


def wiredump() -> list[str]:
    """The wiredump of the environment this script runs in, whatever PATH says: the figures are
    those of the code it imports (a PATH without the venv's bin once timed another install)."""
    return [sys.executable, "-m", "wiredump"]


def table(results: list[Result]) -> str:
    lines = [
        f"{'command':<52} {'wall s':>8} {'CPU s':>8} {'packets/s':>11} {'pkts/s/core':>12} "
        f"{'MB/s':>7} {'peak RSS MB':>12}"
    ]
    for r in results:
        flag = "" if r.rc == 0 else f"  (exit {r.rc})"
        lines.append(
            f"{r.name:<52} {r.seconds:>8.2f} {r.cpu:>8.2f} {r.rate:>11,.0f} {r.per_core:>12,.0f} "
            f"{r.mb_s:>7.1f} {r.max_rss_mb:>12.1f}{flag}"
        )
    return "\n".join(lines)


TSHARK_FIELDS = ["-T", "fields", "-e", "kafka.api_key", "-e", "kafka.correlation_id"]


def best(runs: list[Result]) -> Result:
    """One figure from repeated runs of a command: the least wall and the least CPU time (what
    the command needs when the shared machine does not take the core from it), the highest peak
    RSS (memory is judged by its worst run), a failed run's exit code."""
    first = runs[0]
    failed = [r.rc for r in runs if r.rc != 0]
    return Result(
        first.name,
        min(r.seconds for r in runs),
        max(r.max_rss_mb for r in runs),
        first.packets,
        failed[0] if failed else 0,
        min(r.cpu for r in runs),
        first.nbytes,
    )


PYARROW_WRITER = {"WIREDUMP_PARQUET_WRITER": "pyarrow"}
"""The export with pyarrow's Parquet writer (`parquet_settings.WRITER_ENV`) instead of the
engine's, timed beside it while both exist."""


def one_size(
    label: str, cap: Path, packets: int, tmp: Path, workers: int, repeat: int = 1, pyarrow: bool = False
) -> list[Result]:
    """tshark and wiredump, timeline and export, on one capture: the four commands side by side
    (five with `pyarrow`: the export with pyarrow's writer too), each run `repeat` times in turn
    (tshark, wiredump, tshark, …) so that a slow spell of the machine falls on both tools alike."""
    size = cap.stat().st_size
    commands: list[tuple[str, list[str], Path | None, dict[str, str] | None]] = []
    if shutil.which("tshark"):
        commands.append(
            (f"[{label}] tshark -r X -n > file", ["tshark", "-r", str(cap), "-n"], tmp / "t1.txt", None)
        )
        commands.append(
            (
                f"[{label}] tshark -T fields -e api_key -e correlation_id",
                ["tshark", "-r", str(cap), "-n", *TSHARK_FIELDS],
                tmp / "t2.txt",
                None,
            )
        )
    commands.append((f"[{label}] wiredump X > file", [*wiredump(), str(cap)], tmp / "w1.txt", None))
    export = [*wiredump(), "export", str(cap), "-o", str(tmp / f"out-{label}")]
    if workers:
        export += ["--workers", str(workers)]
    commands.append((f"[{label}] wiredump export X -o DIR", export, None, None))
    if pyarrow:
        commands.append((f"[{label}] wiredump export (pyarrow writer)", export, None, PYARROW_WRITER))
    runs: dict[str, list[Result]] = {name: [] for name, *_ in commands}
    for _ in range(max(1, repeat)):
        for name, argv, out, env in commands:
            runs[name].append(timed(name, argv, packets, out, size, env))
            shutil.rmtree(tmp / f"out-{label}", ignore_errors=True)
    return [best(runs[name]) for name, *_ in commands]


def ratios(label: str, results: list[Result]) -> list[str]:
    """The goals of issue 15 for one capture size, in wall and in CPU time."""
    by = {r.name: r for r in results}
    t_text = by.get(f"[{label}] tshark -r X -n > file")
    t_fields = by.get(f"[{label}] tshark -T fields -e api_key -e correlation_id")
    w_text = by[f"[{label}] wiredump X > file"]
    w_export = by[f"[{label}] wiredump export X -o DIR"]
    out = []
    failed = [r.name for r in (t_text, t_fields, w_text, w_export) if r is not None and r.rc != 0]
    if failed:  # a command that failed measured nothing: no ratio is made of its time
        return [f"[{label}] no ratios: {', '.join(failed)} failed (see above)"]
    if t_text and t_fields:
        out.append(
            f"[{label}] timeline vs tshark -n:      {t_text.seconds / w_text.seconds:6.2f}x wall, "
            f"{t_text.cpu / max(w_text.cpu, 1e-9):6.2f}x CPU  (goal ≥ 3x)"
        )
        out.append(
            f"[{label}] export vs tshark -T fields: {t_fields.seconds / w_export.seconds:6.2f}x wall, "
            f"{t_fields.cpu / max(w_export.cpu, 1e-9):6.2f}x CPU  (goal ≥ 10x)"
        )
    out.append(
        f"[{label}] peak RSS: timeline {w_text.max_rss_mb:.1f} MB, export {w_export.max_rss_mb:.1f} MB  (goal ≤ 150 MB)"
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("capture", type=Path)
    ap.add_argument(
        "--scale", type=int, default=0, help="also run everything on a capture this many times larger"
    )
    ap.add_argument(
        "--scaled",
        type=Path,
        default=None,
        help="with --scale: an existing capture N times larger to time instead of building one "
        "(e.g. /work/data/kafka-large-x10.pcap, made by scale_capture.py): building it takes minutes",
    )
    ap.add_argument("--spark", action="store_true", help="also time spark export with 1 and 2 cores")
    ap.add_argument("--workers", type=int, default=0, help="pass --workers N to wiredump export")
    ap.add_argument(
        "--pyarrow-writer",
        action="store_true",
        help="also time the export with pyarrow's Parquet writer (WIREDUMP_PARQUET_WRITER=pyarrow)",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each command N times, in turn with the others, and keep its least wall and CPU "
        "time and its highest peak RSS (the shared machine's slow spells vary single runs by a "
        "third)",
    )
    ap.add_argument(
        "--repeat-scaled",
        type=int,
        default=None,
        help="with --scale: the same for the larger capture (default: as --repeat)",
    )
    args = ap.parse_args()
    cap = args.capture
    packets = count_packets(cap)
    tmp = Path(tempfile.mkdtemp(prefix="wiredump-bench-"))
    results: list[Result] = []
    sizes = [("1x", cap, packets)]
    try:
        if args.scale > 1 and args.scaled is not None:
            sizes.append((f"{args.scale}x", args.scaled, count_packets(args.scaled)))
        elif args.scale > 1:
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
            sizes.append((f"{args.scale}x", big, count_packets(big)))
        for i, (label, path, n) in enumerate(sizes):
            repeat = args.repeat if i == 0 or args.repeat_scaled is None else args.repeat_scaled
            results += one_size(label, path, n, tmp, args.workers, repeat, args.pyarrow_writer)
            for f in tmp.glob("*.txt"):
                f.unlink()
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
    for label, path, n in sizes:
        print(
            f"capture {label}: {path.name} ({n:,} packets, {path.stat().st_size / 1e6:.1f} MB)"
            if path.exists()
            else f"capture {label}: {n:,} packets"
        )
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.repeat > 1 or (args.repeat_scaled or 1) > 1:
        print(
            f"each command run {args.repeat}× (1x) / {args.repeat_scaled or args.repeat}× (larger) in turn "
            "with the others: least wall and CPU time, highest peak RSS"
        )
    print(table(results))
    print()
    for label, _, _ in sizes:
        print("\n".join(ratios(label, results)))
    if any(r.rc != 0 for r in results):
        sys.exit(1)  # a failed command is a failed benchmark, whatever else it printed


if __name__ == "__main__":
    main()
