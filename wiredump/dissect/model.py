"""The records that flow from decoders to sinks.

Decoders fill in what they know of a frame (type, ids, fields, messages, anomalies);
the framing engine fills in where it sits in the capture (packets, stream, time,
length); the correlator fills in the peer and latency. Keeping one plain record per
concept lets every sink (timeline, Parquet, check) read the same thing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

# Frame statuses, as in the frames table of the contract.
OK = "ok"
MALFORMED = "malformed"
BAD_CHECKSUM = "bad_checksum"
TRUNCATED = "truncated"
UNKNOWN_TYPE = "unknown_type"
UNSUPPORTED_VERSION = "unsupported_version"
UNDECODABLE = "undecodable"
STATUSES = (OK, MALFORMED, BAD_CHECKSUM, TRUNCATED, UNKNOWN_TYPE, UNSUPPORTED_VERSION, UNDECODABLE)

CLIENT = "client"
SERVER = "server"

REQUEST = "request"
RESPONSE = "response"
EVENT = "event"

PRODUCE = "produce"
DELIVER = "deliver"

MAX_ANOMALIES_PER_KIND = 64
"""Anomalies of one kind `Frame.flag` lists per frame. Hostile bytes can make a decoder find a
problem every byte or two (a Consume chunk of tiny malformed bundles: one per two bytes of a frame
of up to 256 MiB); each is an object and a row, so past this the rest of that kind are counted in
one `anomaly_limit` anomaly instead. Per kind, so that a flood of one never hides another."""
ANOMALY_LIMIT = "anomaly_limit"
"""Anomaly kind: how many more anomalies of a kind the frame had past `MAX_ANOMALIES_PER_KIND`."""


@dataclass(slots=True)
class Anomaly:
    """One problem found; `offset` is the byte offset inside the frame when there is one."""

    kind: str
    detail: str
    offset: int | None = None
    packet: int = 0
    stream: int | None = None
    protocol: str | None = None


@dataclass(slots=True)
class Message:
    """One application message carried by a frame (Kafka record, Pulsar message, event…)."""

    direction: str
    value_size: int
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    message_id: str | None = None
    key: bytes | None = None
    value: bytes | None = None
    timestamp_ms: int | None = None
    headers: list[tuple[str, bytes | None]] | None = None
    compression: str | None = None
    checksum_ok: bool | None = None
    detail: dict[str, Any] | None = None
    offset_delta: int | None = None
    """A produced record's place among the records its request carries for its partition (0 for the
    first); `offset` is null until the broker's answer gives the base offset it adds to (Kafka)."""


@dataclass(slots=True)
class TopicPartition:
    """One topic (and partition) a frame names, with what the frame says of it there.

    Why typed: the per-topic results of a frame (a Produce response's error and base offset
    per partition, a Fetch response's high watermark…) sit at different paths in each API's
    decode; the `partitions` table gives them one shape for every protocol. Filled by the
    protocol's session (its own `partitions` module says where it finds them); what a
    protocol does not have stays None.
    """

    topic: str | None
    partition: int | None = None
    error_code: int | None = None
    error: str | None = None
    offset: int | None = None
    """The offset the entry names (a Produce response's base offset, a Fetch request's fetch
    offset, a committed or listed offset; else the first offset of the records it carries)."""
    high_watermark: int | None = None
    log_start_offset: int | None = None
    records: int | None = None
    """Records (messages, events) the entry carries."""


