"""The tables as Spark sees them: Spark schemas from the Arrow ones, and where they live.

A Spark export's table is a folder of Parquet files (`DIR/<table>/part-….parquet`) whose
columns are the local table's, with the same types and units, plus `capture_date` (the UTC
date of the capture's first packet). It adds one table, `captures`: one row per input (name as
given, status, reason). A directory written by `wiredump export` (`DIR/<table>.parquet`) and one
written by `wiredump spark export` are both readable by `read_table`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from wiredump.dissect.tables import SCHEMAS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

DATE_COLUMN = "capture_date"

CAPTURES_SCHEMA = pa.schema(
    [
        ("capture", pa.string()),
        ("status", pa.string()),
        ("reason", pa.string()),
        ("packets", pa.int64()),
        ("bytes", pa.int64()),
        ("ranges", pa.int32()),
        ("run", pa.int32()),
    ]
)
"""One row per input of a Spark export: `capture` as given; `status` ok, truncated (read up to
where the file is cut short or damaged), missing, empty, not_a_capture or unreadable; `reason`
the sentence saying why; `packets` read; `bytes` of the file; `ranges` it was read in; `run`, the
export run (`--mode append` adds runs)."""


def spark_type(t: pa.DataType) -> DataType:
    from pyspark.sql import types as T

    if pa.types.is_string(t):
        return T.StringType()
    if pa.types.is_int64(t):
        return T.LongType()
    if pa.types.is_int32(t):
        return T.IntegerType()
    if pa.types.is_timestamp(t):
        return T.TimestampType()
    if pa.types.is_binary(t):
        return T.BinaryType()
    if pa.types.is_boolean(t):
        return T.BooleanType()
    if pa.types.is_date32(t):
        return T.DateType()
    if pa.types.is_map(t):
        return T.MapType(spark_type(t.key_type), spark_type(t.item_type), valueContainsNull=True)
    raise TypeError(f"no Spark type for {t}")


def spark_schema(arrow: pa.Schema) -> StructType:
    from pyspark.sql import types as T

    return T.StructType([T.StructField(f.name, spark_type(f.type), nullable=True) for f in arrow])


def spark_arrow_schema(name: str) -> pa.Schema:
    """The Arrow schema of table `name` in a Spark export: the local schema (same types and units,
    `messages.timestamp` in ms as locally) plus `capture_date`."""
    if name == "captures":
        return CAPTURES_SCHEMA
    return pa.schema([*SCHEMAS[name], pa.field(DATE_COLUMN, pa.date32())])


def table_location(root: str, name: str) -> str:
    """Where table `name` is under `root`: a Spark-written folder or a local `<name>.parquet`."""
    if "://" not in root or root.startswith("file://"):
        base = Path(root.removeprefix("file://"))
        if (base / name).is_dir():
            return str(base / name)
        if (base / f"{name}.parquet").exists():
            return str(base / f"{name}.parquet")
        raise FileNotFoundError(f"{root}: no {name} table ({name}/ or {name}.parquet)")
    return root.rstrip("/") + "/" + name


def read_table(spark: SparkSession, root: str, name: str) -> DataFrame:
    """Table `name` of an export directory (local or Spark layout), with the contract's columns first."""
    df = spark.read.schema(_read_schema(name, root)).parquet(table_location(root, name))
    return df


def _read_schema(name: str, root: str) -> StructType:
    """Reading with the fixed schema means an empty table still has every column."""
    loc = table_location(root, name)
    if loc.endswith(".parquet"):
        return spark_schema(SCHEMAS[name])
    return spark_schema(spark_arrow_schema(name))
