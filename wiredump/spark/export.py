"""`wiredump spark export`: the five tables built on Spark from many captures.

Each capture is dissected inside an executor by the same code the local export
runs (`wiredump.dissect.tables.record_batches`), so the rows are the same. One
Spark task per capture: the list of paths becomes a DataFrame with one row per
partition, and `mapInArrow` turns each path into an "envelope" of Arrow IPC blobs,
one per record batch of whichever table it belongs to. The envelopes are cached
once, so each capture is dissected once however many tables are written, and each
table is then unpacked (`mapInArrow` again, into the table's own schema) and
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

ENVELOPE = pa.schema(
    [
        ("table", pa.string()),
        ("capture", pa.string()),
        (DATE_COLUMN, pa.date32()),
        ("seq", pa.int64()),
        ("rows", pa.int64()),
        ("data", pa.binary()),
    ]
)
"""One row per record batch: which table, which capture, its order and size, and the batch as Arrow IPC."""


@dataclass(slots=True)
class JobOptions:
    """What the executors need to dissect a capture (plain data: it is pickled to them)."""

    values: bool = False
    decode_as: dict[int, str] = field(default_factory=dict)


def _has_scheme(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


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


def _ipc(batch: pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as w:
        w.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _envelope(rows: list[tuple[str, str, dt.date | None, int, int, bytes]]) -> pa.RecordBatch:
    cols = list(zip(*rows, strict=True)) if rows else [[] for _ in ENVELOPE]
    return pa.RecordBatch.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip(cols, ENVELOPE, strict=True)], schema=ENVELOPE
    )


def dissect_capture(path: str, name: str, options: JobOptions) -> Iterator[pa.RecordBatch]:
    """Envelope batches for every table batch of one capture (run inside an executor).

    `path` is where the capture is read; `name` is what its `capture` column says.
    A capture that cannot be read gives one `unreadable_capture` anomaly row rather
    than failing the whole job.
    """
    from wiredump.dissect.capture import CaptureError, open_capture
    from wiredump.dissect.pipeline import Options
    from wiredump.dissect.pipeline import dissect_capture as run
    from wiredump.dissect.tables import record_batches, rows_to_batch

    seq = 0
    try:
        date = capture_date(path)
        reader = open_capture(path)
        reader.name = name
        events = run(reader, Options(decode_as=dict(options.decode_as)))
        for table, batch in record_batches(events, values=options.values):
            yield _envelope([(table, name, date, seq, batch.num_rows, _ipc(batch))])
            seq += 1
    except (CaptureError, OSError) as e:
        row = (name, 0, None, None, "unreadable_capture", None, f"{e}")
        yield _envelope([("anomalies", name, None, seq, 1, _ipc(rows_to_batch("anomalies", [row])))])


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


def _unpack(name: str):  # noqa: ANN202
    target = spark_arrow_schema(name)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            dates = b.column(DATE_COLUMN)
            for i, blob in enumerate(b.column("data").to_pylist()):
                date = dates[i]
                for batch in pa.ipc.open_stream(blob):
                    cols = [
                        col.cast(f.type) if col.type != f.type else col
                        for col, f in zip(batch.columns, target, strict=False)
                    ]
                    cols.append(pa.array([date.as_py()] * batch.num_rows, type=pa.date32()))
                    yield pa.RecordBatch.from_arrays(cols, schema=target)

    return run


def envelopes(spark: SparkSession, captures: Sequence[str], options: JobOptions) -> DataFrame:
    """Every capture dissected into envelope rows, one Spark task per capture."""
    env_schema = spark_schema(ENVELOPE)
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


def table_frame(env: DataFrame, name: str) -> DataFrame:
    """Table `name` as a DataFrame of its Spark schema (local columns + `capture_date`)."""
    from pyspark.sql import functions as F

    return (
        env.where(F.col("table") == name)
        .sortWithinPartitions("capture", "seq")
        .mapInArrow(_unpack(name), spark_schema(spark_arrow_schema(name)))
    )


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
    env = envelopes(spark, captures, options).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        # Dissect every capture once, here; the writes below read the cached envelopes.
        sizes = {
            r["table"]: r["n"]
            for r in env.groupBy("table").agg({"rows": "sum"}).withColumnRenamed("sum(rows)", "n").collect()
        }
        for name in tables:
            df = table_frame(env, name)
            df.write.mode("overwrite").partitionBy(*PARTITION_COLUMNS).parquet(f"{out.rstrip('/')}/{name}")
        return {name: int(sizes.get(name) or 0) for name in tables}
    finally:
        env.unpersist()


__all__ = ["ENVELOPE", "JobOptions", "run_export", "envelopes", "table_frame", "capture_date", "SCHEMAS"]
