"""Spark at scale, side by side in one run: local export, Spark local[1] and local[2].

Two inputs:
- one large capture (default ≥ 1 GiB), built here from real traffic: a real capture (by default
  `benchmarks/data/kafka-large.pcap` if present, else the largest Kafka capture of the shared
  corpus) replayed with fresh ports, sequence numbers and times by `scale_capture.py` until it
  reaches `--size-mb`;
- a many-capture corpus: every real capture of the shared corpus, copied `--copies` times.

For each command it prints wall time, CPU time (all processes of the run), and peak RSS of the
driver's Python, of the JVM (driver and executors in local mode) and of the largest Python
worker, sampled from /proc every 0.2 s; then the speed-up of local[2] over local[1]. Default Spark
settings (those `wiredump spark` uses). A process above 1 GiB is flagged.

    python benchmarks/spark_bench.py                      # 1 GiB capture + corpus x8
    python benchmarks/spark_bench.py --size-mb 20 --copies 1   # a smoke run
    python benchmarks/spark_bench.py --capture big.pcap --no-corpus --check   # tables checked too
    python benchmarks/spark_bench.py --capture big.pcap --shares   # CPU of shares, no Spark

Before the measured runs, one unmeasured `wiredump spark export` of the large capture's first
MiB: the first Spark run on a machine makes the JVM's class archive (`wiredump.spark.jvm`, a
few seconds, once per Java and Spark), and that must not be counted in whichever run comes
first (nor the first read of Spark's jars from disk).

`wkr CPU s` is the CPU time of the busiest Python worker: with two cores busy elsewhere, wall
ratios measure the contention, while the busiest worker's CPU still says how the dissection
divides between the cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = Path(os.environ.get("WIREDUMP_CAPTURES", HERE.parent.parent / "shared" / "captures"))
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")


def _procs() -> dict[int, tuple[int, str, int, float]]:
    """pid -> (ppid, kind, rss bytes, cpu seconds) for every process now."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        rest = stat.rsplit(")", 1)[1].split()
        ppid, utime, stime, rss = int(rest[1]), int(rest[11]), int(rest[12]), int(rest[21])
        kind = "jvm" if "java" in cmd.split(" ", 1)[0] else "worker" if "pyspark" in cmd else "python"
        out[int(d)] = (ppid, kind, rss * PAGE, (utime + stime) / TICK)
    return out


def measure(cmd: list[str]) -> dict[str, float]:
    """Run `cmd`; wall, CPU and peak RSS per kind of process of its tree.

    CPU is the larger of the sampled sum over the tree and the kernel's count for the child and
    every descendant it waited for (`wait4`): the samples miss what a short-lived process spent
    after the last sample, the kernel's count misses descendants nobody waited for.
    """
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = {"driver": 0, "jvm": 0, "worker": 0}
    cpu: dict[int, float] = {}
    worker_cpu: dict[int, float] = {}
    err_chunks: list[str] = []
    import threading

    reader = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read() if proc.stderr else ""))
    reader.start()
    status = 0
    usage = None
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        procs = _procs()
        tree = {proc.pid}
        changed = True
        while changed:
            changed = False
            for pid, (ppid, *_rest) in procs.items():
                if ppid in tree and pid not in tree:
                    tree.add(pid)
                    changed = True
        for pid in tree:
            if pid not in procs:
                continue
            _, kind, rss, secs = procs[pid]
            key = "driver" if pid == proc.pid else "jvm" if kind == "jvm" else "worker"
            peak[key] = max(peak[key], rss)
            cpu[pid] = secs
            if key == "worker":
                worker_cpu[pid] = secs
        time.sleep(0.2)
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join()
    err = "".join(err_chunks)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-3000:]}")
    kernel = usage.ru_utime + usage.ru_stime if usage is not None else 0.0
    return {
        "wall": wall,
        "cpu": max(sum(cpu.values()), kernel),
        "worker_cpu": max(worker_cpu.values(), default=0.0),
        **{k: v / 2**20 for k, v in peak.items()},
    }


