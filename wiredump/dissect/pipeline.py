"""One pass over one or more captures: records → segments → streams → frames → events.

`dissect` is the only entry point the sinks use. It streams: packets are read one
at a time, each connection keeps bounded state, and frames leave in packet order as
soon as their pairing is known. A request waiting for its response holds back the
frames behind it (so that the request can carry its peer's packet number), but only
up to `hold_frames` frames or `hold_us` of capture time; past that it leaves
unpaired-for-now and its exchange is still recorded when the answer comes.
"""

from __future__ import annotations

import heapq
import os
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from wiredump.dissect.capture import CaptureReader, open_capture
from wiredump.dissect.correlation import Correlator, PendingBudget
from wiredump.dissect.detection import EARLY_TRIES, HOLD_TOTAL, Decision, Detector, Held, other
from wiredump.dissect.framing import ConnectionFramer
from wiredump.dissect.limits import Limits
from wiredump.dissect.model import CLIENT, SERVER, Anomaly, ConnectionSummary, Exchange, Frame
from wiredump.dissect.packet import parse_tcp
from wiredump.dissect.protocols import all_protocols
from wiredump.dissect.protocols.base import MIN_CONFIDENCE, ConnContext, ProtocolSpec
from wiredump.dissect.tcp import Connection, TcpReassembler

FRAME, ANOMALY, EXCHANGE, CONNECTION, CAPTURE_END = (
    "frame",
    "anomaly",
    "exchange",
    "connection",
    "capture_end",
)


DEFAULT_ENGINE = "native"
"""The engine a run uses unless `--engine`/WIREDUMP_ENGINE/`Options.engine` say otherwise (the values
are `rust_stream.ENGINES`): the Rust one. It gives the Python reference's events and tables on every
capture and variant the tests have, and meets the hostile set's bounds (a 1M-connection SYN flood
stays under 160 MB: its TCP table drops released connections; benchmarks/README.md). The Python
engine stays selectable as the reference the differential tests compare it with."""


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
    detail: bool = True
    """Hand each frame's decoded `fields` and `partitions` to the sinks. The plain timeline
    reads neither (its lines come from the frame's columns and summary): it turns this off,
    and the native engine then leaves `fields` empty and `partitions` None instead of making
    a Python object per decoded field (half the timeline's time). The Python engine, which
    builds them while decoding, ignores it."""
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
    engine: str = field(default_factory=lambda: os.environ.get("WIREDUMP_ENGINE", DEFAULT_ENGINE))
    """"native" (the default: the whole capture dissected in Rust, `wiredump._engine.Dissector`),
    "python" (the reference engine the differential tests compare native with) or "rust" (the
    capture read and TCP reassembled in Rust, the rest in Python: wiredump/dissect/rust_stream.py);
    `--engine` on the command line, WIREDUMP_ENGINE. A field, so it travels with the Options to
    `--workers` processes and Spark executors, whose environment may not carry WIREDUMP_ENGINE."""
    protocols: tuple[str, ...] | None = None
    """Only these protocols are detected and decoded (None: every registered one), so that the
    engines can be compared on the protocols both have (tests/test_engine_native.py)."""

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


