"""`wiredump export`'s work on one process, without the command line's framework.

`wiredump export CAPTURE… -o DIR` with no other option (`entry.main`) runs from here without
typer, as the plain timeline does (`plain`): typer's start-up (it imports pydantic and builds an
adapter for each of the export's parameters) was ~0.2 s of every export, a fifth of what the
benchmark capture's export would take at the issue's goal. The `export` command (`export.py`)
calls the same functions after parsing, so both ways write the same files and say the same.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from wiredump.cli import notes
from wiredump.cli.entry import UsageError
from wiredump.cli.source import Progress, Run, _record_hook

OUT_OPTIONS = ("-o", "--out")


def export_native(
    captures: list[str], out: Path, fmt: str, values: bool, options: Any, progress: bool
) -> tuple[dict[str, int], list[Any]]:
    """The export on the native engine, one process: the tables are built in Rust.

    Each capture's records go from the engine into the Rust table builders, with no Python
    object per frame; the engine writes Parquet itself (`EngineTables`, unless
    `parquet_settings.WRITER_ENV` says pyarrow), JSON lines leave as record batches that
    `TableSet.add_native` writes.
    Returns the rows per table and each capture's `pipeline.CaptureEnd`.
    """
    from wiredump.dissect.parquet_settings import engine_writes
    from wiredump.dissect.pipeline import open_source

    run = Run(captures, options, progress=progress and Progress.wanted(), times=False)
    ends: list[Any] = []
    try:
        tables: Any
        if fmt == "parquet" and engine_writes():
            from wiredump.dissect.engine_tables import EngineTables

            tables = EngineTables(out, values=values)
        else:
            from wiredump.dissect.tables import TableSet

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


def report(counts: dict[str, int], ends: list[Any]) -> int:
    """What an export says on stderr when it is done (the rows of each table, then each
    truncated capture); its exit code: `EXIT_INPUT` when a capture was truncated, else 0."""
    print(", ".join(f"{n}: {c}" for n, c in counts.items()), file=sys.stderr)
    return notes.report([], [notes.truncation(e.name, e.truncated) for e in ends if e.truncated])


def plain_export(args: list[str]) -> tuple[list[str], Path] | None:
    """The captures and directory of `wiredump export CAPTURE… -o DIR` given with no other
    option (`-o DIR`, `--out DIR` or `--out=DIR` once, anywhere; `-` is stdin), else None."""
    if args[:1] != ["export"]:
        return None
    captures: list[str] = []
    out: str | None = None
    rest = args[1:]
    i = 0
    while i < len(rest):
        a = rest[i]
        if a in OUT_OPTIONS and out is None and i + 1 < len(rest):
            out = rest[i + 1]
            i += 2
            continue
        if a.startswith("--out=") and out is None:
            out = a[len("--out=") :]
        elif a.startswith("-") and a != "-":
            return None
        else:
            captures.append(a)
        i += 1
    if out is None or not out or out.startswith("-") or not captures:
        return None
    return captures, Path(out)


def default_export(captures: list[str], out: Path) -> int | None:
    """`wiredump export CAPTURE… -o DIR` with no other option: the exit code; None when this
    run needs the full command (more than one worker), which then makes it from the same
    defaults (`export.export`)."""
    from wiredump.cli.options import make_options
    from wiredump.dissect.workers import auto_workers

    if auto_workers(captures) > 1:
        return None
    writable_dir(out)
    # As `export.export` makes them with no option: no --decode-as, no --values.
    options = make_options(None)
    options.values = False
    counts, ends = export_native(list(captures), out, "parquet", False, options, True)
    return report(counts, ends)