def same(local: Path, spark: Path) -> None:
    """Every table of the Spark export holds the local export's rows (as a multiset: row count
    and the sum of a hash of every row, computed by DuckDB in bounded memory, whatever the size)."""
    import duckdb
    import pyarrow.parquet as pq

    for f in sorted(local.glob("*.parquet")):
        cols = ", ".join(f'"{c}"' for c in pq.read_schema(f).names)
        q = "SELECT count(*), sum(hash({cols})::HUGEINT) FROM read_parquet('{p}')"
        a = duckdb.sql(q.format(cols=cols, p=f)).fetchall()[0]
        b = duckdb.sql(q.format(cols=cols, p=spark / f.stem / "*.parquet")).fetchall()[0]
        if a != b:
            raise SystemExit(f"{spark}: table {f.stem} differs from the local export: {b} against {a}")


def shares(path: Path, n: int = 2) -> None:
    """CPU seconds of the native engine over one capture, in this process (no Spark): whole, each
    of `n` shares, a share that owns no connection (what every share repeats: reading,
    reassembly, observing the connections that teach the others), the same not observing (the
    speculative shares `spark export` tries first), and reading and reassembly alone (no
    protocol). The ceiling of a shared capture's speed-up is whole / largest share."""
    import resource

    import pyarrow as pa
    from wiredump._engine import Dissector, TableFeed

    from wiredump.dissect.pipeline import Options

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    def run(label: str, opts: Options) -> float:
        c0 = cpu()
        d = Dissector(str(path), opts)
        feed = TableFeed(False)
        while (ready := feed.pump(d)) is not None:
            for _, stream in ready:
                pa.RecordBatchReader.from_stream(stream).read_all()
        for _, stream in feed.finish():
            pa.RecordBatchReader.from_stream(stream).read_all()
        secs = cpu() - c0
        print(f"{label:<44} {secs:8.2f} CPU s")
        return secs

    whole = run("whole capture", Options())
    parts = [run(f"share {k} of {n}", Options(shard=(k, n))) for k in range(n)]
    run("a share that owns nothing", Options(shard=(n, n)))
    run("a share that owns nothing, not observing", Options(shard=(n, n), observe_others=False))
    spec = [
        run(f"share {k} of {n}, not observing", Options(shard=(k, n), observe_others=False)) for k in range(n)
    ]
    run("reading and reassembly only (no protocol)", Options(protocols=()))
    print(
        f"ceiling of {n} shares: {whole / max(parts):.2f}x; {n} shares cost {sum(parts) / whole:.2f}x the whole"
    )
    print(
        f"not observing (what spark export tries first): ceiling {whole / max(spec):.2f}x; "
        f"{n} shares cost {sum(spec) / whole:.2f}x the whole"
    )


