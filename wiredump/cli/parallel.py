"""The plain timeline on several cores: connections split across processes, lines merged by packet.

Decoding is what costs; formatting a line is cheap. Each worker reads the whole
capture, decodes only its share of the connections (`Options.shard`, as the
parallel export does), formats its lines exactly as the serial timeline would, and
sends them in batches keyed by (capture, packet). The parent merges the workers'
streams on that key and writes them out. Frames of different connections never
complete in the same packet, so frame lines come out in the serial order; a
connection-less anomaly line may trade places with a frame line of the same packet.

Used for plain text and JSON lines into a pipe or file (no delta times, which
depend on the previous line shown).

The end-of-capture notes (no broker traffic, the snap-length summary: `cli.notes`)
need the whole capture's counts, and each worker sees only its share of the
connections: every worker sends its own `CaptureNotes` with its end-of-capture
marker, and the parent adds them up and prints the serial run's lines.
"""

from __future__ import annotations

import heapq
import multiprocessing as mp
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import typer

from wiredump.cli.notes import CaptureNotes, truncation
from wiredump.dissect.pipeline import CAPTURE_END, CaptureEnd, Event, Options

BATCH = 512


@dataclass
class Job:
    captures: list[str]
    options: Options
    filter_text: str | None
    detail: bool
    hex: bool
    fmt: str
    time: str
    all_anomalies: bool
    marks: list[tuple[int, int]]
    mark_fields: list[str]
    shard: tuple[int, int]
    progress: bool
    values: str = "short"


@dataclass
class _End:
    """A worker's end-of-capture marker: its share of the notes; the capture's end from worker 0."""

    notes: CaptureNotes
    end: CaptureEnd | None


def _add_notes(parts: list[CaptureNotes], summarise_snap: bool) -> CaptureNotes:
    """The workers' notes of one capture as one serial run would have counted them."""
    total = CaptureNotes(summarise_snap=summarise_snap)
    for n in parts:
        total.frames += n.frames
        total.connections += n.connections
        for port, k in n.ports.items():
            total.ports[port] = total.ports.get(port, 0) + k
        total.snap += n.snap
        first = n.snap_first
        if first is not None and (total.snap_first is None or first.packet < total.snap_first.packet):
            total.snap_first = first
        total.snap_last = max(total.snap_last, n.snap_last)
    return total


class _Collect:
    """An `Out` look-alike that keeps lines in memory for the worker to send."""

    rich = False
    width = 200

    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, plain: str, styled: Any = None, wrap: bool = False) -> None:
        self.lines.append(plain)

    def flush(self) -> None:
        pass


