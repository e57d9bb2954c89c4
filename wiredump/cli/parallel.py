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
"""

from __future__ import annotations

import heapq
import multiprocessing as mp
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from wiredump.dissect.parallel import auto_workers  # noqa: F401  (the timeline asks this module)
from wiredump.dissect.pipeline import Options

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
    from wiredump.dissect.pipeline import ANOMALY, CAPTURE_END, FRAME

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
        batch: list[tuple[int, int, bool, str]] = []
        cap_index = 0
        started = False
        flt = opts.filter
        show_anomalies = job.fmt == "text" and flt is None
        for item in in_packet_order(annotate(run.events())):
            ev = item.ev
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
                # Snap-length notes are one summary line in a serial run (cli.notes); not per packet here.
                shown = a.kind in tl.SHOWN_ANOMALIES and a.kind != "truncated_packet"
                if shown or opts.all_anomalies:
                    printer.anomaly(a, run.info.packet_ts(a.packet))
                    batch.append((cap_index, a.packet, False, "\n".join(out.lines) + "\n"))
                    out.lines.clear()
            elif ev.kind == CAPTURE_END:
                if job.shard[0] == 0:
                    batch.append(
                        (
                            cap_index,
                            sys.maxsize,
                            False,
                            "\0end\0" + (ev.obj.truncated or "") + "\0" + ev.obj.name,
                        )
                    )
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


def _stream(conn: Any) -> Iterator[tuple[int, int, bool, str]]:
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
    """Writes the merged lines to stdout; returns (frames shown, truncation messages)."""
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
    write = sys.stdout.write
    current = -1
    try:
        merged = heapq.merge(*(_stream(c) for c in conns), key=lambda t: (t[0], t[1]))
        for cap, _packet, is_frame, text in merged:
            if text.startswith("\0end\0"):
                _, _, reason, name = text.split("\0", 3)
                if reason:
                    truncated.append(f"{name}: capture is truncated: {reason}")
                continue
            if multi and cap != current and job.fmt == "text":
                current = cap
                write(f"==> {job.captures[cap]} <==\n")
            write(text)
            if is_frame:
                shown += 1
                if count is not None and shown >= count:
                    break
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(timeout=5)
        for c in conns:
            c.close()
    return shown, truncated
