"""TANK's numbers: message ids, error codes, flag bits and size bounds.

Every value here comes from `shared/reference/tank/WIRE.md` (TANK master,
`common.h` and the service/client sources); the names are the ones that document
uses, so the timeline, the tables and TANK's own vocabulary agree.
"""

from __future__ import annotations

MiB = 1024 * 1024

HEADER_SIZE = 5
"""`msgId u8` + `payloadSize u32 LE`."""

MAX_PAYLOAD = 256 * MiB
"""The broker closes a connection whose frame declares more than 256 MiB (service_reactor.cpp)."""

MAX_FRAME = HEADER_SIZE + MAX_PAYLOAD
"""Largest legal frame: TANK's own 256 MiB payload cap plus the 5-byte header.

Consume responses are bounded in practice by the fetch size (capped at 64 MiB per
partition by the broker) and produce requests by the broker's 256 MiB cap; using
the broker's cap means no frame TANK accepts is ever reported as oversize, while
a garbage length (four random bytes are above 256 MiB 94% of the time) is.
"""

MAX_UNKNOWN_PAYLOAD = 1 * MiB
"""Unknown message ids are framed (status `unknown_type`) only up to this size.

An unknown id with a larger length is far more likely garbage than a frame from a
future TANK; treating it as "not a frame" lets the engine resynchronise instead
of buffering hundreds of megabytes of noise.
"""

MAX_PING_PAYLOAD = 64 * 1024
"""Pings carry nothing; a 'Ping' declaring more than this is not a Ping."""

# Message ids (enum class TankAPIMsgType : uint8_t).
PRODUCE = 0x01
CONSUME = 0x02
PING = 0x03
REG_REPLICA = 0x04
PRODUCE_WITH_SEQNUM = 0x05
DISCOVER_PARTITIONS = 0x06
CREATE_TOPIC = 0x07
RELOAD_CONF = 0x08
CONSUME_PEER = 0x09
STATUS = 0x0A
DISCOVER_TOPICS = 0x0B
DISCOVER_TOPOLOGY = 0x0C

MSG_NAMES: dict[int, str] = {
    PRODUCE: "Produce",
    CONSUME: "Consume",
    PING: "Ping",
    REG_REPLICA: "RegReplica",
    PRODUCE_WITH_SEQNUM: "ProduceWithSeqnum",
    DISCOVER_PARTITIONS: "DiscoverPartitions",
    CREATE_TOPIC: "CreateTopic",
    RELOAD_CONF: "ReloadConf",
    CONSUME_PEER: "ConsumePeer",
    STATUS: "Status",
    DISCOVER_TOPICS: "DiscoverTopics",
    DISCOVER_TOPOLOGY: "DiscoverTopology",
}

RESPONSE_ID: dict[int, int] = {PRODUCE_WITH_SEQNUM: PRODUCE}
"""Requests answered with another message id (ProduceWithSeqnum is answered with Produce)."""

NO_RESPONSE = frozenset({PING, REG_REPLICA})
"""Messages nobody answers (the obsolete RegReplica makes the broker close the connection)."""

# Smallest payload each message can have, by (id, sent by client?).
MIN_REQUEST_PAYLOAD: dict[int, int] = {
    PRODUCE: 13,  # version 2, request id 4, client id str8 1, acks 1, ack timeout 4, topics 1
    CONSUME: 20,  # version 2, request id 4, client id 1, max wait 8, min bytes 4, topics 1
    PING: 0,
    REG_REPLICA: 2,
    PRODUCE_WITH_SEQNUM: 13,
    DISCOVER_PARTITIONS: 5,  # request id 4, topic str8 1
    CREATE_TOPIC: 8,  # request id 4, topic 1, partitions 2, config varint 1
    RELOAD_CONF: 7,  # request id 4, topic 1, partition 2
    CONSUME_PEER: 16,  # replica 2, max wait 8, min bytes 4, topics u16 2
    STATUS: 4,
    DISCOVER_TOPICS: 4,
    DISCOVER_TOPOLOGY: 4,
}
MIN_RESPONSE_PAYLOAD: dict[int, int] = {
    PRODUCE: 4,  # request id (the error bytes depend on the request)
    CONSUME: 9,  # header length 4, request id 4, topics 1
    PING: 0,
    DISCOVER_PARTITIONS: 7,  # request id 4, topic 1, count 2
    CREATE_TOPIC: 6,  # request id 4, topic 1, error 1
    RELOAD_CONF: 8,  # request id 4, topic 1, partition 2, error 1
    CONSUME_PEER: 6,  # header length 4, topics u16 2
    STATUS: 14,
    DISCOVER_TOPICS: 9,
    DISCOVER_TOPOLOGY: 6,
}

