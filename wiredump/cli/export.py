"""`wiredump export`: the tables (docs/tables.md) as Parquet or JSON lines."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from wiredump.cli.app import EXIT_INPUT, Captures, DecodeAs, UsageError, app, make_options
from wiredump.cli.source import Progress, Run, _record_hook
from wiredump.cli.timeline import ProgressOpt
from wiredump.dissect.capture import open_capture
from wiredump.dissect.pipeline import CaptureEnd, Options
from wiredump.dissect.workers import auto_workers

FORMATS = ("parquet", "jsonl")


def _with_progress(paths: list[str], options: Options) -> Iterator[Any]:
    """Worker 0's reading in `export --workers N`: the serial export's progress bar on stderr.

    Every worker reads the whole capture, so worker 0's bar is the reading's progress (the
    merge of the workers' tables that follows has no bar of its own).
    """
    return Run(paths, options, progress=True, times=False).events()


def _export_native(
    captures: list[str], out: Path, fmt: str, values: bool, options: Options, progress: bool
) -> tuple[dict[str, int], list[CaptureEnd]]:
    """The export's fast path on the native engine: the tables are built in Rust.

    Each capture's records go from the engine into the Rust table builders and leave as
    record batches the writers write (`TableSet.add_native`): the files are those the event
    path makes, with no Python object per frame.
    """
    from wiredump.dissect.pipeline import open_source
    from wiredump.dissect.tables import TableSet

    run = Run(captures, options, progress=progress and Progress.wanted(), times=False)
    ends: list[CaptureEnd] = []
    try:
        tables = TableSet(out, fmt=fmt, values=values)
        try:
            for path, size in zip(run.paths, run.sizes, strict=True):
                dissector = open_source(path, options)
                if run.progress.enabled:
                    dissector.on_record = _record_hook(dissector, run.progress, None)
                ends.append(tables.add_native(dissector))
                run.progress.finish_file(size)
        finally:
            run.progress.close()
            counts = tables.close()
    except OSError as e:  # the disk filled up, the directory went away…
        raise UsageError(f"{e.filename or out}: {e.strerror or e}") from None
    return counts, ends


def writable_dir(out: Path) -> None:
    """Make `out` (and its parents) and prove a file can be written there, before any decoding.

    A path under a regular file, a read-only file system, `/proc/…`: one line, exit 2,
    instead of a traceback after minutes of work.
    """
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out}: not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise UsageError(f"cannot write to -o {out}: {e.strerror or e}") from None


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
        counts, ends = _export_native(list(captures), out, fmt, values, options, progress)
    typer.echo(", ".join(f"{n}: {c}" for n, c in counts.items()), err=True)
    truncated = [e for e in ends if e.truncated]
    for t in truncated:
        typer.echo(f"wiredump: {t.name}: capture is truncated: {t.truncated}", err=True)
    if truncated:
        raise typer.Exit(EXIT_INPUT)