class _Capture:
    """Listener for the reassembler of one capture; queues events in output order."""

    def __init__(self, name: str, options: Options) -> None:
        self.name = name
        self.options = options
        self.limits = options.new_limits()
        self.protocols = all_protocols()
        if options.protocols is not None:
            self.protocols = {n: s for n, s in self.protocols.items() if n in options.protocols}
        self.decode_as: dict[int, ProtocolSpec] = {}
        for port, proto in options.decode_as.items():
            if proto not in self.protocols:
                raise ValueError(
                    f"unknown protocol {proto!r} in decode-as (known: {', '.join(self.protocols)})"
                )
            self.decode_as[port] = self.protocols[proto]
        self.detector = Detector(self.protocols, self.decode_as)
        self.server_ports = self.detector.server_ports
        self.tcp: TcpReassembler | None = None
        """The capture's reassembler: detection swaps a connection's roles through it."""
        self.parked: list[tuple[Connection, Held, Decision]] = []
        """Closed connections no protocol was recognised on, waiting for their port to be learned."""
        self.waiting: dict[int, int] = {}
        """Stream → first packet of each connection whose bytes detection holds (parked ones too):
        frames from that packet on wait in `held` so that its frames, once decided, keep packet order."""
        self.replayed: list[Frame] | None = None
        self.holding: dict[int, Connection] = {}
        """Open connections whose first bytes detection holds, by stream."""
        self.ready: deque[Event] = deque()
        self.held: deque[Frame] = deque()
        self.held_bytes = 0
        self.now_us = 0
        self.run_state: dict[str, object] = {}
        """What the capture's sessions share (`ConnContext.run_state`): made anew for every capture."""
        self.pending = PendingBudget(self.limits.max_pending_total)
        """Requests waiting for their answer over all connections (`Limits.max_pending_total`).
        With `--workers`, each worker bounds the connections it decodes (and observes)."""
        self.rows: dict[int, tuple[int, ConnectionSummary | None]] = {}
        """Released connections' rows (last packet, summary; None: another worker's) waiting for
        every lower stream to be released, so that rows leave in stream order as they always did."""
        self.row_heap: list[int] = []
        self.next_row = 0
        self.rows_out: deque[tuple[int, ConnectionSummary]] = deque()
        """Rows in stream order, waiting for the held frames of their packets to leave first."""
        self.late: set[int] = set()
        """Open connections whose row gave up its place in stream order (see `_row`)."""

    # -- protocol choice (see detection.py) ----------------------------------------------------
    def owns(self, stream: int | None) -> bool:
        shard = self.options.shard
        if shard is None:
            return True
        if stream is None:
            return shard[0] == 0
        return stream % shard[1] == shard[0]

    def _start(self, conn: Connection, packet: int) -> bool:
        """A connection's first delivery: decide by its ports, or hold its bytes for detection.

        True when the roles were swapped (the delivery's role is the other one then).
        Every connection goes through detection, also those another worker decodes, so
        that the ports it teaches are the same in every worker.
        """
        if self.parked or self.holding:
            self._expire()
        decision = self.detector.by_port(conn)
        if decision is None:
            conn.user = Held()
            self.waiting[conn.stream] = packet
            self.holding[conn.stream] = conn
            return False
        return self._apply(conn, decision)

    def _apply(self, conn: Connection, decision: Decision) -> bool:
        if decision.swap and self.tcp is not None:
            self.tcp.swap_roles(conn)
        spec = decision.spec
        if spec is not None and spec.shares_run_state and not self.owns(conn.stream):
            conn.user = self._framer(conn, spec, observe=True)  # another worker's: it only teaches run_state
        elif spec is None or not self.owns(conn.stream):
            conn.user = False  # undecoded, or another worker's
        else:
            conn.user = self._framer(conn, spec)
            conn.protocol = spec.name
        return decision.swap

    def _hold(self, conn: Connection, held: Held, role: str, data: bytes, packet: int, ts_us: int) -> None:
        if held.given_up:
            self._late(conn, held, role, data, packet, ts_us)
            return
        turn = held.add(role, data, packet, ts_us)
        self.detector.held_total += len(data)
        if held.full() or self.detector.held_total > HOLD_TOTAL:
            self._decide(conn, held, final=True, window=True)
        elif turn and held.tries < EARLY_TRIES:
            held.tries += 1
            self._decide(conn, held, final=False)

    def _decide(
        self, conn: Connection, held: Held, final: bool, closing: bool = False, window: bool = False
    ) -> None:
        """Choose from the held bytes (or wait, when not `final`), then replay them as they came.

        Undecided when a window of a connection seen mid-stream is full (`window`): its next
        window is scored (`Held.slide`, within `Detector.may_slide`'s budgets), the bytes slid
        past reported as not decoded once it is decided. Otherwise undecided at the end of an
        open connection's hold: nothing more is held, and it is
        decoded from its next delivery on if its port is learned later. Undecided when it
        closes, with bytes some protocol partly matched: they wait (within HOLD_TOTAL, and
        `hold_us` of capture time) for a later connection on its port to be detected.
        """
        decision = self.detector.by_bytes(conn, held, final)
        if decision is None:
            return
        for a in decision.errors:
            a.packet, a.stream = held.first_packet, conn.stream
            self.on_anomaly(a)
        if decision.wait:
            return
        if decision.spec is None and window and not closing and self.detector.may_slide(conn, held):
            last = held.items[-1][2] if held.items else held.first_packet
            self.detector.windows += 1
            self.detector.held_total -= held.slide(decision.best)
            # Frames of other connections from the first packet still held on wait (see `waiting`).
            self.waiting[conn.stream] = min((p for _, _, p, _ in held.items), default=last)
            return
        self.holding.pop(conn.stream, None)
        if held.best_seen is not None and (decision.best is None or held.best_seen[1] > decision.best[1]):
            decision.best = held.best_seen  # a window slid past looked most like a protocol
        if decision.spec is None:
            if (
                closing
                and decision.best is not None
                and self.detector.held_total <= HOLD_TOTAL
                and len(self.parked) < MAX_PARKED
            ):
                self.parked.append((conn, held, decision))
            else:
                self.waiting.pop(conn.stream, None)
                self.detector.held_total -= held.give_up()
                self._undecoded(conn, held, decision)
                if closing:
                    conn.user = False
            return
        self.detector.held_total -= held.size
        self.waiting.pop(conn.stream, None)
        if decision.swap:
            held.swap()
        self._apply(conn, decision)
        framer = conn.user
        if isinstance(framer, ConnectionFramer) and held.windows:
            self.on_anomaly(
                Anomaly(
                    "undecoded",
                    f"{held.dropped[CLIENT]} client and {held.dropped[SERVER]} server bytes not decoded: "
                    f"sent before the window {decision.spec.name} was recognised on "  # type: ignore[union-attr]
                    f"({held.windows} earlier window{'s' if held.windows != 1 else ''} of this connection, "
                    "seen mid-stream, held no frame start: the capture began inside a large frame)",
                    packet=held.first_packet,
                    stream=conn.stream,
                )
            )
        if isinstance(framer, ConnectionFramer):
            self.replayed = []
            try:
                for role, data, packet, ts_us in held.items:
                    if isinstance(data, int):
                        framer.gap(role, data, packet, ts_us)
                    else:
                        framer.feed(role, data, packet, ts_us)
            finally:
                self._merge_replayed()
        if decision.learned is not None and self.parked:
            self._unpark()

    def _late(self, conn: Connection, held: Held, role: str, data: bytes, packet: int, ts_us: int) -> None:
        """A delivery of a connection given up on: decoded if its port was learned since."""
        decision = self.detector.by_port(conn)
        if decision is None:
            held.dropped[role] += len(data)
            return
        if decision.swap:
            held.swap()
            role = other(role)
        self._apply(conn, decision)
        if isinstance(conn.user, ConnectionFramer):
            self.on_anomaly(
                Anomaly(
                    "undecoded",
                    f"{held.what()} sent before the port was known to carry {decision.spec.name} "  # type: ignore[union-attr]
                    "(detected on another connection) were not decoded",
                    packet=packet,
                    stream=conn.stream,
                )
            )
            conn.user.feed(role, data, packet, ts_us)

    def _unpark(self) -> None:
        """Closed connections whose port was just learned: decode what they held."""
        still = []
        for conn, held, undecided in self.parked:
            decision = self.detector.by_port(conn)
            if decision is None:
                still.append((conn, held, undecided))
                continue
            self._decide(conn, held, final=True)
            self.on_close(conn)
            if conn.released:
                self._row(conn)
        self.parked = still

    def _undecoded(self, conn: Connection, held: Held, decision: Decision) -> None:
        """Report a connection no protocol was recognised on (none when nothing looked like one)."""
        if decision.best is None:
            return
        name, score = decision.best
        self.on_anomaly(
            Anomaly(
                "undecoded",
                f"{held.what()} not decoded: no protocol recognised with confidence "
                f"(best {name}, {score} of the {MIN_CONFIDENCE} needed); decode-as (-d PORT={name}) decides",
                packet=held.first_packet,
                stream=conn.stream,
            )
        )

    def _merge_replayed(self) -> None:
        """Put the frames a replay made among the held ones, in packet order (see `waiting`)."""
        frames, self.replayed = self.replayed or [], None
        if not frames:
            return
        merged: deque[Frame] = deque()
        held = self.held
        i = 0
        for f in held:  # each list keeps its own order; a replayed frame goes before later packets
            while i < len(frames) and frames[i].packet < f.packet:
                merged.append(frames[i])
                i += 1
            merged.append(f)
        merged.extend(frames[i:])
        self.held = merged

    def _expire(self, everything: bool = False) -> None:
        """Parked connections closed longer ago than `hold_us` of capture time (or all) stay undecoded,
        and open connections held that long are decided with what they sent: waiting longer would
        hold every later frame back (see `waiting`)."""
        limit = self.now_us - self.options.hold_us
        for conn in [c for c in self.holding.values() if c.user.first_ts_us < limit]:  # type: ignore[union-attr]
            self._decide(conn, conn.user, final=True)  # type: ignore[arg-type]
        still = []
        for conn, held, undecided in self.parked:
            if everything or conn.last_ts_us < limit:
                self.waiting.pop(conn.stream, None)
                self.detector.held_total -= held.size
                self._undecoded(conn, held, undecided)
                conn.user = False
                if conn.released:
                    self._row(conn)
            else:
                still.append((conn, held, undecided))
        self.parked = still

    def end(self) -> None:
        """End of the capture: the connections still waiting for their port stay undecoded."""
        self._expire(everything=True)
        self.waiting.clear()

    def _framer(self, conn: Connection, spec: ProtocolSpec, observe: bool = False) -> ConnectionFramer:
        """The connection's framer; `observe`: its session only learns run state, its output is dropped."""
        ctx = ConnContext(
            capture=self.name,
            stream=conn.stream,
            client=conn.client,
            client_port=conn.client_port,
            server=conn.server,
            server_port=conn.server_port,
            correlator=Correlator(conn.stream, spec.name, self.limits.max_pending_requests, self.pending),
            limits=self.limits,
            options={
                "show_secrets": self.options.show_secrets,
                "messages": self.options.messages,
                "observe": observe,
            },
            run_state=self.run_state,
        )
        out = _DISCARD if observe else self
        return ConnectionFramer(spec, spec.new_session(ctx), ctx, out, keep_bytes=self.options.keep_bytes)

    # -- StreamListener ----------------------------------------------------------------------
    def on_data(self, conn: Connection, role: str, data: bytes, packet: int, ts_us: int) -> None:
        user = conn.user
        if user is None:
            if self._start(conn, packet):
                role = other(role)
            user = conn.user
        if isinstance(user, Held):
            self._hold(conn, user, role, data, packet, ts_us)
        elif user:
            user.feed(role, data, packet, ts_us)  # type: ignore[attr-defined]

    def on_gap(self, conn: Connection, role: str, size: int, packet: int, ts_us: int) -> None:
        user = conn.user
        if user is None:
            if self._start(conn, packet):
                role = other(role)
            user = conn.user
        if isinstance(user, Held):
            if user.given_up:
                return
            user.add_gap(role, size, packet, ts_us)
            if user.full():
                self._decide(conn, user, final=True, window=True)
        elif user:
            user.gap(role, size, packet, ts_us)  # type: ignore[attr-defined]

    def on_close(self, conn: Connection) -> None:
        held = conn.user
        if isinstance(held, Held):
            if held.given_up:
                conn.user = False
            else:
                self._decide(conn, held, final=True, closing=True)
            if isinstance(conn.user, Held):
                return  # parked: waits for its port to be learned
        if conn.user:
            framer = conn.user
            framer.finish()  # type: ignore[attr-defined]
            conn.frames = framer.frames  # type: ignore[attr-defined]
            # The framer lends its context a bound method of its own: a cycle only the cyclic
            # collector frees, which an export runs seldom (100k released connections held
            # 340 MB). Nothing of the connection runs after finish: break it, let it go at once.
            framer.ctx.report = _closed_report  # type: ignore[attr-defined]
            conn.user = False  # release the session's state

    def on_release(self, conn: Connection) -> None:
        """The reassembler dropped the connection: its row is final (unless detection parked it:
        then once its port is learned or it expires, see `_unpark` and `_expire`)."""
        if not isinstance(conn.user, Held):
            self._row(conn)

    def _row(self, conn: Connection) -> None:
        """Queue a released connection's row; rows leave in stream order (as when every row was
        made at the end of the capture), except that past `max_connections` rows waiting behind
        connections still open, those open ones give up their place and leave when they end."""
        stream = conn.stream
        summary = _summary(conn) if self.owns(stream) else None
        if stream in self.late:
            self.late.discard(stream)
            if summary is not None:
                self.rows_out.append((conn.last_packet, summary))
            return
        rows, heap = self.rows, self.row_heap
        rows[stream] = (conn.last_packet, summary)
        heapq.heappush(heap, stream)
        if len(rows) > self.limits.max_connections:
            lowest = heap[0]
            self.late.update(range(self.next_row, lowest))
            self.next_row = lowest
        while heap and heap[0] == self.next_row:
            last, row = rows.pop(heapq.heappop(heap))
            if row is not None:
                self.rows_out.append((last, row))
            self.next_row += 1

    def on_anomaly(self, anomaly: Anomaly) -> None:
        if self.options.shard is not None and not self.owns(anomaly.stream):
            return
        self.ready.append(Event(ANOMALY, anomaly, self.name))

    # -- framing Output ----------------------------------------------------------------------
    def frame(self, frame: Frame) -> None:
        if self.replayed is not None:
            self.replayed.append(frame)
        else:
            self.held.append(frame)
        self.held_bytes += _held_size(frame)

    def anomaly(self, anomaly: Anomaly) -> None:
        self.ready.append(Event(ANOMALY, anomaly, self.name))

    def exchange(self, exchange: Exchange) -> None:
        self.ready.append(Event(EXCHANGE, exchange, self.name))

    # -- ordering ----------------------------------------------------------------------------
    def release(self, final: bool = False) -> Iterator[Event]:
        """The events that may leave now, in packet order as far as the hold bounds allow.

        Frames leave in the order they completed, except that a request waiting for its
        response holds back every frame after it (within `hold_frames`, `hold_bytes` and
        `hold_us`). Events without a frame (`ready`: gaps, resyncs, TCP events, exchanges)
        are interleaved with the held frames: an anomaly goes out before the first frame
        that completes in a later or the same packet, so that a gap line comes before the
        frames it breaks. What is learnt only after later packets were read (a frame TCP
        delivers once a retransmission or a declared gap fills its hole, a resync found
        some packets after its gap) leaves when it is learnt; the timeline puts such lines
        back in place within a window (`cli.source.in_packet_order`, docs/terminal.md).
        """
        held = self.held
        ready = self.ready
        limit_ts = self.now_us - self.options.hold_us
        max_frames, max_bytes = self.options.hold_frames, self.options.hold_bytes
        barrier = min(self.waiting.values()) if self.waiting else None
        while held:
            f = held[0]
            if (
                (f.awaiting or (barrier is not None and f.packet >= barrier))
                and not final
                and len(held) <= max_frames
                and self.held_bytes <= max_bytes
                and f.ts_us >= limit_ts
            ):
                break
            while ready and (ready[0].kind != ANOMALY or ready[0].obj.packet <= f.packet):
                yield ready.popleft()
            held.popleft()
            self.held_bytes -= _held_size(f)
            f.released = True
            yield Event(FRAME, f, self.name)
            for a in f.anomalies:
                yield Event(ANOMALY, a, self.name, f)
        first = held[0].packet if held else None
        while ready:
            ev = ready[0]
            if (
                first is not None
                and ev.kind == ANOMALY
                and ev.obj.packet > first
                and len(ready) <= MAX_READY_HELD
            ):
                break
            yield ready.popleft()
        rows_out = self.rows_out
        while rows_out and (final or first is None or rows_out[0][0] < first):
            yield Event(CONNECTION, rows_out.popleft()[1], self.name)


