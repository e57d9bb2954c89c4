"""`wiredump export`: the tables (docs/tables.md) as Parquet or JSON lines."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from wiredump.cli.app import Captures, DecodeAs, app
from wiredump.cli.entry import UsageError
from wiredump.cli.exporting import export_native, report, writable_dir
from wiredump.cli.options import make_options
from wiredump.cli.source import Progress, Run
from wiredump.cli.timeline import ProgressOpt
from wiredump.dissect.capture import open_capture
from wiredump.dissect.pipeline import Options
from wiredump.dissect.workers import auto_workers

FORMATS = ("parquet", "jsonl")


def _with_progress(paths: list[str], options: Options) -> Iterator[Any]:
    """Worker 0's reading in `export --workers N`: the serial export's progress bar on stderr.

    Every worker reads the whole capture, so worker 0's bar is the reading's progress (the
    merge of the workers' tables that follows has no bar of its own).
    """
    return Run(paths, options, progress=True, times=False).events()


@app.command(
    "export",
    help="Write the frames, exchanges, messages, anomalies, connections and partitions tables "
    "as DIR/<table>.parquet (or .jsonl).\n\n"
    "Example: wiredump export samples/*.pcap -o out/   (schema: docs/tables.md)",
)
def export(
    captures: Captures,
    out: Annotated[
        Path, typer.Option("-o", "--out", help="Directory for <table>.parquet files, e.g. -o out/.")
    ],
    fmt: Annotated[str, typer.Option("--format", help="parquet (default) or jsonl.")] = "parquet",
    values: Annotated[
        bool, typer.Option("--values", help="Include message values in the messages table.")
    ] = False,
    decode_as: DecodeAs = None,
    progress: ProgressOpt = True,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            help="Processes that decode (connections are split between them by stream number, "
            "tables merged by packet), e.g. --workers 2. 0 or 1 (default): one process. "
            "Pays off with many comparable connections.",
        ),
    ] = 0,
) -> None:
    if fmt not in FORMATS:
        raise UsageError(f"--format is parquet or jsonl, not {fmt!r}")
    if workers < 0:
        raise UsageError("--workers takes 0 (automatic) or a positive number")
    options = make_options(decode_as)
    options.values = values  # no copy of each value the messages table leaves null
    writable_dir(out)
    n = workers or auto_workers(captures)
    if n > 1:
        if "-" in captures:
            raise UsageError("--workers above 1 needs capture files, not stdin")
        for path in captures:
            open_capture(path)  # a bad path is reported here, before any worker starts
        from wiredump.dissect.parallel import export_parallel

        try:
            source = _with_progress if progress and Progress.wanted() else None
            counts, ends = export_parallel(list(captures), out, fmt, values, options, n, source)
        except OSError as e:
            raise UsageError(f"{e.filename or out}: {e.strerror or e}") from None
    else:
        counts, ends = export_native(list(captures), out, fmt, values, options, progress)
    code = report(counts, ends)
    if code:
        raise typer.Exit(code)
