"""`wiredump CAPTURE…`: the timeline, one line per frame."""

from __future__ import annotations

from typing import Annotated

import typer

from wiredump.cli.app import EXIT_INPUT, Captures, DecodeAs, app, make_options
from wiredump.dissect.pipeline import CAPTURE_END, FRAME, dissect


@app.command(
    "timeline",
    help="One line per decoded frame (the default command).\n\nExample: wiredump samples/kafka-basic.pcap",
)
def timeline(
    captures: Captures,
    decode_as: DecodeAs = None,
    count: Annotated[
        int | None, typer.Option("-c", "--count", help="Stop after N frames, e.g. -c 20.")
    ] = None,
) -> None:
    options = make_options(decode_as)
    shown = 0
    truncated = False
    for ev in dissect(captures, options):
        if ev.kind == FRAME:
            f = ev.obj
            peer = ""
            if f.peer_packet:
                peer = f" {'→' if f.kind == 'request' else '←'} #{f.peer_packet}"
            lat = f" {f.latency_us / 1000:.3f}ms" if f.latency_us is not None else ""
            status = "" if f.status == "ok" else f" [{f.status}]"
            ver = f" v{f.version}" if f.version is not None else ""
            cid = f" id={f.correlation_id}" if f.correlation_id is not None else ""
            typer.echo(
                f"{f.packet:>7} {f.stream:>4} {f.src}:{f.src_port} → {f.dst}:{f.dst_port} "
                f"{f.protocol} {f.kind} {f.type}{ver}{cid}{peer}{lat}{status} {f.summary}".rstrip()
            )
            shown += 1
            if count is not None and shown >= count:
                return
        elif ev.kind == CAPTURE_END and ev.obj.truncated:
            typer.echo(f"wiredump: {ev.obj.name}: capture is truncated: {ev.obj.truncated}", err=True)
            truncated = True
    if truncated:
        raise typer.Exit(EXIT_INPUT)
