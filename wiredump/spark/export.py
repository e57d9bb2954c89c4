"""`wiredump spark export`: the five tables built on Spark from captures of any size.

How a run goes (each step bounded in memory whatever the capture sizes):

1. The driver expands the inputs (globs and directories, local or URIs) into files, makes
   plain paths absolute (executors do not share the driver's working directory) and opens the
   first bytes of each (`split.probe`). A missing, empty, unreadable or non-capture input
   becomes a row of the `captures` table and a line of the summary; `--strict` stops there.
2. No ranges and no shuffle (`_run_direct`): each task opens its captures itself (pyarrow's
   file systems, read in bounded chunks by the engine), builds the tables in Rust (`TableFeed`)
   and writes the tables' Parquet files itself: no table passes through the JVM, nothing is
   cached. A large capture that would leave cores idle is shared by several tasks
   (`plan_shards`), each reading every packet and decoding its share of the connections
   (`Options.shard`), so numbers, detection and run state are the whole capture's; small
   captures are packed together so that one task writes one file per table for many of them.
   Why this and not a connection-keyed shuffle: docs/spark.md. With `--route ranges`
   (`JobOptions.route`, `wiredump.spark.ranges`) captures are instead cut into byte ranges read
   once each, the records shuffled to the tasks that dissect them.
3. The driver writes the `captures` table, an empty file for a table no task wrote (so every
   table reads the same way), and `DIR/_wiredump.json`, the list of files each run wrote.
   `--mode overwrite` deletes only files listed there, after the new run succeeded; `append`
   adds a run; the default refuses a directory that already holds an export.

Layout: `DIR/<table>/part-RRRRR-PPPPP.parquet` (run, partition: the same names for the same
inputs), each file with every local column (same types and units) plus `capture_date`.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import glob
import json
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from wiredump.dissect import split
from wiredump.dissect.capture import CaptureError
from wiredump.dissect.tables import PARQUET_OPTIONS, SCHEMAS, TABLES
from wiredump.spark import timing
from wiredump.spark.tables import CAPTURES_SCHEMA, DATE_COLUMN, spark_arrow_schema

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

MANIFEST = "_wiredump.json"
SPLIT_SIZE = 128 << 20
"""Bytes per range: HDFS's block size, and a few seconds of one core's dissection."""
FILE_BYTES = 256 << 20
"""Capture bytes one writing task takes on, at most (unless fewer tasks than cores would do):
the tables of that much capture are some tens of MB of Parquet, a sensible file size."""
ROW_GROUP_ROWS = 65536
ROW_GROUP_BYTES = 64 << 20
"""A row group is written at this many rows or bytes, whichever comes first (message values
can be large: memory per task stays bounded)."""
GLOB_CHARS = frozenset("*?[")
ROUTES = ("shares", "ranges")
"""How captures reach the tasks that dissect them (`JobOptions.route`)."""


class ExportError(Exception):
    """One sentence for the user (exit 2)."""


@dataclass(slots=True)
class JobOptions:
    """What the executors need (plain data: it is pickled to them)."""

    values: bool = False
    decode_as: dict[int, str] = field(default_factory=dict)
    split_size: int = SPLIT_SIZE
    file_bytes: int = FILE_BYTES
    shards: int = 0
    """Tasks that dissect one capture, each decoding a share of its connections (`Options.shard`:
    every share sees every packet, so detection, stream numbers and what connections teach each
    other are those of the whole capture). 0: chosen per capture (`plan_shards`); with the
    `ranges` route, 1 (more only spreads the connections of a capture cut into several ranges)."""
    route: str = "shares"
    """`shares` (each task reads whole captures, a large one shared: `_run_direct`) or `ranges`
    (captures cut into `split_size` byte ranges read once each, records shuffled to the tasks
    that dissect them: `wiredump.spark.ranges`)."""


@dataclass(slots=True)
class CaptureRow:
    """One input as the `captures` table records it."""

    capture: str
    status: str
    """`ok`, `truncated` (read up to where the file is cut short or damaged), `missing`, `empty`,
    `not_a_capture`, `unreadable`."""
    reason: str | None = None
    packets: int | None = None
    size: int | None = None
    ranges: int | None = None


@dataclass(slots=True)
class ExportResult:
    counts: dict[str, int]
    captures: list[CaptureRow]
    run: int
    files: list[str]

    @property
    def skipped(self) -> list[CaptureRow]:
        return [c for c in self.captures if c.status not in ("ok", "truncated")]


# -- inputs --------------------------------------------------------------------------------------------
def _status(e: CaptureError) -> str:
    text = str(e)
    if "no such file" in text:
        return "missing"
    if "is empty" in text:
        return "empty"
    if "cannot be read" in text or "permission denied" in text:
        return "unreadable"
    return "not_a_capture"


def expand(inputs: Sequence[str]) -> list[tuple[str, str | None, str | None]]:
    """(name as the user would type it, absolute path or URI, error) for every file the inputs name.

    A glob or a directory gives its files in name order (directories recursively); a pattern that
    matches nothing, or a path that does not exist, gives one entry with the error.
    """
    out: list[tuple[str, str | None, str | None]] = []
    for given in inputs:
        if "://" in given:
            out.extend(_expand_uri(given))
            continue
        if GLOB_CHARS & set(given):
            found = sorted(p for p in glob.glob(given, recursive=True) if os.path.isfile(p))
            out.extend((p, os.path.abspath(p), None) for p in found)
            if not found:
                out.append((given, None, f"{given}: no such file (the pattern matches nothing)"))
        elif os.path.isdir(given):
            found = sorted(
                os.path.join(d, f) for d, _, fs in os.walk(given) for f in fs if not f.startswith((".", "_"))
            )
            out.extend((p, os.path.abspath(p), None) for p in found)
        else:
            out.append((given, os.path.abspath(given), None))
    return out


def _expand_uri(given: str) -> list[tuple[str, str | None, str | None]]:
    from pyarrow import fs as pafs

    scheme, rest = given.split("://", 1)
    try:
        if not GLOB_CHARS & set(given):
            fsys, path = split.filesystem(given)
            info = fsys.get_file_info(path)
            if info.type != pafs.FileType.Directory:
                return [(given, given, None)]
            base, pattern = path, None
        else:
            head = rest[: min(rest.index(c) for c in GLOB_CHARS if c in rest)]
            base_uri = f"{scheme}://{head.rsplit('/', 1)[0]}"
            fsys, base = split.filesystem(base_uri)
            pattern = given
        infos = fsys.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
    except Exception as e:  # noqa: BLE001 - pyarrow's errors for a bad URI vary by file system
        return [(given, None, f"{given}: cannot be read ({e})")]
    prefix = given[: len(given) - len(rest)]  # the scheme as typed
    root = rest.split("/", 1)[0] if not rest.startswith("/") else ""
    found = []
    for info in sorted(infos, key=lambda i: i.path):
        if info.type != pafs.FileType.File or info.base_name.startswith((".", "_")):
            continue
        uri = f"{prefix}{root}{info.path}" if root else f"{prefix}{info.path}"
        if scheme == "file" and not uri.startswith("file:///"):
            uri = "file://" + info.path
        if pattern is None or fnmatch.fnmatchcase(uri, pattern):
            found.append((uri, uri, None))
    if not found:
        return [(given, None, f"{given}: no such file (nothing matches)")]
    return found


# -- the job -------------------------------------------------------------------------------------------
def part_name(run: int, part: int) -> str:
    return f"part-{run:05d}-{part:05d}.parquet"


def _date(ts_us: int) -> dt.date:
    return (dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=ts_us)).date()


class _PartWriter:
    """One table's file of one task: batches of many captures gathered into large row groups."""

    def __init__(self, fsys: Any, path: str, table: str) -> None:
        self.fsys = fsys
        self.path = path
        self.schema = spark_arrow_schema(table)
        fsys.create_dir(path.rsplit("/", 1)[0], recursive=True)
        self.sink = fsys.open_output_stream(path)
        self.writer = pq.ParquetWriter(self.sink, self.schema, **PARQUET_OPTIONS)
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = 0
        self.pending_bytes = 0
        self.rows = 0

    def add(self, batch: pa.RecordBatch, date: dt.date | None) -> None:
        cols = [*batch.columns, pa.array([date] * batch.num_rows, type=pa.date32())]
        self.pending.append(pa.RecordBatch.from_arrays(cols, schema=self.schema))
        self.pending_rows += batch.num_rows
        self.pending_bytes += batch.nbytes
        self.rows += batch.num_rows
        if self.pending_rows >= ROW_GROUP_ROWS or self.pending_bytes >= ROW_GROUP_BYTES:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.writer.write_table(pa.Table.from_batches(self.pending, self.schema), ROW_GROUP_ROWS)
            self.pending, self.pending_rows, self.pending_bytes = [], 0, 0

    def close(self) -> int:
        self.flush()
        self.writer.close()
        self.sink.close()
        return self.rows

    def abandon(self) -> None:
        """Closes the file without its pending rows and removes it (a speculative share
        dissected again: `_dissect`)."""
        self.pending = []
        self.writer.close()
        self.sink.close()
        self.fsys.delete_file(self.path)


