"""Per-connection Pravega decoding: framing, the table walk, versions, appends and reads.

Framing is the 8-byte header `[int32 type][int32 length]` (big-endian); a type in
the signed-byte range that the table does not know still has a trustworthy
length, so it becomes an `unknown_type` frame and framing goes on.

`correlation_id` is the requestId, which the Java client packs as
`(flowId << 32) | sequence`; replies echo it whole, so pairs are keyed by the full
value (`pairing.py`) and the flow id is shown in `fields["flow"]`. The first frame of
each direction must check out as strictly as a resync candidate, because a capture
that starts mid-connection starts mid-frame. TLS on the port makes the connection
undecodable.

Versions: each HELLO shows its side's (high, low) wire versions and, once both are
known, the peer's. Sides that differ but overlap are normal (clients and segment
stores of different releases interoperate by design): `fields["versions"] =
"differ"`, no anomaly. A mismatch, i.e. ranges that do not overlap so the segment
store refuses the client, is flagged: anomaly `version_mismatch`, status
`unsupported_version`.
"""

from __future__ import annotations

import re
import struct
from collections import OrderedDict
from typing import Any

from wiredump.dissect.model import (
    CLIENT,
    DELIVER,
    EVENT,
    MALFORMED,
    PRODUCE,
    REQUEST,
    RESPONSE,
    UNKNOWN_TYPE,
    UNSUPPORTED_VERSION,
    Anomaly,
    Frame,
    Message,
)
from wiredump.dissect.protocols.base import NEED_MORE, NOT_A_FRAME, UNDECODABLE, ConnContext, Session
from wiredump.dissect.protocols.pravega import partitions
from wiredump.dissect.protocols.pravega.codec import BadField, decode_fields
from wiredump.dissect.protocols.pravega.commands import (
    BOTH,
    COMMANDS,
    HEADER_SIZE,
    INNER,
    MAX_WIRECOMMAND_SIZE,
    TOP_LEVEL_CODES,
    Command,
    Q,
)
from wiredump.dissect.protocols.pravega.events import (
    BlockAssembler,
    ReadJoiner,
    Records,
    describe_block,
    split_records,
)
from wiredump.dissect.protocols.pravega.pairing import Pairing
from wiredump.dissect.protocols.pravega.summary import summarize
from wiredump.dissect.wire import Cursor, Short

PROTOCOL = "pravega"
_HDR = struct.Struct(">ii")
_CODE = struct.Struct(">i")
DATA_VIEW = 1024
"""Bytes of a data blob kept in `fields` (all of it goes to messages; `-x` shows the frame)."""
RESYNC_DECODE_MAX = 64 * 1024
RESYNC_WAIT_MAX = 16 * 1024
"""A candidate frame up to this size is verified whole before resynchronising on it."""
MAX_WRITERS = 10000

_RESYNC_RE = re.compile(
    b"(?=(" + b"|".join(re.escape(struct.pack(">i", c)) for c in sorted(TOP_LEVEL_CODES)) + b"))"
)


def plausible_header(code: int, length: int) -> bool:
    cmd = COMMANDS.get(code)
    if cmd is None or code not in TOP_LEVEL_CODES:
        return False
    if length < cmd.min_payload or length > MAX_WIRECOMMAND_SIZE:
        return False
    top = cmd.max_payload
    return top is None or length <= top