def _closed_report(anomaly: Anomaly) -> None:
    """`ConnContext.report` of a finished connection (see `_Capture.on_close`)."""


MAX_PARKED = 4096
"""Closed undecided connections waiting for their port to be learned, at most: each keeps its
connection's state, so a flood of short connections on an unknown port must not park them all
(past it they are reported undecoded at once)."""

MESSAGE_HELD_SIZE = 256
"""What a held frame's message counts for in `hold_bytes`, beyond its wire bytes: a compressed
batch of a few KB can carry up to `Limits.max_messages` messages of a few hundred bytes each."""


def _held_size(frame: Frame) -> int:
    return frame.length + len(frame.messages) * MESSAGE_HELD_SIZE


MAX_READY_HELD = 65_536
"""Anomalies kept waiting behind held frames at most; past that they go out of order rather than
grow without bound (the frames themselves are held only within `hold_frames`/`hold_bytes`/`hold_us`)."""


class _Discard:
    """The output of an observing framer (see `ProtocolSpec.shares_run_state`): nothing is kept."""

    def frame(self, frame: Frame) -> None:
        pass

    def anomaly(self, anomaly: Anomaly) -> None:
        pass

    def exchange(self, exchange: Exchange) -> None:
        pass


_DISCARD = _Discard()


def _summary(conn: Connection) -> ConnectionSummary:
    return ConnectionSummary(
        stream=conn.stream,
        client=conn.client,
        client_port=conn.client_port,
        server=conn.server,
        server_port=conn.server_port,
        protocol=conn.protocol,
        packets=conn.packets,
        bytes_client=conn.c2s.bytes,
        bytes_server=conn.s2c.bytes,
        frames=conn.frames,
        gaps=conn.gaps,
        retransmissions=conn.retransmissions,
        first_ts_us=conn.first_ts_us,
        last_ts_us=conn.last_ts_us,
        state=conn.state,
    )


