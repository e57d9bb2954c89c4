"""TCP connection tracking and stream reassembly.

Connections are numbered in order of their first packet, and a SYN that reopens a
finished 4-tuple starts a new one, as Wireshark's `tcp.stream` does, so that frames
can be compared with tshark by (stream, packet). Each direction turns segments into
an in-order byte stream: retransmitted bytes are dropped (conflicting ones
reported), early segments wait in a bounded buffer, and bytes that never appear
(capture loss, the receiver acknowledged them) become a reported gap instead of a
stall.

State is kept only while a connection can still change: a closed or reset connection is
released `Limits.closed_linger_us` of capture time after its last packet (its last ACK, a
retransmitted FIN or a late RST still count in its row, as tshark counts them), a connection
that never carried a byte of payload (a SYN flood, an unused handshake) after
`Limits.half_open_us`, and past `Limits.max_connections` tracked at once the oldest quiet one
first. Released connections go to the `on_release` callback (their summary row); a later packet
of a released 4-tuple starts a new stream, where tshark would have kept counting it in the old
one: that is the price of bounded memory, paid only by captures that reach those limits.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from wiredump.dissect.limits import Limits
from wiredump.dissect.model import CLIENT, SERVER, Anomaly

if TYPE_CHECKING:
    from wiredump.dissect.packet import Segment

FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10
_MASK = 0xFFFFFFFF
RECENT_CHUNKS = 4
"""Delivered chunks remembered per direction to tell a faithful retransmission from a conflicting one."""
HOLE_GRACE_PACKETS = 8
"""Packets of a connection to wait, once the receiver acknowledged bytes the capture has not
shown, for those bytes to turn up anyway (a capture can list a segment after the ACK that
covers it: reordering between capture queues, or merged captures) before calling them a gap."""


def _delta(a: int, b: int) -> int:
    """Signed distance a - b in 32-bit sequence space."""
    d = (a - b) & _MASK
    return d - 0x100000000 if d & 0x80000000 else d


class StreamListener(Protocol):
    """Receives what the reassembler makes of each connection."""

    def on_data(self, conn: Connection, role: str, data: bytes, packet: int, ts_us: int) -> None: ...
    def on_gap(self, conn: Connection, role: str, size: int, packet: int, ts_us: int) -> None: ...
    def on_close(self, conn: Connection) -> None: ...
    def on_anomaly(self, anomaly: Anomaly) -> None: ...


@dataclass(slots=True)
class HalfStream:
    """One direction of a connection."""

    role: str
    next_raw: int | None = None  # next expected sequence number (32-bit)
    delivered: int = 0  # bytes delivered so far (stream offset of next_raw)
    # seq -> (data, bytes missing after it, packet, ts_us it was captured in)
    ooo: dict[int, tuple[bytes, int, int, int]] = field(default_factory=dict)
    ooo_bytes: int = 0
    recent: list[tuple[int, bytes]] = field(default_factory=list)  # (stream offset, data)
    acked_raw: int | None = None  # highest ack the peer sent for this direction
    acked_packet: int = 0  # the packet (and time) of the ACK that first covered bytes not seen yet
    acked_ts_us: int = 0
    syn: bool = False
    fin: bool = False
    fin_raw: int | None = None  # sequence number of this direction's FIN: its data ends there
    bytes: int = 0


@dataclass(slots=True)
class Connection:
    stream: int
    client: str
    client_port: int
    server: str
    server_port: int
    first_ts_us: int
    last_ts_us: int = 0
    last_packet: int = 0
    packets: int = 0
    gaps: int = 0
    retransmissions: int = 0
    saw_syn: bool = False
    reset: bool = False
    finished: bool = False  # reassembly flushed; later packets only count
    released: bool = False  # dropped from the reassembler's table; its row is final
    protocol: str | None = None
    frames: int = 0
    user: object = None  # the pipeline's per-connection state
    c2s: HalfStream = field(default_factory=lambda: HalfStream(CLIENT))
    s2c: HalfStream = field(default_factory=lambda: HalfStream(SERVER))
    # A direction whose hole the peer acknowledged, still waited for (see HOLE_GRACE_PACKETS),
    # and the peer's segments queued meanwhile: (half, seq, data, missing, packet, ts_us).
    hole: HalfStream | None = None
    hole_wait: int = 0
    queued: list[tuple[HalfStream, int, bytes, int, int, int]] = field(default_factory=list)
    queued_bytes: int = 0

    def swap_roles(self) -> None:
        """Make the side taken for the server the client, before any byte was framed.

        Without a SYN the roles are guessed from the port numbers; detection calls this
        when the bytes show that the other side sends the requests. The reassembler's
        table must be re-keyed too: use `TcpReassembler.swap_roles`.
        """
        self.client, self.client_port, self.server, self.server_port = (
            self.server,
            self.server_port,
            self.client,
            self.client_port,
        )
        self.c2s, self.s2c = self.s2c, self.c2s
        self.c2s.role, self.s2c.role = CLIENT, SERVER

    @property
    def state(self) -> str:
        if self.reset:
            return "reset"
        if self.c2s.fin and self.s2c.fin:
            return "closed"
        if not self.saw_syn:
            return "midstream"
        return "open"


class TcpReassembler:
    """Feeds every TCP segment of a capture; calls the listener with in-order bytes."""

    def __init__(
        self,
        listener: StreamListener,
        limits: Limits,
        server_ports: frozenset[int] = frozenset(),
        on_release: Callable[[Connection], None] | None = None,
    ) -> None:
        self.listener = listener
        self.limits = limits
        self.server_ports = server_ports
        self.connections: dict[tuple[str, int, str, int], Connection] = {}
        """Connections whose state is kept, by (client, client port, server, server port)."""
        self.all: list[Connection] = []
        """Every connection, in stream order; kept only without `on_release` (tests, tools that
        read the table after the capture). With it, released connections are handed over and
        forgotten."""
        self.on_release = on_release
        self._next_stream = 0
        self._quiet: OrderedDict[int, Connection] = OrderedDict()
        """Connections that never carried payload, least recently active first (aged out after
        `half_open_us`)."""
        self._closed: OrderedDict[int, Connection] = OrderedDict()
        """Finished (closed or reset) connections, least recently active first (released after
        `closed_linger_us`)."""
        self.half_open_released = 0
        """Connections released after `half_open_us` without a byte of payload."""
        self.evicted = 0
        """Connections released early because `max_connections` were tracked at once."""
        self.released = 0

    # -- connection table --------------------------------------------------------------------
    def swap_roles(self, conn: Connection) -> None:
        """Swap a connection's client and server (see `Connection.swap_roles`); the table stays keyed
        by (client, server), as `_lookup` and the reopening of a 4-tuple expect."""
        key = (conn.client, conn.client_port, conn.server, conn.server_port)
        mine = self.connections.get(key) is conn
        if mine:
            del self.connections[key]
        conn.swap_roles()
        if mine:
            self.connections[(conn.client, conn.client_port, conn.server, conn.server_port)] = conn

    def _lookup(self, seg: Segment, packet: int, ts_us: int) -> tuple[Connection, HalfStream, HalfStream]:
        key = (seg.src, seg.sport, seg.dst, seg.dport)
        conn = self.connections.get(key)
        if conn is None:
            conn = self.connections.get((seg.dst, seg.dport, seg.src, seg.sport))
        flags = seg.flags
        if conn is not None and flags & SYN and not flags & ACK and self._reopens(conn, seg):
            self._release(conn)
            conn = None
        if conn is None:
            conn = self._open(seg, ts_us)
        if seg.src == conn.client and seg.sport == conn.client_port:
            return conn, conn.c2s, conn.s2c
        return conn, conn.s2c, conn.c2s

    def _reopens(self, conn: Connection, seg: Segment) -> bool:
        """A bare SYN on a known 4-tuple is a new connection unless it retransmits the first SYN."""
        if conn.reset or conn.c2s.fin or conn.s2c.fin:
            return True
        half = conn.c2s if (seg.src == conn.client and seg.sport == conn.client_port) else conn.s2c
        return (
            half.syn
            and half.next_raw is not None
            and _delta(seg.seq + 1, half.next_raw) != 0
            and half.delivered > 0
        )

    def _open(self, seg: Segment, ts_us: int) -> Connection:
        flags = seg.flags
        if flags & SYN:
            client_is_src = not flags & ACK
        elif seg.dport in self.server_ports and seg.sport not in self.server_ports:
            client_is_src = True
        elif seg.sport in self.server_ports and seg.dport not in self.server_ports:
            client_is_src = False
        else:
            client_is_src = seg.sport >= seg.dport
        if client_is_src:
            conn = Connection(self._next_stream, seg.src, seg.sport, seg.dst, seg.dport, ts_us)
        else:
            conn = Connection(self._next_stream, seg.dst, seg.dport, seg.src, seg.sport, ts_us)
        self._next_stream += 1
        if len(self.connections) >= self.limits.max_connections:
            self._evict()  # before the new one joins: it is never the one released
        self.connections[(conn.client, conn.client_port, conn.server, conn.server_port)] = conn
        self._quiet[conn.stream] = conn
        if self.on_release is None:
            self.all.append(conn)
        return conn

    # -- releasing state ---------------------------------------------------------------------
    def _release(self, conn: Connection) -> None:
        """Flush the connection, drop every bit of state kept for it, hand its row over."""
        if conn.released:
            return
        self._finish(conn)
        key = (conn.client, conn.client_port, conn.server, conn.server_port)
        if self.connections.get(key) is conn:
            del self.connections[key]
        self._quiet.pop(conn.stream, None)
        self._closed.pop(conn.stream, None)
        conn.released = True
        self.released += 1
        # What reassembly kept: nothing of it is read again.
        for half in (conn.c2s, conn.s2c):
            half.ooo = {}
            half.recent = []
        conn.queued = []
        if self.on_release is not None:
            self.on_release(conn)

    def _evict(self) -> None:
        """Too many connections tracked: release the least recently active finished one, else the
        least recently active one without payload, else the oldest."""
        if self._closed:
            conn = next(iter(self._closed.values()))
        elif self._quiet:
            conn = next(iter(self._quiet.values()))
        else:
            conn = next(iter(self.connections.values()))
        self.evicted += 1
        self._release(conn)

    def expire(self, now_us: int) -> None:
        """Release what has been quiet long enough at capture time `now_us` (see the module doc)."""
        closed, quiet = self._closed, self._quiet
        if closed:
            limit = now_us - self.limits.closed_linger_us
            while closed:
                conn = next(iter(closed.values()))
                if conn.last_ts_us >= limit:
                    break
                self._release(conn)
        if quiet:
            limit = now_us - self.limits.half_open_us
            while quiet:
                conn = next(iter(quiet.values()))
                if conn.last_ts_us >= limit:
                    break
                self.half_open_released += 1
                self._release(conn)

    # -- per segment -------------------------------------------------------------------------
    def segment(self, seg: Segment, packet: int, ts_us: int) -> None:
        conn, half, other = self._lookup(seg, packet, ts_us)
        conn.packets += 1
        conn.last_ts_us = ts_us
        conn.last_packet = packet
        stream = conn.stream
        if conn.finished:
            if stream in self._closed:
                self._closed.move_to_end(stream)
        elif stream in self._quiet:
            if seg.payload or seg.missing:
                del self._quiet[stream]  # it carries data: kept until it closes
            else:
                self._quiet.move_to_end(stream)
        flags = seg.flags
        if flags & SYN:
            conn.saw_syn = True
            if half.next_raw is None or not half.syn:
                half.syn = True
                if half.delivered == 0 and not half.ooo:
                    half.next_raw = (seg.seq + 1) & _MASK
        if flags & ACK and other.next_raw is not None:
            if other.acked_raw is None or _delta(seg.ack, other.acked_raw) > 0:
                if not self._unseen(other):
                    other.acked_packet, other.acked_ts_us = packet, ts_us
                other.acked_raw = seg.ack
        if conn.finished:
            return
        if conn.hole is not None:
            conn.hole_wait -= 1
            if conn.hole_wait <= 0:
                self._give_up(conn)
        # The peer's bytes this packet acknowledges were received before it was sent: a hole
        # it reveals is dealt with before this packet's own data goes up, so that a request
        # held behind a missing segment is decoded before the response that acknowledges it.
        if other.acked_raw is not None and self._hole_open(other):
            self._await_hole(conn, other)
        payload = seg.payload
        if payload or seg.missing:
            seq = (seg.seq + 1) & _MASK if flags & SYN else seg.seq
            hole = conn.hole
            if hole is not None and hole is not half:
                # The peer's data waits until the acknowledged bytes turn up or are given up.
                conn.queued.append((half, seq, payload, seg.missing, packet, ts_us))
                conn.queued_bytes += len(payload)
                if conn.queued_bytes > self.limits.max_out_of_order:
                    self._give_up(conn)
            else:
                if hole is not None and _delta(seq, half.next_raw) > 0 and seq not in half.ooo:  # type: ignore[arg-type]
                    self._give_up(conn)  # the sender moved on past the hole: it is lost
                self._data(conn, half, seq, payload, seg.missing, packet, ts_us)
                if conn.hole is half and not self._hole_open(half):
                    self._resume(conn)  # the acknowledged bytes turned up late
        if conn.hole is not None and (flags & RST or (flags & FIN and conn.hole is half)):
            self._give_up(conn)  # nothing more will come (the peer's FIN ends only its side)
        if flags & RST:
            conn.reset = True
            self._finish(conn)
        elif flags & FIN:
            half.fin = True
            if half.fin_raw is None:
                known = self._unseen(half)  # already revealed by an ACK: reported at that ACK
                half.fin_raw = (seg.seq + len(payload)) & _MASK
                if self._unseen(half) and conn.hole is None:
                    # The FIN's sequence number says bytes before it were sent that the capture lacks.
                    if not known:
                        half.acked_packet, half.acked_ts_us = packet, ts_us
                    self._await_hole(conn, half)
                    if not half.ooo:
                        self._give_up(conn)  # nothing more of this direction is coming
            if half.ooo:
                self._flush_ooo(conn, half, packet, ts_us)
            if conn.c2s.fin and conn.s2c.fin:
                self._finish(conn)

    def _data(
        self, conn: Connection, half: HalfStream, seq: int, data: bytes, missing: int, packet: int, ts_us: int
    ) -> None:
        if half.next_raw is None:
            half.next_raw = seq  # capture started mid-connection
        total = len(data) + missing
        d = _delta(seq, half.next_raw)
        if d < 0:
            end = d + total
            if end <= 0:
                conn.retransmissions += 1
                self._retransmission(conn, half, half.delivered + d, data, packet, full=True)
                return
            conn.retransmissions += 1
            self._retransmission(conn, half, half.delivered + d, data[:-d], packet, full=False)
            data = data[-d:] if -d < len(data) else b""
            missing = total + d - len(data)
            seq = half.next_raw
            d = 0
        if d > 0:
            self._hold(conn, half, seq, data, missing, packet, ts_us)
            return
        self._deliver(conn, half, data, missing, packet, ts_us)
        if half.ooo:
            self._drain_ooo(conn, half, packet, ts_us)

    def _deliver(
        self, conn: Connection, half: HalfStream, data: bytes, missing: int, packet: int, ts_us: int
    ) -> None:
        if data:
            recent = half.recent
            recent.append((half.delivered, data))
            if len(recent) > RECENT_CHUNKS:
                del recent[0]
            half.bytes += len(data)
            half.delivered += len(data)
            half.next_raw = (half.next_raw + len(data)) & _MASK  # type: ignore[operator]
            self.listener.on_data(conn, half.role, data, packet, ts_us)
        if missing:
            self._gap(conn, half, missing, packet, ts_us, "bytes beyond the capture's snap length")

    def _gap(self, conn: Connection, half: HalfStream, size: int, packet: int, ts_us: int, why: str) -> None:
        conn.gaps += 1
        self.listener.on_anomaly(
            Anomaly(
                "gap",
                f"{size} {half.role} bytes missing at stream offset {half.delivered} ({why})",
                packet=packet,
                stream=conn.stream,
            )
        )
        half.delivered += size
        half.next_raw = (half.next_raw + size) & _MASK  # type: ignore[operator]
        self.listener.on_gap(conn, half.role, size, packet, ts_us)

    def _retransmission(
        self, conn: Connection, half: HalfStream, offset: int, data: bytes, packet: int, full: bool
    ) -> None:
        conflict = None
        for start, chunk in half.recent:
            lo = max(start, offset)
            hi = min(start + len(chunk), offset + len(data))
            if lo < hi and chunk[lo - start : hi - start] != data[lo - offset : hi - offset]:
                conflict = lo
                break
        if conflict is not None:
            kind, what = (
                "overlap_conflict",
                f"retransmitted {half.role} bytes differ from the first copy at stream offset {conflict}; first copy kept",
            )
        else:
            kind = "retransmission"
            what = f"{'' if full else 'partial '}retransmission of {len(data)} {half.role} bytes at stream offset {offset}"
        self.listener.on_anomaly(Anomaly(kind, what, packet=packet, stream=conn.stream))

    def _hold(
        self, conn: Connection, half: HalfStream, seq: int, data: bytes, missing: int, packet: int, ts_us: int
    ) -> None:
        if seq in half.ooo:
            old = half.ooo[seq]
            conn.retransmissions += 1
            kind = "retransmission" if old[0][: len(data)] == data[: len(old[0])] else "overlap_conflict"
            self.listener.on_anomaly(
                Anomaly(
                    kind,
                    f"{half.role} segment at seq {seq} seen twice before its turn",
                    packet=packet,
                    stream=conn.stream,
                )
            )
            if len(old[0]) >= len(data):
                return
            half.ooo_bytes -= len(old[0])
        else:
            self.listener.on_anomaly(
                Anomaly(
                    "out_of_order",
                    f"{half.role} segment {_delta(seq, half.next_raw or 0)} bytes ahead of the expected sequence; held",  # type: ignore[arg-type]
                    packet=packet,
                    stream=conn.stream,
                )
            )
        half.ooo[seq] = (data, missing, packet, ts_us)
        half.ooo_bytes += len(data)
        if half.ooo_bytes > self.limits.max_out_of_order:
            if conn.hole is half:
                conn.hole = None
            self._flush_ooo(conn, half, packet, ts_us, why="out-of-order buffer full")
            if conn.hole is None and conn.queued:
                self._replay(conn)
        elif self._hole_open(half):
            self._await_hole(conn, half)

    def _drain_ooo(
        self, conn: Connection, half: HalfStream, packet: int, ts_us: int, own: bool = False
    ) -> None:
        """Deliver the held segments that now fit.

        When a late segment filled the hole they complete at its packet (as tshark's
        out-of-order reassembly shows them); when the hole was given up (`own`) each
        held segment keeps the packet and time it was captured in.
        """
        while half.ooo:
            best = None
            for seq in half.ooo:
                d = _delta(seq, half.next_raw)  # type: ignore[arg-type]
                if d <= 0:
                    best = seq
                    break
            if best is None:
                return
            data, missing, held_packet, held_ts = half.ooo.pop(best)
            half.ooo_bytes -= len(data)
            if own:
                packet, ts_us = held_packet, held_ts
            d = _delta(best, half.next_raw)  # type: ignore[arg-type]
            if d + len(data) + missing <= 0:
                continue
            if -d >= len(data):
                self._deliver(conn, half, b"", missing + d + len(data), packet, ts_us)
            else:
                self._deliver(conn, half, data[-d:] if d else data, missing, packet, ts_us)

    def _flush_ooo(
        self, conn: Connection, half: HalfStream, packet: int, ts_us: int, why: str = "connection ended"
    ) -> None:
        """Give up waiting: skip to the earliest held segment, report the hole, deliver what follows.

        The gap and the held bytes are reported at the packets that carried those bytes
        (the one right after the hole first), not at the packet that made us give up (an
        ACK, a FIN, the end of the capture): frames keep the packet numbers they would
        have had if the capture had shown the loss at once.
        """
        while half.ooo:
            first = min(half.ooo, key=lambda s: _delta(s, half.next_raw))  # type: ignore[arg-type]
            d = _delta(first, half.next_raw)  # type: ignore[arg-type]
            if d > 0:
                _, _, held_packet, held_ts = half.ooo[first]
                self._gap(conn, half, d, held_packet, held_ts, why)
            self._drain_ooo(conn, half, packet, ts_us, own=True)

    # -- acknowledged holes ------------------------------------------------------------------
    @staticmethod
    def _unseen(half: HalfStream) -> int:
        """Bytes of this direction the receiver acknowledged (or that precede its FIN) beyond what
        the capture delivered: tshark's "ACKed unseen segment". 0 when there are none.

        Once the FIN is known its sequence number is where the data ends (a later ACK also
        counts the FIN itself, which is no data).
        """
        if half.next_raw is None:
            return 0
        end = half.fin_raw if half.fin_raw is not None else half.acked_raw
        if end is None:
            return 0
        d = _delta(end, half.next_raw)
        return d if d > 0 else 0

    @classmethod
    def _hole_open(cls, half: HalfStream) -> bool:
        """The receiver acknowledged bytes of this direction that the capture has not delivered,
        whether segments wait behind them or (a lost first segment, a lost last one) nothing does."""
        return cls._unseen(half) > 0

    def _await_hole(self, conn: Connection, half: HalfStream) -> None:
        """Start waiting a few packets for the acknowledged bytes (one hole per connection)."""
        if conn.hole is None:
            conn.hole = half
            conn.hole_wait = HOLE_GRACE_PACKETS

    def _give_up(self, conn: Connection) -> None:
        """The acknowledged bytes are lost: report the gap, deliver what waited behind it."""
        half = conn.hole
        conn.hole = None
        conn.hole_wait = 0
        if half is not None and half.ooo:
            self._flush_ooo(
                conn,
                half,
                conn.last_packet,
                conn.last_ts_us,
                why="the receiver acknowledged bytes the capture lacks",
            )
        if half is not None:
            self._unseen_gap(conn, half)
        self._replay(conn)

    def _unseen_gap(self, conn: Connection, half: HalfStream) -> None:
        """Report acknowledged bytes that nothing captured follows (nothing is held behind them)
        at the ACK (or FIN) that revealed them, as tshark flags "ACKed unseen segment"."""
        n = self._unseen(half)
        if n and not half.ooo:
            why = "the receiver acknowledged bytes the capture lacks"
            if half.fin_raw is not None and (
                half.acked_raw is None or _delta(half.acked_raw, half.fin_raw) <= 0
            ):
                why = "the sender's FIN comes after bytes the capture lacks"
            self._gap(conn, half, n, half.acked_packet or conn.last_packet, half.acked_ts_us, why)

    def _resume(self, conn: Connection) -> None:
        conn.hole = None
        conn.hole_wait = 0
        self._replay(conn)

    def _replay(self, conn: Connection) -> None:
        """Feed the peer's queued segments, in capture order, with their own packets and times."""
        queued, conn.queued, conn.queued_bytes = conn.queued, [], 0
        for half, seq, data, missing, packet, ts_us in queued:
            self._data(conn, half, seq, data, missing, packet, ts_us)

    def _finish(self, conn: Connection) -> None:
        if conn.finished:
            return
        if conn.hole is not None or conn.queued:
            self._give_up(conn)
        for half in (conn.c2s, conn.s2c):
            if half.ooo:
                self._flush_ooo(conn, half, conn.last_packet, conn.last_ts_us)
            self._unseen_gap(conn, half)
            half.recent.clear()
        conn.finished = True
        if not conn.released:
            self._quiet.pop(conn.stream, None)
            self._closed[conn.stream] = conn
        self.listener.on_close(conn)

    def finish(self) -> None:
        """End of capture: flush every connection still open, release them all in stream order."""
        if self.on_release is None:
            for conn in self.all:
                self._finish(conn)
            self.connections.clear()
            self._quiet.clear()
            self._closed.clear()
            return
        for conn in sorted(self.connections.values(), key=lambda c: c.stream):
            self._release(conn)