def _pack(sizes: dict[tuple[int, int], int], parts: int) -> dict[tuple[int, int], int]:
    """(capture, shard) groups onto `parts` writing tasks, largest first onto the least loaded."""
    load = [0] * parts
    out = {}
    for g in sorted(sizes, key=lambda g: (-sizes[g], g)):
        p = min(range(parts), key=lambda k: (load[k], k))
        out[g] = p
        load[p] += sizes[g]
    return out


def read_manifest(out: str) -> dict[str, Any] | None:
    fsys, root = split.filesystem(out)
    from pyarrow import fs as pafs

    path = f"{root}/{MANIFEST}"
    if fsys.get_file_info(path).type != pafs.FileType.File:
        return None
    with fsys.open_input_stream(path) as f:
        return json.loads(f.read().decode())


def has_export(out: str) -> bool:
    """The directory already holds tables (written by wiredump or anyone else)."""
    from pyarrow import fs as pafs

    if read_manifest(out) is not None:
        return True
    fsys, root = split.filesystem(out)
    for name in (*TABLES, "captures"):
        if fsys.get_file_info(f"{root}/{name}").type != pafs.FileType.NotFound:
            return True
    return False


def plan_inputs(
    inputs: Sequence[str], options: JobOptions
) -> tuple[list[split.CaptureFile], list[CaptureRow]]:
    """The files to read and a `captures` row for every input (those failing already final)."""
    files: list[split.CaptureFile] = []
    rows: list[CaptureRow] = []
    for name, uri, error in expand(inputs):
        if error is not None or uri is None:
            rows.append(CaptureRow(name, "missing", error))
            continue
        try:
            cf = split.probe(name, uri)
        except CaptureError as e:
            rows.append(CaptureRow(name, _status(e), str(e)))
            continue
        files.append(cf)
        rows.append(CaptureRow(name, "ok", None, None, cf.size))
    return files, rows


