"""Running the pipeline for the terminal commands: progress, packet times, reply verdicts.

The commands want a few things the event stream does not hand them directly:
the time of the first packet (relative times count from it, as tshark's do), the
time of any packet (anomalies carry a packet number only), how far into the file
the reader is (the progress bar), and whether a request that left without a peer
was never answered or simply expects no answer (the exchange event that says so
may come a little after the frame). `run` has the engine report each record to note the
first two, and `annotate` holds a frame back only until that verdict is known.
"""

from __future__ import annotations

import heapq
import os
import sys
import time
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from wiredump.dissect.model import Frame
from wiredump.dissect.pipeline import (
    ANOMALY,
    CAPTURE_END,
    EXCHANGE,
    FRAME,
    Event,
    Options,
    dissect_capture,
    open_source,
)

STREAM_BREAKS = frozenset({"gap", "resync"})
"""Anomalies without a frame that make the next frame of their stream suspect."""


class Progress:
    """A one-line progress bar on stderr: share of the bytes read, packets, MB/s and the time left.

    Redrawn at most 10 times a second. Hidden unless stderr is a terminal, and always
    in CI (`CI=true`), so logs and pipes never see it. The total is the captures' size
    on disk (unknown for stdin: then no bar). Output written to the same terminal first
    calls `clear`, and the next update draws the bar again below it.
    """

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = max(total, 1)
        self.enabled = enabled
        self.done = 0  # bytes of the captures already finished
        self.started = time.monotonic()
        self.last = 0.0
        self.drawn = False
        self.packets = 0

    @staticmethod
    def wanted() -> bool:
        if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
            return False
        try:
            return sys.stderr.isatty()
        except (AttributeError, ValueError):
            return False

    def line(self, pos: int, packets: int, now: float) -> str:
        """The bar for `pos` bytes of the current capture read and `packets` packets so far."""
        read = self.done + pos
        frac = min(1.0, read / self.total)
        width = 30
        fill = int(frac * width)
        elapsed = max(now - self.started, 1e-6)
        rate = read / elapsed
        eta = ""
        if 0 < frac < 1 and elapsed >= 1:
            left = int((self.total - read) / max(rate, 1e-6))
            eta = f"  ETA {left // 3600}:{left // 60 % 60:02d}:{left % 60:02d}"
        return (
            f"[{'#' * fill}{'.' * (width - fill)}] {frac * 100:5.1f}%  {packets:,} packets  "
            f"{rate / 1e6:,.1f} MB/s{eta}"
        )

    def update(self, pos: int, packets: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < 0.1:
            return
        self.last = now
        self.packets = packets
        sys.stderr.write("\r" + self.line(pos, packets, now).ljust(78) + " ")
        sys.stderr.flush()
        self.drawn = True

    def finish_file(self, size: int) -> None:
        self.done += size

    def clear(self) -> None:
        """Wipe the bar (before other output goes to the same terminal); the next update redraws it."""
        if self.enabled and self.drawn:
            sys.stderr.write("\r" + " " * 80 + "\r")
            sys.stderr.flush()
            self.drawn = False
            self.last = 0.0

    def close(self) -> None:
        self.clear()


class PacketTimes:
    """The times of the most recent packets (a bounded ring), so memory stays flat on long captures.

    Anomalies name a packet, not a time; they are reported close to the packet they
    name, so a window of the last 2**20 packets (8 MiB) answers every lookup in practice.
    """

    WINDOW = 1 << 20

    def __init__(self, window: int = WINDOW) -> None:
        self.WINDOW = window
        self._ring = array("q", bytes(8 * window))
        self.count = 0
        self.first: int | None = None

    def append(self, ts_us: int) -> None:
        if self.first is None:
            self.first = ts_us
        self._ring[self.count % self.WINDOW] = ts_us
        self.count += 1

    def get(self, packet: int) -> int | None:
        """Time of 1-based `packet`, or None when it is unknown or out of the window."""
        if self.count - self.WINDOW < packet <= self.count and packet >= 1:
            return self._ring[(packet - 1) % self.WINDOW]
        return None


def _record_hook(reader: Any, progress: Progress, times: PacketTimes | None) -> Callable[[int, int], None]:
    """The engine's callback per record (`Dissector.on_record`): each packet's time, and progress."""
    enabled = progress.enabled

    def on_record(number: int, ts_us: int) -> None:
        if times is not None:
            while times.count < number - 1:
                times.append(ts_us)
            times.append(ts_us)
        if enabled and not number & 1023:
            progress.update(reader.bytes_read, number)

    return on_record


@dataclass
class CaptureInfo:
    """What the commands know of the capture being read."""

    name: str
    times: PacketTimes = field(default_factory=PacketTimes)
    packets: int = 0
    """Packets the capture holds, once its end is read."""

    @property
    def first_ts_us(self) -> int | None:
        return self.times.first

    def packet_ts(self, packet: int) -> int | None:
        return self.times.get(packet)


class Run:
    """Every event of every capture, with per-capture packet times and an optional progress bar.

    Commands that never look up a packet's time (export, check, baseline) pass
    `times=False` and get only the progress bar.
    """

    def __init__(
        self, paths: list[str], options: Options, progress: bool = False, times: bool = True
    ) -> None:
        self.paths = paths
        self.options = options
        sizes = []
        for p in paths:
            try:
                sizes.append(os.path.getsize(p) if p != "-" else 0)
            except OSError:
                sizes.append(0)
        self.sizes = sizes
        self.progress = Progress(sum(sizes), progress and sum(sizes) > 0)
        self.info = CaptureInfo("", PacketTimes(1))
        self.times = times

    def events(self) -> Iterator[Event]:
        try:
            for path, size in zip(self.paths, self.sizes, strict=True):
                reader = open_source(path, self.options)
                self.info = CaptureInfo(reader.name, PacketTimes() if self.times else PacketTimes(1))
                times = self.info.times if self.times else None
                reader.on_record = _record_hook(reader, self.progress, times)
                try:
                    yield from dissect_capture(reader, self.options)
                finally:
                    # The hook holds the reader: a cycle through a native object that
                    # Python's collector cannot see, which kept every capture's engine alive.
                    reader.on_record = None
                self.progress.finish_file(size)
        finally:
            self.progress.close()

    def captures(self) -> Iterator[Any]:
        """Each capture opened in turn, for a consumer that reads its records itself (the native
        timeline, `plain.plain_native`); one is counted done for the progress bar when the
        next is asked for. Packet times are the consumer's to keep."""
        try:
            for path, size in zip(self.paths, self.sizes, strict=True):
                reader = open_source(path, self.options)
                self.info = CaptureInfo(reader.name, PacketTimes(1))
                yield reader
                self.progress.finish_file(size)
        finally:
            self.progress.close()


# -- reply verdicts --------------------------------------------------------------------------------
UNANSWERED = "unanswered"
NO_REPLY_YET = "no reply yet"
_PENDING = object()
MAX_WAIT = 10000
"""Frames held at most while waiting for a verdict; past that the oldest leaves without one."""


@dataclass(slots=True)
class Item:
    """An event with what the terminal adds to a frame: its reply verdict and stream marks."""

    ev: Event
    reply: Any = None  # None, UNANSWERED, NO_REPLY_YET (or _PENDING while waiting)
    after: str | None = None  # "gap" / "resync" when the stream broke before this frame


def _key(stream: int, packet: int | None, cid: int | None, type_: str) -> tuple[Any, ...]:
    return (stream, packet, cid, type_)


def annotate(events: Iterable[Event]) -> Iterator[Item]:
    """The events in order, each frame with its verdict.

    A request that left the pipeline with no peer either expects no response or was
    never answered; the exchange event tells which. It may come before the frame
    (kept in `early`) or after (the frame waits in `queue`, holding back what follows
    so that order is kept).
    """
    queue: deque[Item] = deque()
    waiting: dict[tuple[Any, ...], deque[Item]] = {}
    early: dict[tuple[Any, ...], str] = {}
    broken: dict[int, tuple[str, int]] = {}  # stream -> (anomaly kind, packet)

    def resolve(item: Item, status: str | None) -> None:
        item.reply = UNANSWERED if status == "unanswered" else None

    for ev in events:
        kind = ev.kind
        item = Item(ev)
        if kind == FRAME:
            f: Frame = ev.obj
            mark = broken.get(f.stream)
            if mark is not None and f.first_packet >= mark[1]:
                item.after = mark[0]
                del broken[f.stream]
            if f.kind == "request" and f.peer_packet is None:
                if f.awaiting:
                    item.reply = NO_REPLY_YET
                else:
                    key = _key(f.stream, f.packet, f.correlation_id, f.type)
                    status = early.pop(key, _PENDING)
                    if status is _PENDING:
                        item.reply = _PENDING
                        waiting.setdefault(key, deque()).append(item)
                    else:
                        resolve(item, status)  # type: ignore[arg-type]
        elif kind == EXCHANGE:
            ex = ev.obj
            if ex.request_packet is not None and ex.status in ("unanswered", "no_response_expected"):
                key = _key(ex.stream, ex.request_packet, ex.correlation_id, ex.type)
                q = waiting.get(key)
                if q:
                    resolve(q.popleft(), ex.status)
                    if not q:
                        del waiting[key]
                else:
                    early[key] = ex.status
                    if len(early) > 100_000:
                        del early[next(iter(early))]
        elif kind == ANOMALY and ev.frame is None:
            a = ev.obj
            if a.kind in STREAM_BREAKS and a.stream is not None:
                broken[a.stream] = (a.kind, a.packet)
        elif kind == CAPTURE_END:
            for q in waiting.values():
                for it in q:
                    it.reply = None
            waiting.clear()
            early.clear()
            broken.clear()
        queue.append(item)
        while queue and (queue[0].reply is not _PENDING or len(queue) > MAX_WAIT):
            head = queue.popleft()
            if head.reply is _PENDING:
                head.reply = None
            yield head
    while queue:
        head = queue.popleft()
        if head.reply is _PENDING:
            head.reply = None
        yield head


# -- line order ------------------------------------------------------------------------------------
REORDER_WINDOW = 256
"""Lines the timeline keeps to put a late one in its packet's place (see `in_packet_order`)."""


def in_packet_order(items: Iterable[Item], window: int = REORDER_WINDOW) -> Iterator[Item]:
    """The frames and anomalies of `items` sorted by their packet number within a window.

    The pipeline hands out events in the order it learns them. A few are learnt after
    later packets were read: a frame TCP can deliver only once a retransmission fills a
    hole or a gap is declared, a resync found some packets after the gap it follows, an
    out-of-order note. Keeping up to `window` lines and always printing the one with the
    smallest packet number puts each of those in its place when it comes at most
    `window` lines late; later than that it is printed where it is found. Exchanges pass
    straight through (nothing prints them); any other event (a connection's totals, the
    end of a capture) first lets out everything kept. `window` 0 keeps nothing (`-l`).
    """
    if window <= 0:
        yield from items
        return
    heap: list[tuple[int, int, Item]] = []
    seq = 0
    push, pop = heapq.heappush, heapq.heappop
    for item in items:
        kind = item.ev.kind
        if kind == FRAME or kind == ANOMALY:
            push(heap, (item.ev.obj.packet, seq, item))
            seq += 1
            if len(heap) > window:
                yield pop(heap)[2]
        elif kind == EXCHANGE:
            yield item
        else:
            while heap:
                yield pop(heap)[2]
            yield item
    while heap:
        yield pop(heap)[2]
