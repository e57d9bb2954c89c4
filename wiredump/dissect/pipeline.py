"""One pass over one or more captures: records → segments → streams → frames → events.

`dissect` is the only entry point the sinks use. It streams: packets are read one
at a time, each connection keeps bounded state, and frames leave in packet order as
soon as their pairing is known. A request waiting for its response holds back the
frames behind it (so that the request can carry its peer's packet number), but only
up to `hold_frames` frames or `hold_us` of capture time; past that it leaves
unpaired-for-now and its exchange is still recorded when the answer comes.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from wiredump.dissect.capture import CaptureReader, open_capture
from wiredump.dissect.correlation import Correlator
from wiredump.dissect.framing import ConnectionFramer
from wiredump.dissect.limits import Limits
from wiredump.dissect.model import Anomaly, ConnectionSummary, Exchange, Frame
from wiredump.dissect.packet import parse_tcp
from wiredump.dissect.protocols import all_protocols
from wiredump.dissect.protocols.base import ConnContext, ProtocolSpec
from wiredump.dissect.tcp import Connection, TcpReassembler

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
    engine: str = field(default_factory=lambda: os.environ.get("WIREDUMP_ENGINE", "python"))
    """"python" (the reference) or "rust": who reads the capture and reassembles TCP
    (wiredump/dissect/rust_stream.py); `--engine` on the command line, WIREDUMP_ENGINE."""

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
        self.decode_as: dict[int, ProtocolSpec] = {}
        for port, proto in options.decode_as.items():
            if proto not in self.protocols:
                raise ValueError(
                    f"unknown protocol {proto!r} in decode-as (known: {', '.join(self.protocols)})"
                )
            self.decode_as[port] = self.protocols[proto]
        self.port_map: dict[int, ProtocolSpec] = {}
        for spec in self.protocols.values():
            for port in spec.ports:
                self.port_map.setdefault(port, spec)
        self.server_ports = frozenset(self.port_map) | frozenset(self.decode_as)
        self.ready: deque[Event] = deque()
        self.held: deque[Frame] = deque()
        self.held_bytes = 0
        self.now_us = 0

    # -- protocol choice -------------------------------------------------------------------
    def _choose(self, conn: Connection, role: str, data: bytes) -> ProtocolSpec | None:
        for port in (conn.server_port, conn.client_port):
            if port in self.decode_as:
                return self.decode_as[port]
        for port in (conn.server_port, conn.client_port):
            if port in self.port_map:
                return self.port_map[port]
        for spec in self.protocols.values():
            try:
                if spec.sniff(data, role):
                    return spec
            except Exception:
                continue
        return None

    def owns(self, stream: int | None) -> bool:
        shard = self.options.shard
        if shard is None:
            return True
        if stream is None:
            return shard[0] == 0
        return stream % shard[1] == shard[0]

    def _framer(self, conn: Connection, role: str, data: bytes) -> ConnectionFramer | None:
        user = conn.user
        if user is not None:
            return user or None  # False: no protocol claimed this connection
        if not self.owns(conn.stream):
            conn.user = False
            return None
        spec = self._choose(conn, role, data)
        if spec is None:
            conn.user = False
            return None
        ctx = ConnContext(
            capture=self.name,
            stream=conn.stream,
            client=conn.client,
            client_port=conn.client_port,
            server=conn.server,
            server_port=conn.server_port,
            correlator=Correlator(conn.stream, spec.name, self.limits.max_pending_requests),
            limits=self.limits,
            options={"show_secrets": self.options.show_secrets, "messages": self.options.messages},
        )
        framer = ConnectionFramer(spec, spec.new_session(ctx), ctx, self, keep_bytes=self.options.keep_bytes)
        conn.user = framer
        conn.protocol = spec.name
        return framer

    # -- StreamListener ----------------------------------------------------------------------
    def on_data(self, conn: Connection, role: str, data: bytes, packet: int, ts_us: int) -> None:
        framer = self._framer(conn, role, data)
        if framer is not None:
            framer.feed(role, data, packet, ts_us)

    def on_gap(self, conn: Connection, role: str, size: int, packet: int, ts_us: int) -> None:
        if conn.user:
            conn.user.gap(role, size, packet, ts_us)

    def on_close(self, conn: Connection) -> None:
        if conn.user:
            conn.user.finish()
            conn.frames = conn.user.frames
            conn.user = False  # release the session's state

    def on_anomaly(self, anomaly: Anomaly) -> None:
        if self.options.shard is not None and not self.owns(anomaly.stream):
            return
        self.ready.append(Event(ANOMALY, anomaly, self.name))

    # -- framing Output ----------------------------------------------------------------------
    def frame(self, frame: Frame) -> None:
        self.held.append(frame)
        self.held_bytes += frame.length

    def anomaly(self, anomaly: Anomaly) -> None:
        self.ready.append(Event(ANOMALY, anomaly, self.name))

    def exchange(self, exchange: Exchange) -> None:
        self.ready.append(Event(EXCHANGE, exchange, self.name))

    # -- ordering ----------------------------------------------------------------------------
    def release(self, final: bool = False) -> Iterator[Event]:
        held = self.held
        limit_ts = self.now_us - self.options.hold_us
        max_frames, max_bytes = self.options.hold_frames, self.options.hold_bytes
        while held:
            f = held[0]
            if (
                f.awaiting
                and not final
                and len(held) <= max_frames
                and self.held_bytes <= max_bytes
                and f.ts_us >= limit_ts
            ):
                break
            held.popleft()
            self.held_bytes -= f.length
            yield Event(FRAME, f, self.name)
            for a in f.anomalies:
                yield Event(ANOMALY, a, self.name, f)
        ready = self.ready
        while ready:
            yield ready.popleft()


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
    if getattr(reader, "native", False):  # opened by open_source for the Rust engine
        from wiredump.dissect.rust_stream import dissect_native

        yield from dissect_native(reader, options)  # type: ignore[arg-type]
        return
    cap = _Capture(reader.name, options)
    tcp = TcpReassembler(cap, cap.limits, cap.server_ports)
    packets = 0
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
        if seg is not None:
            tcp.segment(seg, rec.number, rec.ts_us)
        if cap.ready or cap.held:
            yield from cap.release()
    tcp.finish()
    if reader.truncated and cap.owns(None):
        cap.ready.append(
            Event(ANOMALY, Anomaly("truncated_capture", reader.truncated, packet=packets), cap.name)
        )
    yield from cap.release(final=True)
    for conn in tcp.all:
        if cap.owns(conn.stream):
            yield Event(CONNECTION, _summary(conn), cap.name)
    yield Event(
        CAPTURE_END,
        CaptureEnd(cap.name, packets, reader.truncated, getattr(reader, "skipped_unknown_link", 0)),
        cap.name,
    )


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
    if options.engine != "python":
        raise ValueError(f"unknown engine {options.engine!r} (known: python, rust)")
    return open_capture(path)
