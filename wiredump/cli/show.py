"""`wiredump show CAPTURE --packet N`: the full decode of the frame(s) completed in packet N."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from wiredump.cli.app import EXIT_INPUT, Captures, DecodeAs, app
from wiredump.cli.escape import escape
from wiredump.cli.notes import report, truncation
from wiredump.cli.options import make_options
from wiredump.cli.output import Out
from wiredump.cli.source import Run, annotate
from wiredump.cli.timeline import (
    Color,
    Filter,
    TimelineOptions,
    TimelinePrinter,
    Values,
    check_values,
    compile_or_exit,
    mark_fields_or_fail,
    marks_or_fail,
)
from wiredump.cli.words import plural
from wiredump.dissect.pipeline import FRAME


def _truncated_after(path: str) -> list[str]:
    """Whether the rest of a capture, left unread once the packets were shown, is truncated.

    Only records are read (no decoding: about 3 ms per 1,000 packets), so `show` exits 2 on
    a truncated capture as every other command does, without decoding all of it.
    """
    from wiredump.dissect.capture import open_capture

    reader = open_capture(path)
    for _ in reader:
        pass
    return [truncation(reader.name, reader.truncated)] if reader.truncated else []


@app.command(
    "show",
    help="The full decode of the frame(s) that packet N completes (a frame's packet is the one carrying "
    "its last byte, where tshark shows the PDU): its timeline line, the field tree with types and values, "
    "the messages it carries, its anomalies, then with -x a hex dump of its bytes.\n\n"
    "Examples:\n\n"
    "  wiredump show capture.pcap --packet 45\n\n"
    "  wiredump show capture.pcap -p 45 -p 46 -x --mark 0:4",
)
def show(
    captures: Captures,
    packet: Annotated[
        list[int],
        typer.Option(
            "-p", "--packet", min=1, help="Packet number (1-based, as tshark), repeatable: -p 45 -p 46."
        ),
    ],
    hex_: Annotated[
        bool, typer.Option("-x", "--hex", help="Also print a hex dump of each frame's bytes, e.g. -x.")
    ] = False,
    mark: Annotated[
        list[str] | None,
        typer.Option(
            "--mark",
            help="With -x: highlight bytes START[:LENGTH] of the frame, or the bytes a decoded field was "
            "read from (its whole encoding, any type; bracketed in plain text, reverse video in "
            "colour; repeatable); anomalies with a byte offset are marked too. E.g. --mark 8:4, "
            "--mark client_id, --mark topic_data.0.name.",
        ),
    ] = None,
    display_filter: Filter = None,
    decode_as: DecodeAs = None,
    values: Values = "short",
    color: Color = None,
) -> None:
    wanted = set(packet)
    last = max(wanted)
    opts = TimelineOptions(
        filter=compile_or_exit(display_filter),
        detail=True,
        hex=hex_,
        marks=marks_or_fail(mark),
        mark_fields=mark_fields_or_fail(mark),
        values=check_values(values),
    )
    options = make_options(decode_as, keep_bytes=hex_)
    options.spans = bool(opts.mark_fields)
    run = Run(captures, options)
    out = Out(color)
    printer = TimelinePrinter(out, opts)
    found: set[int] = set()
    parts_of: dict[int, list[int]] = {}  # wanted packet -> packets completing frames it carries part of
    started = False
    named = False
    counts: dict[str, int] = {}  # capture -> packets it holds (once read to its end)
    truncated: list[str] = []
    for item in annotate(run.events()):
        ev = item.ev
        if not started:
            named = False
            printer.clock.start(run.info.first_ts_us)
            if opts.filter is not None:
                opts.filter.start_capture(run.info.first_ts_us)
            started = True
        if ev.kind == "capture_end":
            started = False
            counts[ev.obj.name] = ev.obj.packets
            if ev.obj.truncated:
                truncated.append(truncation(ev.obj.name, ev.obj.truncated))
            if len(captures) == 1:
                break
        if ev.kind != FRAME:
            continue
        f = ev.obj
        if f.packet in wanted and (opts.filter is None or opts.filter.matches(f, ev.capture)):
            if not named:  # which capture the frames below come from
                head = f"==> {escape(ev.capture)} <=="
                out.line(head, lambda head=head: Text(head, "bold"))
                named = True
            printer.frame(f, ev.capture, item)
            found.add(f.packet)
            continue
        if f.first_packet < f.packet:
            for n in wanted:
                if f.first_packet <= n < f.packet:
                    parts_of.setdefault(n, []).append(f.packet)
        # Frames leave in packet order: past the last wanted packet nothing more can match, but a
        # missing packet may still turn out to carry part of a longer frame.
        if (
            f.packet > last
            and len(captures) == 1
            and (found == wanted or all(n in parts_of for n in wanted - found))
        ):
            if captures[0] != "-":
                truncated += _truncated_after(captures[0])
            break
    printer.finish()
    missing = sorted(wanted - found)
    beyond = bool(counts) and len(counts) == len(captures)
    for n in missing:
        if beyond and all(n > c for c in counts.values()):
            held = "; ".join(f"{escape(name)} has {plural(c, 'packet')}" for name, c in counts.items())
            typer.echo(f"wiredump: no packet #{n}: {held}", err=True)
        elif n in parts_of:
            later = ", ".join(f"#{p}" for p in sorted(set(parts_of[n])))
            typer.echo(
                f"wiredump: packet #{n} carries part of the frame completed in {later}: show that packet",
                err=True,
            )
        else:
            typer.echo(
                f"wiredump: no frame completes in packet #{n} (a frame shows in the packet that carries its last byte)",
                err=True,
            )
    if report([], truncated) or (beyond and any(all(n > c for c in counts.values()) for n in missing)):
        raise typer.Exit(EXIT_INPUT)
    if missing:
        raise typer.Exit(1)
