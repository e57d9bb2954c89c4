"""Per-connection Kafka state: framing, headers, pairing, SASL tokens and TLS.

Kafka frames are `[int32 size][header][body]`. Requests name their API key and
version; responses carry only the correlation id, so a response is decoded with the
key and version of the request it pairs with (NOTES §1, §10). After SaslHandshake v0
the two sides exchange raw SASL tokens without Kafka headers; a TLS listener on a
Kafka port sends TLS records. Both are reported for what they are instead of being
decoded as garbage.
"""

from __future__ import annotations

import struct
import zlib
from collections import OrderedDict
from typing import Any

import crc32c

from wiredump.dissect import internal
from wiredump.dissect.model import (
    EVENT,
    MALFORMED,
    OK,
    PRODUCE,
    REQUEST,
    RESPONSE,
    UNDECODABLE,
    UNKNOWN_TYPE,
    UNSUPPORTED_VERSION,
    Anomaly,
    Frame,
    Message,
)
from wiredump.dissect.protocols.base import NEED_MORE, NOT_A_FRAME, ConnContext, Session
from wiredump.dissect.protocols.kafka import embedded, partitions, schema, topics
from wiredump.dissect.protocols.kafka.body import Bad, BodyDecoder, Elements, decode_body
from wiredump.dissect.protocols.kafka.records import BadRecord, RecordContext, decode_record_set
from wiredump.dissect.protocols.kafka.summary import summarize
from wiredump.dissect.wire import Cursor, Short

PROTOCOL = "kafka"
MiB = 1024 * 1024
MAX_FRAME = 100 * MiB + 4
_REQ_HEAD = struct.Struct(">ihhi")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
TLS_TYPES = {20: "ChangeCipherSpec", 21: "Alert", 22: "Handshake", 23: "ApplicationData", 24: "Heartbeat"}
MAX_CLIENT_ID = 4096
TLS_MAX_RECORD = 16384 + 2048  # RFC 8446 / 5246: plaintext limit plus expansion
SECRET_FIELDS = frozenset({"auth_bytes", "salted_password", "hmac", "salt"})
NO_SECRETS: frozenset[str] = frozenset()
MAX_GUESS_BYTES = 1 * MiB
_YES, _NO, _WAIT = 1, -1, 0
GUESS_ALL_BELOW = 4096
NEWER_VERSIONS = 8
"""How far past the newest known version a first request may be and still be taken as Kafka."""
COMMON_APIS = frozenset(
    {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 18, 19, 20, 22, 32, 36, 17, 60, 68, 71, 72, 75}
)


def plausible_client_id(buf: bytes | bytearray, pos: int, end: int) -> bool | None:
    """True/False when the int16-length client id at buf[pos] is (not) plausible, None if cut."""
    if pos + 2 > end:
        return None
    (n,) = _I16.unpack_from(buf, pos)
    if n == -1:
        return True
    if n < 0 or n > MAX_CLIENT_ID:
        return False
    s = bytes(buf[pos + 2 : min(pos + 2 + n, end)])
    return all(32 <= b < 127 for b in s) or _is_utf8_text(s)


def _is_utf8_text(s: bytes) -> bool:
    """UTF-8 text: printable characters and tabs (client ids are free text; some hold a tab)."""
    try:
        t = s.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(ch.isprintable() or ch == "\t" for ch in t)


def known_request(api_key: int, version: int) -> bool:
    vs = schema.api_versions().get(api_key)
    return vs is not None and version in vs


def plausible_request(buf: bytes | bytearray, pos: int, strict: bool) -> bool:
    """Does buf[pos:] start like a Kafka request frame?

    strict (sniffing, resynchronising): known key, valid version, correlation id >= 0,
    a client id that reads as text. Not strict (framing a stream already in sync): a key
    and version in a sane range, so unknown keys and newer versions still frame.
    """
    end = len(buf)
    if end - pos < 12:
        if end - pos >= 8:
            size, key, version = struct.unpack_from(">ihh", buf, pos)
            return 8 <= size <= MAX_FRAME - 4 and (known_request(key, version) if strict else 0 <= key < 1000)
        return False
    size, key, version, corr = _REQ_HEAD.unpack_from(buf, pos)
    if size < 8 or size > MAX_FRAME - 4:
        return False
    if known_request(key, version):
        pass
    elif strict or not (0 <= key < 1000 and 0 <= version < 200):
        return False
    if strict and corr < 0:
        return False
    if schema.request_header_version(key, version) == 0:
        return True
    if size < 10:
        return False
    ok = plausible_client_id(buf, pos + 12, min(end, pos + 4 + size))
    return ok is not False


def _tls_chain(buf: bytes | bytearray, at: int) -> bool:
    """A TLS record header at `at` whose record ends where the bytes end or where another record starts."""
    end = len(buf)
    if at + 5 > end or buf[at + 2] > 4:
        return False
    length = (buf[at + 3] << 8) | buf[at + 4]
    if length > TLS_MAX_RECORD:
        return False
    nxt = at + 5 + length
    if nxt == end:
        return True
    return nxt + 3 <= end and buf[nxt] in TLS_TYPES and buf[nxt + 1] == 3 and buf[nxt + 2] <= 4


def _record_set(buf: bytes | bytearray, pos: int, end: int) -> bool:
    """Do buf[pos:end] hold exactly a run of record batches / legacy messages?

    A records field, `[int32 size][batches]`, is shaped like a response whose correlation
    id is the high half of the first base offset (0). When a capture starts (or resumes
    after a gap) inside a Fetch response, its last records field ends where the response
    does and would pass for a response whose request was not captured. Each batch or
    message is `[int64 offset][int32 length]` with its magic byte (0, 1, 2) 16 bytes in;
    the lengths must add up to the end exactly.
    """
    if end - pos < 21:
        return False
    while pos < end:
        if pos + 17 > end:
            return False
        (length,) = _I32.unpack_from(buf, pos + 8)
        if length < 5 or buf[pos + 16] > 2:
            return False
        pos += 12 + length
    return pos == end


