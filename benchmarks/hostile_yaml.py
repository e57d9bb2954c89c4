"""Wall time and peak memory of `wiredump check` on hostile rules and baseline files.

Builds each case in a temporary folder (billion laughs, a 1-million-line file, a file just under
the baseline size limit with more values than allowed, `!!python/object/apply:os.system`, deep flow
and block nesting), then runs, each in its own child process:

* `wiredump check CAPTURE --rules FILE` and `--baseline FILE` (the whole CLI, start-up included);
* the loader alone (`wiredump.check.rules.load` / `baseline.load`), so its own cost is visible apart
  from the CLI's imports;

and prints exit code, wall time and the child's peak RSS (from `wait4`). Goal (issue 17): every
case exits 2 with FILE:LINE, under 1 s and under 100 MB.

    python benchmarks/hostile_yaml.py [--capture X.pcap]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CAPTURE = ROOT.parent / "shared" / "captures" / "kafka" / "go-sniffer-kafka.pcap"


def make_cases(folder: Path) -> None:
    """Write every case into `folder` (run in a child process: a child forked from a parent that
    built megabytes of text would start with the parent's memory in its peak RSS)."""
    out = {}
    lines = ["wiredump_baseline: 1", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for c in "bcdefghi":
        lines.append(f"{c}: &{c} [" + ",".join(["*" + prev] * 9) + "]")
        prev = c
    out["billion-laughs"] = "\n".join(lines) + "\n"
    out["million-lines"] = "forbid:\n" + "".join(f"  - gap{i}\n" for i in range(1_000_000))
    out["many-values"] = "x: [" + ",".join("1" * 1_000_000) + "]\n"  # 2 MB: under the baseline limit
    out["python-tag"] = 'forbid: [gap]\nlatency_ms: !!python/object/apply:os.system ["echo pwned"]\n'
    out["deep-flow"] = "forbid: " + "[" * 500_000 + "]" * 500_000 + "\n"
    out["deep-block"] = "forbid:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 1500))
    for name, text in out.items():
        (folder / f"{name}.yaml").write_text(text)


def run(argv: list[str]) -> tuple[int, float, int, str]:
    """(exit code, wall seconds, peak RSS in MB, last stderr line) of one child process."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    last = err.strip().splitlines()[-1] if err.strip() else ""
    return proc.returncode, wall, usage.ru_maxrss // 1024, last


LOADER = (
    "import sys\n"
    "from wiredump.check import rules, baseline\n"
    "from wiredump.check.spec import SpecError\n"
    "try:\n"
    "    (rules.load if sys.argv[1] == '--rules' else baseline.load)(sys.argv[2])\n"
    "except SpecError as e:\n"
    "    print(e, file=sys.stderr); sys.exit(2)\n"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--capture", default=str(CAPTURE))
    ap.add_argument("--make", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.make:
        make_cases(Path(args.make))
        return
    py = sys.executable
    print(f"{'case':16} {'option':10} {'what':7} {'exit':>4} {'wall s':>7} {'peak MB':>8}  message")
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([py, __file__, "--make", d], check=True)
        for path in sorted(Path(d).iterdir(), key=lambda p: p.stat().st_mtime_ns):
            name = path.stem
            for option in ("--rules", "--baseline"):
                for what, argv in (
                    ("cli", [py, "-m", "wiredump", "check", args.capture, option, str(path)]),
                    ("loader", [py, "-c", LOADER, option, str(path)]),
                ):
                    code, wall, rss, msg = run(argv)
                    msg = msg.replace(str(path), path.name)
                    print(f"{name:16} {option:10} {what:7} {code:4} {wall:7.2f} {rss:8}  {msg[:90]}")
        good = Path(d) / "good.yaml"
        good.write_text("forbid: [malformed]\n")
        code, wall, rss, _ = run([py, "-m", "wiredump", "check", args.capture, "--rules", str(good)])
        print(
            f"\nfor scale: a valid one-line rules file on the same capture: exit {code}, {wall:.2f} s, {rss} MB"
        )


if __name__ == "__main__":
    main()
