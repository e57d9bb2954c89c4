"""`wiredump stats CAPTURE…`: counts, bytes, errors, latency percentiles, connections, anomalies.

The numbers come from `wiredump.dissect.stats` (shared with `check`); this module
only lays them out — rich tables and a bar histogram on a terminal, aligned plain
text in a pipe, one JSON document with `--json`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from wiredump.cli.app import EXIT_INPUT, Captures, DecodeAs, app
from wiredump.cli.escape import escape
from wiredump.cli.notes import truncation
from wiredump.cli.options import make_options
from wiredump.cli.output import Out
from wiredump.cli.render import (
    endpoint,
    format_latency,
    plain_table,
    protocol_style,
    short_latency,
)
from wiredump.cli.source import Progress, Run
from wiredump.cli.timeline import Color, Filter, ProgressOpt, compile_or_exit
from wiredump.cli.words import plural
from wiredump.dissect.filter import DisplayFilter
from wiredump.dissect.pipeline import CAPTURE_END, Event
from wiredump.dissect.stats import StatsCollector

TYPE_HEADERS = ["protocol", "type", "frames", "bytes", "errors", "p50", "p90", "p99", "max", "unanswered"]
CONN_HEADERS = ["stream", "client", "server", "protocol", "frames", "bytes", "gaps", "retrans", "state"]


def _lat(v: int | None) -> str:
    return "-" if v is None else format_latency(v)


def _errors(t: dict[str, Any]) -> str:
    parts = [f"{escape(name)}×{n}" for name, n in t["errors"].items()]
    parts += [f"{escape(name)}×{n}" for name, n in t["statuses"].items()]
    return ", ".join(parts) if parts else "-"


def _human_bytes(n: int) -> str:
    if n < 10_000:
        return str(n)
    for unit in ("KB", "MB", "GB"):
        n /= 1000  # type: ignore[assignment]
        if n < 10_000:
            return f"{n:.1f} {unit}"
    return f"{n:.1f} TB"


def type_rows(result: dict[str, Any], fmt: Callable[[int | None], str] = _lat) -> list[list[str]]:
    rows = []
    for t in result["types"]:
        lat = t["latency_us"]
        rows.append(
            [
                t["protocol"],
                escape(t["type"]),
                str(t["frames"]),
                str(t["bytes"]),
                _errors(t),
                fmt(lat["p50"]),
                fmt(lat["p90"]),
                fmt(lat["p99"]),
                fmt(lat["max"]),
                str(t["unanswered"]),
            ]
        )
    return rows


def shown_endpoint(host_port: str) -> str:
    """`host:port` of the stats document as the terminal writes it (`[::1]:9092` for IPv6)."""
    host, _, port = host_port.rpartition(":")
    return endpoint(host, int(port)) if port.isdigit() else host_port


def one_host(result: dict[str, Any]) -> str | None:
    """The host every connection runs between (loopback captures), else None."""
    hosts = {
        shown_endpoint(e).rpartition(":")[0]
        for c in result["connections"]
        for e in (c["client"], c["server"])
    }
    return hosts.pop() if len(hosts) == 1 else None


def conn_rows(result: dict[str, Any], multi: bool, ports_only: bool = False) -> list[list[str]]:
    rows = []
    for c in result["connections"]:
        stream = f"{escape(os.path.basename(c['capture']))}:{c['stream']}" if multi else str(c["stream"])
        rows.append(
            [
                stream,
                c["client"].rpartition(":")[2] if ports_only else shown_endpoint(c["client"]),
                c["server"].rpartition(":")[2] if ports_only else shown_endpoint(c["server"]),
                c["protocol"] or "-",
                str(c["frames"]),
                str(c["bytes"]),
                str(c["gaps"]),
                str(c["retransmissions"]),
                c["state"],
            ]
        )
    return rows


def histogram_lines(result: dict[str, Any], width: int, bar_char: str) -> list[tuple[str, str, str, int]]:
    """(protocol, label, bar, count) rows of the latency histograms."""
    out = []
    for proto, buckets in result["histogram"].items():
        peak = max((b["count"] for b in buckets), default=0) or 1
        bar_width = max(10, min(50, width - 30))
        prev = 0
        for b in buckets:
            label = (
                f"{short_latency(prev)}–{short_latency(b['le_us'])}"
                if prev
                else f"≤{short_latency(b['le_us'])}"
            )
            n = b["count"]
            bar = bar_char * (round(n / peak * bar_width) if n else 0)
            if n and not bar:
                bar = bar_char
            out.append((proto, label, bar, n))
            prev = b["le_us"]
    return out


def _size(n: int) -> str:
    """`512 bytes`, `1 byte`, `68.8 KB`: a unit once, never `KB bytes`."""
    return plural(n, "byte") if n < 10_000 else _human_bytes(n)


def _summary_line(result: dict[str, Any]) -> str:
    tot = result["totals"]
    caps = result["captures"]
    packets = sum(c["packets"] for c in caps)
    return (
        f"{plural(len(caps), 'capture')}, {plural(packets, 'packet')}, {plural(tot['frames'], 'frame')}, "
        f"{_size(tot['bytes'])}, {plural(tot['messages'], 'message')}\n"
        f"{plural(tot['connections'], 'connection')}, {plural(tot['anomalies'], 'anomaly', 'anomalies')}, "
        f"{plural(tot['unanswered'], 'unanswered request')}"
    )


def _not_listed(result: dict[str, Any]) -> str:
    tot = result["totals"]
    n = tot["connections_not_listed"]
    return f"… {plural(n, 'more connection')} not listed (the first {tot['connections'] - n} are)"


def print_plain(result: dict[str, Any]) -> None:
    w = sys.stdout.write
    w(_summary_line(result) + "\n\n")
    w("Frames by protocol and type (latency of the exchanges the type starts)\n")
    for line in plain_table(TYPE_HEADERS, type_rows(result), right={2, 3, 5, 6, 7, 8, 9}):
        w(line + "\n")
    w("\nConnections\n")
    multi = len(result["captures"]) > 1
    for line in plain_table(CONN_HEADERS, conn_rows(result, multi), right={4, 5, 6, 7}):
        w(line + "\n")
    if result["totals"].get("connections_not_listed"):
        w(_not_listed(result) + "\n")
    w("\nAnomalies\n")
    if result["anomalies"]:
        rows = [
            [k, str(v["count"]), " ".join(f"#{p}" for p in v["packets"][:8])]
            for k, v in result["anomalies"].items()
        ]
        for line in plain_table(["kind", "count", "first packets"], rows, right={1}):
            w(line + "\n")
    else:
        w("none\n")
    if result["histogram"]:
        w("\nLatency histogram\n")
        hist = histogram_lines(result, 80, "#")
        lw = max(len(h[1]) for h in hist)
        for proto, label, bar, n in hist:
            w(f"{proto:<8} {label:>{lw}} |{bar} {n}\n")


def _table(title: str, caption: str | None = None, header: bool = True) -> Table:
    return Table(
        title=title,
        caption=caption,
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
        collapse_padding=True,
        show_header=header,
        title_justify="left",
    )


def print_rich(out: Out, result: dict[str, Any]) -> None:
    """Tables that fit the terminal: narrow terminals drop the bytes and p90 columns."""
    wide = out.width >= 110
    for line in _summary_line(result).splitlines():
        out.render(Text(line, style="bold", no_wrap=True, overflow="ellipsis"))
    keep = [i for i in range(len(TYPE_HEADERS)) if wide or TYPE_HEADERS[i] not in ("bytes", "p90")]
    t = _table("Frames by protocol and type", "latency: of the exchanges the type starts")
    numeric = {2, 3, 5, 6, 7, 8, 9}
    trows = type_rows(result, short_latency)
    headers = {
        i: ("unans." if TYPE_HEADERS[i] == "unanswered" and not wide else TYPE_HEADERS[i]) for i in keep
    }
    widths = {i: max([len(headers[i])] + [len(r[i]) for r in trows]) for i in keep}
    # Every column keeps its full width except the type (cut with …) and the errors (folded), so a
    # narrow terminal never loses a number or a column.
    spare = out.width - 2 - 2 * (len(keep) - 1) - sum(w for i, w in widths.items() if i not in (1, 4))
    errors_w = min(widths[4], max(8, spare // 3))
    type_w = max(8, min(widths[1], spare - errors_w))
    for r in trows:
        if len(r[1]) > type_w:
            r[1] = r[1][: type_w - 1] + "…"
    for i in keep:
        t.add_column(
            headers[i],
            justify="right" if i in numeric else "left",
            no_wrap=i != 4,
            overflow="fold",
            min_width=None if i == 4 else widths[i] if i != 1 else min(widths[1], type_w),
        )
    for row in trows:
        cells: list[Text | str] = list(row)
        cells[0] = Text(row[0], protocol_style(row[0], ""))
        if row[4] != "-":
            cells[4] = Text(row[4], "red")
        if row[9] != "0":
            cells[9] = Text(row[9], "bold red")
        t.add_row(*[cells[i] for i in keep])
    out.render(t)
    host = None if wide else one_host(result)
    c = _table(f"Connections (all between {host}: ports shown)" if host else "Connections")
    crows = conn_rows(result, len(result["captures"]) > 1, ports_only=host is not None)
    for i, h in enumerate(CONN_HEADERS):
        num = i in (4, 5, 6, 7)
        label = {"protocol": "proto", "retrans": "retr"}.get(h, h) if not wide else h
        fixed = max([len(label)] + [len(r[i]) for r in crows]) if i > 2 else None
        c.add_column(
            label,
            justify="right" if num else "left",
            no_wrap=i not in (0, 1, 2),
            overflow="fold",
            min_width=fixed,
        )
    for row in crows:
        cells = list(row)
        cells[3] = Text(row[3], protocol_style(row[3], ""))
        if row[6] != "0":
            cells[6] = Text(row[6], "bold red")
        c.add_row(*cells)
    out.render(c)
    if result["totals"].get("connections_not_listed"):
        out.line(_not_listed(result))
    a = _table("Anomalies")
    a.add_column("kind", no_wrap=True)
    a.add_column("count", justify="right", no_wrap=True)
    a.add_column("first packets", overflow="fold")
    for k, v in result["anomalies"].items():
        a.add_row(Text(k, "yellow"), str(v["count"]), " ".join(f"#{p}" for p in v["packets"][:8]))
    if not result["anomalies"]:
        a.add_row("none", "0", "")
    out.render(a)
    if result["histogram"]:
        h = _table("Latency histogram", header=False)
        h.add_column("protocol", no_wrap=True)
        h.add_column("latency", justify="right", no_wrap=True)
        h.add_column("bar", no_wrap=True, overflow="crop")
        h.add_column("count", justify="right", no_wrap=True)
        for proto, label, bar, n in histogram_lines(result, out.width - 12, "█"):
            h.add_row(Text(proto, protocol_style(proto, "")), label, Text(bar, "green"), str(n))
        out.render(h)
    out.flush()


def collect(
    captures: list[str],
    decode_as: list[str] | None,
    progress: bool,
    display_filter: DisplayFilter | None = None,
) -> StatsCollector:
    run = Run(captures, make_options(decode_as), progress=progress and Progress.wanted())
    stats = StatsCollector(display_filter.matches if display_filter is not None else None)
    events = run.events()
    if display_filter is not None:
        events = _with_origin(events, run, display_filter)
    stats.add_events(events)
    return stats


def _with_origin(events: Iterator[Event], run: Run, flt: DisplayFilter) -> Iterator[Event]:
    """The events, telling the filter where each capture starts (frame.time_relative counts from there)."""
    started = False
    for ev in events:
        if not started:
            flt.start_capture(run.info.first_ts_us)
            started = True
        if ev.kind == CAPTURE_END:
            started = False
        yield ev


@app.command(
    "stats",
    help="Statistics: per protocol and type (frames, bytes, errors by name, latency p50/p90/p99/max, "
    "unanswered requests), per connection (client, server, protocol, frames, bytes, gaps, "
    "retransmissions, state), anomalies by kind and a latency histogram.\n\n"
    "Latency and unanswered counts belong to the type that starts the exchange (a Pulsar SEND, not "
    "its SEND_RECEIPT). Percentiles are nearest-rank: always a latency that was measured.\n\n"
    "With -Y only matching frames count; an exchange counts when its request side matches, a "
    "connection or anomaly when its stream has a matching frame.\n\n"
    "Examples:\n\n"
    "  wiredump stats capture.pcap\n\n"
    "  wiredump stats capture.pcap -Y 'protocol == kafka && stream in {3..5}'\n\n"
    "  wiredump stats a.pcap b.pcapng --json | jq '.types[] | {type, p99: .latency_us.p99}'",
)
def stats(
    captures: Captures,
    display_filter: Filter = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print one JSON document for machines instead of tables, e.g. --json."),
    ] = False,
    decode_as: DecodeAs = None,
    color: Color = None,
    progress: ProgressOpt = True,
) -> None:
    collector = collect(captures, decode_as, progress, compile_or_exit(display_filter))
    result = collector.result()
    if as_json:
        sys.stdout.write(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    else:
        out = Out(color)
        if out.rich:
            print_rich(out, result)
        else:
            print_plain(result)
        if result["totals"]["frames"] == 0 and display_filter is None:
            from wiredump.cli.notes import no_frames

            ports: dict[int, int] = {}
            for c in result["connections"]:
                port = int(c["server"].rpartition(":")[2])
                ports[port] = ports.get(port, 0) + 1
            packets = sum(c["packets"] for c in result["captures"])
            typer.echo(f"wiredump: {no_frames(len(result['connections']), ports, packets)}", err=True)
    truncated = [c for c in result["captures"] if c["truncated"]]
    for c in truncated:
        typer.echo(f"wiredump: {truncation(c['name'], c['truncated'])}", err=True)
    if truncated:
        raise typer.Exit(EXIT_INPUT)
