"""`wiredump CAPTURE…`: the timeline, one line per frame (the default command).

Plain text in a pipe (fast, stable columns), colour on a terminal; `-V` adds the
field tree under each line and `-x` a hex dump, `-T json|jsonl` prints the frames
table's rows instead, `-Y` keeps the frames a display filter matches.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Annotated

import typer
from rich.text import Text

from wiredump.cli.app import EXIT_INPUT, Captures, DecodeAs, app
from wiredump.cli.columns import ColumnsError, FieldColumns, parse_options
from wiredump.cli.entry import UsageError
from wiredump.cli.notes import CaptureNotes, report, truncation
from wiredump.cli.options import make_options
from wiredump.cli.output import Out
from wiredump.cli.plain import (
    SHOWN_ANOMALIES,
    engine_options,
    plain_native,
    progress_shown,
    renderer_allowed,
)
from wiredump.cli.render import (
    TIME_FORMATS,
    VALUES,
    Clock,
    detail_lines,
    field_marks,
    hex_lines,
    mark_names,
    parse_marks,
    parts,
    plain_anomaly,
    plain_frame,
    plain_tree_line,
    rich_anomaly,
    rich_hex_lines,
    rich_line,
    rich_tree_line,
)
from wiredump.cli.source import REORDER_WINDOW, Item, Run, annotate, in_packet_order
from wiredump.dissect.fields import FieldContext
from wiredump.dissect.filter import DisplayFilter, FilterError, compile_filter
from wiredump.dissect.model import Anomaly, Frame
from wiredump.dissect.pipeline import ANOMALY, CAPTURE_END, FRAME

FORMATS = ("text", "json", "jsonl", "fields")

# -- shared option declarations (show, follow and stats reuse them) -------------------------------
Filter = Annotated[
    str | None,
    typer.Option(
        "-Y",
        "--filter",
        help="Display filter over the frame columns and any decoded field by the protocol's own name "
        "(wiredump fields lists them), e.g. -Y 'protocol == kafka && latency_us > 10ms', "
        "-Y 'kafka.topic == \"orders\" && kafka.partition == 3', -Y 'frame.time_relative > 1.5'. "
        "Operators: == != < <= > >= ~ (regex) contains, in {a b 1..5}, && || ! and parentheses; "
        "a bare column (e.g. -Y error) keeps frames where it is set. Columns: the frames table's "
        "(protocol, type, kind, status, error, error_code, latency_us, stream, packet, version, "
        "correlation_id, summary, src, dst, src_port, dst_port, length…) plus topic, anomaly, messages.",
    ),
]
Count = Annotated[
    int | None, typer.Option("-c", "--count", min=0, help="Stop after N frames shown, e.g. -c 20.")
]
Color = Annotated[
    bool | None,
    typer.Option(
        "--color/--no-color",
        help="Force or forbid colour; by default colour only on a terminal (and not with NO_COLOR set). "
        "E.g. --no-color.",
    ),
]
Values = Annotated[
    str,
    typer.Option(
        "--values",
        help="With -V (and in show): each message's key, value and header values — none (sizes only), "
        "short (escaped text, hex when binary, cut at 64 characters with the full length shown; the "
        "default) or full. E.g. -V --values full.",
    ),
]


def check_values(values: str) -> str:
    if values not in VALUES:
        raise UsageError(f"--values takes none, short or full, not {values!r}")
    return values


ProgressOpt = Annotated[
    bool,
    typer.Option(
        "--progress/--no-progress",
        help="Progress bar on stderr for long captures; shown only when stderr is a terminal, never "
        "with CI=true. E.g. --no-progress.",
    ),
]


def compile_or_exit(text: str | None, ctx: FieldContext | None = None) -> DisplayFilter | None:
    """The compiled filter; on a mistake the message with a caret on stderr and exit 2."""
    try:
        return compile_filter(text, ctx)
    except FilterError as e:
        typer.echo(f"wiredump: {e.render()}", err=True)
        raise typer.Exit(EXIT_INPUT) from None


@dataclass
class TimelineOptions:
    filter: DisplayFilter | None = None
    count: int | None = None
    detail: bool = False
    hex: bool = False
    fmt: str = "text"
    time: str = "r"
    all_anomalies: bool = False
    marks: list[tuple[int, int]] = field(default_factory=list)
    mark_fields: list[str] = field(default_factory=list)
    columns: FieldColumns | None = None
    """-T fields: the -e columns."""
    values: str = "short"
    """-V: how much of each message's key and value (`--values none|short|full`)."""