# Produce response: one byte per (topic, partition) of the request.
PRODUCE_ERRORS: dict[int, str] = {
    0x00: "ok",
    0x01: "unknown_partition",
    0x02: "system_fault",
    0x03: "no_acks",
    0x04: "insufficient_replicas",
    0x0A: "invalid_seqnum",
    0xFC: "other_leader",
    0xFD: "no_leader",
    0xFE: "read_only",
    0xFF: "unknown_topic",
}
PRODUCE_TOPIC_LEVEL = frozenset({0xFE, 0xFF})
"""Produce errors that stand for the whole topic: no bytes follow for its other partitions."""
OTHER_LEADER = 0xFC
"""Followed by the leader's endpoint (addr4 + port) wherever it appears."""

# Consume partition entry: errorOrFlags.
CONSUME_OK = 0x00
CONSUME_BOUNDARY = 0x01
CONSUME_SPARSE = 0xFE
CONSUME_FLAGS: dict[int, str] = {
    0x00: "ok",
    0x01: "boundary_check",
    0xFB: "system_fault",
    0xFC: "other_leader",
    0xFD: "no_leader",
    0xFE: "sparse",
    0xFF: "unknown_partition",
}
CONSUME_NOT_ERRORS = frozenset({CONSUME_OK, CONSUME_SPARSE})
UNKNOWN_TOPIC_MARKER = 0xFFFF
"""Consume: a u16 0xFFFF where the first partition id would be means "unknown topic"."""
UNKNOWN_TOPIC_CODE = 0xFFFF
"""error_code wiredump reports for an unknown topic where TANK sends no error byte
(Consume's 0xFFFF marker, DiscoverPartitions' count of 0)."""

DISCOVER_PARTITION_REASONS: dict[int, str] = {0xFB: "system_fault", 0xFC: "other_leader", 0xFD: "no_leader"}

CREATE_TOPIC_ERRORS: dict[int, str] = {
    0: "ok",
    1: "already_exists",
    2: "system_error",
    4: "invalid_configuration",
    5: "read_only",
    10: "invalid_request",
    11: "unsupported",
}
RELOAD_CONF_ERRORS: dict[int, str] = {
    0: "ok",
    1: "unknown_topic",  # how TANK's client reads it
    2: "system_error",
    3: "config_parse_error",
    10: "unknown_partition",
    11: "unknown_topic",  # what the broker sends
    12: "unsupported",
}

# Special consume sequence numbers.
SEQ_FIRST = 0
SEQ_TAIL = 0xFFFF_FFFF_FFFF_FFFF
NO_SEQ = 0xFFFF_FFFF_FFFF_FFFF
"""DiscoverPartitions: both numbers all-ones mean "no data; a reason byte follows"."""

# Bundle header flags (TankFlags::BundleFlags) and message flags (BundleMsgFlags).
CODEC_MASK = 0x03
CODECS: dict[int, str] = {0: "none", 1: "snappy"}
COUNT_SHIFT = 2
COUNT_MASK = 0x0F
SPARSE = 0x40
EXTRA_FLAGS = 0x80
MSG_HAVE_KEY = 0x01
MSG_USE_LAST_TS = 0x02
MSG_SEQ_PREV_PLUS_ONE = 0x04
EXTRA_RICH_PRODUCER = 0x01

MAX_TOPIC_NAME = 64
MAX_PARTITIONS = 65530
