"""Export on several cores: connections split across worker processes, tables merged by packet.

Every worker reads the whole capture (reading and header parsing are cheap next to
decoding) but decodes only its share of the connections (`Options.shard`), and
writes its own Parquet part files. The parent then merges each table's parts in a
streaming k-way merge on the packet number, so the result has the same rows in the
same packet order as a single-process export, with memory bounded by one batch
per part.

The caller may hand in its own way of reading (`source`, e.g. one with a progress bar);
worker 0 reads through it, so one bar shows the reading while the others stay quiet.
"""

from __future__ import annotations

import multiprocessing as mp
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from wiredump.dissect.pipeline import CAPTURE_END, CaptureEnd, Event, Options, dissect
from wiredump.dissect.tables import PARQUET_OPTIONS, SCHEMAS, TABLES, TableWriter
from wiredump.dissect.workers import auto_workers  # noqa: F401  (importable from here as before)

MERGE_BATCH = 4096
OUT_ROWS = 16384
"""Rows per row group of the merged tables (as a serial export writes them)."""


# Row order of each table: the first key that is not null.
SORT_KEYS: dict[str, tuple[str, ...]] = {
    "frames": ("packet",),
    "messages": ("packet",),
    "anomalies": ("packet",),
    "exchanges": ("request_packet", "response_packet"),
    "connections": ("stream",),
    "partitions": ("packet",),
}


Source = Callable[[list[str], Options], Iterable[Event]]
"""Reads captures into events, as `dissect` does (a module-level function: it crosses to a worker)."""


def _worker(
    args: tuple[list[str], Options, bool, int, int, str, Source | None],
) -> tuple[dict[str, int], list[CaptureEnd]]:
    from wiredump.dissect.tables import TableSet

    paths, options, values, k, n, part_dir, source = args
    ends: list[CaptureEnd] = []
    tables = TableSet(Path(part_dir), fmt="parquet", values=values)
    read = source or dissect

    def events() -> Iterator[object]:
        for ev in read(paths, replace(options, shard=(k, n))):
            if ev.kind == CAPTURE_END:
                ends.append(ev.obj)
            yield ev

    try:
        tables.add_events(events())
    finally:
        counts = tables.close()
    return counts, ends


def _key(batch: pa.RecordBatch, table: str, captures: pa.Array) -> pa.Array:
    """capture rank × 2**40 + packet (or stream): one int64 that orders rows like a serial export."""
    cols = [batch.column(c) for c in SORT_KEYS[table]]
    key = cols[0]
    for c in cols[1:]:
        key = pc.coalesce(key, c)
    rank = pc.cast(pc.fill_null(pc.index_in(batch.column("capture"), value_set=captures), 0), pa.int64())
    return pc.add(pc.multiply(rank, 1 << 40), pc.fill_null(key, 0))


def _merge(table: str, parts: Sequence[Path], writer: _Sink, captures: pa.Array) -> int:
    """Merge sorted part files of one table; rows with equal keys keep part order."""
    iters = [pq.ParquetFile(p).iter_batches(batch_size=MERGE_BATCH) for p in parts if p.exists()]
    bufs: list[pa.Table | None] = [None] * len(iters)
    done = [False] * len(iters)
    written = 0
    out: list[pa.Table] = []  # merged rows not yet written: written in row groups of OUT_ROWS
    pending = 0

    def refill(i: int) -> None:
        while not done[i] and (bufs[i] is None or bufs[i].num_rows == 0):
            try:
                bufs[i] = pa.Table.from_batches([next(iters[i])])
            except StopIteration:
                done[i] = True
                bufs[i] = None

    for i in range(len(iters)):
        refill(i)
    while any(b is not None and b.num_rows for b in bufs):
        # Rows up to the smallest "last key" of the parts still being read are final.
        bound = None
        for i, b in enumerate(bufs):
            if b is not None and b.num_rows and not done[i]:
                last = _key(b.slice(b.num_rows - 1).to_batches()[0], table, captures)[0].as_py()
                bound = last if bound is None else min(bound, last)
        taken = []
        for i, b in enumerate(bufs):
            if b is None or not b.num_rows:
                continue
            key = _key(b.combine_chunks().to_batches()[0], table, captures)
            if bound is None:
                n = b.num_rows
            else:
                n = int(pc.sum(pc.less_equal(key, bound)).as_py() or 0)
            if n:
                taken.append(
                    b.slice(0, n)
                    .append_column("__k", key.slice(0, n))
                    .append_column("__p", pa.array([i] * n, pa.int32()))
                )
                bufs[i] = b.slice(n)
        if taken:
            t = pa.concat_tables(taken)
            order = pc.sort_indices(t, sort_keys=[("__k", "ascending"), ("__p", "ascending")])
            t = t.take(order).drop_columns(["__k", "__p"])
            out.append(t)
            pending += t.num_rows
            written += t.num_rows
            if pending >= OUT_ROWS:
                writer.write_table(pa.concat_tables(out).combine_chunks())
                out, pending = [], 0
        for i in range(len(iters)):
            refill(i)
    if out:
        writer.write_table(pa.concat_tables(out).combine_chunks())
    return written


class _Sink:
    """Writes merged Arrow tables as Parquet or JSON lines."""

    def __init__(self, table: str, path: Path, fmt: str) -> None:
        self.fmt = fmt
        self.table = table
        if fmt == "parquet":
            self.pq: pq.ParquetWriter | None = pq.ParquetWriter(str(path), SCHEMAS[table], **PARQUET_OPTIONS)
            self.jw: TableWriter | None = None
        else:
            self.pq = None
            self.jw = TableWriter(table, path, "jsonl")

    def write_table(self, t: pa.Table) -> None:
        t = t.cast(SCHEMAS[self.table])
        if self.pq is not None:
            self.pq.write_table(t, row_group_size=max(1, t.num_rows))
        else:
            assert self.jw is not None
            names = SCHEMAS[self.table].names
            cols = [t.column(n).to_pylist() for n in names]
            self.jw.write_rows(list(zip(*cols, strict=True)))

    def close(self) -> None:
        if self.pq is not None:
            self.pq.close()
        if self.jw is not None:
            self.jw.close()


def export_parallel(
    paths: list[str],
    out: Path,
    fmt: str,
    values: bool,
    options: Options,
    workers: int,
    source: Source | None = None,
) -> tuple[dict[str, int], list[CaptureEnd]]:
    """The five tables of `paths` in `out`, decoded by `workers` processes.

    `source`, when given, is how worker 0 reads (the others read with `dissect`)."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".wiredump-parts-", dir=out))
    try:
        jobs = [
            (paths, options, values, k, workers, str(tmp / f"part-{k}"), source if k == 0 else None)
            for k in range(workers)
        ]
        ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
        with ctx.Pool(workers) as pool:
            results = pool.map(_worker, jobs)
        ends = results[0][1]
        captures = pa.array([e.name for e in ends], pa.string())
        counts: dict[str, int] = {}
        ext = "parquet" if fmt == "parquet" else "jsonl"
        for table in TABLES:
            sink = _Sink(table, out / f"{table}.{ext}", fmt)
            try:
                parts = [tmp / f"part-{k}" / f"{table}.parquet" for k in range(workers)]
                counts[table] = _merge(table, parts, sink, captures)
            finally:
                sink.close()
        return counts, ends
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
