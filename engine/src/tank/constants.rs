//! TANK's numbers: message ids, error codes, flag bits and size bounds (the twin of
//! `protocols/tank/constants.py`; every value from `shared/reference/tank/WIRE.md`, names as TANK
//! itself uses them so that the timeline, the tables and TANK's vocabulary agree).

const MIB: u64 = 1024 * 1024;

/// `msgId u8` + `payloadSize u32 LE`.
pub const HEADER_SIZE: usize = 5;
/// The broker closes a connection whose frame declares more than 256 MiB (service_reactor.cpp).
pub const MAX_PAYLOAD: u64 = 256 * MIB;
/// Largest legal frame: the broker's payload cap plus the header, so that no frame TANK accepts
/// is ever reported as oversize while a garbage length (mostly above 256 MiB) is.
pub const MAX_FRAME: u64 = HEADER_SIZE as u64 + MAX_PAYLOAD;
/// Unknown ids are framed only up to this size: beyond it the bytes are far more likely garbage
/// than a frame from a future TANK, and resynchronising beats buffering hundreds of MB of noise.
pub const MAX_UNKNOWN_PAYLOAD: u64 = MIB;
/// Pings carry nothing; a "Ping" declaring more than this is not a Ping.
pub const MAX_PING_PAYLOAD: u64 = 64 * 1024;

pub const PRODUCE: u8 = 0x01;
pub const CONSUME: u8 = 0x02;
pub const PING: u8 = 0x03;
pub const REG_REPLICA: u8 = 0x04;
pub const PRODUCE_WITH_SEQNUM: u8 = 0x05;
pub const DISCOVER_PARTITIONS: u8 = 0x06;
pub const CREATE_TOPIC: u8 = 0x07;
pub const RELOAD_CONF: u8 = 0x08;
pub const CONSUME_PEER: u8 = 0x09;
pub const STATUS: u8 = 0x0A;
pub const DISCOVER_TOPICS: u8 = 0x0B;
pub const DISCOVER_TOPOLOGY: u8 = 0x0C;

/// The message ids' names (`enum class TankAPIMsgType`).
pub fn msg_name(id: u8) -> Option<&'static str> {
    Some(match id {
        PRODUCE => "Produce",
        CONSUME => "Consume",
        PING => "Ping",
        REG_REPLICA => "RegReplica",
        PRODUCE_WITH_SEQNUM => "ProduceWithSeqnum",
        DISCOVER_PARTITIONS => "DiscoverPartitions",
        CREATE_TOPIC => "CreateTopic",
        RELOAD_CONF => "ReloadConf",
        CONSUME_PEER => "ConsumePeer",
        STATUS => "Status",
        DISCOVER_TOPICS => "DiscoverTopics",
        DISCOVER_TOPOLOGY => "DiscoverTopology",
        _ => return None,
    })
}

/// The id a request is answered with (ProduceWithSeqnum is answered with Produce).
pub fn response_id(id: u8) -> u8 {
    if id == PRODUCE_WITH_SEQNUM {
        PRODUCE
    } else {
        id
    }
}

/// Messages nobody answers (the obsolete RegReplica makes the broker close the connection).
pub fn no_response(id: u8) -> bool {
    id == PING || id == REG_REPLICA
}

/// Smallest payload of each message a client sends (None: clients never send it).
pub fn min_request_payload(id: u8) -> Option<u64> {
    Some(match id {
        PRODUCE | PRODUCE_WITH_SEQNUM => 13,
        CONSUME => 20,
        PING => 0,
        REG_REPLICA => 2,
        DISCOVER_PARTITIONS => 5,
        CREATE_TOPIC => 8,
        RELOAD_CONF => 7,
        CONSUME_PEER => 16,
        STATUS | DISCOVER_TOPICS | DISCOVER_TOPOLOGY => 4,
        _ => return None,
    })
}