class PravegaSession(Session):
    def __init__(self, ctx: ConnContext) -> None:
        super().__init__(ctx)
        self._pairs = Pairing(ctx.correlator, ctx.limits.max_pending_requests)
        self._writer_segment: OrderedDict[str, str] = OrderedDict()
        self._hello: dict[str, tuple[int, int]] = {}
        self._blocks = BlockAssembler()
        self._reads = ReadJoiner()
        self._started: set[str] = set()
        """Directions whose first frame has been sized."""

    # -- framing ---------------------------------------------------------------------------
    def frame_length(self, buf: bytes | bytearray, pos: int, role: str) -> int:
        avail = len(buf) - pos
        if avail < HEADER_SIZE:
            return NEED_MORE
        code, length = _HDR.unpack_from(buf, pos)
        if role not in self._started:
            # The first frame of a direction must check out as strictly as a resync
            # candidate: a capture that starts mid-connection starts mid-frame, and
            # small ints (lengths, counts) there look like type codes.
            if buf[pos] == 0x16 and buf[pos + 1] == 0x03 and buf[pos + 2] <= 0x04:
                self._started.add(role)
                return UNDECODABLE  # TLS on the segment-store port (§1): no plaintext to read
            if not plausible_header(code, length):
                self._started.add(role)
                return NOT_A_FRAME
            if length <= RESYNC_WAIT_MAX:
                if avail < HEADER_SIZE + length:
                    return NEED_MORE
                if not _decodes(buf, pos, code, length):
                    self._started.add(role)
                    return NOT_A_FRAME
            self._started.add(role)
        if not -128 <= code <= 127 or length < 0:
            return NOT_A_FRAME
        return HEADER_SIZE + length

    def resync(self, buf: bytes | bytearray, pos: int, role: str) -> int | None:
        """First header that checks out: a known code, a length the command allows, and,
        when the whole frame is buffered, fields that decode and a plausible next header.

        A small candidate that is not all buffered yet is passed over if a later one
        checks out, else waited for (None); a large one (beyond what the engine keeps
        while resynchronising) is taken on its header alone.
        """
        n = len(buf)
        for m in _RESYNC_RE.finditer(buf, pos):
            at = m.start()
            if at + HEADER_SIZE > n:
                return None  # wait for the rest of this header
            code, length = _HDR.unpack_from(buf, at)
            if not plausible_header(code, length):
                continue
            end = at + HEADER_SIZE + length
            if end > n:
                if length > RESYNC_WAIT_MAX:
                    return at
                continue
            if length <= RESYNC_DECODE_MAX and not _decodes(buf, at, code, length):
                continue
            if end + HEADER_SIZE <= n:
                ncode, nlength = _HDR.unpack_from(buf, end)
                if not plausible_header(ncode, nlength):
                    continue
            return at
        return None

    # -- decoding --------------------------------------------------------------------------
    def decode(self, data: bytes, role: str, complete: bool = True) -> list[Frame]:
        if len(data) < 4:
            f = Frame(protocol=PROTOCOL, type="?", type_code=-1)
            if complete:
                f.flag(MALFORMED, "malformed", f"{len(data)} bytes cannot hold a frame header")
            f.summary = f"{len(data)} bytes of a cut header"
            return [f]
        code = _CODE.unpack_from(data, 0)[0]
        cmd = COMMANDS.get(code)
        f = Frame(protocol=PROTOCOL, type=cmd.name if cmd else f"Unknown({code})", type_code=code)
        if len(data) < HEADER_SIZE:
            if cmd is not None:
                f.kind = _kind(cmd, role)
            f.summary = f"cut after {len(data)} header bytes"
            return [f]
        length = _HDR.unpack_from(data, 0)[1]
        if cmd is None:
            f.kind = EVENT
            f.fields = {
                "type_code": code,
                "length": length,
                "payload": data[HEADER_SIZE : HEADER_SIZE + DATA_VIEW],
            }
            f.flag(
                UNKNOWN_TYPE,
                "unknown_type",
                f"type code {code} is not a Pravega WireCommandType ({length} bytes)",
                0,
            )
            f.summary = f"unknown type {code}, {length} bytes"
            return [f]
        f.kind = _kind(cmd, role)
        end = min(len(data), HEADER_SIZE + max(0, length))
        c = Cursor(data, HEADER_SIZE, end)
        fields: dict[str, Any] = {}
        f.fields = fields
        absent: list[str] = []
        decoded = False
        try:
            absent = decode_fields(c, cmd.fields, fields)
            decoded = True
        except Short as e:
            if complete:
                f.flag(MALFORMED, "malformed", f"{cmd.name}: {e}", e.offset)
            else:
                fields["cut_in"] = e.what
        except BadField as e:
            f.flag(MALFORMED, "malformed", f"{cmd.name}: {e}", e.offset)
        if decoded and c.left:
            fields["trailing_bytes"] = c.left
            f.add(
                Anomaly("trailing_bytes", f"{c.left} bytes after the last known field of {cmd.name}", c.pos)
            )
        if absent:
            fields["absent_optional_fields"] = absent
        rid = fields.get("request_id")
        if isinstance(rid, int) and "request_id" not in absent:
            f.correlation_id = rid
            if rid > 0xFFFFFFFF:  # Flow.asLong(): flow id in the high 32 bits
                fields["flow"] = {"flow_id": rid >> 32, "sequence": rid & 0x0FFFFFFF}
        if cmd.failure:
            f.error = cmd.name
            f.error_code = cmd.code
        ok = decoded and complete
        try:
            self._interpret(f, cmd, role, ok)
        finally:
            _trim_data(fields)
            f.summary = summarize(f, fields)
            f.partitions = partitions.of_frame(f, self._writer_segment)
        return [f]

    def _interpret(self, f: Frame, cmd: Command, role: str, ok: bool) -> None:
        """Everything beyond the field walk: versions, events, pairing."""
        name, fields = cmd.name, f.fields
        if cmd.direction == INNER:
            f.add(
                Anomaly("unexpected_command", f"{name} outside an APPEND_BLOCK (it only belongs inside one)")
            )
            return
        self._check_block_order(f, name, role)
        if name == "Hello":
            if "high_version" in fields:
                f.version = fields["high_version"]
            if ok:
                self._on_hello(f, role)
            return
        if name == "KeepAlive":
            return
        if name == "AppendBlock":
            if ok:
                fields.update(describe_block(fields["data"]))
                fields["data_length"] = len(fields["data"])
                for p in self._blocks.add_block(fields["writer_id"], fields["data"]):
                    f.add(Anomaly("append_block", p))
                self._pairs.no_reply(f)
            return
        if not ok:
            return
        if name in ("SetupAppend", "AppendSetup"):
            self._remember_writer(fields["writer_id"], fields["segment"])
        elif name == "AppendBlockEnd":
            self._on_block_end(f)
        elif name == "ConditionalAppend":
            event = fields["event"]["data"]
            fields["data_length"] = len(event)
            self._produce(f, fields["writer_id"], [event], fields["event_number"], 1)
        elif name == "ConditionalBlockEnd":
            self._on_append_data(f, fields["data"], fields["event_number"], None)
        elif name == "SegmentRead":
            self._on_segment_read(f)
        if f.kind == REQUEST:
            self._pairs.register(f, cmd)
        elif f.kind == RESPONSE:
            self._pairs.answer(f, cmd)

    # -- hello -----------------------------------------------------------------------------
    def _on_hello(self, f: Frame, role: str) -> None:
        mine = (f.fields["high_version"], f.fields["low_version"])
        self._hello[role] = mine
        if role == CLIENT:
            self._pairs.hello_request(f)
        else:
            self._pairs.hello_reply(f)
        other = "server" if role == CLIENT else CLIENT
        if other not in self._hello:
            return
        (ch, cl), (sh, sl) = self._hello[CLIENT], self._hello["server"]
        f.fields["peer_versions"] = {
            "high_version": self._hello[other][0],
            "low_version": self._hello[other][1],
        }
        if cl > sh or ch < sl:
            f.fields["versions"] = "incompatible"
            f.flag(
                UNSUPPORTED_VERSION,
                "version_mismatch",
                f"client speaks wire versions {cl}..{ch}, server {sl}..{sh}: no common version "
                "(the segment store closes the connection)",
            )
        elif ch != sh or cl != sl:
            # Normal in Pravega: each side accepts any peer whose range overlaps its own.
            f.fields["versions"] = "differ"
        else:
            f.fields["versions"] = "equal"

    # -- appends -----------------------------------------------------------------------------
    def _check_block_order(self, f: Frame, name: str, role: str) -> None:
        """An APPEND_BLOCK must be followed by its APPEND_BLOCK_END and nothing else (§6.3, §6.4)."""
        if role != CLIENT or not self._blocks.pending:
            return
        for writer in self._blocks.pending_writers():
            if name in ("AppendBlock", "AppendBlockEnd") and writer == f.fields.get("writer_id"):
                continue  # its end (or, for AppendBlock, add_block reports the replacement)
            self._blocks.drop(writer)
            f.add(
                Anomaly(
                    "append_block", f"the APPEND_BLOCK of writer {writer} is followed by {name}, not its end"
                )
            )

    def _remember_writer(self, writer: str, segment: str) -> None:
        self._writer_segment[writer] = segment
        self._writer_segment.move_to_end(writer)
        while len(self._writer_segment) > MAX_WRITERS:
            self._writer_segment.popitem(last=False)

    def _on_block_end(self, f: Frame) -> None:
        fields = f.fields
        writer = fields["writer_id"]
        assembled = self._blocks.end_block(writer, fields["size_of_whole_events"], fields["data"])
        for p in assembled.problems:
            f.add(Anomaly("append_block", p))
        if assembled.from_block:
            fields["block_data_length"] = assembled.from_block
            fields["block_trailer"] = assembled.trailer
        num, last = fields["num_events"], fields["last_event_number"]
        if num <= 0:
            f.add(Anomaly("append_block", f"numEvents is {num}, must be > 0"))
        self._on_append_data(f, assembled.data, last, num)

    def _on_append_data(self, f: Frame, data: bytes, last_event: int, num_events: int | None) -> None:
        """Split appended bytes into events (or note a byte stream) and make produce messages."""
        fields = f.fields
        fields["appended_length"] = len(data)
        if not data:
            fields["data_kind"] = "empty"
            return
        recs = split_records(data, allow_tail=False, keep=self.ctx.limits.max_messages)
        if not recs.is_events:
            fields["data_kind"] = "raw"
            fields["events"] = 0
            return
        fields["data_kind"] = "events"
        fields["events"] = recs.count
        if num_events is not None and num_events != recs.count:
            f.add(
                Anomaly("event_count_mismatch", f"numEvents says {num_events}, the data holds {recs.count}")
            )
        self._over(f, recs)
        self._produce(f, fields["writer_id"], [p for _, p in recs.events], last_event, recs.count)

    def _over(self, f: Frame, recs: Records) -> None:
        """Say so when the frame held more events than it keeps (`Limits.max_messages`); the
        status stays: the cap is ours, not the frame's fault."""
        over = self.ctx.limits.over_messages(len(recs.events), recs.count)
        if over is not None:
            f.add(Anomaly(*over))
            f.messages_counted += recs.count - len(recs.events)

    def _produce(self, f: Frame, writer: str, payloads: list[bytes], last_event: int, count: int) -> None:
        segment = self._writer_segment.get(writer)
        first = last_event - count + 1
        for i, payload in enumerate(payloads):
            n = first + i
            f.messages.append(
                Message(
                    direction=PRODUCE,
                    value_size=len(payload),
                    topic=segment,
                    offset=n,
                    value=payload,
                    detail={"writer_id": writer, "event_number": n},
                )
            )

    # -- reads -------------------------------------------------------------------------------
    def _on_segment_read(self, f: Frame) -> None:
        fields = f.fields
        data: bytes = fields["data"]
        segment, offset = fields["segment"], fields["offset"]
        fields["data_length"] = len(data)
        if not data:
            fields["data_kind"] = "empty"
            return
        recs, base, joined = self._reads.split(segment, offset, data, self.ctx.limits.max_messages)
        if not recs.is_events:
            fields["data_kind"] = "raw"
            fields["events"] = 0
            return
        fields["data_kind"] = "events"
        fields["events"] = recs.count
        self._over(f, recs)
        if joined:
            fields["joined_from_previous_read"] = joined
        cut = self._reads.pending(segment)
        if cut:
            fields["incomplete_tail_bytes"] = cut
        for pos, payload in recs.events:
            f.messages.append(
                Message(
                    direction=DELIVER,
                    value_size=len(payload),
                    topic=segment,
                    value=payload,
                    detail={"segment_offset": base + pos},
                )
            )

    # -- end -----------------------------------------------------------------------------------
    def close(self) -> list[Frame]:
        for writer in self._blocks.pending_writers():
            self.ctx.report(
                Anomaly("append_block", f"connection ended with the APPEND_BLOCK of writer {writer} open")
            )
        return []