def _batch_tail(buf: bytes | bytearray, pos: int, end: int) -> bool:
    """Is buf[pos:end] a record batch (v2) or legacy message from its length field on?

    `[int32 length][int32 epoch][int8 magic 2][uint32 crc32c]…` (or, legacy,
    `[int32 size][uint32 crc][int8 magic 0/1]…`) reads as a response frame too; the
    checksum over the rest tells it apart.
    """
    if end - pos < 14:
        return False
    magic = buf[pos + 8]
    if magic > 2:
        return False
    with memoryview(buf) as view:  # released at once: the framer may grow `buf` afterwards
        if magic == 2:
            (crc,) = struct.unpack_from(">I", buf, pos + 9)
            return crc32c.crc32c(view[pos + 13 : end]) == crc
        (crc,) = struct.unpack_from(">I", buf, pos + 4)
        return zlib.crc32(view[pos + 8 : end]) & 0xFFFFFFFF == crc


def _newer_request(buf: bytes | bytearray, pos: int) -> bool:
    """A known API at a version newer than our tables (a client from the future), with a text client id."""
    if len(buf) - pos < 14:
        return False
    size, key, version, corr = _REQ_HEAD.unpack_from(buf, pos)
    vs = schema.api_versions().get(key)
    if (
        not vs
        or not max(vs) < version <= max(vs) + NEWER_VERSIONS
        or corr < 0
        or not 10 <= size <= MAX_FRAME - 4
    ):
        return False
    (n,) = _I16.unpack_from(buf, pos + 12)
    end = pos + 14 + n
    return (
        1 <= n <= MAX_CLIENT_ID
        and end <= len(buf)
        and end <= pos + 4 + size
        and bool(plausible_client_id(buf, pos + 12, end))
    )


RAW_BODY_SHOWN = 256
"""Bytes of an undecodable response body kept in its fields (the answer to an unknown API)."""
MAX_FRAMED_KEY = 1000
MAX_FRAMED_VERSION = 200
"""Bounds of the api key and version a request header may carry and still be taken as one
when its body does not decode (Kafka's keys are below 100, versions below 20 today)."""


def _framed_header(buf: bytes | bytearray, pos: int) -> int:
    """Length of the plausible request header v1 at buf[pos] (size, key, version, correlation
    id, text client id), or 0 when it is not one or is not all buffered."""
    end = len(buf)
    if end - pos < 14:
        return 0
    size, key, version, corr = _REQ_HEAD.unpack_from(buf, pos)
    if not (10 <= size <= MAX_FRAME - 4 and 0 <= key < MAX_FRAMED_KEY and 0 <= version < MAX_FRAMED_VERSION):
        return 0
    if corr < 0:
        return 0
    (n,) = _I16.unpack_from(buf, pos + 12)
    head = 14 + max(n, 0)
    if n < -1 or n > MAX_CLIENT_ID or head > 4 + size or pos + head > end:
        return 0
    if n > 0 and not plausible_client_id(buf, pos + 12, pos + head):
        return 0
    return head


def _framed_request(buf: bytes | bytearray, pos: int) -> int:
    """A request whose framing is valid although its body is not what the tables expect.

    Its header must be plausible (`_framed_header`), and the framing confirmed: the frame
    ends exactly where the buffered bytes end (a client writes a request in one go), or
    the next frame starts where it ends with a plausible request header. _WAIT while
    neither can be told yet, unless a request that decodes whole starts inside the bytes
    this one would cover: then this one is a chance match inside an earlier frame.
    """
    if not _framed_header(buf, pos):
        return _WAIT if len(buf) - pos < 14 else _NO
    (size,) = _I32.unpack_from(buf, pos)
    nxt = pos + 4 + size
    end = len(buf)
    if nxt <= end and (_record_set(buf, pos + 4, nxt) or _batch_tail(buf, pos, nxt)):
        return _NO  # the records field ending a Produce request: its size reads as a frame's
    if nxt == end:
        return _YES
    if nxt > end:
        return _NO if _whole_request_within(buf, pos + 1, min(end, pos + 1 + MAX_SCAN_AHEAD)) else _WAIT
    if end - nxt < 14:
        return _WAIT
    return _YES if _framed_header(buf, nxt) else _NO


MAX_SCAN_AHEAD = 64 * 1024
CONFIRM_WHOLE = 48 * 1024
"""While resynchronising, a frame up to this long is confirmed only once it is buffered whole
(the engine keeps 64 KiB while it finds no start); a longer one by how its start reads."""
MAX_ORPHAN_CHAIN = 4
"""Responses without a captured request confirmed in a row by the confirmed frame after them."""
MAX_ACKS0 = 4096
"""acks=0 Produce requests remembered per connection, for a broker that answers them anyway."""


def _whole_request_within(buf: bytes | bytearray, start: int, stop: int) -> bool:
    """Does a request that decodes whole (known key and version) start in buf[start:stop]?"""
    for at in range(start, stop - 13):
        if plausible_request(buf, at, strict=True):
            size, key, version = struct.unpack_from(">ihh", buf, at)
            if at + 4 + size <= len(buf) and KafkaSession._request_fits(
                bytes(buf[at : at + 4 + size]), key, version
            ):
                return True
    return False