/// Smallest payload of each message the broker sends (None: the broker never sends it).
pub fn min_response_payload(id: u8) -> Option<u64> {
    Some(match id {
        PRODUCE => 4,
        CONSUME => 9,
        PING => 0,
        DISCOVER_PARTITIONS => 7,
        CREATE_TOPIC => 6,
        RELOAD_CONF => 8,
        CONSUME_PEER => 6,
        STATUS => 14,
        DISCOVER_TOPICS => 9,
        DISCOVER_TOPOLOGY => 6,
        _ => return None,
    })
}

/// Produce response: one byte per (topic, partition) of the request.
pub fn produce_error(code: u8) -> Option<&'static str> {
    Some(match code {
        0x00 => "ok",
        0x01 => "unknown_partition",
        0x02 => "system_fault",
        0x03 => "no_acks",
        0x04 => "insufficient_replicas",
        0x0A => "invalid_seqnum",
        0xFC => "other_leader",
        0xFD => "no_leader",
        0xFE => "read_only",
        0xFF => "unknown_topic",
        _ => return None,
    })
}

/// Produce errors that stand for the whole topic: no bytes follow for its other partitions.
pub fn produce_topic_level(code: u8) -> bool {
    code == 0xFE || code == 0xFF
}

/// Followed by the leader's endpoint (addr4 + port) wherever it appears.
pub const OTHER_LEADER: u8 = 0xFC;

pub const CONSUME_OK: u8 = 0x00;
pub const CONSUME_BOUNDARY: u8 = 0x01;
pub const CONSUME_SPARSE: u8 = 0xFE;

/// A Consume partition entry's errorOrFlags byte.
pub fn consume_flag(flag: u8) -> Option<&'static str> {
    Some(match flag {
        0x00 => "ok",
        0x01 => "boundary_check",
        0xFB => "system_fault",
        0xFC => "other_leader",
        0xFD => "no_leader",
        0xFE => "sparse",
        0xFF => "unknown_partition",
        _ => return None,
    })
}

/// error_code wiredump reports for an unknown topic where TANK sends no error byte (Consume's
/// 0xFFFF marker, DiscoverPartitions' count of 0).
pub const UNKNOWN_TOPIC_CODE: i32 = 0xFFFF;

pub fn discover_partition_reason(code: u8) -> Option<&'static str> {
    Some(match code {
        0xFB => "system_fault",
        0xFC => "other_leader",
        0xFD => "no_leader",
        _ => return None,
    })
}

pub fn create_topic_error(code: u8) -> Option<&'static str> {
    Some(match code {
        0 => "ok",
        1 => "already_exists",
        2 => "system_error",
        4 => "invalid_configuration",
        5 => "read_only",
        10 => "invalid_request",
        11 => "unsupported",
        _ => return None,
    })
}

pub fn reload_conf_error(code: u8) -> Option<&'static str> {
    Some(match code {
        0 => "ok",
        1 => "unknown_topic", // how TANK's client reads it
        2 => "system_error",
        3 => "config_parse_error",
        10 => "unknown_partition",
        11 => "unknown_topic", // what the broker sends
        12 => "unsupported",
        _ => return None,
    })
}

/// Special consume sequence numbers.
pub const SEQ_FIRST: u64 = 0;
pub const SEQ_TAIL: u64 = u64::MAX;
/// DiscoverPartitions: both numbers all-ones mean "no data; a reason byte follows".
pub const NO_SEQ: u64 = u64::MAX;

// Bundle header flags (TankFlags::BundleFlags) and message flags (BundleMsgFlags).
pub const CODEC_MASK: u8 = 0x03;
pub const COUNT_SHIFT: u8 = 2;
pub const COUNT_MASK: u8 = 0x0F;
pub const SPARSE: u8 = 0x40;
pub const EXTRA_FLAGS: u8 = 0x80;
pub const MSG_HAVE_KEY: u8 = 0x01;
pub const MSG_USE_LAST_TS: u8 = 0x02;
pub const MSG_SEQ_PREV_PLUS_ONE: u8 = 0x04;
pub const EXTRA_RICH_PRODUCER: u8 = 0x01;
