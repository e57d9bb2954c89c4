"""The five tables as Spark sees them: Spark schemas from the Arrow ones, and where they live.

The Spark tables are the local tables plus one partition column, `capture_date`
(the UTC date of the capture's first packet), and with `messages.timestamp` at
microsecond precision (Spark has one timestamp type; the values are the same).
A directory written by `wiredump export` (`DIR/<table>.parquet`) and one written by
`wiredump spark export` (`DIR/<table>/capture_date=…/protocol=…/part-….parquet`)
are both readable by `read_table`.
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
PARTITION_COLUMNS = (DATE_COLUMN, "protocol")
"""Every table has a protocol column (null where no protocol applies)."""


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
    """The Arrow schema of the batches the Spark job hands to Spark for table `name`:
    the local schema, timestamps at µs (Spark's only precision), plus `capture_date`."""
    fields = []
    for f in SCHEMAS[name]:
        t = pa.timestamp("us", tz="UTC") if pa.types.is_timestamp(f.type) else f.type
        fields.append(pa.field(f.name, t))
    fields.append(pa.field(DATE_COLUMN, pa.date32()))
    return pa.schema(fields)


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
    from pyspark.sql import types as T

    schema = spark_schema(SCHEMAS[name])
    try:
        loc = table_location(root, name)
    except FileNotFoundError:
        raise
    if not loc.endswith(".parquet"):
        # Spark layout: the partition column comes from the folder names.
        schema = T.StructType([*schema.fields, T.StructField(DATE_COLUMN, T.DateType(), True)])
    return schema
