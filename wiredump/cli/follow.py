"""`wiredump follow CAPTURE --stream N`: one connection as a conversation.

What the client sends sits on the left, what the server sends on the right, in
capture order, each frame as a head line (packet, time, type, id, peer, latency,
badges) and its summary wrapped inside its half — like Wireshark's Follow Stream,
but frame by frame instead of byte by byte.
"""

from __future__ import annotations

import os
import textwrap
from typing import Annotated

import typer
from rich.text import Text

from wiredump.cli.app import Captures, DecodeAs, app
from wiredump.cli.escape import escape
from wiredump.cli.notes import report, truncation
from wiredump.cli.options import make_options
from wiredump.cli.output import Out
from wiredump.cli.render import STATUS_STYLES, Clock, endpoint, format_latency, protocol_style
from wiredump.cli.source import Progress, Run, annotate
from wiredump.cli.timeline import Color, Filter, ProgressOpt, compile_or_exit
from wiredump.cli.words import plural
from wiredump.dissect.model import Frame
from wiredump.dissect.pipeline import ANOMALY, CAPTURE_END, CONNECTION, FRAME


def frame_head(f: Frame, time: str, reply: str | None) -> str:
    ver = f" v{f.version}" if f.version is not None else ""
    cid = f" id={f.correlation_id}" if f.correlation_id is not None else ""
    peer = ""
    if f.peer_packet is not None:
        peer = (
            f" ← #{f.peer_packet} {format_latency(f.latency_us)}"
            if f.latency_us is not None
            else f" → #{f.peer_packet}"
        )
    flags = [s for s in (f.status if f.status != "ok" else None, f.error, reply) if s]
    badge = f" [{escape(', '.join(flags))}]" if flags else ""
    return f"#{f.packet} {time} {escape(f.type)}{ver}{cid}{peer}{badge}"


