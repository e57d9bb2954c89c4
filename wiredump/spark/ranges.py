"""`wiredump spark export --route ranges`: captures cut into byte ranges, records shuffled.

Why a second route beside the default shares (`export._run_direct`): a share reads and
reassembles the whole capture, so n shares of one huge capture repeat that reading n times.
Here each byte range (`--split-size`) is read once, by one task; the price is that every record
then crosses the JVM in Spark's shuffle. Many cores on one huge capture: ranges; a corpus, or a
few cores: shares (docs/spark.md weighs the two).

How a run goes:

1. Each capture is cut into byte ranges (`split.cut`); tasks count the records of each range
   and the driver chains the counts into packet numbers (`split.plan`, which merges and counts
   again the ranges whose guessed first boundary does not chain up with the range before).
2. Tasks read their ranges (`split.read_range`) and emit the records in chunks of consecutive
   packets, keyed by (capture, shard) and first packet number; Spark's sort-based shuffle
   (`repartitionAndSortWithinPartitions`, which spills to disk, not memory) brings each
   capture's records together in packet order, with small captures packed together so that one
   task writes one file per table for many of them.
3. Each dissecting task hands a capture's records to the native engine
   (`wiredump.dissect.records.table_batches`, `Dissector.from_records`): the packet numbers are
   the whole file's and the engine runs over every packet in order, so stream numbers,
   detection and run state are the whole capture's and the rows are the local export's. With
   `--shards N` every record of a capture cut into several ranges goes to N tasks, each
   decoding its share of the connections (`Options.shard`).
4. The tasks write the tables' Parquet files themselves (`export._PartWriter`): no table passes
   through the JVM, nothing is cached.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections.abc import Iterator
from typing import Any

from wiredump.dissect import split
from wiredump.dissect.capture import CaptureError, Record
from wiredump.spark.export import CaptureRow, JobOptions, _date, _pack, _PartWriter, _status, part_name

__all__ = ["run_ranges"]

CHUNK_RECORDS = 512
CHUNK_BYTES = 4 << 20
"""Records travel through the shuffle in chunks of consecutive packets (at most this many, or
about this many bytes): far fewer objects to pickle and sort than one per packet."""


def run_ranges(
    sc: Any,
    files: list[split.CaptureFile],
    options: JobOptions,
    out: str,
    run: int,
    rows: list[CaptureRow],
    row_of: dict[int, int],
) -> list[tuple]:
    """The job (see the module's doc); its results are those of the default route: `("capture",
    index, last packet, truncation)` and `("file", table, path, rows)` tuples, and the `ranges`
    of each capture's row set to the number of ranges it was read in."""
    tasks = _plan(sc, files, options, rows, row_of)
    by_file: dict[int, int] = {}
    for t in tasks:
        by_file[t.file] = by_file.get(t.file, 0) + 1
    for i, n in by_file.items():
        rows[row_of[i]].ranges = n
    want = max(1, options.shards)
    shards = {i: min(want, n) for i, n in by_file.items() if min(want, n) > 1}
    sizes = {(i, k): files[i].size // shards.get(i, 1) for i in by_file for k in range(shards.get(i, 1))}
    total = sum(sizes.values())
    parts = max(1, min(len(sizes), max(sc.defaultParallelism, math.ceil(total / options.file_bytes))))
    part_of = _pack(sizes, parts)
    if not tasks:
        return []
    return (
        sc.parallelize(tasks, len(tasks))
        .flatMap(_read(files, shards))
        .repartitionAndSortWithinPartitions(parts, lambda key: part_of[key[0]])
        .mapPartitionsWithIndex(_write(files, options, out, run, shards))
        .collect()
    )


def _plan(
    sc: Any,
    files: list[split.CaptureFile],
    options: JobOptions,
    rows: list[CaptureRow],
    row_of: dict[int, int],
) -> list[split.Task]:
    """Count the ranges in tasks until every file's counts chain up; a file that cannot be read
    becomes its row's status (and has no tasks)."""
    ranges = [r for i, cf in enumerate(files) for r in split.cut(cf, i, options.split_size)]
    tasks: list[split.Task] = []
    while ranges:
        counted = sc.parallelize(ranges, len(ranges)).map(_count(files)).collect()
        failed = {r.file: c for r, c in counted if isinstance(c, tuple)}
        for i, (status, why) in failed.items():
            rows[row_of[i]].status, rows[row_of[i]].reason = status, why
        ok = [(r, c) for r, c in counted if r.file not in failed]
        done, ranges = split.plan(files, [r for r, _ in ok], [c for _, c in ok])  # type: ignore[misc]
        tasks += done
    return tasks


def _count(files: list[split.CaptureFile]):  # noqa: ANN202 - a closure Spark pickles
    def run(rng: split.Range) -> tuple[split.Range, split.RangeCount | tuple[str, str]]:
        try:
            return rng, split.count_range(files[rng.file], rng)
        except CaptureError as e:  # a compressed file whose content is not a capture
            return rng, ("not_a_capture" if _status(e) == "not_a_capture" else "unreadable", str(e))
        except Exception as e:  # noqa: BLE001 - the capture becomes an `unreadable` row
            return rng, ("unreadable", f"{files[rng.file].name}: cannot be read ({e})")

    return run


def _read(files: list[split.CaptureFile], shards: dict[int, int]):  # noqa: ANN202 - a closure Spark pickles
    def run(task: split.Task) -> Iterator[tuple[tuple[tuple[int, int], int, int], tuple]]:
        end = split.RangeEnd(None, 0)
        n = task.first_number
        groups = [(task.file, k) for k in range(shards.get(task.file, 1))]
        chunk: list[tuple] = []
        size = 0
        for r in split.read_range(files[task.file], task, end):
            n = r.number
            chunk.append((r.number, r.ts_us, r.linktype, r.data, r.orig_len, r.ts_note))
            size += len(r.data)
            if len(chunk) >= CHUNK_RECORDS or size >= CHUNK_BYTES:
                for g in groups:
                    yield (g, chunk[0][0], 0), tuple(chunk)
                chunk, size = [], 0
        if chunk:
            for g in groups:
                yield (g, chunk[0][0], 0), tuple(chunk)
        # The range's end sorts after its last chunk (keyed by its first packet) and before the
        # next range's first chunk (keyed by the packet after this range's last).
        for g in groups:
            yield (g, n, 1), (end.truncated, end.skipped_unknown_link)

    return run


class _End:
    """The end-of-capture facts gathered from the range ends (read by the engine at the end)."""

    truncated: str | None = None
    skipped_unknown_link: int = 0


def _records(group: Iterator, end: _End, first: list[int], last: list[int]) -> Iterator[Record]:
    """One capture's records from the sorted shuffle; range ends give the end-of-capture facts."""
    for (_, _number, kind), v in group:
        if kind:
            end.skipped_unknown_link += v[1]
            if v[0]:
                end.truncated = v[0]
                return  # the file ends here for every reader
            continue
        if not first:
            first.append(v[0][1])
        last[0] = v[-1][0]
        for rec in v:
            yield Record(*rec)


def _write(files: list[split.CaptureFile], options: JobOptions, out: str, run: int, shards: dict[int, int]):  # noqa: ANN202
    def task(part: int, items: Iterator[tuple[tuple[tuple[int, int], int, int], tuple]]) -> Iterator[tuple]:
        from wiredump.dissect.pipeline import Options
        from wiredump.dissect.records import table_batches

        fsys, root = split.filesystem(out)
        writers: dict[str, _PartWriter] = {}
        for (index, shard), group in itertools.groupby(items, key=lambda kv: kv[0][0]):
            n = shards.get(index, 1)
            opts = Options(decode_as=dict(options.decode_as), shard=(shard, n) if n > 1 else None)
            end = _End()
            first: list[int] = []
            last = [0]
            date: list[dt.date | None] = []
            for table, batch in table_batches(
                files[index].name, _records(group, end, first, last), opts, end, options.values
            ):
                if not date:
                    date.append(_date(first[0]) if first else None)
                w = writers.get(table)
                if w is None:
                    w = writers[table] = _PartWriter(fsys, f"{root}/{table}/{part_name(run, part)}", table)
                w.add(batch, date[0])
            if shard == 0:
                yield ("capture", index, last[0], end.truncated)
        for table, w in writers.items():
            yield ("file", table, w.path, w.close())

    return task
