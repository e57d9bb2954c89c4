"""`wiredump spark export`: the five tables built on Spark from many captures.

Each capture is dissected inside an executor by the same code the local export
runs (`wiredump.dissect.tables.record_batches`), so the rows are the same. One
Spark task per capture: the list of paths becomes a DataFrame with one row per
partition, and `mapInArrow` turns each path into the record batches of the five
tables, widened into one schema (`WIDE`: a `table` column, then every table's
columns). Those rows are cached, so each capture is dissected once however many
tables are written; each table is then a filter and a projection (run in the JVM)
written as Parquet partitioned by `capture_date` and `protocol`.

Paths must be readable by the executors (a local path in local mode; a shared
file system on a cluster). Captures on HDFS/S3/… (a URI with a scheme) are read
with Spark's `binaryFile` source instead and dissected from a temporary file
(each such capture must be under 2 GiB, Spark's limit for one binary value).
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from wiredump.dissect.tables import SCHEMAS, TABLES
from wiredump.spark.tables import DATE_COLUMN, PARTITION_COLUMNS, spark_arrow_schema, spark_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _wide_schema() -> pa.Schema:
    """Every column of every table once (same-named columns share a type), plus `table`."""
    fields: dict[str, pa.Field] = {"table": pa.field("table", pa.string())}
    for name in TABLES:
        for f in spark_arrow_schema(name):
            old = fields.setdefault(f.name, f)
            if old.type != f.type:  # pragma: no cover - guarded by a test
                raise TypeError(f"column {f.name} has two types: {old.type} and {f.type}")
    return pa.schema(list(fields.values()))


WIDE = _wide_schema()
"""What the dissecting executors emit: rows of all five tables in one DataFrame, told apart by
`table`, each row filling its own table's columns (the rest null). Writing a table is then a
filter and a projection that Spark runs in the JVM over the cached rows, with no second pass
through Python."""


@dataclass(slots=True)
class JobOptions:
    """What the executors need to dissect a capture (plain data: it is pickled to them)."""

    values: bool = False
    decode_as: dict[int, str] = field(default_factory=dict)


def _has_scheme(path: str) -> bool:
    """A URI (hdfs://, s3a://, file://…) is read by Spark's binaryFile source; a plain path directly."""
    return "://" in path


def capture_date(path: str) -> dt.date | None:
    """The UTC date of a capture's first packet (None for a capture without packets)."""
    from wiredump.dissect.capture import open_capture

    reader = open_capture(path)
    try:
        for rec in reader:
            return (
                dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=rec.ts_us)
            ).date()
        return None
    finally:
        reader.close()


def _widen(table: str, batch: pa.RecordBatch, date: dt.date | None) -> pa.RecordBatch:
    """A table's batch as a batch of the wide schema (µs timestamps, capture_date, other columns null)."""
    n = batch.num_rows
    own = {f.name: batch.column(i) for i, f in enumerate(batch.schema)}
    own["table"] = pa.array([table] * n, type=pa.string())
    own[DATE_COLUMN] = pa.array([date] * n, type=pa.date32())
    cols = []
    for f in WIDE:
        col = own.get(f.name)
        if col is None:
            col = pa.nulls(n, type=f.type)
        elif col.type != f.type:
            col = col.cast(f.type)
        cols.append(col)
    return pa.RecordBatch.from_arrays(cols, schema=WIDE)


def dissect_capture(path: str, name: str, options: JobOptions) -> Iterator[pa.RecordBatch]:
    """Wide batches for every table batch of one capture (run inside an executor).

    `path` is where the capture is read; `name` is what its `capture` column says.
    A capture that cannot be read gives one `unreadable_capture` anomaly row rather
    than failing the whole job.
    """
    from wiredump.dissect.capture import CaptureError, open_capture
    from wiredump.dissect.pipeline import Options
    from wiredump.dissect.pipeline import dissect_capture as run
    from wiredump.dissect.tables import record_batches, rows_to_batch

    try:
        date = capture_date(path)
        reader = open_capture(path)
        reader.name = name
        events = run(reader, Options(decode_as=dict(options.decode_as)))
        for table, batch in record_batches(events, values=options.values):
            yield _widen(table, batch, date)
    except (CaptureError, OSError) as e:
        row = (name, 0, None, None, "unreadable_capture", None, f"{e}")
        yield _widen("anomalies", rows_to_batch("anomalies", [row]), None)


def _dissect_paths(options: JobOptions):  # noqa: ANN202 - a closure Spark pickles
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            for path in b.column("path").to_pylist():
                yield from dissect_capture(path, path, options)

    return run


def _dissect_contents(options: JobOptions):  # noqa: ANN202
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            for path, content in zip(
                b.column("path").to_pylist(), b.column("content").to_pylist(), strict=True
            ):
                fd, tmp = tempfile.mkstemp(prefix="wiredump-", suffix=".cap")
                try:
                    with os.fdopen(fd, "wb") as f:
                        f.write(content)
                    del content
                    yield from dissect_capture(tmp, path, options)
                finally:
                    os.unlink(tmp)

    return run


def dissected(spark: SparkSession, captures: Sequence[str], options: JobOptions) -> DataFrame:
    """Every capture dissected into wide rows, one Spark task per capture."""
    env_schema = spark_schema(WIDE)
    local = [c for c in captures if not _has_scheme(c)]
    remote = [c for c in captures if _has_scheme(c)]
    parts: list[DataFrame] = []
    if local:
        sc = spark.sparkContext
        paths = sc.parallelize([(p,) for p in local], numSlices=len(local)).toDF("path string")
        parts.append(paths.mapInArrow(_dissect_paths(options), env_schema))
    if remote:
        files = spark.read.format("binaryFile").load(remote).select("path", "content")
        parts.append(files.repartition(len(remote)).mapInArrow(_dissect_contents(options), env_schema))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def table_frame(wide: DataFrame, name: str) -> DataFrame:
    """Table `name`: its local columns in order, then `capture_date`."""
    from pyspark.sql import functions as F

    cols = spark_arrow_schema(name).names
    return wide.where(F.col("table") == name).select(*cols)


def run_export(
    spark: SparkSession,
    captures: Sequence[str],
    out: str,
    options: JobOptions | None = None,
    tables: Sequence[str] = TABLES,
) -> dict[str, int]:
    """Write every table under `out/<table>/` partitioned by capture date and protocol.

    Returns the row count of each table.
    """
    from pyspark import StorageLevel

    options = options or JobOptions()
    env = dissected(spark, captures, options).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        # Dissect every capture once, here; the writes below read the cached rows.
        sizes = {r["table"]: r["count"] for r in env.groupBy("table").count().collect()}
        for name in tables:
            df = table_frame(env, name)
            path = f"{out.rstrip('/')}/{name}"
            if sizes.get(name):
                df.write.mode("overwrite").partitionBy(*PARTITION_COLUMNS).parquet(path)
            else:
                # No rows: partitionBy would write no file at all, and readers could not tell the
                # schema. One empty file with every column (partition columns last, as Spark lays
                # them out) keeps the table readable.
                cols = [c for c in df.columns if c not in PARTITION_COLUMNS] + list(PARTITION_COLUMNS)
                df.select(*cols).coalesce(1).write.mode("overwrite").parquet(path)
        return {name: int(sizes.get(name) or 0) for name in tables}
    finally:
        env.unpersist()


__all__ = ["WIDE", "JobOptions", "run_export", "dissected", "table_frame", "capture_date", "SCHEMAS"]
