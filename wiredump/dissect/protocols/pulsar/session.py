"""Per-connection Pulsar decoding: framing, commands, messages, pairing.

A frame is `[totalSize u32][commandSize u32][BaseCommand]`, and for SEND/MESSAGE
the payload section after it (see `payload`). The session remembers what the
connection registered (producer_id → topic, consumer_id → topic and subscription,
the frame size the broker allows) so that every message can name its topic, and it
pairs requests with responses through the connection's correlator.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Any

from wiredump.dissect.model import (
    BAD_CHECKSUM,
    CLIENT,
    DELIVER,
    EVENT,
    MALFORMED,
    PRODUCE,
    REQUEST,
    RESPONSE,
    SERVER,
    UNKNOWN_TYPE,
    Anomaly,
    Frame,
    Message,
)
from wiredump.dissect.protocols.base import NEED_MORE, NOT_A_FRAME, UNDECODABLE, ConnContext, Session
from wiredump.dissect.protocols.pulsar import describe, pairing, partitions, payload, schema
from wiredump.dissect.protocols.pulsar.chunks import ChunkAssembler

PROTOCOL = "pulsar"
MiB = 1024 * 1024
DEFAULT_MAX_MESSAGE_SIZE = 5 * MiB
FRAME_PADDING = 10 * 1024
"""Brokers and clients accept a totalSize up to max_message_size + 10 KiB (Netty frame decoder)."""
HARD_MAX_FRAME = 128 * MiB
"""Beyond this nothing is ever buffered, whatever a CONNECTED advertised."""
MAX_TRACKED_IDS = 65536
"""Producers/consumers remembered per connection."""
CONFIRM_WAIT = 16 * 1024
"""A broken first frame of a direction up to this size waits for the next frame to confirm it."""

_PARTITION_SUFFIX = re.compile(r"-partition-(\d+)$")
_T = schema.TYPE_CODES
CONNECT, CONNECTED, AUTH_CHALLENGE, AUTH_RESPONSE = (
    _T["CONNECT"],
    _T["CONNECTED"],
    _T["AUTH_CHALLENGE"],
    _T["AUTH_RESPONSE"],
)
PING, PONG, ERROR = _T["PING"], _T["PONG"], _T["ERROR"]
SEND, SEND_RECEIPT, SEND_ERROR, MESSAGE = _T["SEND"], _T["SEND_RECEIPT"], _T["SEND_ERROR"], _T["MESSAGE"]
PRODUCER, PRODUCER_SUCCESS, SUBSCRIBE, ACK, FLOW = (
    _T["PRODUCER"],
    _T["PRODUCER_SUCCESS"],
    _T["SUBSCRIBE"],
    _T["ACK"],
    _T["FLOW"],
)
CLOSE_PRODUCER, CLOSE_CONSUMER = _T["CLOSE_PRODUCER"], _T["CLOSE_CONSUMER"]
U64_MINUS_ONE = (1 << 64) - 1

HAPROXY_V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"


def max_frame_for(max_message_size: int) -> int:
    """Largest frame (length prefix included) for a broker's max_message_size."""
    return 4 + max_message_size + FRAME_PADDING


DEFAULT_MAX_FRAME = max_frame_for(DEFAULT_MAX_MESSAGE_SIZE)


def partition_of(topic: str | None) -> int | None:
    if not topic:
        return None
    m = _PARTITION_SUFFIX.search(topic)
    return int(m.group(1)) if m else None


def _raw(v: str | bytes) -> bytes:
    return v if isinstance(v, bytes) else v.encode()


def _other(role: str) -> str:
    return SERVER if role == CLIENT else CLIENT


class _Bounded(dict):
    """A dict that forgets its oldest entries past a size (ids chosen by the peer are untrusted)."""

    def __init__(self, cap: int) -> None:
        super().__init__()
        self.cap = cap

    def put(self, key: Hashable, value: Any) -> None:
        self.pop(key, None)
        self[key] = value
        while len(self) > self.cap:
            del self[next(iter(self))]


