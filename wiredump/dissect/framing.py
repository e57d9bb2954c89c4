"""The framing engine: reassembled bytes in, stamped frames out.

One `ConnectionFramer` per connection drives the protocol's `Session` for both
directions: it buffers only up to the frame length the session declares (never
beyond the protocol's maximum), maps every frame back to the packets that carried
its first and last byte, reports skipped bytes when it resynchronises, turns bytes
cut by a gap or by the end of the stream into a `truncated` frame, and shields the
rest of the capture from any decoder bug: an exception raised by the session's
`frame_length`, `resync`, `decode` or `close` is an `internal_error` anomaly (see
`internal`), never "not a frame" or "malformed". A frame whose decode raised is kept, as
an undecoded frame of status `undecodable` (its bytes are real; wiredump could not read
them), carrying the `internal_error`.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

from wiredump.dissect import internal
from wiredump.dissect.model import (
    CLIENT,
    OK,
    SERVER,
    TRUNCATED,
    Anomaly,
    Exchange,
    Frame,
)
from wiredump.dissect.model import UNDECODABLE as UNDECODABLE_STATUS
from wiredump.dissect.protocols.base import (
    NEED_MORE,
    NOT_A_FRAME,
    UNDECODABLE,
    ConnContext,
    ProtocolSpec,
    Session,
)

RESYNC_KEEP = 64 * 1024
"""Bytes kept while no frame start is found (a frame header must fit in them)."""
MAX_HEADER_WAIT = 64 * 1024
"""A session that cannot size a frame after this many bytes is looking at garbage."""
COMPACT_AT = 256 * 1024
RELEASE_AT = 1 << 20
"""A direction buffer this large whose bytes are all in the frame being cut is let go before the
frame is decoded: a frame near a protocol's maximum (100 MiB and more) would otherwise be held
twice (buffer and frame) while its decode makes more."""
RESYNC_STEP = 16 * 1024
EAGER_RESYNC = 4096
"""Up to this many bytes, a resynchronising direction is scanned again whenever the other side
speaks (cheap, and keeps answers behind their requests); beyond it, the doubling rule."""
MAX_INTERNAL_REPORTS = 64
"""Internal errors of framing and resync reported one by one per connection; past this
one more anomaly at the end counts the rest (a session that raises on every call would
otherwise report once per segment). Errors in decode each belong to their frame."""

_FRAMING, _RESYNC, _DEAD = 0, 1, 2


class Output(Protocol):
    def frame(self, frame: Frame) -> None: ...
    def anomaly(self, anomaly: Anomaly) -> None: ...
    def exchange(self, exchange: Exchange) -> None: ...


class _Direction:
    __slots__ = (
        "role",
        "buf",
        "pos",
        "base",
        "chunks",
        "need",
        "mode",
        "skipped",
        "skip_from",
        "dead_bytes",
        "scanned",
        "skip_why",
    )

    def __init__(self, role: str) -> None:
        self.role = role
        self.buf: bytes | bytearray = b""
        self.pos = 0
        self.base = 0  # stream offset of buf[0]
        self.chunks: deque[tuple[int, int, int]] = deque()  # (end offset, packet, ts_us)
        self.need = 0
        self.mode = _FRAMING
        self.skipped = 0
        self.skip_from = 0  # packet where the skipped run began
        self.dead_bytes = 0
        self.scanned = 0  # bytes the last fruitless resync looked at
        self.skip_why = ""  # why the current skipped run began, when it is not garbage


class ConnectionFramer:
    def __init__(
        self,
        spec: ProtocolSpec,
        session: Session,
        ctx: ConnContext,
        out: Output,
        keep_bytes: bool = False,
    ) -> None:
        self.spec = spec
        self.session = session
        self.ctx = ctx
        self.out = out
        self.keep_bytes = keep_bytes
        self.frames = 0
        self._dirs = {CLIENT: _Direction(CLIENT), "server": _Direction("server")}
        self._last_packet = 0
        self._internal_errors = 0
        ctx.report = self._report

    # -- input -----------------------------------------------------------------------------
    def feed(self, role: str, data: bytes, packet: int, ts_us: int) -> None:
        d = self._dirs[role]
        self._last_packet = packet
        o = self._dirs[SERVER if role == CLIENT else CLIENT]
        if o.mode == _RESYNC and o.scanned and o.scanned < len(o.buf) - o.pos <= EAGER_RESYNC:
            # The other side is resynchronising and has bytes not yet scanned: scan them now,
            # so that a request found there is decoded before this side's answer to it.
            if self._try_resync(o):
                self._run(o)
        if d.mode == _DEAD:
            d.dead_bytes += len(data)
            return
        if d.pos >= len(d.buf):
            d.base += len(d.buf)
            d.buf = data
            d.pos = 0
        else:
            if isinstance(d.buf, bytes):
                d.base += d.pos
                d.buf = bytearray(d.buf[d.pos :])
                d.pos = 0
            elif d.pos > COMPACT_AT:
                del d.buf[: d.pos]
                d.base += d.pos
                d.pos = 0
            d.buf += data
        d.chunks.append((d.base + len(d.buf), packet, ts_us))
        self._run(d)

    def gap(self, role: str, size: int, packet: int, ts_us: int) -> None:
        """`size` bytes of this direction were never captured."""
        d = self._dirs[role]
        if d.mode == _DEAD:
            return
        self._flush_partial(d, packet)
        d.base += len(d.buf) + size
        d.buf = b""
        d.pos = 0
        d.need = 0
        d.chunks.clear()
        d.mode = _RESYNC
        d.skipped = 0
        d.skip_from = packet
        d.skip_why = ""
        d.scanned = 0

    def finish(self) -> None:
        """End of connection (or of the capture): flush partial frames, close exchanges."""
        for d in self._dirs.values():
            self._flush_partial(d, self._last_packet)
        for f in self._call_close():
            self._emit(f)
        for ex in self.ctx.correlator.close():
            self.out.exchange(ex)
        if self._internal_errors > MAX_INTERNAL_REPORTS:
            self._report(
                Anomaly(
                    internal.INTERNAL_ERROR,
                    f"internal error: {self._internal_errors - MAX_INTERNAL_REPORTS} more internal errors "
                    f"in {self.spec.name} on this connection (only the first {MAX_INTERNAL_REPORTS} "
                    "are reported one by one)",
                )
            )

    # -- engine ------------------------------------------------------------------------------
    def _run(self, d: _Direction) -> None:
        session, role = self.session, d.role
        # The protocol's largest frame, within the engine's own ceiling (`Limits.max_stream_buffer`):
        # the bytes a direction buffers while a frame completes never pass it.
        ceiling = self.ctx.limits.max_stream_buffer
        ours = not self.spec.max_frame or self.spec.max_frame > ceiling
        max_frame = ceiling if ours else self.spec.max_frame
        while True:
            buf, pos = d.buf, d.pos
            avail = len(buf) - pos
            if avail <= 0:
                return
            if d.mode == _RESYNC:
                # Scanning the whole window again for every small segment would be quadratic;
                # scan again once the window has doubled or RESYNC_STEP new bytes came.
                if d.scanned and avail < 2 * d.scanned and avail - d.scanned < RESYNC_STEP:
                    return
                if not self._try_resync(d):
                    return
                continue
            n = d.need
            if not n:
                try:
                    n = session.frame_length(buf, pos, role)
                except Exception as e:  # a session bug: reported, then the bytes are skipped
                    self._internal(e, "frame_length", d, d.base + pos)
                    d.skip_why = f"after an internal error in {self.spec.name}.frame_length"
                    n = NOT_A_FRAME
                if n == NEED_MORE:
                    if avail > MAX_HEADER_WAIT:
                        n = NOT_A_FRAME
                    else:
                        return
                if n == UNDECODABLE:
                    d.mode = _DEAD
                    d.dead_bytes = avail
                    self._report(
                        Anomaly(
                            "undecodable",
                            f"{role} bytes from stream offset {d.base + pos} on cannot be decoded",
                        ),
                        self._packet_at(d, d.base + pos),
                    )
                    d.buf, d.pos = b"", 0
                    return
                if n == NOT_A_FRAME or n < 0:
                    d.mode = _RESYNC
                    d.skip_from = self._packet_at(d, d.base + pos)
                    self._skip(d, 1)
                    continue
                if max_frame and n > max_frame:
                    at_packet = self._packet_at(d, d.base + pos)
                    self._report(
                        Anomaly(
                            "oversize_frame",
                            f"{role} frame at stream offset {d.base + pos} declares {n} bytes, "
                            f"over the {self.spec.name} maximum of {max_frame}"
                            + (" (the engine's stream buffer limit)" if ours else ""),
                        ),
                        at_packet,
                    )
                    d.mode = _RESYNC
                    d.skip_from = at_packet
                    self._skip(d, 1)
                    continue
                d.need = n
            if avail < n:
                return
            # One copy at most (a memoryview slice is not one), none when the frame is the buffer.
            if pos == 0 and n == len(buf) and isinstance(buf, bytes):
                data = buf
            else:
                with memoryview(buf) as view:
                    data = bytes(view[pos : pos + n])
            d.pos = pos + n
            d.need = 0
            start = d.base + pos
            if d.pos == len(buf) and len(buf) > RELEASE_AT:
                d.base += len(buf)
                d.buf, d.pos = b"", 0
            del buf
            self._decode(d, data, start, True)

    def _try_resync(self, d: _Direction) -> bool:
        """Look for a frame start; True (and framing mode) when one was found."""
        buf, pos = d.buf, d.pos
        avail = len(buf) - pos
        try:
            at = self.session.resync(buf, pos, d.role)
        except Exception as e:  # a session bug: reported; no frame start is trusted in these bytes
            self._internal(e, "resync", d, d.base + pos)
            d.skip_why = f"after an internal error in {self.spec.name}.resync"
            at = None
        if at is None or at < pos or at >= len(buf):
            keep = min(avail, RESYNC_KEEP)
            if avail > keep:
                self._skip(d, avail - keep)
            d.scanned = keep
            return False
        if at > pos:
            self._skip(d, at - pos)
        self._resynced(d)
        d.mode = _FRAMING
        d.scanned = 0
        return True

    def _decode(self, d: _Direction, data: bytes, start: int, complete: bool) -> None:
        first_packet, last_packet, ts_us = self._span(d, start, start + len(data))
        try:
            frames = self.session.decode(data, d.role, complete)
        except Exception as e:  # a decoder bug must not cost the rest of the capture
            # The bytes are a real frame (framing found it); wiredump failed to read them.
            f = Frame(protocol=self.spec.name, type="?", type_code=-1)
            f.status = UNDECODABLE_STATUS
            f.summary = f"not decoded: internal error ({type(e).__name__})"
            f.add(
                internal.internal_error(
                    e, "decode", self.spec.name, f"the {d.role} frame at stream offset {start}", 0
                )
            )
            frames = [f]
        for i, f in enumerate(frames):
            f.role = d.role
            f.first_packet = first_packet
            f.packet = last_packet
            f.ts_us = ts_us
            if not f.length:
                f.length = len(data) if len(frames) == 1 else 0
            if not complete and f.status == OK:
                f.status = TRUNCATED
            if not complete and i == 0:
                f.add(Anomaly("truncated", f"frame cut after {len(data)} bytes", len(data)))
            if self.keep_bytes and f.data is None:
                f.data = data
            self._emit(f)
        for ex in self.ctx.correlator.drain():
            self.out.exchange(ex)

    def _emit(self, f: Frame) -> None:
        ctx = self.ctx
        f.stream = ctx.stream
        if f.role == CLIENT:
            f.src, f.src_port, f.dst, f.dst_port = ctx.client, ctx.client_port, ctx.server, ctx.server_port
        else:
            f.src, f.src_port, f.dst, f.dst_port = ctx.server, ctx.server_port, ctx.client, ctx.client_port
        if not f.packet:
            f.packet = f.first_packet = self._last_packet
        for a in f.anomalies:
            a.packet = a.packet or f.packet
            a.stream = ctx.stream
            a.protocol = self.spec.name
        self.frames += 1
        self.out.frame(f)

    def _flush_partial(self, d: _Direction, packet: int) -> None:
        if d.mode == _FRAMING and len(d.buf) > d.pos:
            data = bytes(d.buf[d.pos :])
            start = d.base + d.pos
            d.pos = len(d.buf)
            d.need = 0
            self._decode(d, data, start, False)
        elif d.mode == _RESYNC and len(d.buf) > d.pos and d.scanned and self._try_resync(d):
            self._run(d)  # the frames in the bytes that had not been scanned yet
            self._flush_partial(d, packet)
            return
        elif d.mode == _RESYNC and len(d.buf) > d.pos:
            self._skip(d, len(d.buf) - d.pos)
            self._resynced(d, ended=True)
        elif d.mode == _RESYNC and d.skipped:
            self._resynced(d, ended=True)
        d.chunks.clear()

    def _call_close(self) -> list[Frame]:
        try:
            return self.session.close()
        except Exception as e:  # a session bug: reported; the frames it held are lost
            # Once per connection: reported even past MAX_INTERNAL_REPORTS.
            self._report(internal.internal_error(e, "close", self.spec.name, "the end of the connection"))
            return []

    # -- bookkeeping -------------------------------------------------------------------------
    def _internal(self, e: Exception, function: str, d: _Direction, offset: int) -> None:
        where = f"{d.role} bytes at stream offset {offset}"
        a = internal.internal_error(e, function, self.spec.name, where)
        self._count_internal(a, self._packet_at(d, offset))

    def _count_internal(self, a: Anomaly, packet: int | None = None) -> None:
        self._internal_errors += 1
        if self._internal_errors <= MAX_INTERNAL_REPORTS:
            self._report(a, packet)

    def _skip(self, d: _Direction, n: int) -> None:
        if not d.skipped:
            d.skip_from = self._packet_at(d, d.base + d.pos)
        d.skipped += n
        d.pos += n

    def _resynced(self, d: _Direction, ended: bool = False) -> None:
        if not d.skipped:
            return
        where = "until the stream ended" if ended else f"resynchronised at stream offset {d.base + d.pos}"
        what = d.skip_why or f"that are not {self.spec.name} frames"
        self._report(Anomaly("resync", f"skipped {d.skipped} {d.role} bytes {what}; {where}"), d.skip_from)
        d.skipped = 0
        d.skip_why = ""

    def _report(self, a: Anomaly, packet: int | None = None) -> None:
        a.packet = a.packet or packet or self._last_packet
        a.stream = self.ctx.stream
        a.protocol = self.spec.name
        self.out.anomaly(a)

    def _packet_at(self, d: _Direction, offset: int) -> int:
        for end, packet, _ in d.chunks:
            if offset < end:
                return packet
        return self._last_packet

    def _span(self, d: _Direction, start: int, end: int) -> tuple[int, int, int]:
        chunks = d.chunks
        while len(chunks) > 1 and chunks[0][0] <= start:
            chunks.popleft()
        if not chunks:
            return self._last_packet, self._last_packet, 0
        first = chunks[0][1]
        for c_end, packet, ts in chunks:
            if end <= c_end:
                return first, packet, ts
        last = chunks[-1]
        return first, last[1], last[2]
