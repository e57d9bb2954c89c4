"""benchmarks/run.py makes no ratio of a command that failed, and times this environment's wiredump.

A run whose `wiredump` was not importable (PATH without the venv's bin) once printed 31× and 82×
against tshark from 0.09 s failures; the figures of the closing notes come from this script.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benchmarks" / "run.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = mod  # dataclasses look their module up while the class is made
    spec.loader.exec_module(mod)
    return mod


def _results(mod, wiredump_rc: int):  # type: ignore[no-untyped-def]
    R = mod.Result
    return [
        R("[1x] tshark -r X -n > file", 2.0, 364.0, 1000, 0, 2.0),
        R("[1x] tshark -T fields -e api_key -e correlation_id", 6.0, 369.0, 1000, 0, 6.0),
        R("[1x] wiredump X > file", 0.5, 50.0, 1000, wiredump_rc, 0.5),
        R("[1x] wiredump export X -o DIR", 1.5, 120.0, 1000, 0, 2.0),
    ]


def test_ratios_of_successful_commands() -> None:
    mod = _run_module()
    lines = mod.ratios("1x", _results(mod, 0))
    # 2.0 / 0.5 = 4.00 (timeline), 6.0 / 1.5 = 4.00 wall and 6.0 / 2.0 = 3.00 CPU (export)
    assert "timeline vs tshark -n:        4.00x wall,   4.00x CPU" in lines[0]
    assert "export vs tshark -T fields:   4.00x wall,   3.00x CPU" in lines[1]
    assert "timeline 50.0 MB, export 120.0 MB" in lines[2]


def test_no_ratio_of_a_failed_command() -> None:
    mod = _run_module()
    lines = mod.ratios("1x", _results(mod, 1))
    assert lines == ["[1x] no ratios: [1x] wiredump X > file failed (see above)"]
    assert not any("x wall" in line for line in lines)


def test_wiredump_is_this_interpreters() -> None:
    assert _run_module().wiredump() == [sys.executable, "-m", "wiredump"]


def test_repeated_runs_keep_least_time_and_highest_memory() -> None:
    """`--repeat`: of three runs of one command, the least wall and least CPU time (from
    different runs), the highest peak RSS, and a failure is not hidden by the runs that passed."""
    mod = _run_module()
    R = mod.Result
    name = "[1x] wiredump X > file"
    runs = [
        R(name, 1.3, 90.0, 1000, 0, 1.1, 5),
        R(name, 1.1, 95.0, 1000, 0, 1.2, 5),
        R(name, 1.6, 80.0, 1000, 0, 1.0, 5),
    ]
    b = mod.best(runs)
    assert (b.name, b.seconds, b.cpu, b.max_rss_mb, b.rc, b.packets, b.nbytes) == (
        name,
        1.1,
        1.0,
        95.0,
        0,
        1000,
        5,
    )
    assert mod.best([*runs, R(name, 0.1, 10.0, 1000, 2, 0.1, 5)]).rc == 2


def test_packets_counted_in_a_child() -> None:
    """The packet count comes from a child process (so this process's peak RSS, which every
    command it starts inherits as a floor in `ru_maxrss`, stays that of a bare interpreter); the
    sample holds 67 packets (capinfos -c)."""
    mod = _run_module()
    before = set(sys.modules)
    assert mod.count_packets(ROOT / "samples" / "kafka-basic.pcap") == 167
    assert "wiredump._engine" not in set(sys.modules) - before