class PulsarSession(Session):
    def __init__(self, ctx: ConnContext) -> None:
        super().__init__(ctx)
        self.max_frame = DEFAULT_MAX_FRAME
        self.started = {CLIENT: False, SERVER: False}
        self.protocol_version: int | None = None
        self.producers: _Bounded = _Bounded(MAX_TRACKED_IDS)
        self.consumers: _Bounded = _Bounded(MAX_TRACKED_IDS)
        self.deliveries: _Bounded = _Bounded(MAX_TRACKED_IDS)
        """(consumer_id, ledger, entry) → the MESSAGE frame that delivered it, for acks."""
        self.chunks = ChunkAssembler(max_bytes=min(ctx.limits.max_decompressed, 64 * MiB))
        self.show_secrets = bool(ctx.options.get("show_secrets"))

    # -- framing ---------------------------------------------------------------------------
    def frame_length(self, buf: bytes | bytearray, pos: int, role: str) -> int:
        avail = len(buf) - pos
        if not self.started[role]:
            if avail < 3:
                return NEED_MORE
            if buf[pos] == 0x16 and buf[pos + 1] == 0x03 and buf[pos + 2] <= 0x04:
                return UNDECODABLE  # TLS (port 6651): nothing to decode without the keys
            head = bytes(buf[pos : pos + 16])
            if head.startswith(b"PROXY "[: len(head)]) or HAPROXY_V2_SIGNATURE.startswith(head[:12]):
                n = self._proxy_header_length(buf, pos)
                if n:
                    return n
        if avail < 4:
            return NEED_MORE
        if not self.started[role]:
            # A capture may begin mid-connection: trust the first length only if a command follows,
            # or if the frame is broken inside but its framing is confirmed (see `_confirmed`).
            if avail < 10:
                return NEED_MORE
            if not self._plausible(buf, pos):
                return self._first_unplausible(buf, pos, role)
        total = int.from_bytes(buf[pos : pos + 4], "big")
        if total < 4:
            return NOT_A_FRAME
        n = total + 4
        if self.max_frame < n <= HARD_MAX_FRAME:
            # Over what this connection allows, yet under the engine's hard ceiling: say so here.
            self._oversize(role, n)
            return NOT_A_FRAME
        self.started[role] = True
        return n

    def _first_unplausible(self, buf: bytes | bytearray, pos: int, role: str) -> int:
        """The first frame of a direction whose command does not check out: a real frame with
        something wrong inside (decoded as `malformed`), an oversize frame, or not a frame at all.

        Its length prefix is trusted only when what follows confirms it: a sane totalSize
        whose end is where the next frame (one that checks out) starts; or, for a totalSize
        over the maximum, a command that checks out behind it (only the size is wrong: it is
        an `oversize_frame`, which the engine reports and resynchronises over). Anything
        else is not a frame (a capture begun inside one): the engine resynchronises.
        """
        total = int.from_bytes(buf[pos : pos + 4], "big")
        n = total + 4
        if n > self.max_frame:
            cmd = int.from_bytes(buf[pos + 4 : pos + 8], "big")
            if not (2 <= cmd <= 64 * 1024) or buf[pos + 8] != 0x08:
                return NOT_A_FRAME
            if pos + 8 + cmd > len(buf):
                return NEED_MORE
            raw = bytes(buf[pos + 8 : pos + 8 + cmd])
            base, _ = schema.parse(schema.BaseCommand, raw)
            field = schema.COMMAND_FIELD.get(schema.raw_type(raw) or 0)
            if base is None or field is None or not base.HasField(field):
                return NOT_A_FRAME
            if n <= HARD_MAX_FRAME:
                self._oversize(role, n)
                return NOT_A_FRAME
            return n  # the engine reports it against its own ceiling
        if total < 4:
            return NOT_A_FRAME
        nxt = pos + n
        if nxt + 10 > len(buf):
            # Wait for the next frame only for a small first frame: bytes of a capture begun
            # mid-connection must not hold this direction back (its answers would overtake it).
            return NEED_MORE if n <= CONFIRM_WAIT else NOT_A_FRAME
        if not self._plausible(buf, nxt):
            return NOT_A_FRAME
        self.started[role] = True
        return n

    def _oversize(self, role: str, n: int) -> None:
        self.ctx.report(
            Anomaly(
                "oversize_frame",
                f"{role} frame declares {n} bytes, over the {self.max_frame} this connection allows "
                f"(max_message_size + {FRAME_PADDING} + 4)",
            )
        )

    def _proxy_header_length(self, buf: bytes | bytearray, pos: int) -> int:
        """Length of an HAProxy PROXY header at `pos`, NEED_MORE, or 0 if it is not one."""
        avail = len(buf) - pos
        if buf[pos : pos + 6] == b"PROXY "[: min(6, avail)] and avail < 6:
            return NEED_MORE
        if bytes(buf[pos : pos + 6]) == b"PROXY ":
            end = bytes(buf[pos : pos + 108]).find(b"\r\n")
            if end < 0:
                return NEED_MORE if avail < 108 else 0
            return end + 2
        if avail < 16:
            return NEED_MORE if HAPROXY_V2_SIGNATURE.startswith(bytes(buf[pos : pos + min(12, avail)])) else 0
        if bytes(buf[pos : pos + 12]) == HAPROXY_V2_SIGNATURE:
            return 16 + int.from_bytes(buf[pos + 14 : pos + 16], "big")
        return 0

    def resync(self, buf: bytes | bytearray, pos: int, role: str) -> int | None:
        """Next offset where [size][size][08 type] starts a BaseCommand that parses."""
        end = len(buf)
        j = pos + 8
        while True:
            j = buf.find(b"\x08", j, end - 1)
            if j < 0:
                return None
            i = j - 8
            if self._plausible(buf, i):
                return i
            j += 1

    def _plausible(self, buf: bytes | bytearray, i: int) -> bool:
        total = int.from_bytes(buf[i : i + 4], "big")
        cmd = int.from_bytes(buf[i + 4 : i + 8], "big")
        if not (6 <= total <= self.max_frame - 4) or not (2 <= cmd <= total - 4):
            return False
        if i + 8 + cmd > len(buf):
            # Cannot parse it yet: every known encoder writes the type first (08 <type>).
            return buf[i + 8] == 0x08 and buf[i + 9] in schema.TYPE_NAMES and cmd <= 64 * 1024
        raw = bytes(buf[i + 8 : i + 8 + cmd])
        base, _ = schema.parse(schema.BaseCommand, raw)
        if base is None:
            return False
        field = schema.COMMAND_FIELD.get(schema.raw_type(raw) or 0)
        return field is not None and base.HasField(field)

    # -- decoding --------------------------------------------------------------------------
    def decode(self, data: bytes, role: str, complete: bool = True) -> list[Frame]:
        if data.startswith(b"PROXY ") or data.startswith(HAPROXY_V2_SIGNATURE):
            return [self._proxy_frame(data)]
        f = Frame(protocol=PROTOCOL, type="?", type_code=-1)
        f.role = role
        f.context = {}
        if len(data) < 8:
            f.flag(MALFORMED, "malformed", f"{len(data)} bytes cannot hold totalSize and commandSize", 0)
            return [f]
        total = int.from_bytes(data[0:4], "big")
        cmd_size = int.from_bytes(data[4:8], "big")
        f.fields = {"total_size": total, "command_size": cmd_size}
        if cmd_size > total - 4:
            raw_t = schema.raw_type(data[8 : 8 + cmd_size])
            self._name(f, raw_t)
            f.flag(
                MALFORMED,
                "malformed",
                f"commandSize {cmd_size} does not fit in totalSize {total} (at most {total - 4})",
                4,
            )
            return [f]
        cmd_bytes = data[8 : 8 + cmd_size]
        if len(cmd_bytes) < cmd_size:  # only when the frame was cut (complete=False)
            self._name(f, schema.raw_type(cmd_bytes))
            f.summary = f"cut after {len(data)} of {total + 4} bytes"
            return [f]
        raw_t = schema.raw_type(cmd_bytes)
        self._name(f, raw_t)
        f.context["t"] = raw_t
        limit = self.ctx.limits.max_command_bytes
        if cmd_size > limit:
            # Parsing it would cost an object per repeated entry (20M in a 120 MB ACK).
            f.note(
                "command_limit",
                f"{f.type} command of {cmd_size} bytes is not decoded (limit {limit} bytes)",
                8,
            )
            f.summary = f"{cmd_size}-byte command, not decoded"
            return [f]
        base, err = schema.parse(schema.BaseCommand, cmd_bytes)
        if base is None:
            f.flag(MALFORMED, "malformed", f"BaseCommand does not parse: {err}", 8)
            return [f]
        if raw_t is None:
            f.flag(MALFORMED, "malformed", "BaseCommand has no type", 8)
            return [f]
        if raw_t not in schema.TYPE_NAMES:
            f.flag(UNKNOWN_TYPE, "unknown_type", f"BaseCommand type {raw_t} is not in PulsarApi.proto", 8)
            f.fields["command_bytes"] = cmd_bytes
            f.summary = f"unknown command type {raw_t}"
            return [f]
        field = schema.COMMAND_FIELD.get(raw_t)
        if field is None or not base.HasField(field):
            f.flag(MALFORMED, "malformed", f"{f.type} command without its {field or '?'} message", 8)
            return [f]
        sub = getattr(base, field)
        missing = schema.missing_required(sub)
        if missing:
            f.flag(MALFORMED, "malformed", f"{f.type} lacks required field(s): {', '.join(missing)}", 8)
        cmd = schema.to_dict(sub, self.show_secrets, max_depth=self.ctx.limits.max_depth)
        f.fields["command"] = cmd
        self._mask_raw(f, data, sub)
        extra: dict[str, Any] = {}
        rest = 8 + cmd_size
        if raw_t in schema.PAYLOAD_TYPES:
            if complete:
                self._payload(f, data, rest, role, raw_t, sub, extra)
            else:
                extra["payload_line"] = f"payload cut after {len(data) - rest} bytes"
        elif len(data) > rest:
            f.flag(MALFORMED, "malformed", f"{len(data) - rest} bytes after a {f.type} command", rest)
        self._ids(f, sub, extra)
        self._pair(f, role, raw_t, sub, extra)
        self._state(f, role, raw_t, sub, extra)
        topic = partitions.topic_in(f, extra) or self._topic_of(f)
        f.partitions = partitions.of_frame(f, topic, partition_of(topic))
        if not f.summary:
            f.summary = describe.line(f.type, cmd, extra)
        return [f]

    def close(self) -> list[Frame]:
        for key, seen, expected in self.chunks.pending():
            self.ctx.report(
                Anomaly("chunk_incomplete", f"chunked message {key!r}: only {seen} of {expected} chunks seen")
            )
        return []

    # -- pieces of decode ------------------------------------------------------------------
    @staticmethod
    def _name(f: Frame, raw_t: int | None) -> None:
        if raw_t is None:
            return
        f.type_code = raw_t if raw_t < 1 << 31 else -1
        f.type = schema.TYPE_NAMES.get(raw_t, f"UNKNOWN_{raw_t}")

    def _proxy_frame(self, data: bytes) -> Frame:
        f = Frame(protocol=PROTOCOL, type="PROXY_PROTOCOL", type_code=0)
        if data.startswith(b"PROXY "):
            text = data.rstrip(b"\r\n").decode("ascii", "replace")
            f.fields = {"version": 1, "header": text}
            f.summary = text
        else:
            f.fields = {"version": 2, "length": len(data)}
            f.summary = f"PROXY protocol v2 header ({len(data)} bytes)"
        return f

    def _mask_raw(self, f: Frame, data: bytes, sub: Any) -> None:
        """Keep credentials out of hex dumps too: the frame's bytes with auth data starred out."""
        if self.show_secrets:
            return
        secrets = []
        for name in schema.SECRET_FIELDS:
            if name in sub.DESCRIPTOR.fields_by_name and sub.HasField(name):
                secrets.append(getattr(sub, name))
        for holder in ("challenge", "response"):
            fd = sub.DESCRIPTOR.fields_by_name.get(holder)
            if fd is not None and fd.message_type is not None and sub.HasField(holder):
                inner = getattr(sub, holder)
                if "auth_data" in inner.DESCRIPTOR.fields_by_name and inner.HasField("auth_data"):
                    secrets.append(inner.auth_data)
        masked = data
        for s in secrets:
            raw = s.encode() if isinstance(s, str) else bytes(s)
            if raw:
                masked = masked.replace(raw, b"*" * len(raw))
        if masked is not data:
            f.data = masked

    def _ids(self, f: Frame, sub: Any, extra: dict[str, Any]) -> None:
        fields = sub.DESCRIPTOR.fields_by_name
        if "request_id" in fields and sub.HasField("request_id"):
            f.correlation_id = schema.signed64(sub.request_id)
            extra["request_id"] = f.correlation_id
        elif "sequence_id" in fields and sub.HasField("sequence_id"):
            f.correlation_id = schema.signed64(sub.sequence_id)
        for name in ("error", "error_code"):
            if name in fields and sub.HasField(name):
                code = getattr(sub, name)
                f.error_code = code
                f.error = schema.SERVER_ERRORS.get(code, str(code))
                break

    def _pair(self, f: Frame, role: str, t: int, sub: Any, extra: dict[str, Any]) -> None:
        corr = self.ctx.correlator
        if t in pairing.REQUEST_TYPES:
            if t == ACK and not sub.HasField("request_id"):
                f.kind = EVENT
                return
            if t in (CLOSE_PRODUCER, CLOSE_CONSUMER) and role == SERVER:
                f.kind = EVENT  # broker-initiated close: nobody answers it
                return
            f.kind = REQUEST
            corr.request(f, ("req", role, sub.request_id))
            return
        if t in pairing.RESPONSE_TYPES:
            f.kind = RESPONSE
            if t == PRODUCER_SUCCESS and sub.HasField("producer_ready") and not sub.producer_ready:
                return  # the real answer follows with producer_ready=true
            key = ("req", _other(role), sub.request_id)

            def fit(r: Frame) -> bool:
                return pairing.fits(t, r.context.get("t") if isinstance(r.context, dict) else None)

            req = corr.peek(key, fit)
            if req is None and t == ERROR and sub.request_id == U64_MINUS_ONE:
                if corr.peek(("connect", _other(role))) is not None:
                    extra["request"] = corr.response(f, ("connect", _other(role)))
                    return
            req = corr.response(f, key, fit)
            if req is not None:
                extra["answers"] = req.type
                extra["request"] = req
                topic = self._topic_of(req)
                if topic:
                    extra["topic"] = topic
                    f.fields["topic"] = topic
            return
        if t == SEND:
            f.kind = REQUEST
            corr.request(f, ("send", role, sub.producer_id, sub.sequence_id))
            return
        if t in (SEND_RECEIPT, SEND_ERROR):
            f.kind = RESPONSE
            key: tuple = ("send", _other(role), sub.producer_id, sub.sequence_id)
            if corr.peek(key) is None and t == SEND_RECEIPT and sub.HasField("highest_sequence_id"):
                alt = ("send", _other(role), sub.producer_id, sub.highest_sequence_id)
                if corr.peek(alt) is not None:
                    key = alt
            req = corr.response(f, key)
            if req is not None and t == SEND_RECEIPT and sub.HasField("message_id"):
                self._stamp_message_ids(req, sub.message_id)
            return
        if t in (CONNECT, AUTH_RESPONSE):
            f.kind = REQUEST
            if t == AUTH_RESPONSE and corr.peek(("auth", _other(role))) is not None:
                f.kind = RESPONSE
                corr.response(f, ("auth", _other(role)))
                return
            corr.request(f, ("connect", role))
            return
        if t == CONNECTED:
            f.kind = RESPONSE
            corr.response(f, ("connect", _other(role)))
            return
        if t == AUTH_CHALLENGE:
            if corr.peek(("connect", _other(role))) is not None:
                f.kind = RESPONSE
                corr.response(f, ("connect", _other(role)))
            else:
                f.kind = REQUEST  # auth refresh initiated by the broker
                corr.request(f, ("auth", role))
            return
        if t == PING:
            f.kind = REQUEST
            corr.request(f, ("ping", role))
            return
        if t == PONG:
            f.kind = RESPONSE
            corr.response(f, ("ping", _other(role)))
            return
        if t in pairing.SESSION_REQUESTS:
            name, _ = pairing.SESSION_REQUESTS[t]
            f.kind = REQUEST
            corr.request(f, ("session", t, getattr(sub, name)))
            return
        if t in pairing.SESSION_RESPONSES:
            name, req_t = pairing.SESSION_RESPONSES[t]
            key = ("session", req_t, getattr(sub, name))
            if corr.peek(key) is not None:
                f.kind = RESPONSE
                corr.response(f, key)
            return
        f.kind = EVENT

    def _topic_of(self, req: Frame) -> str | None:
        """The topic a request was about: named in it, or through its producer/consumer id."""
        cmd = req.fields.get("command") or {}
        if cmd.get("topic"):
            return cmd["topic"]
        if "producer_id" in cmd and cmd["producer_id"] in self.producers:
            return self.producers[cmd["producer_id"]]["topic"]
        if "consumer_id" in cmd and cmd["consumer_id"] in self.consumers:
            return self.consumers[cmd["consumer_id"]]["topic"]
        return None

    def _stamp_message_ids(self, send: Frame, mid: Any) -> None:
        """The receipt tells the ledger:entry a SEND was stored at: name its messages with it."""
        for m in send.messages:
            bi = m.detail.get("batch_index") if m.detail else None
            m.message_id = schema.message_id_str(mid, -1 if bi is None else bi, m.partition)
            if m.partition is None and mid.partition >= 0:
                m.partition = mid.partition

    def _state(self, f: Frame, role: str, t: int, sub: Any, extra: dict[str, Any]) -> None:
        """What the connection registers, and what frames learn from it."""
        if t == CONNECT:
            self.protocol_version = sub.protocol_version
        elif t == CONNECTED:
            if sub.HasField("max_message_size") and sub.max_message_size > 0:
                self.max_frame = min(max_frame_for(sub.max_message_size), HARD_MAX_FRAME)
            f.fields["max_frame"] = self.max_frame
        elif t == PRODUCER:
            self.producers.put(
                sub.producer_id,
                {"topic": schema.text(sub.topic), "producer_name": schema.text(sub.producer_name) or None},
            )
        elif t == PRODUCER_SUCCESS:
            req = extra.get("request")
            if req is not None and req.type == "PRODUCER":
                p = self.producers.get(req.fields["command"].get("producer_id"))
                if p is not None:
                    p["producer_name"] = schema.text(sub.producer_name)
                    extra["topic"] = p["topic"]
        elif t == SUBSCRIBE:
            self.consumers.put(
                sub.consumer_id,
                {
                    "topic": schema.text(sub.topic),
                    "subscription": schema.text(sub.subscription),
                    "consumer_name": schema.text(sub.consumer_name) or None,
                    "permits": 0,
                    "delivered": 0,
                    "acked": 0,
                },
            )
        elif t == FLOW:
            c = self.consumers.get(sub.consumer_id)
            if c is not None:
                c["permits"] += sub.messagePermits
                extra["topic"] = c["topic"]
                f.fields["consumer"] = self._consumer_view(c)
        elif t == ACK:
            c = self.consumers.get(sub.consumer_id)
            if c is not None:
                c["acked"] += len(sub.message_id)
                f.fields["consumer"] = self._consumer_view(c)
                extra["topic"] = c["topic"]
            delivered = []
            for mid in sub.message_id:
                fr = self.deliveries.get((sub.consumer_id, mid.ledgerId, mid.entryId))
                if fr is not None and fr.packet:
                    delivered.append(fr.packet)
            if delivered:
                f.fields["delivered_in_packets"] = delivered
        elif t in (SEND_RECEIPT, SEND_ERROR, CLOSE_PRODUCER):
            p = self.producers.get(sub.producer_id)
            if p is not None:
                extra["topic"] = p["topic"]
                f.fields["topic"] = p["topic"]
        elif t == CLOSE_CONSUMER:
            c = self.consumers.get(sub.consumer_id)
            if c is not None:
                extra["topic"] = c["topic"]
                f.fields["topic"] = c["topic"]
                f.fields["consumer"] = self._consumer_view(c)

    @staticmethod
    def _consumer_view(c: dict[str, Any]) -> dict[str, Any]:
        return {
            "topic": c["topic"],
            "subscription": c["subscription"],
            "permits_granted": c["permits"],
            "messages_delivered": c["delivered"],
            "permits_left": c["permits"] - c["delivered"],
            "messages_acked": c["acked"],
        }

    # -- payload ---------------------------------------------------------------------------
    def _payload(
        self, f: Frame, data: bytes, start: int, role: str, t: int, sub: Any, extra: dict[str, Any]
    ) -> None:
        sec = payload.parse_section(data, start)
        fields = f.fields
        if sec.broker_entry_metadata is not None:
            fields["broker_entry_metadata"] = schema.to_dict(sec.broker_entry_metadata)
        if sec.checksum is not None:
            fields["checksum"] = f"{sec.checksum:08x}"
            fields["checksum_computed"] = (
                f"{sec.checksum_computed:08x}" if sec.checksum_computed is not None else None
            )
        fields["checksum_ok"] = sec.checksum_ok
        if sec.checksum_ok is False:
            f.flag(
                BAD_CHECKSUM,
                "bad_checksum",
                f"CRC32C {sec.checksum:08x} on the wire, {sec.checksum_computed:08x} computed",
                sec.metadata_offset - 4,
            )
        # After the checksum: a corrupted frame's first status is bad_checksum, whatever else broke.
        for kind, detail, offset in sec.problems:
            f.flag(MALFORMED, kind, detail, offset)
        meta = sec.metadata
        if meta is None:
            extra["payload_line"] = "payload section unreadable"
            return
        fields["metadata"] = schema.to_dict(meta, self.show_secrets)
        fields["payload_size"] = len(sec.payload)

        # Who and where.
        if t == SEND:
            p = self.producers.get(sub.producer_id)
            topic = p["topic"] if p else None
            direction = PRODUCE
            mid = None
            who = f"producer_id={sub.producer_id}"
        else:
            c = self.consumers.get(sub.consumer_id)
            topic = c["topic"] if c else None
            direction = DELIVER
            mid = sub.message_id
            who = f"consumer_id={sub.consumer_id}"
        if topic:
            fields["topic"] = topic
        partition = partition_of(topic)
        if partition is None and mid is not None and mid.partition >= 0:
            partition = mid.partition

        # Chunks: hold until the last one, then decode the joined payload once.
        body = sec.payload
        checksum_ok = sec.checksum_ok
        chunk_note = ""
        chunk_detail: dict[str, Any] = {}
        uuid = schema.text(meta.uuid)
        if meta.HasField("uuid") and meta.num_chunks_from_msg > 1:
            fields["chunk"] = {
                "uuid": uuid,
                "chunk_id": meta.chunk_id,
                "num_chunks": meta.num_chunks_from_msg,
                "total_chunk_msg_size": meta.total_chunk_msg_size,
            }
            key = (role, sub.consumer_id if t == MESSAGE else None, schema.text(meta.producer_name), uuid)
            f.context["message_id"] = schema.message_id_str(mid) if mid is not None else None
            joined, problems = self.chunks.add(
                key, meta.chunk_id, meta.num_chunks_from_msg, meta.total_chunk_msg_size, body, checksum_ok, f
            )
            for p in problems:
                f.add(Anomaly("chunk_incomplete", p))
            if joined is None:
                extra["payload_line"] = (
                    f"{who} {topic or ''} chunk {meta.chunk_id + 1}/{meta.num_chunks_from_msg} "
                    f"of {uuid} ({len(body)} bytes)"
                ).replace("  ", " ")
                return
            if joined.problem:
                f.add(Anomaly("malformed", f"chunked message {uuid}: {joined.problem}"))
            body = joined.payload
            checksum_ok = joined.checksum_ok
            earlier = [fr for fr in joined.frames if fr is not f]
            chunk_detail = {
                "chunks": joined.chunks,
                "uuid": uuid,
                "chunk_packets": [getattr(fr, "packet", 0) for fr in earlier],
            }
            first = joined.frames[0]
            if t == MESSAGE and isinstance(first.context, dict) and first.context.get("message_id"):
                chunk_detail["first_chunk_message_id"] = first.context["message_id"]
            chunk_note = f" joined from {joined.chunks} chunks"

        unpacked = payload.unpack(meta, body, self.ctx.limits, self.show_secrets)
        for kind, detail in unpacked.problems:
            if kind == "malformed":
                f.flag(MALFORMED, kind, detail, sec.payload_offset)
            else:
                f.add(Anomaly(kind, detail, sec.payload_offset))
        batched = meta.HasField("num_messages_in_batch")
        fields["batch_entries"] = unpacked.read if batched and not unpacked.encrypted else None
        over = self.ctx.limits.over_messages(len(unpacked.entries), unpacked.read)
        if over is not None:
            f.add(Anomaly(*over, sec.payload_offset))  # our cap: the status stays
            f.messages_counted += unpacked.read - len(unpacked.entries)
        if fields["batch_entries"] is not None:
            fields["entries"] = [
                {"batch_index": e.batch_index, "single_metadata": e.single_dict, "value_size": e.value_size}
                for e in unpacked.entries
            ]
        if unpacked.encrypted:
            fields["encrypted"] = True
        if unpacked.compression:
            fields["decompressed_size"] = unpacked.size

        base_detail: dict[str, Any] = {
            "producer_name": schema.text(meta.producer_name),
            "sequence_id": meta.sequence_id,
        }
        if meta.HasField("event_time") and meta.event_time:
            base_detail["event_time"] = meta.event_time
        if t == MESSAGE:
            base_detail["redelivery_count"] = sub.redelivery_count
            base_detail["consumer_id"] = sub.consumer_id
        else:
            base_detail["producer_id"] = sub.producer_id
        if sec.broker_entry_metadata is not None:
            base_detail["broker_entry_metadata"] = fields["broker_entry_metadata"]
        if unpacked.encrypted:
            base_detail["encrypted"] = True
            base_detail["encryption_algo"] = schema.text(meta.encryption_algo) or None
        if not unpacked.decompressed and not unpacked.encrypted:
            base_detail["decompressed"] = False
        base_detail.update(chunk_detail)

        total_bytes = unpacked.value_bytes
        for e in unpacked.entries:
            detail = dict(base_detail)
            s = e.single
            if s is not None:
                detail["batch_index"] = e.batch_index
                detail["single_metadata"] = e.single_dict
                if s.HasField("sequence_id"):
                    detail["sequence_id"] = s.sequence_id
                elif e.batch_index is not None:
                    detail["sequence_id"] = meta.sequence_id + e.batch_index
                if s.HasField("event_time") and s.event_time:
                    detail["event_time"] = s.event_time
                if s.HasField("ordering_key"):
                    detail["ordering_key"] = s.ordering_key
                if s.null_value:
                    detail["null_value"] = True
                key = (
                    None
                    if s.null_partition_key
                    else payload.key_of(s.partition_key, s.partition_key_b64_encoded)
                )
                props = s.properties
            else:
                if meta.HasField("ordering_key"):
                    detail["ordering_key"] = meta.ordering_key
                if meta.null_value:
                    detail["null_value"] = True
                key = (
                    None
                    if meta.null_partition_key
                    else payload.key_of(meta.partition_key, meta.partition_key_b64_encoded)
                )
                props = meta.properties
            if s is not None and s.compacted_out:
                detail["compacted_out"] = True
            message_id = None
            if mid is not None:
                message_id = schema.message_id_str(mid, e.batch_index, partition)
            headers = [(schema.text(kv.key), _raw(kv.value)) for kv in props] or None
            value = None if detail.get("null_value") else e.value
            f.messages.append(
                Message(
                    direction=direction,
                    value_size=e.value_size,
                    topic=topic,
                    partition=partition,
                    message_id=message_id,
                    key=key,
                    value=value,
                    timestamp_ms=meta.publish_time or None,
                    headers=headers,
                    compression=unpacked.compression,
                    checksum_ok=checksum_ok,
                    detail=detail,
                )
            )
        if t == MESSAGE:
            self.deliveries.put((sub.consumer_id, mid.ledgerId, mid.entryId), f)
            c = self.consumers.get(sub.consumer_id)
            if c is not None:
                c["delivered"] += unpacked.read
                fields["consumer"] = self._consumer_view(c)

        n = unpacked.read
        parts = [who]
        if topic:
            parts.append(topic)
        if mid is not None:
            parts.append(describe.mid(schema.to_dict(mid)))
        else:
            parts.append(f"seq={sub.sequence_id}")
        parts.append(f"{n} msg{'s' if n != 1 else ''} {total_bytes} bytes{chunk_note}")
        if unpacked.compression:
            out_size = unpacked.size if unpacked.decompressed and unpacked.size is not None else "?"
            parts.append(f"{unpacked.compression} {len(body)}→{out_size}")
        if unpacked.encrypted:
            parts.append("encrypted")
        if sec.broker_entry_metadata is not None:
            bem = sec.broker_entry_metadata
            parts.append(f"broker_index={bem.index}" if bem.HasField("index") else "broker-entry-metadata")
        if checksum_ok is False:
            parts.append("BAD CHECKSUM")
        elif checksum_ok is None:
            parts.append("unchecked")
        extra["payload_line"] = " ".join(parts)