def _kind(cmd: Command, role: str) -> str:
    if cmd.direction == Q:
        return REQUEST
    if cmd.direction == BOTH:
        if cmd.name == "Hello":
            return REQUEST if role == CLIENT else RESPONSE
        return EVENT
    if cmd.direction == INNER:
        return EVENT
    return RESPONSE


def _decodes(buf: bytes | bytearray, at: int, code: int, length: int) -> bool:
    cmd = COMMANDS[code]
    c = Cursor(bytes(buf[at + HEADER_SIZE : at + HEADER_SIZE + length]))
    try:
        decode_fields(c, cmd.fields, {})
    except (Short, BadField):
        return False
    return c.left == 0


def _trim_data(fields: dict[str, Any]) -> None:
    """Keep `fields` readable: a big data blob is shown by its first DATA_VIEW bytes."""
    v = fields.get("data")
    if isinstance(v, bytes):
        fields["data_length"] = len(v)
        if len(v) > DATA_VIEW:
            fields["data"] = v[:DATA_VIEW]
            fields["data_shown"] = DATA_VIEW
    ev = fields.get("event")
    if isinstance(ev, dict) and isinstance(ev.get("data"), bytes) and len(ev["data"]) > DATA_VIEW:
        ev["data_length"] = len(ev["data"])
        ev["data"] = ev["data"][:DATA_VIEW]