def build_large(size_mb: int, work: Path) -> Path:
    src = HERE / "data" / "kafka-large.pcap"
    if not src.exists():
        src = max((CORPUS / "kafka").glob("*.pcap"), key=lambda p: p.stat().st_size)
    n = max(1, -(-size_mb * 2**20 // src.stat().st_size))
    out = work / f"large-{size_mb}mb.pcap"
    subprocess.run(
        [sys.executable, str(HERE / "scale_capture.py"), str(src), str(out), "-n", str(n)], check=True
    )
    return out


def warm_up(sample: Path, work: Path) -> None:
    """One small Spark export, unmeasured: makes the JVM's class archive if there is none yet."""
    head = work / "warm-up.pcap"
    with open(sample, "rb") as f:
        head.write_bytes(f.read(1 << 20))  # a capture cut short: read up to the cut, `truncated`
    out = work / "warm-up"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "wiredump",
            "spark",
            "export",
            str(head),
            "-o",
            str(out),
            "--master",
            "local[1]",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    shutil.rmtree(out, ignore_errors=True)


def build_corpus(copies: int, work: Path) -> Path:
    out = work / "corpus"
    out.mkdir()
    for k in range(copies):
        for p in sorted(CORPUS.glob("*/*.pcap")):
            shutil.copy(p, out / f"{k:03d}-{p.parent.name}-{p.name}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=1024, help="size of the large capture")
    ap.add_argument("--copies", type=int, default=8, help="copies of the shared corpus")
    ap.add_argument("--split-size", default="128m", help="spark export --split-size")
    ap.add_argument(
        "--shards", type=int, default=0, help="spark export --shards (0: the default, chosen per capture)"
    )
    ap.add_argument("--capture", type=Path, help="use this capture as the large one instead of building it")
    ap.add_argument("--check", action="store_true", help="check every Spark table equals the local export")
    ap.add_argument(
        "--shares", action="store_true", help="only the CPU of shares of the large capture, no Spark"
    )
    ap.add_argument("--no-large", action="store_true", help="only the corpus")
    ap.add_argument("--no-corpus", action="store_true", help="only the large capture")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args()
    if args.shares:
        shares(
            args.capture or build_large(args.size_mb, Path(tempfile.mkdtemp(prefix="wiredump-spark-bench-")))
        )
        return
    work = Path(tempfile.mkdtemp(prefix="wiredump-spark-bench-"))
    try:
        inputs: dict[str, list[str]] = {}
        if not args.no_large:
            inputs["large capture"] = [str(args.capture or build_large(args.size_mb, work))]
        if not args.no_corpus:
            inputs["corpus"] = sorted(str(p) for p in build_corpus(args.copies, work).iterdir())
        rows = []
        first = next(iter(inputs.values()))[0]
        warm_up(Path(first), work)
        for label, paths in inputs.items():
            size = sum(
                (
                    Path(p).stat().st_size
                    if Path(p).is_file()
                    else sum(f.stat().st_size for f in Path(p).iterdir())
                )
                for p in paths
            )
            runs = {
                "local export": [
                    sys.executable,
                    "-m",
                    "wiredump",
                    "export",
                    *paths,
                    "-o",
                    str(work / "x"),
                ],  # fmt: skip
            }

            def spark(cores: int, out: str, shards: int, paths: list[str] = paths) -> list[str]:
                return [
                    sys.executable, "-m", "wiredump", "spark", "export", *paths,
                    "-o", str(work / out), "--master", f"local[{cores}]",
                    "--split-size", args.split_size, "--shards", str(shards),
                ]  # fmt: skip

            runs["spark local[1]"] = spark(1, "s1", args.shards)
            runs["spark local[2]"] = spark(2, "s2", args.shards)
            if len(paths) == 1 and args.shards == 0:
                # For comparison: the capture dissected by one task on two cores.
                runs["spark local[2] --shards 1"] = spark(2, "s3", 1)
            results = {}
            shutil.rmtree(work / "x", ignore_errors=True)
            for name, cmd in runs.items():
                out = Path(cmd[cmd.index("-o") + 1])
                shutil.rmtree(out, ignore_errors=True)
                load = os.getloadavg()[0]
                results[name] = r = measure(cmd)
                r["load"] = (load + os.getloadavg()[0]) / 2
                rows.append((label, size / 2**20, name, r))
                print(f"done: {label} / {name}: {r['wall']:.1f} s", file=sys.stderr)
                if args.check and out.name != "x":
                    same(work / "x", out)
                    print(f"checked: {label} / {name}: every table equals the local export", file=sys.stderr)
                    shutil.rmtree(out)
            one = results["spark local[1]"]["wall"]
            for name in runs:
                if name.startswith("spark local[2]"):
                    ratio = one / results[name]["wall"]
                    rows.append((label, size / 2**20, f"{name} / local[1] speed-up", {"ratio": ratio}))
                    busy = results["spark local[1]"]["worker_cpu"] / max(results[name]["worker_cpu"], 1e-9)
                    rows.append(
                        (label, size / 2**20, f"{name} / local[1] busiest worker CPU", {"ratio": busy})
                    )
        print(f"machine: {os.cpu_count()} cores; load: 1-minute load average, mean of start and end")
        print(
            f"{'input':<14} {'MB':>7} {'command':<32} {'wall s':>8} {'CPU s':>8} {'driver MB':>10} {'JVM MB':>8} {'worker MB':>10} {'wkr CPU s':>9} {'load':>5}"
        )
        for label, mb, name, r in rows:
            if "ratio" in r:
                print(f"{label:<14} {mb:>7.1f} {name:<32} {r['ratio']:>8.2f}x")
                continue
            flag = "  > 1 GiB!" if max(r["driver"], r["jvm"], r["worker"]) > 1024 else ""
            print(
                f"{label:<14} {mb:>7.1f} {name:<32} {r['wall']:>8.1f} {r['cpu']:>8.1f} {r['driver']:>10.0f} "
                f"{r['jvm']:>8.0f} {r['worker']:>10.0f} {r['worker_cpu']:>9.1f} {r['load']:>5.1f}{flag}"
            )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
