"""Per-connection TANK state: framing, resynchronisation, dispatch and pairing.

TANK frames are `msgId u8 | payloadSize u32 LE | payload`. Who sent a frame
decides what it is: from the client it is a request (Ping aside), from the broker
a response with the same msgId (ProduceWithSeqnum is answered with Produce).
Requests are paired with responses by (response msgId, request id) so a
long-poll Consume answered seconds later, or responses out of order, still pair.
"""

from __future__ import annotations

import struct
from typing import Any

from wiredump.dissect.codecs import LIMIT
from wiredump.dissect.limits import BATCH_LIMIT, MESSAGE_LIMIT
from wiredump.dissect.model import (
    CLIENT,
    EVENT,
    MALFORMED,
    OK,
    REQUEST,
    RESPONSE,
    UNKNOWN_TYPE,
    Frame,
)
from wiredump.dissect.protocols.base import NEED_MORE, NOT_A_FRAME, ConnContext, Session
from wiredump.dissect.protocols.tank import constants as C
from wiredump.dissect.protocols.tank import partitions
from wiredump.dissect.protocols.tank.common import DecodeState
from wiredump.dissect.protocols.tank.requests import REQUESTS
from wiredump.dissect.protocols.tank.responses import RESPONSES, UnknownFlag
from wiredump.dissect.wire import Cursor, Short

PROTOCOL = "tank"
_LEN = struct.Struct("<I")


def plausible_header(buf: bytes | bytearray, pos: int, role: str, strict: bool = False) -> bool:
    """Could a TANK frame sent by `role` start at `buf[pos]`? (resync and sniffing)

    Needs the 5 header bytes. Checks the id is one this side sends, the length is
    within that message's bounds and, with `strict`, the first payload bytes where
    they are cheap to check (client version, str8 lengths).
    """
    if pos + C.HEADER_SIZE > len(buf):
        return False
    msg_id = buf[pos]
    (size,) = _LEN.unpack_from(buf, pos + 1)
    if role == CLIENT:
        minimum = C.MIN_REQUEST_PAYLOAD.get(msg_id)
    else:
        minimum = C.MIN_RESPONSE_PAYLOAD.get(msg_id)
    if minimum is None or size < minimum or size > C.MAX_PAYLOAD:
        return False
    if msg_id == C.PING:
        return size == 0
    if msg_id == C.STATUS and role == CLIENT:
        return size == 4
    if not strict:
        return True
    p = pos + C.HEADER_SIZE
    avail = len(buf) - p
    if role == CLIENT and msg_id in (C.PRODUCE, C.CONSUME, C.PRODUCE_WITH_SEQNUM):
        if avail >= 2 and buf[p] + (buf[p + 1] << 8) > 16:
            return False  # client version: TANK clients send 2 or 3
        if avail >= 7 and buf[p + 6] > size - minimum + 1:
            return False  # client id str8 longer than the payload allows
    if role != CLIENT and msg_id == C.CONSUME and avail >= 4:
        (hlen,) = _LEN.unpack_from(buf, p)
        if hlen + 4 > size:
            return False
    return True


