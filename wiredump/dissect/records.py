"""The engine entry point for records that arrive from elsewhere: a Spark shuffle, another reader.

`dissect_capture` takes an opened capture file; a distributed job has instead the records of
one capture (read range by range by several tasks, then brought together in packet order by
a shuffle). `dissect_records` runs the same pipeline over such a sequence, so the rows are
those of the local export: packet numbers come with the records (the whole file's numbers),
stream numbers are assigned by the reassembler in order of first packet as locally, and the
end-of-capture facts (why the file ended early, records of unsupported link types skipped) are
given by the caller once the records are exhausted.

This is the narrow surface a distributed job needs from the engine (records in, events or
record batches out); the Rust engine implements the same call.
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


class _Source:
    """Looks like an opened `CaptureReader` to the pipeline: a name, records, then end facts."""

    def __init__(self, name: str, records: Iterable[Record], end: CaptureEndFacts | None) -> None:
        self.name = name
        self._records = records
        self._end = end
        self.truncated: str | None = None
        self.skipped_unknown_link = 0

    def __iter__(self) -> Iterator[Record]:
        yield from self._records
        if self._end is not None:
            self.truncated = self._end.truncated
            self.skipped_unknown_link = self._end.skipped_unknown_link


def dissect_records(
    name: str, records: Iterable[Record], options: Options | None = None, end: CaptureEndFacts | None = None
) -> Iterator[Event]:
    """Every event of one capture given as its records in packet order (numbers as in the file),
    by the engine `options` choose (the Rust engine takes the records as they come)."""
    options = options or Options()
    if options.engine == "native":
        from wiredump._engine import Dissector

        source: object = Dissector.from_records(name, records, options, end)
    else:
        source = _Source(name, records, end)
    return dissect_capture(source, options)  # type: ignore[arg-type]


def table_batches(
    name: str,
    records: Iterable[Record],
    options: Options | None = None,
    end: CaptureEndFacts | None = None,
    values: bool = False,
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """The rows of the five tables for one capture's records, as `(table, batch)` in bounded batches."""
    return record_batches(dissect_records(name, records, options, end), values=values)
