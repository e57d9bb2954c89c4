"""`spark.read.format("wiredump")`: captures as a Spark data source (PySpark's Python data source API).

    from wiredump.spark.source import register
    register(spark)
    frames = spark.read.format("wiredump").option("table", "frames").load("captures/*.pcap")

One table per read (`table`: frames, exchanges, messages, anomalies or connections; frames by
default), with the columns of `wiredump spark export`'s files (the local export's, then
`capture_date`). The path may be a file, a glob, a directory or a URI (`file://`, `hdfs://`,
`s3a://`), or several separated by commas; `values` ("true") includes message values. Each
capture is one input partition, dissected inside the executor by the engine of the local
export, read through pyarrow's file systems in bounded chunks. Inputs that are not readable
captures are left out (`wiredump spark export` reports them in its `captures` table).

For whole exports of large captures use `wiredump spark export`, which shares a large capture
between tasks and writes all tables in one pass; this source is for reading captures ad hoc.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from wiredump.dissect.tables import TABLES
from wiredump.spark.tables import spark_arrow_schema, spark_schema

try:
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
except ImportError:  # pragma: no cover - PySpark < 4.0 has no Python data sources
    DataSource = object  # type: ignore[assignment,misc]
    DataSourceReader = object  # type: ignore[assignment,misc]
    InputPartition = object  # type: ignore[assignment,misc]


def _schema(table: str) -> pa.Schema:
    """The export file's schema with timestamps at µs, Spark's precision (values unchanged)."""
    fields = []
    for f in spark_arrow_schema(table):
        t = pa.timestamp("us", tz="UTC") if pa.types.is_timestamp(f.type) else f.type
        fields.append(pa.field(f.name, t))
    return pa.schema(fields)


class _Capture(InputPartition):  # type: ignore[misc]
    def __init__(self, name: str, uri: str) -> None:
        self.name = name
        self.uri = uri


class WiredumpDataSource(DataSource):  # type: ignore[misc]
    """`format("wiredump")`: see the module's doc."""

    @classmethod
    def name(cls) -> str:
        return "wiredump"

    def _table(self) -> str:
        table = self.options.get("table", "frames")
        if table not in TABLES:
            raise ValueError(f"wiredump: option table must be one of {', '.join(TABLES)}, not {table!r}")
        return table

    def schema(self) -> Any:
        return spark_schema(_schema(self._table()))

    def reader(self, schema: Any) -> WiredumpReader:
        return WiredumpReader(self._table(), self.options)


class WiredumpReader(DataSourceReader):  # type: ignore[misc]
    def __init__(self, table: str, options: dict[str, str]) -> None:
        self.table = table
        self.values = str(options.get("values", "false")).lower() == "true"
        path = options.get("path") or options.get("paths") or ""
        if path.startswith("["):  # load([...]) passes a JSON list
            import json

            self.inputs = list(json.loads(path))
        else:
            self.inputs = [p for p in path.split(",") if p]

    def partitions(self) -> list[_Capture]:
        from wiredump.spark.export import expand

        return [_Capture(name, uri) for name, uri, error in expand(self.inputs) if error is None and uri]

    def read(self, partition: _Capture) -> Iterator[pa.RecordBatch]:
        from wiredump.dissect import split
        from wiredump.dissect.capture import CaptureError
        from wiredump.dissect.pipeline import Options
        from wiredump.dissect.records import table_batches
        from wiredump.spark.export import _date

        try:
            cf = split.probe(partition.name, partition.uri)
        except CaptureError:
            return
        tasks = [split.whole_file(cf)]
        end = split.RangeEnd(None, 0)
        first: list[int] = []

        def records() -> Iterator[Any]:
            for t in tasks:
                for r in split.read_range(cf, t, end):
                    if not first:
                        first.append(r.ts_us)
                    yield r

        schema = _schema(self.table)
        for table, batch in table_batches(cf.name, records(), Options(), end, self.values):
            if table != self.table:
                continue
            date = _date(first[0]) if first else None
            cols = [c.cast(f.type) for c, f in zip(batch.columns, schema, strict=False)]
            cols.append(pa.array([date] * batch.num_rows, type=pa.date32()))
            yield pa.RecordBatch.from_arrays(cols, schema=schema)


def register(spark: Any) -> None:
    """Make `spark.read.format("wiredump")` available in this session."""
    spark.dataSource.register(WiredumpDataSource)
