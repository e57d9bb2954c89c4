"""The engine entry point for records that arrive from elsewhere: a Spark task's reader, a shuffle.

`dissect` takes capture files; a distributed job may instead have the records of one capture
read by its own reader (`wiredump.dissect.split`, through pyarrow's file systems).
`dissect_records` hands such a sequence to the engine (`Dissector.from_records`), so the rows are
those of the local export: packet numbers come with the records (the whole file's numbers),
stream numbers are assigned in order of first packet as locally, and the end-of-capture facts
(why the file ended early, records of unsupported link types skipped) are given by the caller
once the records are exhausted.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

import pyarrow as pa

from wiredump.dissect.capture import Record
from wiredump.dissect.pipeline import Event, Options, dissect_capture
from wiredump.dissect.tables import record_batches

__all__ = ["CaptureEndFacts", "dissect_records", "table_batches"]


class CaptureEndFacts(Protocol):
    """What the local reader knows after its last record; read once the records are exhausted."""

    truncated: str | None
    skipped_unknown_link: int


def dissect_records(
    name: str, records: Iterable[Record], options: Options | None = None, end: CaptureEndFacts | None = None
) -> Iterator[Event]:
    """Every event of one capture given as its records in packet order (numbers as in the file)."""
    from wiredump._engine import Dissector

    options = options or Options()
    return dissect_capture(Dissector.from_records(name, records, options, end), options)


def table_batches(
    name: str,
    records: Iterable[Record],
    options: Options | None = None,
    end: CaptureEndFacts | None = None,
    values: bool = False,
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """The rows of the five tables for one capture's records, as `(table, batch)` in bounded batches."""
    return record_batches(dissect_records(name, records, options, end), values=values)