def run_export(
    spark: SparkSession | SparkContext,
    inputs: Sequence[str],
    out: str,
    options: JobOptions | None = None,
    mode: str = "error",
    planned: tuple[list[split.CaptureFile], list[CaptureRow]] | None = None,
) -> ExportResult:
    """Write every table under `out/<table>/`; see the module's doc. `spark` is a session or
    just a context (`session.get_context`): the job uses only the RDD API."""
    options = options or JobOptions()
    if mode not in ("error", "append", "overwrite"):
        raise ExportError(f"--mode must be append or overwrite, not {mode!r}")
    if options.route not in ROUTES:
        raise ExportError(f"--route must be {' or '.join(ROUTES)}, not {options.route!r}")
    out = split.absolute(out)
    manifest = read_manifest(out)
    if mode == "error" and has_export(out):
        raise ExportError(f"{out} already holds an export: add to it with --mode append, or --mode overwrite")
    runs = list((manifest or {}).get("runs", []))
    run = max((r["run"] for r in runs), default=-1) + 1
    files, rows = planned or plan_inputs(inputs, options)
    timing.mark("export planned")
    row_of = {}
    k = 0
    for i, r in enumerate(rows):
        if r.status == "ok":
            row_of[k] = i
            k += 1
    sc = getattr(spark, "sparkContext", spark)
    written: list[str] = []
    counts = dict.fromkeys(TABLES, 0)
    if files:
        if options.route == "ranges":
            from wiredump.spark.ranges import run_ranges

            results = run_ranges(sc, files, options, out, run, rows, row_of)
        else:
            results = _run_direct(sc, files, options, out, run, rows, row_of)
        timing.mark("job done")
        for r in results:
            if r[0] == "timing":
                for label, at in r[3]:
                    timing.mark(f"task {r[1]} (pid {r[2]}): {label}", at)
            if r[0] == "capture":
                row = rows[row_of[r[1]]]
                row.packets = r[2]
                if r[3]:
                    row.status, row.reason = "truncated", f"{row.capture}: {r[3]}"
            elif r[0] == "file":
                counts[r[1]] += r[3]
                written.append(r[2])
        for r in results:  # after the shares that did read it
            if r[0] == "failed":
                row = rows[row_of[r[1]]]
                row.status, row.reason = r[2], r[3]
        for i in range(len(files)):
            row = rows[row_of[i]]
            if row.status == "ok" and row.packets is None:
                row.packets = 0
    written += _driver_files(out, run, rows, written)
    timing.mark("driver files written")
    counts["anomalies"] += sum(r.status not in ("ok", "truncated") for r in rows)
    _commit(out, run, mode, runs, written, rows)
    timing.mark("committed")
    return ExportResult(counts, rows, run, written)


