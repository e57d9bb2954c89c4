"""How the export's Parquet files are written: declared once, for both writers.

The engine's writer (`wiredump._engine.ParquetTables`, the export's default) and pyarrow's
(`tables.PARQUET_OPTIONS`: the event path, the workers' parts, Spark) take these settings, so a
table reads back the same whichever wrote it. Nothing here imports pyarrow: the engine-written
export does not load Arrow C++ at all.

Why not dictionaries and statistics everywhere (as before 2026-11-24): measured by rewriting
the benchmark capture's tables row group by row group (frames, messages, exchanges,
partitions), dictionaries on every column and statistics on every column took 1.63 s of CPU
for 27.6 MB with a 1,076 KB footer; dictionaries on the low-cardinality text columns only and
no statistics on the blob columns take 1.23 s for 19.1 MB with an 805 KB footer (the values
read back equal). Dictionaries on numbers and on unique text cost time and bytes (each row
group's dictionary page is built, then abandoned); statistics on `detail` kept two ~0.5 KB
strings per row group in the footer, which the writer holds in memory until it closes.
"""

from __future__ import annotations

import os

COMPRESSION = "zstd"
"""pyarrow's codec name; the engine's writer writes zstd only (it takes the level)."""
ZSTD_LEVEL = 1
"""zstd at level 1: the benchmark capture's 720 MB of tables in 24 MB (level 3: 22 MB; lz4:
51 MB, snappy: 75 MB) for about the CPU time of writing them uncompressed. Why not level 3:
each column being written keeps a zstd context, every table's columns are open at once in the
engine's writer (~75), and level 3's contexts took ~39 MB of the export's peak, level 1's ~21."""

BLOB_COLUMNS = frozenset({"detail", "summary", "key", "value", "headers"})
"""Columns of long, nearly unique text or bytes (a decode's JSON, a timeline line, message keys
and values): their min/max statistics prune no row group, and each row group's footer entry
would hold copies of two of them. Every other column has min/max per row group."""

DICTIONARY_COLUMNS = (
    "capture",
    "src",
    "dst",
    "protocol",
    "role",
    "kind",
    "type",
    "status",
    "error",
    "topic",
    "direction",
    "compression",
    "client",
    "server",
    "state",
)
"""Text columns with few distinct values: dictionary-encoded (readers get categoricals)."""

ROW_GROUP_ROWS = 1 << 20
"""The engine's writer closes a row group at this many rows (pyarrow's own default cap)…"""

ROW_GROUP_BYTES = 2 << 20
"""…or once its size by the writer's estimate (pages compressed so far, plus each column's values
not yet compressed) reaches 2 MiB: what the writer holds in memory per table until the row
group is written. The benchmark capture's frames make 33 row groups (~18,000 rows, ~10 MB of
text before compression, each) where pyarrow's writer made 158, ten times the capture 319 (a
716 KB footer); the record batches the engine cuts stay small whatever the row groups are."""

PAGE_BYTES = 256 << 10
"""A column's page is compressed once its values take this many bytes: what each column being
written holds uncompressed (pyarrow's default, 1 MiB, made the engine's writer hold ~10 MB more
at the export's peak; the files are the same size)."""

BATCH_ROWS = 16384
BATCH_BYTES = 512 << 10
"""The record batches the engine cuts for its own writer: smaller than pyarrow's
(`tables.BATCH_BYTES`, 4 MiB, one row group each), since here a batch is only what travels from
the builders to the writer thread, and what the builders and the queue between them hold; a
frame's messages may be cut anywhere (`TableFeed(cut_anywhere=True)`), so a Fetch response of
25,000 records never sits whole in the builders."""

WRITER_ENV = "WIREDUMP_PARQUET_WRITER"
"""`engine` (the default) or `pyarrow`: which writer `wiredump export` uses for Parquet. The
pyarrow writer (one row group per engine batch, Arrow C++ loaded) stays selectable while the
engine's proves itself; the suite runs both and compares what they wrote."""


def engine_writes() -> bool:
    """Whether the engine writes the export's Parquet files (`WRITER_ENV`, default yes)."""
    return os.environ.get(WRITER_ENV, "engine").strip().lower() != "pyarrow"