class TankSession(Session):
    def __init__(self, ctx: ConnContext) -> None:
        super().__init__(ctx)
        self._synced: set[str] = set()
        """Directions whose first frame passed the strict check; until then (start of a
        capture taken mid-connection) a header must look right before we trust its length."""

    # -- framing ---------------------------------------------------------------------------
    def frame_length(self, buf: bytes | bytearray, pos: int, role: str) -> int:
        if len(buf) - pos < C.HEADER_SIZE:
            return NEED_MORE
        if role not in self._synced:
            if not plausible_header(buf, pos, role, strict=True):
                return NOT_A_FRAME
            self._synced.add(role)
        msg_id = buf[pos]
        (size,) = _LEN.unpack_from(buf, pos + 1)
        if msg_id not in C.MSG_NAMES and size > C.MAX_UNKNOWN_PAYLOAD:
            return NOT_A_FRAME
        if msg_id == C.PING and size > C.MAX_PING_PAYLOAD:
            return NOT_A_FRAME
        return C.HEADER_SIZE + size

    def resync(self, buf: bytes | bytearray, pos: int, role: str) -> int | None:
        end = len(buf) - C.HEADER_SIZE
        for p in range(pos, end + 1):
            if not plausible_header(buf, p, role, strict=True):
                continue
            (size,) = _LEN.unpack_from(buf, p + 1)
            nxt = p + C.HEADER_SIZE + size
            # When the next header is buffered too, it must look like a frame as well.
            if nxt + C.HEADER_SIZE <= len(buf) and not plausible_header(buf, nxt, role):
                continue
            return p
        return None

    # -- decoding --------------------------------------------------------------------------
    def decode(self, data: bytes, role: str, complete: bool = True) -> list[Frame]:
        if len(data) < C.HEADER_SIZE:
            f = Frame(
                protocol=PROTOCOL, type=C.MSG_NAMES.get(data[0], "Unknown") if data else "?", type_code=-1
            )
            if data:
                f.type_code = data[0]
            f.fields["header_bytes"] = data
            f.summary = f"{len(data)} bytes of a frame header"
            if complete:
                f.flag(MALFORMED, "malformed", "frame shorter than its 5-byte header", 0)
            return [f]
        msg_id = data[0]
        (size,) = _LEN.unpack_from(data, 1)
        name = C.MSG_NAMES.get(msg_id)
        if name is None:
            f = Frame(protocol=PROTOCOL, type=f"Unknown({msg_id:#04x})", type_code=msg_id)
            f.fields = {"payload_size": size, "payload": data[C.HEADER_SIZE :]}
            f.summary = f"unknown message id {msg_id:#04x}, {size} bytes"
            f.flag(UNKNOWN_TYPE, "unknown_type", f"unknown TANK message id {msg_id:#04x} ({size} bytes)", 0)
            return [f]
        f = Frame(protocol=PROTOCOL, type=name, type_code=msg_id)
        if msg_id == C.PING:
            f.kind = EVENT
            table = REQUESTS
        elif role == CLIENT:
            f.kind = REQUEST
            table = REQUESTS
        else:
            f.kind = RESPONSE
            table = RESPONSES
        decoder = table.get(msg_id)
        st = DecodeState(self.ctx.limits, self._pair)
        c = Cursor(data, C.HEADER_SIZE, len(data))
        if decoder is None:
            # A message only clients send, coming from the broker (or the reverse).
            f.kind = EVENT
            f.fields["payload"] = data[C.HEADER_SIZE :]
            f.summary = f"{name} sent by the {role}, which TANK never does"
            f.flag(MALFORMED, "malformed", f"{name} (id {msg_id:#04x}) is not sent by the {role}", 0)
            return [f]
        f.fields["payload_size"] = size
        try:
            decoder(c, f, st)
            if c.left and complete:
                st.problems.append(("malformed", f"{c.left} bytes left after the {name} payload", c.pos))
        except Short as e:
            if complete:
                f.flag(MALFORMED, "malformed", f"{name}: {e}", e.offset)
            else:
                f.fields["cut_at"] = e.offset
        except UnknownFlag as e:
            f.flag(MALFORMED, "malformed", f"{name}: {e}", e.offset)
        limits = self.ctx.limits
        over = limits.over_batches(min(st.batches, limits.max_batches), st.batches)
        if over is not None:
            st.problems.append((*over, None))
        over = limits.over_messages(st.kept, st.read)
        if over is not None:
            st.problems.append((*over, None))
            f.messages_counted += st.read - st.kept
        # Our caps are not the frame's fault: noted, the status stays.
        st.problems.put_on(f, lambda kind: None if kind in (LIMIT, MESSAGE_LIMIT, BATCH_LIMIT) else MALFORMED)
        if not f.summary:
            # The decoder stopped before writing its line: say who it was and what went wrong.
            rid = f"req {f.correlation_id} " if f.correlation_id is not None else ""
            if not complete:
                f.summary = f"{rid}cut after {len(data)} of {C.HEADER_SIZE + size} bytes"
            elif f.anomalies:
                f.summary = f"{rid}{f.anomalies[0].detail}"
        self._correlate(f, msg_id)
        f.partitions = partitions.of_frame(f)
        return [f]

    def _pair(self, frame: Frame, key: Any) -> Frame | None:
        """The request to decode this response with (paired either way).

        A request cut by a gap (or malformed) holds only part of what the response is laid
        out by (e.g. the topics of a Produce): the response is then decoded as if unpaired
        rather than against a partial list, which would misread it as malformed.
        """
        req = self.ctx.correlator.response(frame, key)
        if req is not None and req.status != OK:
            frame.fields["request_incomplete"] = req.status
            return None
        return req

    def _correlate(self, f: Frame, msg_id: int) -> None:
        """Register requests; responses already paired themselves while decoding."""
        if f.kind != REQUEST:
            return
        if msg_id in C.NO_RESPONSE:
            self.ctx.correlator.request(f, None, expects_response=False)
            return
        if msg_id == C.CONSUME_PEER:
            self.ctx.correlator.request(f, (C.CONSUME_PEER,))
            return
        if f.correlation_id is None:
            return  # cut before its request id: nothing can answer it
        self.ctx.correlator.request(f, (C.RESPONSE_ID.get(msg_id, msg_id), f.correlation_id))
