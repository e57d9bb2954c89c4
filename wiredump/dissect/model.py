"""The records that flow from the engine to the sinks.

The engine (engine/src/model.rs, converted by engine/src/python/model.rs) makes one of these
per frame, message, anomaly, exchange and connection row, complete: what the decoder knew of a
frame, where it sits in the capture, its peer and latency. Keeping one plain record per concept
lets every sink (timeline, Parquet, check) read the same thing.
"""

from __future__ import annotations

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

ANOMALY_LIMIT = "anomaly_limit"
"""Anomaly kind: how many more anomalies of a kind the frame had past the 64 the engine lists per
kind (hostile bytes can make a decoder find a problem every byte or two)."""


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
    `context` is a slot the engine's positional construction keeps (always None here).
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
    # Where the frame sits in the capture.
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
    # Its pairing.
    peer_packet: int | None = None
    latency_us: int | None = None
    awaiting: bool = False
    exchange_done: bool = False
    released: bool = False
    """True once the frame has left the engine for the sinks (every frame a sink sees)."""
    messages_counted: int = 0
    """Messages the frame carried past `Limits.max_messages`: read, checked and counted, not kept
    in `messages` (the `message_limit` anomaly says so). Totals (`wiredump stats`) count
    `len(messages) + messages_counted`, so the cap bounds memory without changing the counts."""
    spans: dict[str, tuple[int, int]] | None = None
    """Where each decoded field's encoding lies in the frame: dotted path (list items by index,
    `topic_data.0.name`) -> `[start, end)` offsets into `data`, as the decoder read them. Filled
    only when asked for (`Options.spans`: `-x --mark NAME` highlights exactly those bytes)."""


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