class TimelinePrinter:
    """Turns annotated events into lines on an `Out`; returns when `count` frames are shown."""

    def __init__(self, out: Out, opts: TimelineOptions) -> None:
        self.out = out
        self.opts = opts
        self.clock = Clock(opts.time)
        self.shown = 0
        self.truncated: list[str] = []
        self.notes = CaptureNotes(summarise_snap=not opts.all_anomalies)
        self.said: list[str] = []
        """End-of-capture notes (no broker traffic, snap-length summary) for stderr."""
        self._json_first = True

    def frame(self, f: Frame, capture: str, item: Item) -> None:
        out, opts = self.out, self.opts
        if opts.columns is not None:
            # values are escaped by the columns; the separator may be a tab, which Out would escape
            sys.stdout.write(opts.columns.row(f, capture) + "\n")
            return
        if opts.fmt != "text":
            self._json(f, capture)
            return
        if out.rich:
            p = parts(f, self.clock.format(f.ts_us), item.reply, item.after)
            out.line("", lambda: rich_line(p, out.width))
        else:
            out.line(plain_frame(f, self.clock.format(f.ts_us), item.reply, item.after))
        if opts.detail:
            self.detail(f)
        if opts.hex:
            self.hex(f)
        if opts.detail or opts.hex:
            out.line("")

    def detail(self, f: Frame) -> None:
        out = self.out
        for t in detail_lines(f, self.opts.values):
            if out.rich:
                out.line("", lambda t=t: rich_tree_line(t), wrap=True)
            else:
                out.line(plain_tree_line(t))

    def hex(self, f: Frame) -> None:
        out = self.out
        if f.data is None:
            out.line("    (no bytes kept)")
            return
        marks = list(self.opts.marks) + [
            (a.offset, a.offset + 1) for a in f.anomalies if a.offset is not None and a.offset < len(f.data)
        ]
        if self.opts.mark_fields:
            marks += field_marks(f.spans, self.opts.mark_fields)
        if out.rich:
            for t in rich_hex_lines(f.data, marks, 16 if out.width >= 76 else 8):
                out.line("", lambda t=t: t)
        else:
            for s in hex_lines(f.data, marks):
                out.line(s)

    def anomaly(self, a: Anomaly, packet_ts: int | None) -> None:
        time = self.clock.format(packet_ts, advance=False)
        if self.out.rich:
            self.out.line("", lambda: rich_anomaly(a, time))
        else:
            self.out.line(plain_anomaly(a, time))

    def _json(self, f: Frame, capture: str) -> None:
        from wiredump.cli.jsonout import frame_json

        text = frame_json(f, capture, self.opts.detail)
        if self.opts.fmt == "jsonl":
            sys.stdout.write(text + "\n")
            return
        sys.stdout.write(("[\n  " if self._json_first else ",\n  ") + text)
        self._json_first = False

    def finish(self) -> None:
        if self.opts.fmt == "json":
            sys.stdout.write("[]\n" if self._json_first else "\n]\n")
        self.out.flush()

    def run(self, run: Run, items: Iterable[Item]) -> None:
        opts = self.opts
        flt = opts.filter
        started = False
        show_anomalies = opts.fmt == "text" and flt is None
        if opts.columns is not None and opts.columns.opts.header:
            sys.stdout.write(opts.columns.header() + "\n")
        if opts.count is not None and opts.count <= 0:
            return
        notes = self.notes
        for item in items:
            ev = item.ev
            kind = ev.kind
            if notes.feed(ev):
                continue  # a snap-length note: summarised at the capture's end
            if not started:
                self.clock.start(run.info.first_ts_us)
                if flt is not None:
                    flt.start_capture(run.info.first_ts_us)
                if opts.columns is not None:
                    opts.columns.ctx.start_capture(run.info.first_ts_us)
                started = True
                if len(run.paths) > 1 and opts.fmt == "text":
                    head = f"==> {run.info.name} <=="
                    self.out.line(head, lambda head=head: Text(head, "bold"))
            if kind == FRAME:
                f = ev.obj
                if flt is not None and not flt.matches(f, ev.capture):
                    continue
                self.frame(f, ev.capture, item)
                self.shown += 1
                if opts.count is not None and self.shown >= opts.count:
                    return  # stop reading at once, as tshark -c does
            elif kind == ANOMALY:
                if ev.frame is None and show_anomalies:
                    a = ev.obj
                    if a.kind in SHOWN_ANOMALIES or opts.all_anomalies:
                        self.anomaly(a, run.info.packet_ts(a.packet))
            elif kind == CAPTURE_END:
                started = False
                self.said += notes.end(ev, ev.obj.name if len(run.paths) > 1 else None)
                if ev.obj.truncated:
                    self.truncated.append(truncation(ev.obj.name, ev.obj.truncated))


