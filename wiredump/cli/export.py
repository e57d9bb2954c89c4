"""`wiredump export`: the five tables as Parquet or JSON lines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wiredump.cli.app import EXIT_INPUT, Captures, DecodeAs, UsageError, app, make_options
from wiredump.dissect.pipeline import CAPTURE_END, dissect


@app.command(
    "export",
    help="Write the frames, exchanges, messages, anomalies and connections tables.\n\n"
    "Example: wiredump export samples/*.pcap -o out/",
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
) -> None:
    from wiredump.dissect.tables import TableSet

    if fmt not in ("parquet", "jsonl"):
        raise UsageError(f"--format is parquet or jsonl, not {fmt!r}")
    options = make_options(decode_as)
    tables = TableSet(out, fmt=fmt, values=values)
    truncated = []
    try:
        for ev in dissect(captures, options):
            if ev.kind == CAPTURE_END and ev.obj.truncated:
                truncated.append(ev.obj)
            tables.add_events((ev,))
    finally:
        counts = tables.close()
    typer.echo(", ".join(f"{n}: {c}" for n, c in counts.items()), err=True)
    for t in truncated:
        typer.echo(f"wiredump: {t.name}: capture is truncated: {t.truncated}", err=True)
    if truncated:
        raise typer.Exit(EXIT_INPUT)