def dissect_capture(reader: CaptureReader, options: Options) -> Iterator[Event]:
    """Every event of one opened capture, in order."""
    if getattr(reader, "dissects", False):  # the native engine's Dissector: it yields the events
        yield from reader  # type: ignore[misc]
        return
    if getattr(reader, "native", False):  # opened by open_source for the Rust engine
        from wiredump.dissect.rust_stream import dissect_native

        yield from dissect_native(reader, options)  # type: ignore[arg-type]
        return
    cap = _Capture(reader.name, options)
    tcp = cap.tcp = TcpReassembler(cap, cap.limits, cap.server_ports, cap.on_release)
    packets = 0
    if hasattr(reader, "max_interfaces"):
        reader.max_interfaces = cap.limits.max_interfaces
    for rec in reader:
        packets = rec.number
        cap.now_us = rec.ts_us
        seg = parse_tcp(rec.linktype, rec.data)
        if rec.orig_len > len(rec.data) and cap.owns(None):
            cap.ready.append(
                Event(
                    ANOMALY,
                    Anomaly(
                        "truncated_packet",
                        f"packet cut by the snap length: {len(rec.data)} of {rec.orig_len} bytes captured",
                        packet=rec.number,
                        stream=None,
                    ),
                    cap.name,
                )
            )
        if rec.ts_note is not None and cap.owns(None):
            # The reader gave the packet the capture's last good time; say so on the packet.
            cap.ready.append(
                Event(
                    ANOMALY, Anomaly("bad_timestamp", rec.ts_note, packet=rec.number, stream=None), cap.name
                )
            )
        tcp.expire(rec.ts_us)  # connections done with: rows out, state dropped
        if seg is not None:
            tcp.segment(seg, rec.number, rec.ts_us)
        if cap.ready or cap.held or cap.rows_out:
            yield from cap.release()
    tcp.finish()
    yield from finish_capture(
        cap,
        packets,
        reader.truncated,
        getattr(reader, "skipped_unknown_link", 0),
        tcp.half_open_released,
        tcp.evicted,
        getattr(reader, "interfaces_not_kept", 0),
    )


