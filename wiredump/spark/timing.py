"""Where a Spark export's wall time goes: phase marks on stderr, when `WIREDUMP_SPARK_TIMING` is set.

Why: the speed-up of `local[2]` over `local[1]` on one large capture is bounded by what two cores
do not divide (starting the JVM and the Python workers, planning, the driver's own writing), and
that part is only found by timing it. Each mark is printed as seconds since this process started
(the interpreter's start, read from /proc, so the imports before the first mark count too);
tasks send their marks back with their results (`task_marks`) and the driver prints them on the
same clock. Off by default: nothing is measured or printed.
"""

from __future__ import annotations

import os
import sys
import time

ENV = "WIREDUMP_SPARK_TIMING"


def enabled() -> bool:
    return bool(os.environ.get(ENV))


def process_start() -> float:
    """The epoch time this process started (Linux /proc, to the clock tick; now, where that cannot
    be read). From the uptime, not /proc/stat's boot time, which is whole seconds."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.time()


_T0 = process_start() if enabled() else 0.0


def mark(label: str, at: float | None = None) -> None:
    """Print `label` with the seconds since this process started (only when enabled)."""
    if enabled():
        when = (time.time() if at is None else at) - _T0
        print(f"[timing] {when:8.3f} s  {label}", file=sys.stderr, flush=True)


def cpu() -> float:
    """CPU seconds of this process so far (user + system)."""
    t = os.times()
    return t.user + t.system