@dataclass(slots=True, eq=False)
class Frame:
    """One protocol data unit.

    `fields` is the full decode (JSON-able; bytes are rendered as hex by sinks).
    `context` is private to the protocol (e.g. the request a response was decoded
    with) and never exported.
    """

    protocol: str
    type: str
    type_code: int
    kind: str = EVENT
    version: int | None = None
    correlation_id: int | None = None
    status: str = OK
    error_code: int | None = None
    error: str | None = None
    summary: str = ""
    fields: dict[str, Any] = field(default_factory=dict)
    messages: list[Message] = field(default_factory=list)
    anomalies: list[Anomaly] = field(default_factory=list)
    context: Any = None
    partitions: list[TopicPartition] | None = None
    """The topics/partitions the frame names (see `TopicPartition`); None: it names none."""
    # Filled in by the framing engine.
    role: str = CLIENT
    packet: int = 0
    first_packet: int = 0
    ts_us: int = 0
    stream: int = 0
    src: str = ""
    src_port: int = 0
    dst: str = ""
    dst_port: int = 0
    length: int = 0
    data: bytes | None = None
    # Filled in by the correlator.
    peer_packet: int | None = None
    latency_us: int | None = None
    awaiting: bool = False
    exchange_done: bool = False
    released: bool = False
    """Set by the pipeline when the frame leaves for the sinks: after that nothing may change it
    (a response may complete its request's fields only while the request is still held)."""
    messages_counted: int = 0
    """Messages the frame carried past `Limits.max_messages`: read, checked and counted, not kept
    in `messages` (the `message_limit` anomaly says so). Totals (`wiredump stats`) count
    `len(messages) + messages_counted`, so the cap bounds memory without changing the counts."""
    flagged: dict[str, list[Any]] | None = None
    """Per anomaly kind `flag` was called with: [times called, the `anomaly_limit` anomaly counting
    those past `MAX_ANOMALIES_PER_KIND`, or None]. None until the first `flag` (most frames have no
    anomaly, and a frame costs memory for as long as it is held)."""

    def flag(self, status: str, kind: str, detail: str, offset: int | None = None) -> None:
        """Mark the frame with a status and record why; the first non-ok status wins.

        At most `MAX_ANOMALIES_PER_KIND` anomalies of a kind are listed; the rest are counted in
        one `anomaly_limit` anomaly (at the offset of the first one left out), so that what a frame
        holds is bounded whatever its bytes say. The status is set either way.
        """
        if self.status == OK:
            self.status = status
        self.note(kind, detail, offset)

    def note(self, kind: str, detail: str, offset: int | None = None) -> None:
        """Record an anomaly that does not change the frame's status (our own limits: a frame
        is not malformed because it exceeds them), under the same per-kind cap as `flag`."""
        self.add(Anomaly(kind, detail, offset))

    def add(self, anomaly: Anomaly) -> None:
        """Record an anomaly built elsewhere (an `internal_error` carries its protocol) under the
        per-kind cap of `flag`; every anomaly a frame carries goes through here, so no decoder can
        make a frame hold more than `MAX_ANOMALIES_PER_KIND` of a kind."""
        entry = self._count(anomaly.kind, 1)
        if entry[0] <= MAX_ANOMALIES_PER_KIND:
            self.anomalies.append(anomaly)
            return
        self._over(anomaly.kind, entry, anomaly.offset)

    def note_more(self, kind: str, count: int, offset: int | None) -> None:
        """`count` more anomalies of `kind` whose details were never kept (`PendingAnomalies`
        dropped them past the cap): counted as `note` would count them. Only for a kind the frame
        already lists `MAX_ANOMALIES_PER_KIND` of; `offset` is the first one's."""
        self._over(kind, self._count(kind, count), offset)

    def _count(self, kind: str, count: int) -> list[Any]:
        seen = self.flagged
        if seen is None:
            seen = self.flagged = {}
        entry = seen.get(kind)
        if entry is None:
            entry = seen[kind] = [0, None]
        entry[0] += count
        return entry

    def _over(self, kind: str, entry: list[Any], offset: int | None) -> None:
        text = (
            f"{entry[0] - MAX_ANOMALIES_PER_KIND} more {kind} anomalies in this frame "
            f"past the first {MAX_ANOMALIES_PER_KIND} (counted, not listed)"
        )
        if entry[1] is None:
            entry[1] = Anomaly(ANOMALY_LIMIT, text, offset)
            self.anomalies.append(entry[1])
        else:
            entry[1].detail = text


class PendingAnomalies:
    """Anomalies a decoder finds before it puts them on their frame (TANK reports a frame's
    problems after its own), bounded as `Frame.add` bounds them: the first
    `MAX_ANOMALIES_PER_KIND` of a kind with their details, the rest only counted, in one entry
    where the first of them was found. `put_on` then gives the frame exactly what calling
    `flag`/`note` at once would have, in the same order, without holding one tuple per problem
    (a Consume chunk of tiny bundles has one per two bytes)."""

    __slots__ = ("items", "_seen")

    def __init__(self) -> None:
        self.items: list[list[Any]] = []
        """[kind, detail, offset] per listed problem; [kind, None, offset, count] for the ones
        past the cap."""
        self._seen: dict[str, list[Any]] = {}

    def append(self, problem: tuple[str, str, int | None]) -> None:
        kind = problem[0]
        entry = self._seen.get(kind)
        if entry is None:
            entry = self._seen[kind] = [0, None]
        entry[0] += 1
        if entry[0] <= MAX_ANOMALIES_PER_KIND:
            self.items.append([kind, problem[1], problem[2]])
            return
        if entry[1] is None:
            entry[1] = [kind, None, problem[2], 0]
            self.items.append(entry[1])
        entry[1][3] += 1

    def extend(self, problems: Iterable[tuple[str, str, int | None]]) -> None:
        for p in problems:
            self.append(p)

    def put_on(self, frame: Frame, status_of: Callable[[str], str | None]) -> None:
        """Flag `frame` with each problem (`status_of(kind)`: the status, None for a `note`)."""
        for item in self.items:
            kind, detail, offset = item[0], item[1], item[2]
            if detail is None:
                frame.note_more(kind, item[3], offset)
                continue
            status = status_of(kind)
            if status is None:
                frame.note(kind, detail, offset)
            else:
                frame.flag(status, kind, detail, offset)
        self.items = []
        self._seen = {}


@dataclass(slots=True)
class Exchange:
    """One request with its response (or the lack of one)."""

    stream: int
    protocol: str
    type: str
    correlation_id: int | None
    status: str  # answered, unanswered, no_request, no_response_expected
    request_packet: int | None = None
    response_packet: int | None = None
    request_ts_us: int | None = None
    response_ts_us: int | None = None
    latency_us: int | None = None
    error_code: int | None = None


@dataclass(slots=True)
class ConnectionSummary:
    """One TCP connection as the connections table shows it."""

    stream: int
    client: str
    client_port: int
    server: str
    server_port: int
    protocol: str | None
    packets: int
    bytes_client: int
    bytes_server: int
    frames: int
    gaps: int
    retransmissions: int
    first_ts_us: int
    last_ts_us: int
    state: str  # open, closed, reset, midstream