class KafkaSession(Session):
    """One connection: framing state per direction, SASL/TLS state, layouts seen (for orphan responses)."""

    def __init__(self, ctx: ConnContext) -> None:
        super().__init__(ctx)
        self.tls = False
        self.tls_reported = False
        self.sasl_raw = False
        self.sasl_mechanism: str | None = None
        self._handshakes: dict[int, str | None] = {}
        self._seen: OrderedDict[tuple[int, int], None] = OrderedDict()
        self.show_secrets = bool(ctx.options.get("show_secrets"))
        self.messages = bool(ctx.options.get("messages", True))
        """False when no sink reads the records (the plain timeline): records are checked, no messages made."""
        self._last_seen: tuple[int, int] | None = None
        self._synced = {"client": False, "server": False}
        self._raw_auth: bytes | None = None
        self.observe = bool(ctx.options.get("observe"))
        """Framing a connection another worker decodes (see `ProtocolSpec.shares_run_state`): the
        state is kept exactly as when decoding (pairing, SASL, layouts seen, topic names learnt);
        records are not read (nothing of the state depends on them) and no frame is returned."""
        self.topics = topics.of_run(ctx.run_state)
        """Topic id -> name, learnt from responses of this capture (shared by its connections)."""
        self._acks0: OrderedDict[int, Frame] = OrderedDict()
        """acks=0 Produce requests by correlation id: no answer is expected, but some brokers answer."""

    # -- framing ---------------------------------------------------------------------------
    def frame_length(self, buf: bytes | bytearray, pos: int, role: str) -> int:
        avail = len(buf) - pos
        if avail < 2:
            return NEED_MORE
        b0, b1 = buf[pos], buf[pos + 1]
        if b1 == 3 and b0 in TLS_TYPES:
            # A TLS record header. As a Kafka size it would exceed 300 MiB, so it cannot be Kafka.
            if avail < 5:
                return NEED_MORE
            if buf[pos + 2] > 4:
                return NOT_A_FRAME
            self.tls = True
            self._synced[role] = True
            return 5 + ((buf[pos + 3] << 8) | buf[pos + 4])
        if avail < 4:
            return NEED_MORE
        (size,) = _I32.unpack_from(buf, pos)
        if self.sasl_raw:
            return size + 4 if size >= 0 else NOT_A_FRAME
        if self._synced[role]:
            if role == "client":
                if size < 8 or (avail >= 8 and not plausible_request(buf, pos, strict=False)):
                    return NOT_A_FRAME
            elif size < 4:
                return NOT_A_FRAME
            return size + 4
        # The first frame of a direction may be mid-stream garbage: be strict.
        verdict = self._request_start(buf, pos) if role == "client" else self._response_start(buf, pos)
        if verdict == _WAIT:
            return NEED_MORE
        if verdict == _NO:
            return NOT_A_FRAME
        self._synced[role] = True
        return size + 4

    def _request_start(self, buf: bytes | bytearray, pos: int) -> int:
        """Is buf[pos:] the start of a request (the first bytes of the client's direction)?

        A whole frame that decodes is one; so is a partial one with a text client id. A frame
        whose body is not what the tables expect (an unknown API key, a version newer than
        the specs, extra bytes, a count beyond the frame) is still a Kafka frame when its
        framing is: see `_framed_request`. Its decoder then gives it the status that says
        what is wrong with it, and its answer pairs with it.
        """
        avail = len(buf) - pos
        if avail < 14:
            return _WAIT
        if not plausible_request(buf, pos, strict=True):
            return _YES if _newer_request(buf, pos) else _framed_request(buf, pos)
        size, key, version = struct.unpack_from(">ihh", buf, pos)
        if avail >= size + 4:
            if self._request_fits(bytes(buf[pos : pos + 4 + size]), key, version):
                return _YES
            return _framed_request(buf, pos)
        if schema.request_header_version(key, version) >= 1:
            (n,) = _I16.unpack_from(buf, pos + 12)
            if n >= 1 and avail >= 14 + n and plausible_client_id(buf, pos + 12, pos + 14 + n):
                return _YES
        return _WAIT

    @staticmethod
    def _request_fits(data: bytes, key: int, version: int) -> bool:
        plan = schema.plan(key, version, "request")
        if plan is None:
            return False
        cur = Cursor(data, 12)
        try:
            if schema.request_header_version(key, version) >= 1:
                n = cur.i16()
                cur.skip(max(n, 0))
            if schema.request_header_version(key, version) >= 2:
                BodyDecoder(cur, None).tagged({}, {}, [])
            _, _, end = decode_body(data, cur.pos, plan, None)
        except (Short, Bad):  # not a whole request of this layout (a bug propagates to the engine's shield)
            return False
        return end == len(data)

    def _response_start(self, buf: bytes | bytearray, pos: int) -> int:
        """Is buf[pos:] the start of a response? Its id is pending, or (nothing pending) it chains."""
        avail = len(buf) - pos
        if avail < 8:
            return _WAIT
        size, corr = struct.unpack_from(">ii", buf, pos)
        if size < 4 or size > MAX_FRAME - 4 or corr < 0:
            return _NO
        correlator = self.ctx.correlator
        req = correlator.peek(corr)
        if req is not None or corr in self._acks0:
            # It must read as the answer to that request and be followed by a response or by
            # the end of the bytes (a pending id can turn up by chance inside record data).
            return self._confirmed_response(buf, pos, 0)
        pending = [k for k in getattr(correlator, "_pending", ()) if isinstance(k, int)]
        if pending and corr >= min(pending):
            return _NO  # requests are waiting: the next response answers one of them
        # The request was not captured (nothing pending, or the capture began after it was
        # sent while later requests were captured: responses come in request order, so its
        # id is below every pending one). The frame ends exactly where the buffered bytes
        # end, or the next frame's header follows with one of the next few ids or a pending one.
        nxt = pos + 4 + size
        end = len(buf)
        if nxt <= end and (_record_set(buf, pos + 4, nxt) or _batch_tail(buf, pos, nxt)):
            return _NO  # the tail of a Fetch response / Produce request: records, not a frame
        if nxt == end:
            return _YES
        if nxt + 8 <= end:
            size2, corr2 = struct.unpack_from(">ii", buf, nxt)
            chained = 0 < corr2 - corr <= 4 or correlator.peek(corr2) is not None
            return _YES if 4 <= size2 <= MAX_FRAME - 4 and chained else _NO
        return _WAIT

    def resync(self, buf: bytes | bytearray, pos: int, role: str) -> int | None:
        """The first boundary at or after `pos` that what is known confirms (issue 14 item 3).

        Unconfirmed candidates are never returned: their bytes stay skipped. One that cannot
        be told yet (its frame is not all buffered) does not stop the scan, but when nothing
        after it is confirmed the answer is None, so that the engine keeps it and asks again
        with more bytes.
        """
        test = self._confirmed_request if role == "client" else self._confirmed_response
        end = len(buf)
        for at in range(pos, end - 7):
            if buf[at + 1] == 3 and buf[at] in TLS_TYPES and _tls_chain(buf, at):
                return at
            if test(buf, at, 0) == _YES:
                self._synced[role] = True
                return at
        return None

    def _confirmed_request(self, buf: bytes | bytearray, at: int, depth: int) -> int:
        """A request that decodes whole (known key and version) and is followed by another one or
        by the end of the buffered bytes. A frame too long to be buffered whole while resynchronising
        needs a text client id and a body whose start reads without contradiction."""
        end = len(buf)
        if end - at < 14 or not plausible_request(buf, at, strict=True):
            return _NO
        size, key, version = struct.unpack_from(">ihh", buf, at)
        nxt = at + 4 + size
        if nxt > end:
            if size + 4 <= CONFIRM_WHOLE:
                return _WAIT
            return _YES if self._prefix_reads(buf, at, key, version, "request") else _NO
        if not self._request_fits(bytes(buf[at:nxt]), key, version):
            return _NO
        if nxt == end:
            return _YES
        if end - nxt < 14:
            return _WAIT
        return _YES if plausible_request(buf, nxt, strict=False) else _NO

    def _confirmed_response(self, buf: bytes | bytearray, at: int, depth: int) -> int:
        """A response confirmed by what this connection knows.

        Its correlation id is one a pending request waits for (or an acks=0 Produce the broker
        answers anyway), its body decodes whole with that request's api and version, and the
        next frame starts where it ends (a response header whose id is pending or close to
        this one) or the buffered bytes end there. A response whose request the capture lacks
        is confirmed only when its id is below every pending one (responses come in request
        order), some layout reads it whole, it is not the records field ending a larger
        frame, and the frame after it is confirmed.
        """
        end = len(buf)
        if end - at < 8:
            return _WAIT
        size, corr = struct.unpack_from(">ii", buf, at)
        if size < 4 or size > MAX_FRAME - 4 or corr < 0:
            return _NO
        correlator = self.ctx.correlator
        req = correlator.peek(corr) or self._acks0.get(corr)
        nxt = at + 4 + size
        if req is None:
            pending = [k for k in getattr(correlator, "_pending", ()) if isinstance(k, int)]
            if depth >= MAX_ORPHAN_CHAIN or not pending or corr >= min(pending) or nxt > end:
                return _NO
            if _record_set(buf, at + 4, nxt) or _batch_tail(buf, at, nxt):
                return _NO
            if end - nxt < 8:
                return _WAIT
            if self._confirmed_response(buf, nxt, depth + 1) != _YES:
                return _NO
            return _YES if self._some_layout_reads(bytes(buf[at:nxt])) else _NO
        if nxt > end:
            if size + 4 <= CONFIRM_WHOLE:
                return _WAIT
            key, version = req.context if isinstance(req.context, tuple) else (-1, -1)
            return _YES if self._prefix_reads(buf, at, key, version, "response") else _NO
        if not self._answers(bytes(buf[at:nxt]), req):
            return _NO
        if nxt == end:
            return _YES
        if end - nxt < 8:
            return _WAIT
        size2, corr2 = struct.unpack_from(">ii", buf, nxt)
        if not 4 <= size2 <= MAX_FRAME - 4 or corr2 < 0:
            return _NO
        if 0 < corr2 - corr <= 4 or correlator.peek(corr2) is not None or corr2 in self._acks0:
            return _YES
        return _NO

    def _some_layout_reads(self, data: bytes) -> bool:
        """Does a layout this connection used, or any layout, read this response whole?"""
        for key, v in reversed(self._seen):
            if self._try(data, key, v) is not None:
                return True
        if len(data) > MAX_GUESS_BYTES:
            return False
        return any(
            self._try(data, key, v) is not None for key, vs in schema.api_versions().items() for v in vs
        )

    def _prefix_reads(self, buf: bytes | bytearray, at: int, key: int, version: int, kind: str) -> bool:
        """Do the buffered bytes of a frame too long to wait for read as its start?

        Kafka frames that long carry records (Produce, Fetch): the body is walked until the
        bytes run out, which must happen inside a records field that ends within the declared
        frame. A contradiction before that (a negative length, a count that cannot fit), a
        string or other field running past the bytes, or a body ending early refutes it.
        """
        plan = schema.plan(key, version, kind)
        if plan is None:
            return False
        (size,) = _I32.unpack_from(buf, at)
        data = bytes(buf[at : min(len(buf), at + 4 + size)])
        try:
            if kind == "request":
                start = _request_header(data, schema.request_header_version(key, version), {})
            else:
                start = self._resp_body_start(data, key, version)
                if start is None:
                    return False
            decode_body(data, start, plan, None)
        except Short as e:
            if e.what != "records":
                return False
            # Ran out inside the records: consistent so far if they end within the frame.
            if schema.is_flexible(key, version) or e.offset < 4:
                return True  # a compact (varint) length before it: its end is not checked
            (n,) = _I32.unpack_from(data, e.offset - 4)
            return 0 <= n and e.offset + n <= 4 + size
        except Bad:
            return False
        return False  # the body ended before the declared frame did

    # -- decoding --------------------------------------------------------------------------
    def decode(self, data: bytes, role: str, complete: bool = True) -> list[Frame]:
        if len(data) >= 3 and data[1] == 3 and data[0] in TLS_TYPES and data[2] <= 4:
            frames = [self._tls(data)]
        elif role == "client":
            frames = [self._request(data, complete)]
        else:
            frames = [self._response(data, complete)]
        return [] if self.observe else frames

    def _tls(self, data: bytes) -> Frame:
        ctype = data[0]
        f = Frame(PROTOCOL, "TLS", ctype, kind=EVENT, status=UNDECODABLE)
        name = TLS_TYPES.get(ctype, str(ctype))
        version = f"{data[1]}.{data[2]}" if len(data) >= 3 else "?"
        f.fields = {"tls_content_type": name, "tls_version": version, "tls_length": len(data) - 5}
        f.summary = f"TLS {name} record, {len(data) - 5} bytes (encrypted connection)"
        if not self.tls_reported:
            self.tls_reported = True
            f.add(Anomaly("undecodable", "TLS on a Kafka port: the connection is encrypted, not decoded"))
        return f

    def _sasl_token(self, data: bytes, role: str) -> Frame:
        f = Frame(PROTOCOL, "SaslToken", -1, kind=EVENT)
        token = data[4:]
        fields: dict[str, Any] = {"mechanism": self.sasl_mechanism, "length": len(token)}
        if self.show_secrets:
            fields["token"] = token
        elif self.sasl_mechanism == "PLAIN" and role == "client" and token.count(b"\0") == 2:
            authzid, user, _ = token.split(b"\0")
            fields["authzid"] = authzid.decode("utf-8", "replace")
            fields["username"] = user.decode("utf-8", "replace")
            fields["password"] = "<masked>"
        else:
            fields["token"] = f"<{len(token)} bytes masked>"
        f.fields = fields
        who = fields.get("username")
        f.summary = f"SASL {self.sasl_mechanism or '?'} token, {len(token)} bytes" + (
            f", user {who}" if who else ""
        )
        return f

    def _records_hook(
        self, frame: Frame, direction: str, partial_ok: bool, emit: bool, stats: dict[str, int]
    ):
        if self.observe and emit:
            return None  # record sets are skipped by their length (trial decodes stay as they are)
        limits = self.ctx.limits
        messages = self.messages
        names = self.topics

        def hook(data: bytes, start: int, stack: list[dict[str, Any]]) -> Any:
            topic, partition = _locate(stack, names)
            rc = RecordContext(
                frame, direction, limits, topic, partition, partial_ok, start, emit, stats, messages
            )
            if direction != PRODUCE:
                return decode_record_set(data, rc)
            first = len(frame.messages)
            out = decode_record_set(data, rc)
            _await_offsets(frame.messages, first)
            return out

        return hook

    def _request(self, data: bytes, complete: bool) -> Frame:
        f = Frame(PROTOCOL, "Unknown", -1, kind=REQUEST)
        if len(data) < 12:
            if complete:
                f.flag(MALFORMED, "malformed", f"request of {len(data)} bytes is shorter than a header", 0)
            return f
        _, api_key, version, corr = _REQ_HEAD.unpack_from(data, 0)
        if self.sasl_raw:
            if plausible_request(data, 0, strict=True):
                self.sasl_raw = False  # authentication is over: Kafka requests again
            else:
                return self._sasl_token(data, "client")
        key = (api_key, version)
        name, hv, plan = _request_layout(key)
        f.type = name or "Unknown"
        f.type_code = api_key
        f.version = version
        f.correlation_id = corr
        f.context = key
        header: dict[str, Any] = {"api_key": api_key, "api_version": version, "correlation_id": corr}
        f.fields = {"header": header}
        correlator = self.ctx.correlator
        try:
            pos = _request_header(data, hv, header)
        except (Short, Bad) as e:
            if name is not None and plan is not None:
                if complete:
                    f.flag(MALFORMED, "malformed", f"request header: {e}", e.offset)
                correlator.request(f, corr, True)
                return f
            # An unknown key or version: its header version is a guess, so read what a
            # header v1 holds (the client id) and let the status say what is unknown.
            header.pop("client_id", None)
            try:
                _request_header(data, 1, header)
            except (Short, Bad):
                header.pop("client_id", None)
        if name is None:
            f.flag(UNKNOWN_TYPE, "unknown_type", f"unknown Kafka API key {api_key} (version {version})", 4)
            correlator.request(f, corr, True)
            f.summary = f"unknown API key {api_key} v{version}"
            return f
        if plan is None:
            f.flag(
                UNSUPPORTED_VERSION, "unsupported_version", f"{name} v{version} is not in the Kafka specs", 6
            )
            correlator.request(f, corr, True)
            f.summary = f"{name} v{version} (unsupported version)"
            return f
        if key != self._last_seen:
            self._seen[key] = None
            self._seen.move_to_end(key)
            self._last_seen = key
        stats: dict[str, int] = {}
        hook = self._records_hook(f, "produce", False, True, stats)
        body = self._body(f, data, pos, plan, hook, complete, "request")
        read = f.fields.get("body")  # also what a cut or malformed body held before it stopped
        expects = not (api_key == 0 and isinstance(read, dict) and read.get("acks") == 0)
        if body is not None:
            if api_key == 17:
                self.sasl_mechanism = body.get("mechanism")
                if version == 0:
                    self._handshakes[corr] = self.sasl_mechanism
            if api_key in (11, 14):
                _annotate(f, api_key, "request", body, None)
            if api_key == 36:
                self._sasl_authenticate(body)
        correlator.request(f, corr, expects)
        if not expects:
            self._acks0[corr] = f
            if len(self._acks0) > MAX_ACKS0:
                self._acks0.popitem(last=False)
        if stats:
            f.fields["record_stats"] = stats
        if not self.observe:
            f.summary = summarize(f, body, None, self.topics)
            f.partitions = partitions.of_body(api_key, "request", read, self.topics) or None
        return f

    def _sasl_authenticate(self, body: dict[str, Any]) -> None:
        """Show the mechanism and user of a SaslAuthenticate request; the secret stays masked."""
        body["mechanism"] = self.sasl_mechanism
        raw = self._raw_auth
        self._raw_auth = None
        if not isinstance(raw, bytes):
            return
        user: str | None = None
        if self.sasl_mechanism == "PLAIN" and raw.count(b"\0") == 2:
            user = raw.split(b"\0")[1].decode("utf-8", "replace")
        elif (
            self.sasl_mechanism
            and self.sasl_mechanism.startswith("SCRAM")
            and raw.startswith((b"n,", b"y,", b"p="))
        ):
            for attr in raw.split(b","):
                if attr.startswith(b"n="):
                    user = attr[2:].decode("utf-8", "replace")
                    break
        if user is not None:
            body["username"] = user

    def _body(
        self, f: Frame, data: bytes, start: int, plan: schema.Plan, hook: Any, complete: bool, kind: str
    ) -> dict[str, Any] | None:
        secrets = NO_SECRETS if self.show_secrets else SECRET_FIELDS
        if f.type_code == 36 and kind == "request" and not self.show_secrets:
            secrets = SECRET_FIELDS - {"auth_bytes"}
        elements = Elements(self.ctx.limits.max_elements)
        try:
            body, errors, end = decode_body(data, start, plan, hook, secrets, elements)
            self._over_elements(f, elements)
            if f.type_code == 36 and kind == "request":
                raw = body.get("auth_bytes")
                self._raw_auth = raw
                if isinstance(raw, bytes) and not self.show_secrets:
                    body["auth_bytes"] = f"<{len(raw)} bytes masked>"
        except (Short, Bad, BadRecord) as e:
            self._over_elements(f, elements)
            partial = getattr(e, "partial", None)
            if isinstance(partial, dict):
                f.fields["body"] = partial  # what was read before the bytes ran out or stopped fitting
                f.fields["body_stops_at"] = getattr(e, "offset", None)
            if complete:
                f.flag(
                    MALFORMED, "malformed", f"{f.type} v{f.version} {kind}: {e}", getattr(e, "offset", None)
                )
            errors = getattr(e, "errors", None)
            if errors:
                f.error_code, f.error = errors[0][1], schema.error_name(errors[0][1])
            return partial if not complete and isinstance(partial, dict) else None
        f.fields["body"] = body
        if end != len(data) and kind == "request" and f.type_code == 18 and f.version <= 2:
            # ApiVersions v0-v2 have an empty body. librdkafka writes an empty int32 array
            # there, and brokers answer without reading it: the frame is fine, the bytes noted.
            f.add(
                Anomaly(
                    "trailing_bytes",
                    f"{f.type} v{f.version} request: {len(data) - end} bytes after the (empty) body, "
                    "which brokers ignore (librdkafka writes an empty int32 array here)",
                    end,
                )
            )
        elif end != len(data):
            f.flag(
                MALFORMED,
                "malformed",
                f"{f.type} v{f.version} {kind}: {len(data) - end} bytes after the body",
                end,
            )
        if errors:
            f.error_code = errors[0][1]
            f.error = schema.error_name(errors[0][1])
            f.fields["_errors"] = [
                {"path": p, "error_code": c, "error": schema.error_name(c)} for p, c in errors
            ]
        return body

    def _over_elements(self, f: Frame, elements: Elements) -> None:
        """One `element_limit` anomaly when the body read array elements past its budget."""
        first = elements.first
        if first is None:
            return
        over = self.ctx.limits.over_elements(elements.kept, elements.dropped, first[0])
        if over is not None:
            f.add(Anomaly(over[0], over[1], first[1]))

    def _response(self, data: bytes, complete: bool) -> Frame:
        correlator = self.ctx.correlator
        if self.sasl_raw and (len(data) < 8 or correlator.peek(_I32.unpack_from(data, 4)[0]) is None):
            return self._sasl_token(data, "server")
        f = Frame(PROTOCOL, "Unknown", -1, kind=RESPONSE)
        if len(data) < 8:
            if complete:
                f.flag(MALFORMED, "malformed", f"response of {len(data)} bytes is shorter than a header", 0)
            return f
        (corr,) = _I32.unpack_from(data, 4)
        f.correlation_id = corr
        f.fields = {"header": {"correlation_id": corr}}
        if correlator.peek(corr) is None and corr in self._acks0:
            # A Produce sent with acks=0 asks for no answer; this broker answers anyway.
            req = self._acks0.pop(corr)
            correlator.event_pair(req, f)
            f.add(
                Anomaly(
                    "unexpected_response",
                    f"the broker answered {req.type} v{req.version} (correlation id {corr}, packet "
                    f"{req.packet}) although it was sent with acks=0, which asks for no response",
                )
            )
        else:
            req = correlator.response(f, corr)
        if req is None:
            if not self.observe:  # a guess teaches nothing: observers skip it
                self._guess(f, data, complete)
            return f
        api_key, version = req.context if isinstance(req.context, tuple) else (-1, -1)
        f.type, f.type_code, f.version = req.type, req.type_code, version
        if api_key == 18 and req.status == UNSUPPORTED_VERSION:
            # A broker answers an ApiVersions version it does not know with a v0 body (NOTES §1).
            version = 0
            f.fields["header"]["body_version"] = 0
        elif req.status in (UNKNOWN_TYPE, UNSUPPORTED_VERSION):
            what = f"API key {api_key}" if req.status == UNKNOWN_TYPE else f"{req.type} v{version}"
            f.flag(req.status, req.status, f"response to a request with {req.status.replace('_', ' ')}", None)
            f.fields["body_length"] = len(data) - 8
            f.fields["raw_body"] = data[8 : 8 + RAW_BODY_SHOWN]
            f.summary = f"response to {what}, {len(data) - 8} body bytes not decoded"
            return f
        plan, hv = _response_layout((api_key, version))
        if plan is None:
            f.flag(
                UNSUPPORTED_VERSION,
                "unsupported_version",
                f"no response layout for {f.type} v{version}",
                None,
            )
            return f
        start = 8
        if hv == 1:
            if len(data) > 8 and data[8] == 0:
                start = 9  # the usual empty tagged-field section
            else:
                cur = Cursor(data, 8)
                try:
                    BodyDecoder(cur, None).tagged({}, f.fields["header"], [])
                except (Short, Bad) as e:
                    if complete:
                        f.flag(MALFORMED, "malformed", f"response header: {e}", e.offset)
                    return f
                start = cur.pos
        if (
            api_key == 18
            and version > 0
            and len(data) >= start + 2
            and _I16.unpack_from(data, start)[0] == 35
        ):
            plan = schema.plan(18, 0, "response") or plan  # unsupported version: answered with a v0 body
            f.fields["header"]["body_version"] = 0
        stats: dict[str, int] = {}
        hook = self._records_hook(f, "deliver", True, True, stats)
        n_msgs, n_anoms, status = len(f.messages), len(f.anomalies), f.status
        body = self._body(f, data, start, plan, hook, complete, "response")
        if body is None and start != 8 and complete and self._fits(data, plan, 8):
            # Some brokers answer a flexible version with response header v0: decode it that
            # way when only that reading fits, and say so.
            del f.messages[n_msgs:], f.anomalies[n_anoms:]
            f.flagged = None  # the per-kind counts of `Frame.flag` counted what was dropped
            f.status = status
            stats.clear()
            f.fields["header"] = {"correlation_id": corr, "header_version": 0}
            f.add(
                Anomaly(
                    "header_version",
                    f"{f.type} v{version} response uses header v0 (no tagged fields) where Kafka specifies v1",
                    8,
                )
            )
            body = self._body(f, data, 8, plan, hook, complete, "response")
        if stats:
            f.fields["record_stats"] = stats
        if body is not None:
            self.topics.learn(body)
            if api_key == 0 and req.messages and not req.released:
                _assign_offsets(req.messages, body, self.topics)
            if api_key in (11, 14):
                req_body = req.fields.get("body") if isinstance(req.fields, dict) else None
                ptype = req_body.get("protocol_type") if isinstance(req_body, dict) else None
                _annotate(f, api_key, "response", body, ptype)
            if api_key == 17 and corr in self._handshakes and not body.get("error_code"):
                self.sasl_raw = True
        self._handshakes.pop(corr, None)
        if not self.observe:
            f.summary = summarize(f, body, req, self.topics)
            f.partitions = partitions.of_body(api_key, "response", f.fields.get("body"), self.topics) or None
        return f

    def _answers(self, data: bytes, req: Frame) -> bool:
        """Does a whole response frame decode as the answer to `req` (header v1 or v0)?"""
        if not isinstance(req.context, tuple) or req.status in (UNKNOWN_TYPE, UNSUPPORTED_VERSION):
            return True  # nothing to check against (its records' state does not matter: see `observe`)
        key, version = req.context
        plan = schema.plan(key, version, "response")
        if plan is None:
            return True
        if key == 18 and len(data) >= 10 and _I16.unpack_from(data, 8)[0] == 35:
            plan = schema.plan(18, 0, "response") or plan
        start = self._resp_body_start(data, key, version)
        return (start is not None and self._fits(data, plan, start)) or self._fits(data, plan, 8)

    def _fits(self, data: bytes, plan: schema.Plan, start: int) -> bool:
        scratch = Frame(PROTOCOL, "", -1)
        hook = self._records_hook(scratch, "deliver", True, False, {})
        try:
            _, _, end = decode_body(data, start, plan, hook)
        except (Short, Bad, BadRecord):  # does not fit (a bug propagates to the engine's shield)
            return False
        return end == len(data) and scratch.status == OK

    def _guess(self, f: Frame, data: bytes, complete: bool) -> None:
        """A response whose request was not captured: try the layouts that could fit."""
        seen = list(reversed(self._seen))
        fits: list[tuple[int, int, dict[str, Any]]] = []
        for key, v in seen:
            body = self._try(data, key, v)
            if body is not None:
                fits.append((key, v, body))
                break  # a layout this connection uses fits: prefer it
        if not fits and len(data) <= MAX_GUESS_BYTES:
            # Every other layout, the APIs clients use most first. Small bodies often fit
            # several layouts: for them, collect the alternatives to show the ambiguity.
            used_keys = {k for k, _ in seen}
            order = sorted(schema.api_versions(), key=lambda k: (k not in used_keys, k not in COMMON_APIS, k))
            for key in order:
                for v in sorted(schema.api_versions()[key], reverse=True):
                    if (key, v) in self._seen:
                        continue
                    body = self._try(data, key, v)
                    if body is not None:
                        fits.append((key, v, body))
                if fits and (len(data) > GUESS_ALL_BELOW or len(fits) >= 10):
                    break
        f.fields["no_request"] = True
        if not fits:
            f.status = UNKNOWN_TYPE
            f.add(Anomaly("unknown_type", "response without a captured request; no API layout fits"))
            f.summary = f"response without request, correlation id {f.correlation_id}"
            return
        if len(fits) > 1:
            f.fields["candidates"] = [f"{schema.api_names()[k]} v{v}" for k, v, _ in fits[:10]]
        key, v, _ = fits[0]
        f.type, f.type_code, f.version = schema.api_names()[key], key, v
        f.fields["guessed"] = True
        plan = schema.plan(key, v, "response")
        assert plan is not None
        start = self._resp_body_start(data, key, v)
        stats: dict[str, int] = {}
        hook = self._records_hook(f, "deliver", True, True, stats)
        body = self._body(f, data, start if start is not None else 8, plan, hook, complete, "response")
        if stats:
            f.fields["record_stats"] = stats
        f.summary = summarize(f, body, None, self.topics) + " (no request; layout guessed)"
        f.partitions = partitions.of_body(key, "response", f.fields.get("body"), self.topics) or None

    @staticmethod
    def _resp_body_start(data: bytes, key: int, v: int) -> int | None:
        if schema.response_header_version(key, v) == 0:
            return 8
        cur = Cursor(data, 8)
        try:
            BodyDecoder(cur, None).tagged({}, {}, [])
        except (Short, Bad):
            return None
        return cur.pos

    def _try(self, data: bytes, key: int, v: int) -> dict[str, Any] | None:
        plan = schema.plan(key, v, "response")
        if plan is None:
            return None
        start = self._resp_body_start(data, key, v)
        if start is None:
            return None
        scratch = Frame(PROTOCOL, "", key)
        hook = self._records_hook(scratch, "deliver", True, False, {})
        try:
            body, _, end = decode_body(data, start, plan, hook)
        except (Short, Bad, BadRecord):  # does not fit (a bug propagates to the engine's shield)
            return None
        return body if end == len(data) and scratch.status == OK else None


