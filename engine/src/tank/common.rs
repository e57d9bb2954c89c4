//! Small readers and the decode state shared by TANK's request and response decoders (the twin
//! of `protocols/tank/common.py`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use super::bundles::{seq_value, Bundle};
use super::cursor::{Cursor, Short};
use crate::codecs::Limits;
use crate::correlation::{Correlator, Key};
use crate::model::{
    Direction, Field, Fields, Frame, FrameRef, Message, PendingAnomalies, Span, Status, Value,
};

/// How many (topic, partition) items a summary line names before "+N more".
pub const SUMMARY_ITEMS: usize = 4;

/// Why a decoder stopped before the end of its frame.
#[derive(Debug)]
pub enum Stop {
    Short(Short),
    /// Unknown layout after an unknown Consume errorOrFlags byte: nothing after it can be trusted.
    UnknownFlag {
        offset: usize,
        flag: u8,
    },
}

impl From<Short> for Stop {
    fn from(s: Short) -> Stop {
        Stop::Short(s)
    }
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stop::Short(s) => s.fmt(f),
            Stop::UnknownFlag { offset, flag } => {
                write!(f, "unknown errorOrFlags {flag:#04x} at byte {offset}")
            }
        }
    }
}

pub type Res<T = ()> = Result<T, Stop>;

/// What a decoder needs beyond the bytes: limits, the way to find a response's request, and the
/// problems and message counts of the frame so far.
pub struct DecodeState<'a> {
    pub limits: &'a mut Limits,
    pub correlator: &'a mut Correlator,
    /// The frame being decoded, as the correlator records it.
    pub me: &'a FrameRef,
    /// The frame's problems, put on it after the decoder's own anomaly (bounded per kind).
    pub problems: PendingAnomalies,
    /// Bundles of the frame read so far; the first `limits.max_batches` are listed in its fields.
    pub batches: u64,
    /// Messages of the frame kept as rows so far (at most `limits.max_messages`).
    pub kept: u64,
    /// Messages of the frame read so far, kept or not.
    pub read: u64,
}

impl DecodeState<'_> {
    /// How many more messages the frame may keep.
    pub fn keep(&self) -> u64 {
        self.limits.max_messages.saturating_sub(self.kept)
    }

    /// How many more bundles the frame may list in its fields (`Limits::max_batches`).
    pub fn batch_room(&self) -> u64 {
        self.limits.max_batches.saturating_sub(self.batches)
    }

    /// Accounts for a decoded bundle's messages (see `Limits::max_messages`).
    pub fn count(&mut self, bundle: &Bundle) {
        self.kept += bundle.messages.len() as u64;
        self.read += bundle.parsed;
    }

    /// The request to decode this response with (paired either way). A request cut by a gap
    /// (or malformed) holds only part of what the response is laid out by: the response is then
    /// decoded as if unpaired rather than against a partial list, which would misread it.
    pub fn pair(&mut self, f: &mut Frame, key: Key) -> Option<FrameRef> {
        let req = self.correlator.response(self.me, &key, None)?;
        let status = req.borrow().status;
        if status != Status::Ok {
            f.fields.set(
                "request_incomplete",
                Value::Str(status.as_str().to_string()),
            );
            return None;
        }
        Some(req)
    }
}

/// The pairing key of a response id and request id.
pub fn key(msg_id: u8, request_id: u32) -> Key {
    Key::Tuple(vec![
        Key::Int(i64::from(msg_id)),
        Key::Int(i64::from(request_id)),
    ])
}

/// Kept on a Produce/ProduceWithSeqnum request: its response lists errors in this order.
#[derive(Debug, Default)]
pub struct ProduceContext {
    pub msg_id: u8,
    pub topics: Vec<(String, Vec<u16>)>,
}

/// Kept on a Consume/ConsumePeer request: what was asked, to tell delivered messages from
/// skipped ones. Ordered as asked (a repeated (topic, partition) keeps its first place and its
/// last sequence number, as a Python dict does).
#[derive(Debug, Default)]
pub struct ConsumeContext {
    pub order: Vec<((String, u16), u64)>,
    index: HashMap<(String, u16), usize>,
}

impl ConsumeContext {
    pub fn insert(&mut self, topic: String, partition: u16, seq: u64) {
        let k = (topic, partition);
        if let Some(&i) = self.index.get(&k) {
            self.order[i].1 = seq;
        } else {
            self.index.insert(k.clone(), self.order.len());
            self.order.push((k, seq));
        }
    }

    pub fn get(&self, topic: &str, partition: u16) -> Option<u64> {
        let i = *self.index.get(&(topic.to_string(), partition))?;
        Some(self.order[i].1)
    }
}

