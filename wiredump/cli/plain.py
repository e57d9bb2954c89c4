"""The plain timeline, rendered by the engine: `wiredump X > file`, the main job.

The engine makes the lines (`wiredump._engine.TimelineFeed`) and Python writes them in chunks,
with no Python object per frame. This module imports neither typer nor rich: `wiredump X` with
no option into a pipe or file (`entry.main`) runs from here without the command line's
framework, whose start-up (typer imports pydantic and builds an adapter for every parameter)
was ~0.3 s (with compiled bytecode): a quarter of the whole timeline of the 224 MB benchmark
capture. Every other timeline (colour, `-V`, `-x`, a filter, JSON, `-T fields`) goes through
`timeline.TimelinePrinter`, which stays the reference the native lines are tested against
(`tests/test_timeline_native_render.py`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from wiredump.cli.notes import report
from wiredump.cli.source import REORDER_WINDOW, Progress, Run
from wiredump.cli.tty import color_wanted, stdout_tty
from wiredump.dissect import anomalies

SHOWN_ANOMALIES = anomalies.shown_by_default()
"""Anomalies without a frame shown by default: the kinds declared as errors and warnings
(`wiredump.dissect.anomalies`); notes (retransmission, out_of_order…) with -A."""

RENDERER_ENV = "WIREDUMP_TIMELINE"
"""Set to `python` to make the plain timeline in Python even where the native renderer would
(`timeline.native_wanted`): the differential tests compare the two renderers with it."""


def renderer_allowed() -> bool:
    """Whether the environment lets the engine render the plain timeline (see `RENDERER_ENV`)."""
    return os.environ.get(RENDERER_ENV, "") != "python"


def _stdout_bytes() -> Callable[[bytes], Any]:
    """How to write the native timeline's UTF-8 text: straight to the byte stream under a UTF-8
    `sys.stdout` (after what the text layer holds), else decoded through `sys.stdout`.

    The bytes are those the text layer would write whatever its error handler (`strict`, or
    `surrogateescape` in a C locale): the text comes from Rust strings, which hold no surrogate,
    so every character is encodable and no handler is ever called."""
    stdout = sys.stdout
    buffer = getattr(stdout, "buffer", None)
    encoding = (getattr(stdout, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    if buffer is not None and encoding == "utf8":
        stdout.flush()
        return buffer.write  # type: ignore[no-any-return]
    return lambda b: stdout.write(b.decode("utf-8"))


def plain_native(
    run: Run, count: int | None, time: str, all_anomalies: bool, line_buffered: bool
) -> tuple[list[str], list[str]]:
    """The plain timeline rendered by the engine: the same bytes as `TimelinePrinter` writes
    for it.

    What the terminal declares (the anomaly kinds shown, the stream breaks, the verdict words,
    the protocol names, the bounds) is handed to the renderer here, declared only on this side.
    Returns the end-of-capture notes and the truncation messages for stderr, as
    `TimelinePrinter.said` and `.truncated` hold them.
    """
    from wiredump import _engine
    from wiredump.cli import notes, source

    if count is not None and count <= 0:
        return [], []  # as the printer: nothing is opened
    feed = _engine.TimelineFeed(
        time=time,
        all_anomalies=all_anomalies,
        count=count,
        window=0 if line_buffered else REORDER_WINDOW,
        several=len(run.paths) > 1,
        line_buffered=line_buffered,
        progress=run.progress.enabled,
        shown=set(SHOWN_ANOMALIES),
        stream_breaks=set(source.STREAM_BREAKS),
        snap=notes.SNAP,
        titles=notes.protocol_titles(),
        unanswered=source.UNANSWERED,
        no_reply_yet=source.NO_REPLY_YET,
        max_wait=source.MAX_WAIT,
        max_ports=notes.MAX_PORTS,
    )
    write = _stdout_bytes()
    flush = getattr(getattr(sys.stdout, "buffer", None), "flush", sys.stdout.flush)
    progress = run.progress
    captures = run.captures()
    try:
        for capture in captures:
            more = True
            while more:
                text, marks, more = feed.pump(capture)
                if text:
                    write(text)
                    if line_buffered:
                        flush()
                for number in marks:
                    progress.update(capture.bytes_read, number)
            if feed.stopped:
                break
        write(feed.finish())
    finally:
        captures.close()
        flush()
        sys.stdout.flush()
    return feed.said, feed.truncated


def engine_options(
    options: Any,
    *,
    verbose: bool = False,
    display_filter: Any = None,
    columns: Any = None,
    fmt: str = "text",
    mark_fields: Any = None,
    line_buffered: bool = False,
) -> Any:
    """What the engine makes for a timeline, set on `options` (a `pipeline.Options`) and
    returned: the one rule for the full command (`timeline.timeline`) and the short way in
    (`default_timeline`, every argument at its default).

    Lines show counts, not each message: per-message decoding only when the field tree (`-V`),
    the filter (the `topic`/`messages` columns, per-record fields) or an `-e` column looks at
    messages. The lines read only the frame's columns and summary: the decoded fields are made
    only for the field tree, a filter, the JSON or `-e` columns and `--mark NAME`.
    """
    options.messages = (
        verbose
        or bool(display_filter and display_filter.needs_messages)
        or bool(columns and columns.needs_messages)
    )
    options.detail = bool(verbose or display_filter is not None or fmt != "text" or mark_fields)
    options.spans = bool(mark_fields)
    options.live = line_buffered  # -l: each packet dissected as soon as it is read
    return options


def progress_shown(progress: bool = True, rich: bool = False) -> bool:
    """Whether a timeline draws its progress bar: asked for (the default), on a terminal's
    stderr, and not over lines going to the same terminal or drawn by rich."""
    return progress and not rich and Progress.wanted() and not stdout_tty()


def default_timeline(captures: list[str]) -> int | None:
    """`wiredump CAPTURE…` with no option, when the engine renders it: the exit code; None when
    this run needs the full command (colour on a terminal, the Python renderer asked for, more
    than one worker), which then makes it from the same defaults (`timeline.timeline`)."""
    from wiredump.cli.options import make_options
    from wiredump.dissect.workers import auto_workers

    if color_wanted(None) or not renderer_allowed() or auto_workers(captures) > 1:
        return None
    options = engine_options(make_options(None))
    run = Run(captures, options, progress=progress_shown())
    said, truncated = plain_native(run, None, "r", False, False)
    return report(said, truncated)