def _interface_limit_detail(n: int, bound: int) -> str:
    """The `interface_limit` detail: `n` pcapng interface blocks past the `bound` kept per section."""
    return (
        f"{n} pcapng interface block{'s' if n != 1 else ''} not kept: past the {bound} interfaces kept"
        " per section (a packet naming one ends the capture)"
    )


def finish_capture(
    cap: _Capture,
    packets: int,
    truncated: str | None,
    skipped_unknown_link: int,
    half_open_released: int,
    evicted: int,
    interfaces_not_kept: int = 0,
) -> Iterator[Event]:
    """The end of one capture, whichever engine read it: the capture-wide anomalies (a truncated
    file, connections released early), the last held frames and the connections' rows, then
    CAPTURE_END. Both engines end through here so that their tables stay identical."""
    cap.end()
    if cap.owns(None):
        if truncated:
            cap.ready.append(
                Event(ANOMALY, Anomaly("truncated_capture", truncated, packet=packets), cap.name)
            )
        for kind, n, what in (
            (
                "half_open_released",
                half_open_released,
                "that never carried payload were released "
                f"after {cap.limits.half_open_us // 1_000_000} s without a packet (half-open: SYN floods, "
                "unused handshakes)",
            ),
            (
                "connection_limit",
                evicted,
                f"were released early: more than "
                f"{cap.limits.max_connections} were tracked at once (a later packet of theirs starts a new stream)",
            ),
        ):
            if n:
                cap.ready.append(
                    Event(
                        ANOMALY,
                        Anomaly(kind, f"{n} connection{'s' if n != 1 else ''} {what}", packet=packets),
                        cap.name,
                    )
                )
        if interfaces_not_kept:
            detail = _interface_limit_detail(interfaces_not_kept, cap.limits.max_interfaces)
            cap.ready.append(Event(ANOMALY, Anomaly("interface_limit", detail, packet=packets), cap.name))
    yield from cap.release(final=True)  # the connections' rows come last, in stream order
    yield Event(CAPTURE_END, CaptureEnd(cap.name, packets, truncated, skipped_unknown_link), cap.name)


def dissect(paths: Iterable[str], options: Options | None = None) -> Iterator[Event]:
    """Every event of every capture, one capture after the other.

    Raises `CaptureError` (with a sentence for the user) when a capture cannot be opened.
    """
    options = options or Options()
    for path in paths:
        reader = open_source(path, options)
        yield from dissect_capture(reader, options)  # type: ignore[arg-type]


def open_source(path: str, options: Options) -> Any:
    """The capture opened for the engine `options` choose (CaptureError when it cannot be one)."""
    if options.engine == "rust":
        from wiredump.dissect.rust_stream import RustCapture

        return RustCapture(path)
    if options.engine == "native":
        import sys

        from wiredump._engine import Dissector

        if path == "-":  # read through Python's stdin object, which a caller may have replaced
            return Dissector(getattr(sys.stdin, "buffer", sys.stdin), options, name="stdin")
        return Dissector(path, options)
    if options.engine != "python":
        raise ValueError(f"unknown engine {options.engine!r} (known: python, rust, native)")
    return open_capture(path)
