"""TANK's names: message ids and the error codes and flags of each reply, for `names.py`.

Every value here comes from `shared/reference/tank/WIRE.md` (TANK master,
`common.h` and the service/client sources); the names are the ones that document
uses, so the timeline, the tables and TANK's own vocabulary agree. The engine's
decoder holds the same table (engine/src/tank).
"""

from __future__ import annotations

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

# Consume partition entry: errorOrFlags.
CONSUME_FLAGS: dict[int, str] = {
    0x00: "ok",
    0x01: "boundary_check",
    0xFB: "system_fault",
    0xFC: "other_leader",
    0xFD: "no_leader",
    0xFE: "sparse",
    0xFF: "unknown_partition",
}
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