def conversation_lines(f: Frame, time: str, reply: str | None, width: int) -> list[tuple[str, bool]]:
    """(line, is_head) rows for one frame, already placed in its half of `width` columns."""
    half = max(20, (width - 3) // 2)
    right = f.role != "client"
    rows = textwrap.wrap(frame_head(f, time, reply), half, break_on_hyphens=False) or [""]
    out = [(r, True) for r in rows]
    if f.summary:
        out += [(r, False) for r in textwrap.wrap(escape(f.summary), half - 2, break_on_hyphens=False)]
    placed = []
    for text, head in out:
        text = text if head else "  " + text
        placed.append(((" " * (width - half) + text) if right else text, head))
    return placed


@app.command(
    "follow",
    help="One TCP connection's frames as a conversation: the client's on the left, the server's on the "
    "right, with peers, latencies and summaries; gaps and other anomalies of the connection in between, "
    "and the connection's totals at the end.\n\n"
    "Examples:\n\n"
    "  wiredump follow capture.pcap --stream 3\n\n"
    "  wiredump follow capture.pcap -s 3 -Y 'type != Heartbeat' --width 160",
)
def follow(
    captures: Captures,
    stream: Annotated[
        int, typer.Option("-s", "--stream", min=0, help="TCP stream index (tshark's tcp.stream), e.g. -s 3.")
    ],
    display_filter: Filter = None,
    decode_as: DecodeAs = None,
    width: Annotated[
        int | None,
        typer.Option(
            "--width",
            min=40,
            help="Columns to lay the conversation out in (default: the terminal's, or 120), e.g. --width 160.",
        ),
    ] = None,
    color: Color = None,
    progress: ProgressOpt = True,
) -> None:
    flt = compile_or_exit(display_filter)
    out = Out(color)
    run = Run(captures, make_options(decode_as), progress=progress and Progress.wanted())
    out.progress = run.progress  # wiped before each line that goes to the same terminal
    if width is None:
        width = out.width if out.rich else int(os.environ.get("COLUMNS", "0") or 0) or 120
    clock = Clock("r")
    started = False
    header_done = False
    found = False
    truncated: list[str] = []
    for item in annotate(run.events()):
        ev = item.ev
        if not started:
            clock.start(run.info.first_ts_us)
            if flt is not None:
                flt.start_capture(run.info.first_ts_us)  # frame.time_relative counts from here
            started = True
            if len(captures) > 1:
                head = f"==> {escape(run.info.name)} <=="
                out.line(head, lambda head=head: Text(head, "bold"))
        if ev.kind == FRAME:
            f = ev.obj
            if f.stream != stream:
                continue
            found = True
            if not header_done:
                header_done = True
                src, dst = endpoint(f.src, f.src_port), endpoint(f.dst, f.dst_port)
                client, server = (src, dst) if f.role == "client" else (dst, src)
                _header(out, width, client, server, f.protocol)
            if flt is not None and not flt.matches(f, ev.capture):
                continue
            style = protocol_style(f.protocol)
            bad = f.status != "ok" or bool(f.error) or item.reply == "unanswered"
            for line, head in conversation_lines(f, clock.format(f.ts_us), item.reply, width):
                out.line(
                    line, lambda line=line, head=head, style=style, bad=bad: _styled(line, head, style, bad)
                )
        elif ev.kind == ANOMALY and ev.frame is None and ev.obj.stream == stream:
            a = ev.obj
            text = f"~~ #{a.packet} {a.kind}: {escape(a.detail)} ~~"
            line = text.center(width) if len(text) < width else text
            out.line(line, lambda line=line: Text(line, "dim yellow", no_wrap=True, overflow="ellipsis"))
        elif ev.kind == CONNECTION and ev.obj.stream == stream:
            c = ev.obj
            if not header_done:
                header_done = True
                _header(
                    out,
                    width,
                    endpoint(c.client, c.client_port),
                    endpoint(c.server, c.server_port),
                    c.protocol,
                )
            found = True
            line = (
                f"== {plural(c.frames, 'frame')}, {plural(c.packets, 'packet')}, "
                f"{plural(c.bytes_client, 'byte')} → {plural(c.bytes_server, 'byte')} ←, "
                f"gaps {c.gaps}, retransmissions {c.retransmissions}, {c.state}"
            )
            out.line(line, lambda line=line: Text(line, "bold", no_wrap=True, overflow="ellipsis"))
        elif ev.kind == CAPTURE_END:
            started = False
            header_done = False  # each capture has its own stream numbers: its own header
            if ev.obj.truncated:
                truncated.append(truncation(ev.obj.name, ev.obj.truncated))
    out.flush()
    code = report([], truncated)
    if code:
        raise typer.Exit(code)
    if not found:
        typer.echo(f"wiredump: no TCP stream {stream} in the capture", err=True)
        raise typer.Exit(1)


def _header(out: Out, width: int, client: str, server: str, protocol: str | None) -> None:
    half = max(20, (width - 3) // 2)
    left = f"client {client}"
    right = f"server {server}"
    line = left.ljust(width - half) + right
    out.line(line, lambda: Text(line, "bold", no_wrap=True, overflow="ellipsis"))
    rule = f"{'─' * (width - half - 1)} {protocol or '?'} {'─' * max(0, half - len(protocol or '?') - 2)}"
    rule = rule[:width]
    out.line(rule, lambda: Text(rule, protocol_style(protocol, "dim"), no_wrap=True))


def _styled(line: str, head: bool, style: str, bad: bool) -> Text:
    t = Text(no_wrap=True, overflow="ellipsis", end="")
    if not head:
        t.append(line, "")
        return t
    stripped = line.lstrip(" ")
    t.append(line[: len(line) - len(stripped)])
    for s, st in STATUS_STYLES.items():
        if f"[{s}" in stripped and bad:
            style = st
            break
    t.append(stripped, "bold red" if bad else style)
    return t