_REQUEST_LAYOUTS: dict[tuple[int, int], tuple[str | None, int, schema.Plan | None]] = {}
_RESPONSE_LAYOUTS: dict[tuple[int, int], tuple[schema.Plan | None, int]] = {}


def _request_layout(key: tuple[int, int]) -> tuple[str | None, int, schema.Plan | None]:
    """(API name or None, request header version, body plan or None) of (api key, version), cached."""
    hit = _REQUEST_LAYOUTS.get(key)
    if hit is None:
        api_key, version = key
        name = schema.api_names().get(api_key)
        hv = schema.request_header_version(api_key, version) if name else 1
        plan = schema.plan(api_key, version, "request") if name else None
        hit = _REQUEST_LAYOUTS[key] = (name, hv, plan)
    return hit


def _response_layout(key: tuple[int, int]) -> tuple[schema.Plan | None, int]:
    """(body plan or None, response header version) of (api key, version), cached."""
    hit = _RESPONSE_LAYOUTS.get(key)
    if hit is None:
        hit = _RESPONSE_LAYOUTS[key] = (
            schema.plan(key[0], key[1], "response"),
            schema.response_header_version(key[0], key[1]),
        )
    return hit


def _request_header(data: bytes, hv: int, header: dict[str, Any]) -> int:
    """Client id (header v1+) and tagged fields (v2) after the fixed 12 bytes; returns the body start.

    Raises what `Cursor.i16`/`Cursor.take` and `BodyDecoder.tagged` raise, at the same offsets.
    """
    pos, end = 12, len(data)
    if hv >= 1:
        if pos + 2 > end:
            raise Short("client_id", pos, 2, end - pos)
        (n,) = _I16.unpack_from(data, pos)
        pos += 2
        if n < 0:
            header["client_id"] = None
        else:
            if pos + n > end:
                raise Short("client_id", pos, n, end - pos)
            header["client_id"] = data[pos : pos + n].decode("utf-8", "replace")
            pos += n
    if hv >= 2:
        if pos < end and data[pos] == 0:
            return pos + 1  # the usual empty tagged-field section
        cur = Cursor(data, pos)
        BodyDecoder(cur, None).tagged({}, header, [])
        pos = cur.pos
    return pos