/// Kept on a DiscoverPartitions request: the ids it asked for, in order.
#[derive(Debug, Default)]
pub struct DiscoverContext {
    pub partitions: Vec<u16>,
}

/// A str8 read with its span.
pub fn str8(
    c: &mut Cursor<'_>,
    what_len: &'static str,
    what: &'static str,
) -> Result<(String, Option<Span>), Short> {
    super::cursor::str8(c, what_len, what)
}

/// addr4 (network order, so the four bytes read as a.b.c.d) + port u16 LE, as a map.
pub fn endpoint(
    c: &mut Cursor<'_>,
    what_addr: &'static str,
    what_port: &'static str,
) -> Result<(Value, Option<Span>), Short> {
    let start = c.pos;
    let a = c.take(4, what_addr)?;
    let addr = format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
    let addr_span = c.span(start);
    let p = c.pos;
    let port = c.u16le(what_port)?;
    let mut m = Fields::new();
    m.set_span("address", Value::Str(addr), addr_span);
    m.set_span("port", Value::Int(i64::from(port)), c.span(p));
    Ok((Value::Map(m), c.span(start)))
}

/// A u64 from the wire as an int64 column value: at or above 2^63 (only hostile bytes carry
/// one) it is left out, as the tables would null it (the reference does the same).
fn int64(v: u64) -> Option<i64> {
    i64::try_from(v).ok()
}

/// Turns a decoded bundle's messages into `Message` rows of the frame.
#[allow(clippy::too_many_arguments)]
pub fn bundle_messages(
    f: &mut Frame,
    bundle: &mut Bundle,
    direction: Direction,
    topic: &str,
    partition: u16,
    index: usize,
    min_seq: Option<u64>,
) {
    let compression: Option<Cow<'static, str>> = if bundle.codec == "none" {
        None
    } else {
        Some(bundle.codec.clone())
    };
    f.messages.reserve(bundle.messages.len());
    for m in bundle.messages.drain(..) {
        let mut detail = Fields(Vec::with_capacity(3));
        put(&mut detail, "bundle", Value::Int(index as i64), None);
        put(&mut detail, "flags", Value::Int(i64::from(m.flags)), None);
        if direction == Direction::Deliver {
            if let (Some(min), Some(seq)) = (min_seq, m.seq) {
                if seq < min {
                    // TANK's client drops these: the bundle started before the requested seq.
                    put(&mut detail, "before_requested", Value::Bool(true), None);
                }
            }
        }
        f.messages.push(Message {
            direction: Some(direction),
            value_size: m.value.len() as i64,
            topic: Some(topic.to_string()),
            partition: Some(i32::from(partition)),
            offset: m.seq.and_then(int64),
            key: m.key,
            value: Some(m.value),
            timestamp_ms: m.timestamp_ms.and_then(int64),
            compression: compression.clone(),
            detail: Some(std::rc::Rc::new(detail)),
            ..Message::default()
        });
    }
}

/// Appends a field to a map being built whose names are known to be distinct (the per-message
/// maps: [`Fields::set`] would search the map for the name on every message).
pub fn put(m: &mut Fields, name: &'static str, value: Value, span: Option<Span>) {
    m.0.push(Field {
        name: Cow::Borrowed(name),
        value,
        span,
    });
}

/// The bundle's header fields plus one entry per message (values stay in the messages). Takes
/// the header fields out of the bundle: call before [`bundle_messages`].
pub fn bundle_fields(bundle: &mut Bundle) -> Value {
    let mut out = std::mem::take(&mut bundle.fields);
    let msgs = bundle
        .messages
        .iter()
        .map(|m| {
            let mut e = Fields(Vec::with_capacity(5));
            put(&mut e, "seqnum", m.seq.map_or(Value::Null, seq_value), None);
            put(
                &mut e,
                "flags",
                Value::Int(i64::from(m.flags)),
                m.flags_span,
            );
            let ts = m.timestamp_ms.map_or(Value::Null, Value::UInt);
            put(&mut e, "timestamp_ms", ts, m.ts_span);
            let key = m.key.clone().map_or(Value::Null, Value::Bytes);
            put(&mut e, "key", key, m.key_span);
            let size = Value::Int(m.value.len() as i64);
            put(&mut e, "value_size", size, m.value_span);
            Value::Map(e)
        })
        .collect();
    out.set("messages", Value::List(msgs));
    Value::Map(out)
}

pub fn join_items(items: &[String]) -> String {
    if items.len() <= SUMMARY_ITEMS {
        return items.join(", ");
    }
    format!(
        "{}, +{} more",
        items[..SUMMARY_ITEMS].join(", "),
        items.len() - SUMMARY_ITEMS
    )
}

pub fn plural(n: u64, word: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{n} {word}{s}")
}

pub fn int(v: impl Into<i64>) -> Value {
    Value::Int(v.into())
}