def _worker(job: Job, conn: Any) -> None:
    """Runs in a child: formats its shard's lines and sends [(capture, packet, text)…] batches."""
    from wiredump.cli import timeline as tl
    from wiredump.cli.source import Run, annotate, in_packet_order
    from wiredump.dissect.capture import CaptureError
    from wiredump.dissect.filter import compile_filter
    from wiredump.dissect.pipeline import ANOMALY, FRAME

    try:
        opts = tl.TimelineOptions(
            filter=compile_filter(job.filter_text),
            detail=job.detail,
            hex=job.hex,
            fmt=job.fmt,
            time=job.time,
            all_anomalies=job.all_anomalies,
            marks=job.marks,
            mark_fields=job.mark_fields,
            values=job.values,
        )
        run = Run(job.captures, replace(job.options, shard=job.shard), progress=job.progress)
        out = _Collect()
        printer = tl.TimelinePrinter(out, opts)
        json_lines: list[str] = []
        if job.fmt == "jsonl":
            printer._json = lambda f, capture: json_lines.append(_json_line(f, capture, job.detail))  # type: ignore[method-assign]
        batch: list[tuple[int, int, bool, str | _End]] = []
        notes = CaptureNotes(summarise_snap=not job.all_anomalies)
        cap_index = 0
        started = False
        flt = opts.filter
        show_anomalies = job.fmt == "text" and flt is None
        for item in in_packet_order(annotate(run.events())):
            ev = item.ev
            if notes.feed(ev):
                continue  # a snap-length note: summarised at the capture's end, as in a serial run
            if not started:
                printer.clock.start(run.info.first_ts_us)
                started = True
            if ev.kind == FRAME:
                f = ev.obj
                if flt is not None and not flt.matches(f, ev.capture):
                    continue
                printer.frame(f, ev.capture, item)
                text_lines = json_lines if job.fmt == "jsonl" else out.lines
                batch.append((cap_index, f.packet, True, "\n".join(text_lines) + "\n"))
                text_lines.clear()
            elif ev.kind == ANOMALY and ev.frame is None and show_anomalies:
                a = ev.obj
                if a.kind in tl.SHOWN_ANOMALIES or opts.all_anomalies:
                    printer.anomaly(a, run.info.packet_ts(a.packet))
                    batch.append((cap_index, a.packet, False, "\n".join(out.lines) + "\n"))
                    out.lines.clear()
            elif ev.kind == CAPTURE_END:
                end = _End(notes, ev.obj if job.shard[0] == 0 else None)
                batch.append((cap_index, sys.maxsize, False, end))
                notes = CaptureNotes(summarise_snap=not job.all_anomalies)
                cap_index += 1
                started = False
            if len(batch) >= BATCH:
                conn.send(batch)
                batch = []
        if batch:
            conn.send(batch)
        conn.send(None)
    except CaptureError as e:
        conn.send(("error", str(e)))
    except BrokenPipeError:
        pass
    except Exception as e:  # a bug must reach the parent as an error, not a hang
        conn.send(("error", f"worker failed: {type(e).__name__}: {e}"))
    finally:
        conn.close()


def _json_line(f: Any, capture: str, verbose: bool = False) -> str:
    from wiredump.cli.jsonout import frame_json

    return frame_json(f, capture, verbose)


class WorkerError(Exception):
    pass


def _stream(conn: Any) -> Iterator[tuple[int, int, bool, str | _End]]:
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            raise WorkerError("a worker ended without finishing") from None
        if msg is None:
            return
        if isinstance(msg, tuple):
            raise WorkerError(msg[1])
        yield from msg


def run_parallel(job: Job, workers: int, count: int | None, multi: bool) -> tuple[int, list[str]]:
    """Writes the merged lines to stdout and the end-of-capture notes to stderr, as the serial
    timeline does; returns (frames shown, truncation messages)."""
    if count is not None and count <= 0:
        return 0, []
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    procs = []
    conns = []
    for k in range(workers):
        parent, child = ctx.Pipe(duplex=False)
        j = replace(job, shard=(k, workers), progress=job.progress and k == 0)
        p = ctx.Process(target=_worker, args=(j, child), daemon=True)
        p.start()
        child.close()
        procs.append(p)
        conns.append(parent)
    shown = 0
    truncated: list[str] = []
    said: list[str] = []
    ends: dict[int, list[_End]] = {}
    write = sys.stdout.write
    current = -1
    text_headers = multi and job.fmt == "text"
    try:
        merged = heapq.merge(*(_stream(c) for c in conns), key=lambda t: (t[0], t[1]))
        for cap, _packet, is_frame, text in merged:
            if text_headers and cap != current:
                # The serial timeline names every capture it reaches, even one that shows no line.
                current = cap
                write(f"==> {job.captures[cap]} <==\n")
            if isinstance(text, _End):
                parts = ends.setdefault(cap, [])
                parts.append(text)
                if len(parts) == workers:  # every worker has finished this capture
                    end = next(e.end for e in parts if e.end is not None)
                    notes = _add_notes([e.notes for e in parts], not job.all_anomalies)
                    said += notes.end(Event(CAPTURE_END, end, end.name), end.name if multi else None)
                    if end.truncated:
                        truncated.append(truncation(end.name, end.truncated))
                    del ends[cap]
                continue
            write(text)
            if is_frame:
                shown += 1
                if count is not None and shown >= count:
                    break
        sys.stdout.flush()
        for line in said:
            typer.echo(f"wiredump: {line}", err=True)
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(timeout=5)
        for c in conns:
            c.close()
    return shown, truncated