def cores(sc: Any) -> int:
    """Tasks the job runs at once: `local[N]`'s N (wiredump's local mode sets
    `spark.default.parallelism` for its own reasons, so that is not it), a cluster's default
    parallelism (its executors' cores) otherwise."""
    m = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\d+)?\])?", sc.master)
    if m is None:
        return max(1, sc.defaultParallelism)
    if m.group(1) is None:
        return 1
    return (os.cpu_count() or 1) if m.group(1) == "*" else max(1, int(m.group(1)))


def plan_shards(sizes: Sequence[int], cores: int, split_size: int, shards: int = 0) -> list[int]:
    """How many tasks dissect each capture (`--shards 0`: chosen here).

    Every share reads and reassembles the whole capture and follows the connections that teach
    the others (Kafka's topic names): that is about a sixth of
    dissecting the capture (benchmarks/README.md), paid once more per extra share. So a
    capture is shared only by cores that would otherwise have nothing to do: its share of the
    job's bytes times the cores, rounded, at most one share per `split_size` bytes of it. One
    large capture on 2 cores: 2 shares; a corpus of similar captures: 1 each.
    """
    if shards > 0:
        return [shards] * len(sizes)
    total = sum(sizes) or 1
    return [max(1, min(cores, int(size * cores / total + 0.5), size // max(1, split_size))) for size in sizes]


def _run_direct(
    sc: Any,
    files: list[split.CaptureFile],
    options: JobOptions,
    out: str,
    run: int,
    rows: list[CaptureRow],
    row_of: dict[int, int],
) -> list[tuple]:
    """The job: no ranges, no shuffle. Each task opens its captures itself
    (pyarrow's file systems, read in bounded chunks by the engine) and dissects them whole, or
    its share of their connections when a capture is shared by several tasks; small captures
    are packed together so that one task writes one file per table for many of them."""
    n = cores(sc)
    shares = plan_shards([cf.size for cf in files], n, options.split_size, options.shards)
    for i, k in enumerate(shares):
        rows[row_of[i]].ranges = k
    sizes = {(i, k, m): files[i].size // m for i, m in enumerate(shares) for k in range(m)}
    total = sum(sizes.values())
    parts = max(1, min(len(sizes), max(n, math.ceil(total / options.file_bytes))))
    part_of = _pack(sizes, parts)  # type: ignore[arg-type]
    by_part: list[list[tuple[int, int, int]]] = [[] for _ in range(parts)]
    for g in sorted(sizes):
        by_part[part_of[g]].append(g)  # type: ignore[index]
    return sc.parallelize(by_part, parts).mapPartitionsWithIndex(_dissect(files, options, out, run)).collect()


class _Observe(Exception):  # noqa: N818 - a signal, not an error
    """A speculative share looked up run state another share's connections could have taught."""


def _dissect(files: list[split.CaptureFile], options: JobOptions, out: str, run: int):  # noqa: ANN202
    """The task of `_run_direct`: dissects its (capture, k, n) groups into one file per table.

    A shared capture's share is first dissected **speculatively**: without observing the other
    shares' connections (`Options.observe_others` off), which is most of what every share
    repeats (a share owning nothing of the 1 GiB benchmark capture: 2.1 CPU s observing, 0.8 s
    not). Its rows are the exact ones as long as it looks up no run state another connection
    could have taught (`Dissector.run_state_consulted`: a Kafka topic id), which is checked
    after every batch. When it does, the task stops, removes its files and starts again with
    every share observing: exact, at the price of what it had done so far. Speculative groups
    come first, so that price is their own work up to the first lookup (early in a capture
    whose consumers fetch by topic id: their first Fetch).
    """

    def task(part: int, lists: Iterator[list[tuple[int, int, int]]]) -> Iterator[tuple]:
        import time

        marks = [("process started", timing.process_start()), ("task started", time.time())]
        from wiredump._engine import Dissector, TableFeed  # noqa: F401 - imported once, timed here

        marks.append(("engine imported", time.time()))
        # Shared captures first (a stable sort: the planned order otherwise).
        groups = sorted((g for gs in lists for g in gs), key=lambda g: g[2] == 1)
        fsys, root = split.filesystem(out)
        speculate = any(n > 1 for _, _, n in groups)
        while True:
            writers: dict[str, _PartWriter] = {}
            try:
                results = list(
                    _groups(groups, speculate, files, options, fsys, root, run, part, writers, marks)
                )
                break
            except _Observe as e:
                for w in writers.values():
                    w.abandon()
                marks.append((f"{e}: files removed, again observing, CPU {timing.cpu():.2f} s", time.time()))
                speculate = False
        yield from results
        for table, w in writers.items():
            yield ("file", table, w.path, w.close())
        marks.append((f"files closed, CPU {timing.cpu():.2f} s", time.time()))
        if timing.enabled():
            yield ("timing", part, os.getpid(), marks)

    return task


def _groups(
    groups: list[tuple[int, int, int]],
    speculate: bool,
    files: list[split.CaptureFile],
    options: JobOptions,
    fsys: Any,
    root: str,
    run: int,
    part: int,
    writers: dict[str, _PartWriter],
    marks: list[tuple[str, float]],
) -> Iterator[tuple]:
    """The groups of one task into `writers`; raises `_Observe` when a speculative share must
    be dissected again observing (see `_dissect`)."""
    import time

    from wiredump._engine import Dissector, TableFeed
    from wiredump.dissect.pipeline import Options

    for index, k, n in groups:
        cf = files[index]
        guess = speculate and n > 1
        opts = Options(
            decode_as=dict(options.decode_as), shard=(k, n) if n > 1 else None, observe_others=not guess
        )
        try:
            src, path = split.filesystem(cf.uri)
            date = _first_date(cf)
            stream = src.open_input_stream(path, compression=None)
            dissector = Dissector(stream, opts, name=cf.name)
        # Every share reports its failure: a share that could not read the capture must not
        # leave it marked `ok` with the rows of the other shares only.
        except CaptureError as e:  # a compressed file whose content is not a capture
            status = "not_a_capture" if _status(e) == "not_a_capture" else "unreadable"
            yield ("failed", index, status, str(e))
            continue
        except Exception as e:  # noqa: BLE001 - the capture becomes an `unreadable` row
            yield ("failed", index, "unreadable", f"{cf.name}: cannot be read ({e})")
            continue
        # One feed per capture share: a batch then holds one capture's rows (one date).
        feed = TableFeed(options.values)
        with stream:
            while (ready := feed.pump(dissector)) is not None:
                if guess and dissector.run_state_consulted:
                    raise _Observe(f"capture {index} share {k}/{n} looked up run state")
                _add_native(writers, fsys, root, run, part, ready, date)
            last = feed.finish()
            if guess and dissector.run_state_consulted:
                raise _Observe(f"capture {index} share {k}/{n} looked up run state")
            _add_native(writers, fsys, root, run, part, last, date)
        end = feed.capture_end
        how = "speculatively" if guess else "observing" if n > 1 else "whole"
        marks.append(
            (f"capture {index} share {k}/{n} dissected {how}, CPU {timing.cpu():.2f} s", time.time())
        )
        if k == 0 and end is not None:
            yield ("capture", index, end[1], end[2])


def _add_native(
    writers: dict[str, _PartWriter],
    fsys: Any,
    root: str,
    run: int,
    part: int,
    ready: list[tuple[str, Any]],
    date: dt.date | None,
) -> None:
    for table, stream in ready:
        w = writers.get(table)
        if w is None:
            w = writers[table] = _PartWriter(fsys, f"{root}/{table}/{part_name(run, part)}", table)
        for batch in pa.RecordBatchReader.from_stream(stream):
            w.add(batch, date)


def _first_date(cf: split.CaptureFile) -> dt.date | None:
    """The UTC date of a capture's first record (the `capture_date` column), read on its own."""
    for rec in split.read_range(cf, split.whole_file(cf)):
        return _date(rec.ts_us)
    return None


def _driver_files(out: str, run: int, rows: list[CaptureRow], written: list[str]) -> list[str]:
    """The captures table, the `unreadable_capture` anomalies and an empty file for each table no task wrote."""
    fsys, root = split.filesystem(out)
    made = []
    have = {p.rsplit("/", 2)[-2] for p in written}
    skipped = [r for r in rows if r.status not in ("ok", "truncated")]
    for table in TABLES:
        if table == "anomalies" and skipped:
            n = len(skipped)
            cols = {
                "capture": [r.capture for r in skipped],
                "packet": [0] * n,
                "kind": ["unreadable_capture"] * n,
                "detail": [r.reason for r in skipped],
            }
            made.append(_write_table(fsys, f"{root}/anomalies/part-{run:05d}-driver.parquet", table, cols, n))
        elif table not in have:
            made.append(_write_table(fsys, f"{root}/{table}/part-{run:05d}-empty.parquet", table, {}, 0))
    cap = pa.table(
        {
            "capture": [r.capture for r in rows],
            "status": [r.status for r in rows],
            "reason": [r.reason for r in rows],
            "packets": [r.packets for r in rows],
            "bytes": [r.size for r in rows],
            "ranges": [r.ranges for r in rows],
            "run": [run] * len(rows),
        },
        schema=CAPTURES_SCHEMA,
    )
    path = f"{root}/captures/part-{run:05d}.parquet"
    fsys.create_dir(f"{root}/captures", recursive=True)
    with fsys.open_output_stream(path) as sink:
        pq.write_table(cap, sink, **PARQUET_OPTIONS)
    made.append(path)
    return made


def _write_table(fsys: Any, path: str, table: str, cols: dict[str, list], n: int) -> str:
    schema = spark_arrow_schema(table)
    arrays = [pa.array(cols.get(f.name, [None] * n), type=f.type) for f in schema]
    fsys.create_dir(path.rsplit("/", 1)[0], recursive=True)
    with fsys.open_output_stream(path) as sink:
        pq.write_table(pa.Table.from_arrays(arrays, schema=schema), sink, **PARQUET_OPTIONS)
    return path


def _commit(
    out: str, run: int, mode: str, runs: list[dict], written: list[str], rows: list[CaptureRow]
) -> None:
    """Record this run's files; with overwrite, delete the files earlier runs wrote (and only those)."""
    fsys, root = split.filesystem(out)
    rel = sorted(p[len(root) + 1 :] for p in written)
    mine = {"run": run, "mode": mode, "files": rel, "captures": [r.capture for r in rows]}
    if mode == "overwrite":
        from pyarrow import fs as pafs

        keep = set(rel)
        for old in runs:
            for f in old.get("files", []):
                if f not in keep and fsys.get_file_info(f"{root}/{f}").type == pafs.FileType.File:
                    fsys.delete_file(f"{root}/{f}")
        runs = []
    with fsys.open_output_stream(f"{root}/{MANIFEST}") as sink:
        sink.write(json.dumps({"runs": [*runs, mine]}, indent=1).encode())


__all__ = [
    "ExportError",
    "ExportResult",
    "CaptureRow",
    "JobOptions",
    "run_export",
    "plan_inputs",
    "expand",
    "SCHEMAS",
    "DATE_COLUMN",
]