def _annotate(f: Frame, api_key: int, kind: str, body: dict[str, Any], ptype: str | None) -> None:
    """The consumer protocol inside JoinGroup/SyncGroup (`embedded.annotate`), decoded where it fits.

    Bytes that do not fit stay raw (that is the input's business); an exception is a bug in
    wiredump: the frame keeps its decode and carries an `internal_error` saying so.
    """
    try:
        embedded.annotate(api_key, kind, body, ptype)
    except Exception as e:
        f.add(
            internal.internal_error(
                e, "embedded.annotate", PROTOCOL, f"the consumer protocol of a {f.type} {kind}"
            )
        )


def _await_offsets(messages: list[Message], first: int) -> None:
    """The records of one partition a Produce request carries, from `messages[first]` on.

    A producer numbers them from 0 (the batch's base offset and each record's offset delta);
    the broker stores them one after the other from the base offset its answer gives for the
    partition. Until that answer is seen the offset is unknown (null): the place among the
    partition's records is kept as `offset_delta`.
    """
    for delta in range(len(messages) - first):
        m = messages[first + delta]
        m.offset_delta = delta
        m.offset = None


def _assign_offsets(messages: list[Message], body: dict[str, Any], names: topics.TopicNames) -> None:
    """Give a Produce request's records their offsets from its response: base offset + delta.

    Only for the partitions answered without error and with a base offset (-1 when the broker
    does not say, e.g. acks=0 or an error); the others keep a null offset. A topic-partition
    answered twice with different base offsets is ambiguous and left null too.
    """
    bases: dict[tuple[str, int], int | None] = {}
    for t in body.get("responses") or ():
        if not isinstance(t, dict):
            continue
        keys = _topic_keys(t, names)
        for p in t.get("partition_responses") or ():
            if not isinstance(p, dict):
                continue
            index, base = p.get("index"), p.get("base_offset")
            if (
                not isinstance(index, int)
                or p.get("error_code") != 0
                or not isinstance(base, int)
                or base < 0
            ):
                continue
            for k in keys:
                seen = bases.setdefault((k, index), base)
                if seen != base:
                    bases[(k, index)] = None
    if not bases:
        return
    for m in messages:
        if m.offset_delta is None or m.topic is None or m.partition is None:
            continue
        base = bases.get((m.topic, m.partition))
        if base is not None:
            m.offset = base + m.offset_delta


