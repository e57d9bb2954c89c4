"""The export's tables built and written by the engine: Parquet files with no Arrow C++ in the
process.

`wiredump export` (Parquet, one process) hands each capture to the Rust table builders
(`TableFeed`), which send every record batch they cut to the engine's Parquet writer
(`ParquetTables`, on a thread of its own): no batch crosses into Python, and pyarrow is not
imported. Why: pyarrow writes one row group per call and keeps every row group's metadata until
the file closes, so the export's memory grew with the capture; the engine's writer keeps a few
large row groups (`parquet_settings.ROW_GROUP_BYTES`) while the batches stay small, and the
~50 MB and ~0.15 s that loading Arrow C++ costs are gone. The tables read back equal to those
pyarrow writes from the same batches (`tests/test_engine_parquet.py`).

JSON lines, the workers' part files and Spark keep pyarrow's writer (`tables.TableSet`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wiredump.dissect import parquet_settings
from wiredump.dissect.pipeline import CaptureEnd


class EngineTables:
    """`DIR/<table>.parquet` for every table, written by the engine; fed one capture at a time."""

    def __init__(self, out_dir: Path, values: bool = False) -> None:
        from wiredump._engine import ParquetTables, TableFeed

        out_dir.mkdir(parents=True, exist_ok=True)
        self.feed = TableFeed(
            values, parquet_settings.BATCH_ROWS, parquet_settings.BATCH_BYTES, cut_anywhere=True
        )
        self.files = ParquetTables(
            str(out_dir),
            zstd_level=parquet_settings.ZSTD_LEVEL,
            dictionary=list(parquet_settings.DICTIONARY_COLUMNS),
            no_statistics=sorted(parquet_settings.BLOB_COLUMNS),
            row_group_rows=parquet_settings.ROW_GROUP_ROWS,
            row_group_bytes=parquet_settings.ROW_GROUP_BYTES,
            page_bytes=parquet_settings.PAGE_BYTES,
        )

    def add_native(self, dissector: Any) -> CaptureEnd:
        """One capture (a `wiredump._engine.Dissector` not iterated otherwise), dissected and
        written; its end (packets, truncation). The builders are shared by every capture, as
        `tables.TableSet`'s are, so batches and row groups run on across captures."""
        self.feed.pump_into(dissector, self.files)
        return CaptureEnd(*self.feed.capture_end)

    def close(self) -> dict[str, int]:
        """Writes the last batches and every file's footer; the rows of each table."""
        try:
            self.feed.finish_into(self.files)
        finally:
            self.files.close()
        return dict(self.feed.counts())