def native_wanted(opts: TimelineOptions, out: Out, mark: list[str] | None) -> bool:
    """Whether this run is the plain text timeline the engine renders itself (`plain_native`).

    Plain text into a pipe or file (no colour), of every frame (no -Y), one line each (no -V,
    -x, --mark): then nothing of a frame is needed in Python but its
    line. Everything else (colour, the field tree, hex, filters, JSON, -T fields, workers)
    goes through `TimelinePrinter`, which stays the reference the native lines are tested
    against (`tests/test_timeline_native_render.py`, forcing it with `WIREDUMP_TIMELINE=python`).
    """
    return (
        renderer_allowed()
        and opts.fmt == "text"
        and not out.rich
        and opts.filter is None
        and opts.columns is None
        and not (opts.detail or opts.hex or opts.marks or opts.mark_fields or mark)
    )


def check_time(time: str) -> str:
    if time not in TIME_FORMATS:
        raise UsageError(f"-t takes one of {', '.join(TIME_FORMATS)}, not {time!r}")
    return time


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise UsageError(f"-T takes text, json, jsonl or fields, not {fmt!r}")
    return fmt


def mark_fields_or_fail(marks: list[str] | None) -> list[str]:
    """The `--mark` names of fields, each checked against the declared fields' keys.

    A name matches a decoded field whose path ends with it (`client_id`,
    `topic_data.0.name`); one that no protocol declares would mark nothing, silently.
    """
    import difflib

    from wiredump.dissect.fields import registry

    names = mark_names(marks)
    if not names:
        return names
    keys = {k.rsplit("/", 1)[-1] for d in registry().values() for k in d.keys}
    for name in names:
        last = [p for p in name.split(".") if not p.isdigit()][-1:] or [name]
        if last[0] not in keys:
            close = difflib.get_close_matches(last[0], sorted(keys), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else " (see `wiredump fields`)"
            raise UsageError(f"--mark {name!r}: no decoded field is called {last[0]!r}{hint}")
    return names


def marks_or_fail(marks: list[str] | None) -> list[tuple[int, int]]:
    try:
        return parse_marks(marks)
    except ValueError:
        raise UsageError(
            f"--mark takes START[:LENGTH] byte offsets, e.g. --mark 8:4, not {marks!r}"
        ) from None


@app.command(
    "timeline",
    help="One line per decoded frame, across Kafka, Pulsar, Pravega and TANK (the default command: "
    "'wiredump X.pcap' is 'wiredump timeline X.pcap').\n\n"
    "Each line: packet number, time, TCP stream, client → server (← for what the server sent), "
    "protocol, type and version, correlation id, the peer (→ #packet of the response on a request, "
    "← #packet and latency on a response), [status badges], and a summary.\n\n"
    "Examples:\n\n"
    "  wiredump capture.pcap\n\n"
    "  wiredump capture.pcap -Y 'type == Produce && latency_us > 10ms' -c 20\n\n"
    "  wiredump capture.pcap -V -x -Y 'packet == 42'\n\n"
    "  wiredump capture.pcap -T jsonl | jq .summary",
)
def timeline(
    captures: Captures,
    display_filter: Filter = None,
    decode_as: DecodeAs = None,
    count: Count = None,
    verbose: Annotated[
        bool,
        typer.Option("-V", "--verbose", help="Print the full decoded field tree under each line, e.g. -V."),
    ] = False,
    hex_: Annotated[
        bool, typer.Option("-x", "--hex", help="Print a hex dump of each frame's bytes, e.g. -x.")
    ] = False,
    fmt: Annotated[
        str,
        typer.Option(
            "-T",
            "--format",
            help="text (default), json (an array) or jsonl (one object per line); JSON objects have the "
            "columns of the frames table, e.g. -T jsonl.",
        ),
    ] = "text",
    time: Annotated[
        str,
        typer.Option(
            "-t",
            "--time",
            help="Time column: r relative to the first packet (default), d delta from the previous line, "
            "a absolute time of day (UTC), ad with the date, e epoch seconds; e.g. -t ad.",
        ),
    ] = "r",
    all_anomalies: Annotated[
        bool,
        typer.Option(
            "-A",
            "--all-anomalies",
            help="Also show retransmissions, out-of-order segments and other TCP events as lines (gaps, "
            "resyncs, oversize frames and truncation are always shown), e.g. -A.",
        ),
    ] = False,
    mark: Annotated[
        list[str] | None,
        typer.Option(
            "--mark",
            help="With -x: highlight bytes START[:LENGTH] of each frame, or the bytes a decoded field "
            "was read from (its whole encoding, any type), e.g. --mark 0:4 or --mark client_id (repeatable).",
        ),
    ] = None,
    line_buffered: Annotated[
        bool,
        typer.Option(
            "-l",
            "--line-buffered",
            help="Flush the output after each frame, as tshark -l, for live captures, e.g. "
            "tcpdump -U -w - port 9092 | wiredump - -l | grep Produce.",
        ),
    ] = False,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            help="Processes that decode for a plain or JSON-lines timeline into a pipe or file "
            "(connections are split between them by stream number, lines merged by packet); "
            "0 or 1 (default) = one process. Pays off with many comparable connections. E.g. --workers 2.",
        ),
    ] = 0,
    fields_: Annotated[
        list[str] | None,
        typer.Option(
            "-e",
            "--field",
            help="With -T fields: a column to print, a frame column (type, latency_us…) or any declared "
            "field (frame.number, kafka.topic, pulsar.producer_name; see 'wiredump fields'), "
            "e.g. -T fields -e frame.number -e kafka.client_id (repeatable).",
        ),
    ] = None,
    field_options: Annotated[
        list[str] | None,
        typer.Option(
            "-E",
            "--field-option",
            help="With -T fields, as tshark's -E: header=y|n, separator=/t|/s|C, occurrence=f|l|a, "
            "aggregator=,|/s|C, quote=d|s|n; e.g. -E header=y,separator=, (repeatable).",
        ),
    ] = None,
    write: Annotated[
        str | None,
        typer.Option(
            "-w",
            "--write",
            help="Write the packets of the frames the filter keeps (every packet that carried one of "
            "their bytes, the request a kept response answers, and each connection's handshake) to a "
            "pcap file in the capture's link type and time precision; nothing is printed. "
            "E.g. -Y 'kafka.topic == orders' -w orders.pcap.",
        ),
    ] = None,
    values: Values = "short",
    color: Color = None,
    progress: ProgressOpt = True,
) -> None:
    if workers < 0:
        raise UsageError("--workers takes 0 (automatic) or a positive number")
    if workers > 1 and "-" in captures:
        raise UsageError("--workers above 1 needs capture files, not stdin")
    if line_buffered:
        try:
            sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
        except (AttributeError, ValueError):
            pass
    ctx = FieldContext()
    if fields_ and fmt == "text":
        fmt = "fields"  # -e alone means -T fields
    columns = None
    if fmt == "fields":
        try:
            columns = FieldColumns(list(fields_ or []), parse_options(field_options), ctx)
        except ColumnsError as e:
            raise UsageError(str(e)) from None
    elif fields_ or field_options:
        raise UsageError("-e and -E go with -T fields")
    opts = TimelineOptions(
        filter=compile_or_exit(display_filter, ctx),
        count=count,
        detail=verbose,
        hex=hex_,
        fmt=check_format(fmt),
        time=check_time(time),
        all_anomalies=all_anomalies or verbose,
        marks=marks_or_fail(mark),
        mark_fields=mark_fields_or_fail(mark),
        columns=columns,
        values=check_values(values),
    )
    if write is not None:
        from wiredump.cli.pcapwrite import write_matching

        write_matching(captures, write, opts.filter, make_options(decode_as), progress)
        return
    options = engine_options(
        make_options(decode_as, keep_bytes=hex_),
        verbose=verbose,
        display_filter=opts.filter,
        columns=columns,
        fmt=fmt,
        mark_fields=opts.mark_fields,
        line_buffered=line_buffered,
    )
    out = Out(color if fmt == "text" else False)
    show_progress = progress_shown(progress, out.rich)
    from wiredump.dissect.workers import auto_workers

    n = workers or auto_workers(captures)
    if (
        n > 1
        and not out.rich
        and fmt in ("text", "jsonl")
        and time != "d"
        and not line_buffered
        and not (opts.filter and opts.filter.uses_time)
    ):
        from wiredump.cli import parallel

        job = parallel.Job(
            captures=list(captures),
            options=options,
            filter_text=display_filter,
            detail=verbose,
            hex=hex_,
            fmt=fmt,
            time=time,
            all_anomalies=opts.all_anomalies,
            marks=opts.marks,
            mark_fields=opts.mark_fields,
            values=opts.values,
            shard=(0, n),
            progress=show_progress,
        )
        try:
            _, truncated = parallel.run_parallel(job, n, count, len(captures) > 1)
        except parallel.WorkerError as e:
            raise UsageError(str(e)) from None
        sys.stdout.flush()
        code = report([], truncated)
        if code:
            raise typer.Exit(code)
        return
    if native_wanted(opts, out, mark):
        run = Run(captures, options, progress=show_progress)
        code = report(*plain_native(run, opts.count, opts.time, opts.all_anomalies, line_buffered))
        if code:
            raise typer.Exit(code)
        return
    run = Run(captures, options, progress=show_progress)
    printer = TimelinePrinter(out, opts)
    try:
        window = 0 if line_buffered else REORDER_WINDOW  # -l: each line as soon as it is known
        printer.run(run, in_packet_order(annotate(run.events()), window))
    finally:
        printer.finish()
    code = report(printer.said, printer.truncated)
    if code:
        raise typer.Exit(code)