def _topic_keys(t: dict[str, Any], names: topics.TopicNames) -> list[str]:
    """The names a record of topic structure `t` may carry: its name, or its id's name and the id
    (a record is named as `_locate` named it when the request was decoded)."""
    name = t.get("name")
    if isinstance(name, str):
        return [name]
    tid = t.get("topic_id")
    if not isinstance(tid, str):
        return []
    known = names.name_of(tid)
    return [tid] if known is None else [known, tid]


def _locate(stack: list[dict[str, Any]], names: topics.TopicNames) -> tuple[str | None, int | None]:
    """Topic and partition of a record set from the structs enclosing it (innermost first)."""
    partition: int | None = None
    topic: str | None = None
    for d in reversed(stack):
        if partition is None:
            v = d.get("index")
            if not isinstance(v, int):
                v = d.get("partition_index")
                if not isinstance(v, int):
                    v = d.get("partition")
            if isinstance(v, int):
                partition = v
        if topic is None:
            v = d.get("name")
            if not isinstance(v, str):
                v = d.get("topic")
            if isinstance(v, str):
                topic = v
            else:
                tid = d.get("topic_id")
                if isinstance(tid, str):
                    topic = names.name_of(tid) or tid
        if topic is not None and partition is not None:
            break
    return topic, partition
