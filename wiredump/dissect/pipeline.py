"""One pass over one or more captures: the native engine's events, and the options that steer it.

The engine (`wiredump._engine.Dissector`, the Rust crate in engine/) reads the capture, reassembles
TCP, detects, frames and decodes each protocol and pairs requests with responses; what it yields
are the events of this module (`Event`, `CaptureEnd`, with `wiredump.dissect.model` objects), in
packet order as far as the hold bounds allow: a request waiting for its response holds back the
frames behind it (so that the request can carry its peer's packet number), but only up to
`hold_frames` frames, `hold_bytes` or `hold_us` of capture time. `dissect` is the only entry point
the sinks use; it streams, and each connection keeps bounded state.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from wiredump.dissect.limits import Limits
from wiredump.dissect.model import Frame

FRAME, ANOMALY, EXCHANGE, CONNECTION, CAPTURE_END = (
    "frame",
    "anomaly",
    "exchange",
    "connection",
    "capture_end",
)


@dataclass(slots=True)
class Options:
    decode_as: dict[int, str] = field(default_factory=dict)
    """Port → protocol name, overriding ports and sniffing (`-d 9999=kafka`)."""
    keep_bytes: bool = False
    """Keep each frame's bytes (hex dumps)."""
    show_secrets: bool = False
    messages: bool = True
    """Decode every application message. Sinks that need only frames (the plain timeline)
    turn it off; decoders may then count messages from their headers instead of decoding
    each one (checksums are still verified)."""
    values: bool = True
    """Keep each message's value bytes (`Message.value`). The export writes values only with
    `--values` and turns this off otherwise: the engine then copies no value out of the records
    it reads (it still checks and measures them: `value_size`)."""
    detail: bool = True
    """Hand each frame's decoded `fields` and `partitions` to the sinks. The plain timeline
    reads neither (its lines come from the frame's columns and summary): it turns this off,
    and the engine then leaves `fields` empty and `partitions` None instead of making
    a Python object per decoded field (half the timeline's time)."""
    live: bool = False
    """Dissect each packet as soon as it is read (`-l`, a pipe fed live) rather than in steps of
    a few hundred packets, which would hold the first lines until that many had arrived."""
    spans: bool = False
    """Hand each frame's field byte spans to the sinks (`Frame.spans`): only `-x --mark NAME`
    reads them, so other runs make no Python object for them."""
    hold_frames: int = 4096
    hold_bytes: int = 8 << 20
    """Frames are held by count and by wire bytes: a few hundred large Fetch responses carry
    as many messages as thousands of small frames (measured: holding 4096 frames behind a
    consumer's pending fetch took ~140 MB at the end of a 447k-packet export)."""
    hold_us: int = 120_000_000
    limits: Limits | None = None
    shard: tuple[int, int] | None = None
    """(k, n): decode only the connections whose stream index is k modulo n, for parallel
    workers that each read the whole capture. Connection-less anomalies go to shard 0."""
    observe_others: bool = True
    """With `shard`: frame the other shares' connections whose protocol shares run state
    (Kafka's topic names), so this share's rows are exactly the whole capture's. False: drop
    them, and check `Dissector.run_state_consulted` at the end: while it is false the rows are
    the same (Spark's speculative shares, `wiredump.spark.export`)."""
    protocols: tuple[str, ...] | None = None
    """Only these protocols are detected and decoded (None: every registered one)."""

    def new_limits(self) -> Limits:
        if self.limits is None:
            return Limits()
        from dataclasses import replace

        return replace(self.limits, decompressed_total=0)


@dataclass(slots=True)
class Event:
    kind: str
    obj: Any
    capture: str
    frame: Frame | None = None
    """For an anomaly that belongs to a frame: that frame."""


@dataclass(slots=True)
class CaptureEnd:
    name: str
    packets: int
    truncated: str | None
    skipped_unknown_link: int


def dissect_capture(reader: Any, options: Options) -> Iterator[Event]:
    """Every event of one opened capture (`open_source`), in order. The one place every event passes:
    the CLI, `dissect` and the exports all go through it (the test suite watches it for
    `internal_error` anomalies)."""
    yield from reader


def dissect(paths: Iterable[str], options: Options | None = None) -> Iterator[Event]:
    """Every event of every capture, one capture after the other.

    Raises `CaptureError` (with a sentence for the user) when a capture cannot be opened.
    """
    options = options or Options()
    for path in paths:
        reader = open_source(path, options)
        yield from dissect_capture(reader, options)


def open_source(path: str, options: Options) -> Any:
    """The capture opened by the engine (a `Dissector`: iterate it for the events; CaptureError when
    the file cannot be read as a capture). "-" reads Python's stdin object, which a caller may have
    replaced."""
    from wiredump._engine import Dissector

    if path == "-":
        return Dissector(getattr(sys.stdin, "buffer", sys.stdin), options, name="stdin")
    return Dissector(path, options)
