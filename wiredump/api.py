"""The small public API: wiredump from Python, without the command line.

    import wiredump
    for event in wiredump.dissect(["capture.pcap"]):
        if event.kind == "frame":
            print(event.obj.packet, event.obj.type, event.obj.status)
    frames = wiredump.tables(["capture.pcap"])["frames"]      # a pyarrow.Table

`dissect` yields the pipeline's events (frames, anomalies, exchanges, connection rows and one
capture end per capture) as the timeline, export and check read them; `tables` builds the five
tables of `wiredump export` (docs/tables.md) in memory. Both take the command line's options as
keywords (`decode_as={9999: "kafka"}`, `keep_bytes=True`…) or an `Options`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from wiredump.dissect.pipeline import Event, Options


def _options(options: Options | None, overrides: dict[str, Any]) -> Options:
    from dataclasses import replace

    from wiredump.dissect.pipeline import Options

    base = options if options is not None else Options()
    return replace(base, **overrides) if overrides else base


def _paths(paths: str | Path | Iterable[str | Path]) -> list[str]:
    # A single path is the common case; a string is iterable, so it must not be split into letters.
    if isinstance(paths, (str, Path)):
        return [str(paths)]
    return [str(p) for p in paths]


def dissect(
    paths: str | Path | Iterable[str | Path], options: Options | None = None, **overrides: Any
) -> Iterator[Event]:
    """Every event of every capture, in order, streaming (memory bounded as for the CLI).

    Raises `wiredump.dissect.capture.CaptureError` when a capture cannot be opened or read.
    """
    from wiredump.dissect.pipeline import dissect as run

    return run(_paths(paths), _options(options, overrides))


def tables(
    paths: str | Path | Iterable[str | Path],
    options: Options | None = None,
    *,
    values: bool = False,
    **overrides: Any,
) -> dict[str, pa.Table]:
    """The export's tables (`frames`, `messages`, `anomalies`, `exchanges`, `connections`…) of the
    captures, as pyarrow tables with the export's schemas; `values` keeps message values as
    `--values` does. For captures larger than memory, export to Parquet instead."""
    import pyarrow as pa

    from wiredump.dissect.tables import SCHEMAS, record_batches

    batches: dict[str, list[pa.RecordBatch]] = {name: [] for name in SCHEMAS}
    for name, batch in record_batches(dissect(paths, options, **overrides), values=values):
        batches[name].append(batch)
    return {name: pa.Table.from_batches(b, schema=SCHEMAS[name]) for name, b in batches.items()}
