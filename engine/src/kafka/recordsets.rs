//! The record sets of one decoded body, read into the frame: what the Python session's records
//! hook does (`session._records_hook`, `records.decode_record_set` with a `RecordContext`).
//!
//! The body walker leaves each RECORDS field as a span; here each is decoded in walk order with
//! the topic and partition of the structs enclosing it, its problems become the frame's
//! anomalies (prefixed `topic[partition]: `, offsets in the frame), its records the frame's
//! messages, and the frame-wide counters the `record_stats` field. Produced records wait for
//! their offsets (`offset_delta`) until the broker's answer gives the partition's base offset.

use std::borrow::Cow;
use std::ops::Range;
use std::rc::Rc;

use super::body::{uuid_string, Field as BField, Value as BValue};
use super::records::{self, control_type_name, Control, Entry, RecordSet};
use super::topics::{get, TopicNames};
use crate::codecs::Limits;
use crate::detail_json::{write_int, write_str};
use crate::model::{Direction, Fields, Frame, Message, Status, Value};

/// Frame-wide record counters (the reference's `stats` dict, keys in first-touch order);
/// inline for the few kinds a frame counts.
#[derive(Clone, Debug, Default)]
pub struct FrameStats(pub smallvec::SmallVec<[(&'static str, u64); 4]>);

impl FrameStats {
    fn add(&mut self, key: &'static str, n: u64) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(e) => e.1 += n,
            None => self.0.push((key, n)),
        }
    }

    fn count(&self, key: &str) -> u64 {
        self.0.iter().find(|(k, _)| *k == key).map_or(0, |e| e.1)
    }

    fn records(&self) -> u64 {
        self.count("records")
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// The `record_stats` field.
    pub fn value(&self) -> Value {
        let mut f = Fields::new();
        for (k, n) in &self.0 {
            f.set(*k, Value::Int(*n as i64));
        }
        Value::Map(f)
    }
}

/// The record sets of one body as the frame shows them: by the offset of their first byte,
/// their decode (the field value) and record count (the summary's).
///
/// A vector in body order (the order `read_into` finds them, by ascending offset): most bodies
/// carry one record set or none, and a map cost an allocation for each.
#[derive(Default)]
pub struct Decoded {
    /// Inline for one (the common case), so that a body with one record set allocates none.
    sets: smallvec::SmallVec<[(usize, Option<SetDecode>, i64); 1]>,
}

/// A record set's decode: the field value, or (the export, [`Hook::text`]) its `detail` text
/// with what the partitions table reads of it.
#[derive(Clone, Debug, PartialEq)]
pub enum SetDecode {
    Tree(Value),
    Text {
        /// The JSON text of the value [`set_value`] makes, as `detail_json` writes it.
        json: String,
        /// The value's first batch's `base_offset` (a legacy message's `offset`).
        first_offset: Option<i64>,
    },
}

impl Decoded {
    fn at(&self, start: usize) -> Option<usize> {
        self.sets.binary_search_by_key(&start, |s| s.0).ok()
    }

    pub(crate) fn insert(&mut self, start: usize, value: SetDecode, count: i64) {
        match self.at(start) {
            Some(i) => self.sets[i] = (start, Some(value), count),
            None => {
                let i = self.sets.partition_point(|s| s.0 < start);
                self.sets.insert(i, (start, Some(value), count));
            }
        }
    }

    pub fn record_count(&self, start: usize) -> i64 {
        self.at(start).map_or(0, |i| self.sets[i].2)
    }

    /// The decode of the record set at `start` (None when there is none or it was taken).
    pub fn get(&self, start: usize) -> Option<&SetDecode> {
        self.at(start).and_then(|i| self.sets[i].1.as_ref())
    }

    /// The decode of the record set at `start` as a field value, taken (None when there is
    /// none, it was taken already, or it was made as text: a body whose record sets are text is
    /// written as text too, [`super::fields::write_json`], and never converted).
    pub fn take(&mut self, start: usize) -> Option<Value> {
        let i = self.at(start)?;
        match self.sets[i].1.take()? {
            SetDecode::Tree(v) => Some(v),
            SetDecode::Text { .. } => None,
        }
    }
}

/// How the record sets of a body are read.
pub struct Hook<'s> {
    pub direction: Direction,
    /// A Fetch response may end with a partial batch (normal); elsewhere it is malformed.
    pub partial_ok: bool,
    /// Make messages (false when no sink reads them: records are still read and checked).
    pub messages: bool,
    /// Describe each record set for the field tree (false when the frame's fields are not kept:
    /// only its record count is then read, for the summary).
    pub detail: bool,
    /// Keep each message's value bytes (false: measured, not copied).
    pub values: bool,
    /// With `detail`: describe each record set as its `detail` text ([`SetDecode::Text`]),
    /// for a body written as text (`SessionOptions::detail_text`).
    pub text: bool,
    pub names: &'s TopicNames,
}

/// The topic a record set belongs to, as `_locate` names it: the enclosing name, else the
/// enclosing topic id's learnt name, else the id itself.
fn topic_of(l: &records::Located<'_>, names: &TopicNames) -> Option<String> {
    if let Some(t) = &l.topic {
        return Some(t.to_string());
    }
    let id = uuid_string(&l.topic_id?);
    Some(names.name_of(&id).map_or(id, str::to_owned))
}

/// Decodes every record set of `fields` (a body read from `data`, the whole frame) into `f`.
pub fn read_into(
    f: &mut Frame,
    data: &[u8],
    fields: &[BField<'_>],
    hook: &Hook<'_>,
    limits: &mut Limits,
    stats: &mut FrameStats,
) -> Decoded {
    let mut out = Decoded::default();
    for l in records::locate_record_sets(fields) {
        let Some(bytes) = data.get(l.start..l.end) else {
            continue;
        };
        let partition = l.partition;
        let first = f.messages.len();
        // The frame's caps span its record sets: records kept and control dicts kept so far.
        let rs = records::decode_record_set_listing(
            bytes,
            hook.partial_ok,
            limits,
            stats.records(),
            stats.count("control_records"),
            stats.count("batches") + stats.count("messages"),
            hook.messages,
        );
        // The topic names messages and problems; most record sets have neither to name.
        let topic = (hook.messages || !rs.problems.is_empty())
            .then(|| topic_of(&l, hook.names))
            .flatten();
        let place = || match &topic {
            Some(t) => format!("{t}[{}]", py_opt(partition)),
            None => format!("partition {}", py_opt(partition)),
        };
        for p in &rs.problems {
            let at = p.offset.map(|o| (o + l.start as i128).max(0) as u64);
            if p.more != 0 {
                f.note_more(Cow::Borrowed(p.kind), p.more, at);
                continue;
            }
            let detail = format!("{}: {}", place(), p.detail);
            match p.status {
                Some(s) => f.flag(status_of(s), p.kind, detail, at),
                None => f.add(crate::model::Anomaly::new(p.kind, detail).at(at)),
            }
        }
        for (k, n) in &rs.stats.counts {
            stats.add(k, *n);
        }
        f.messages_counted += rs.counted;
        let count = rs.record_count;
        let value = if hook.detail && hook.text {
            let mut json = String::with_capacity(64 + 640 * rs.entries.len());
            write_set_json(&mut json, &rs);
            let first_offset = rs.entries.first().map(|e| match e {
                Entry::V2(b) => b.base_offset,
                Entry::Legacy(m) => m.offset,
            });
            SetDecode::Text { json, first_offset }
        } else if hook.detail {
            SetDecode::Tree(set_value(&rs))
        } else {
            SetDecode::Tree(Value::Null)
        };
        if hook.messages {
            let partition = partition.map(|p| p as i32);
            // Exactly the first record set's messages (most frames carry one), amortized after.
            if f.messages.is_empty() {
                f.messages.reserve_exact(rs.messages.len());
            } else {
                f.messages.reserve(rs.messages.len());
            }
            let mut shared = None;
            for m in rs.messages {
                f.messages.push(message(
                    m,
                    hook.direction,
                    topic.clone(),
                    partition,
                    hook.values,
                    &mut shared,
                ));
            }
            if hook.direction == Direction::Produce {
                await_offsets(&mut f.messages, first);
            }
        }
        out.insert(l.start, value, count);
    }
    out
}

/// Do the record sets at `sets` (a body's, from `body::check_body`) read without a problem (a
/// layout tried without emitting)? Each is read alone, as the first of its frame, and its
/// records are checked, not made into messages (the problems are the same either way).
pub fn fit(data: &[u8], sets: &[Range<usize>], limits: &mut Limits) -> bool {
    for r in sets {
        let Some(bytes) = data.get(r.clone()) else {
            return false;
        };
        let rs = records::decode_record_set_listing(bytes, true, limits, 0, 0, 0, false);
        if rs.problems.iter().any(|p| p.kind != "message_limit") {
            return false;
        }
    }
    true
}

fn py_opt(v: Option<i64>) -> String {
    v.map_or_else(|| "None".to_owned(), |p| p.to_string())
}

fn status_of(s: &str) -> Status {
    match s {
        "bad_checksum" => Status::BadChecksum,
        _ => Status::Malformed,
    }
}

fn bytes(b: &Option<Cow<'_, [u8]>>) -> Value {
    b.as_ref().map_or(Value::Null, |b| Value::Bytes(b.to_vec()))
}

/// The detail last made, with the batch state it was made of: the records of one batch share
/// one detail (see [`Message::detail`]).
type SharedDetail = Option<(records::BatchDetail, Rc<Fields>)>;

fn message(
    m: records::Message<'_>,
    direction: Direction,
    topic: Option<String>,
    partition: Option<i32>,
    values: bool,
    shared: &mut SharedDetail,
) -> Message {
    let detail = m.detail.map(|d| match shared {
        Some((last, fields)) if *last == d => Rc::clone(fields),
        _ => {
            let fields = Rc::new(detail_fields(&d));
            *shared = Some((d, Rc::clone(&fields)));
            fields
        }
    });
    Message {
        direction: Some(direction),
        value_size: clamp(m.value_size),
        topic,
        partition,
        offset: Some(clamp(m.offset)),
        message_id: None,
        key: m.key.map(Cow::into_owned),
        value: m.value.filter(|_| values).map(Cow::into_owned),
        timestamp_ms: m.timestamp_ms.map(clamp),
        headers: m.headers.map(|hs| {
            hs.into_iter()
                .map(|(k, v)| (k, v.map(Cow::into_owned)))
                .collect()
        }),
        compression: m.compression.map(Cow::Borrowed),
        checksum_ok: Some(m.checksum_ok),
        detail,
        offset_delta: None,
    }
}

/// A v2 record's detail, as the Python session writes it.
fn detail_fields(d: &records::BatchDetail) -> Fields {
    let mut f = Fields::with_capacity(6);
    f.push_new("batch_base_offset", Value::Int(d.batch_base_offset));
    f.push_new("producer_id", Value::Int(d.producer_id));
    f.push_new("producer_epoch", Value::Int(i64::from(d.producer_epoch)));
    f.push_new("base_sequence", Value::Int(i64::from(d.base_sequence)));
    f.push_new("transactional", Value::Bool(d.transactional));
    f.push_new("magic", Value::Int(2));
    f
}

/// An i128 read from varints, as an i64 (values beyond it only come from damaged varints).
fn clamp(v: i128) -> i64 {
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// The record set's field value (the reference's `decode_record_set` dict).
fn set_value(rs: &RecordSet<'_>) -> Value {
    let mut out = Fields::new();
    out.set("size", Value::Int(rs.size as i64));
    out.set(
        "batches",
        Value::List(rs.entries.iter().map(entry).collect()),
    );
    if let Some(n) = rs.partial_trailing_bytes {
        out.set("partial_trailing_bytes", Value::Int(n as i64));
    }
    if let Some(n) = rs.undecoded_bytes {
        out.set("undecoded_bytes", Value::Int(n as i64));
    }
    if rs.unlisted != 0 {
        out.set("batches_not_listed", Value::Int(rs.unlisted as i64));
    }
    out.set("record_count", Value::Int(rs.record_count));
    Value::Map(out)
}

/// The `detail` text of [`set_value`]`(rs)`, as `detail_json` writes that value (orjson's
/// layout; a record set's value is never deep enough for the fallback, see
/// `fields::write_json`). Written without making the value: the export's hot path (a Produce
/// request's record set is most of its `detail`). A batch with control records and a legacy
/// message are made as a value and written as one (rare; exact by construction).
pub fn write_set_json(out: &mut String, rs: &RecordSet<'_>) {
    use crate::detail_json::write_value_orjson;
    let int = |out: &mut String, key: &str, v: i64| {
        out.push_str(key);
        write_int(out, v);
    };
    out.push_str("{\"size\":");
    write_int(out, rs.size as i64);
    out.push_str(",\"batches\":[");
    for (i, e) in rs.entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match e {
            Entry::V2(b) if b.control_records.is_none() => {
                int(out, "{\"base_offset\":", b.base_offset);
                int(out, ",\"batch_length\":", b.batch_length.into());
                int(
                    out,
                    ",\"partition_leader_epoch\":",
                    b.partition_leader_epoch.into(),
                );
                int(out, ",\"magic\":", b.magic.into());
                int(out, ",\"crc\":", b.crc.into());
                push_bool(out, ",\"crc_ok\":", b.crc_ok);
                int(out, ",\"attributes\":", b.attributes.into());
                push_compression(out, b.compression());
                out.push_str(if b.attributes & 8 != 0 {
                    ",\"timestamp_type\":\"LogAppendTime\""
                } else {
                    ",\"timestamp_type\":\"CreateTime\""
                });
                push_bool(out, ",\"is_transactional\":", b.attributes & 16 != 0);
                push_bool(out, ",\"is_control\":", b.attributes & 32 != 0);
                push_bool(out, ",\"has_delete_horizon\":", b.attributes & 64 != 0);
                int(out, ",\"last_offset_delta\":", b.last_offset_delta.into());
                int(out, ",\"base_timestamp\":", b.base_timestamp);
                int(out, ",\"max_timestamp\":", b.max_timestamp);
                int(out, ",\"producer_id\":", b.producer_id);
                int(out, ",\"producer_epoch\":", b.producer_epoch.into());
                int(out, ",\"base_sequence\":", b.base_sequence.into());
                int(out, ",\"records_count\":", b.records_count.into());
                int(out, ",\"record_count\":", b.record_count);
                out.push('}');
            }
            _ => {
                // The set's map is at depth 1 of this text, its list at 2, an entry's map at 3:
                // only orjson's limit is checked here, and a record set never comes near it.
                let _ = write_value_orjson(out, &entry(e), 2);
            }
        }
    }
    out.push(']');
    if let Some(n) = rs.partial_trailing_bytes {
        int(out, ",\"partial_trailing_bytes\":", n as i64);
    }
    if let Some(n) = rs.undecoded_bytes {
        int(out, ",\"undecoded_bytes\":", n as i64);
    }
    if rs.unlisted != 0 {
        int(out, ",\"batches_not_listed\":", rs.unlisted as i64);
    }
    int(out, ",\"record_count\":", rs.record_count);
    out.push('}');
}

fn push_bool(out: &mut String, key: &str, v: bool) {
    out.push_str(key);
    out.push_str(if v { "true" } else { "false" });
}

fn push_compression(out: &mut String, c: Option<&str>) {
    out.push_str(",\"compression\":");
    match c {
        Some(c) => write_str(out, c),
        None => out.push_str("null"),
    }
}

fn ts_type(log_append: bool) -> Value {
    Value::Str(
        if log_append {
            "LogAppendTime"
        } else {
            "CreateTime"
        }
        .into(),
    )
}

fn compression(c: Option<&str>) -> Value {
    c.map_or(Value::Null, |c| Value::Str(c.into()))
}

fn entry(e: &Entry<'_>) -> Value {
    // Sized for the fields each kind sets (21 at most for a batch, 12 for a legacy message).
    let mut d = Fields::with_capacity(match e {
        Entry::V2(_) => 21,
        Entry::Legacy(_) => 12,
    });
    let int = Value::Int;
    match e {
        Entry::V2(b) => {
            d.push_new("base_offset", int(b.base_offset));
            d.push_new("batch_length", int(b.batch_length.into()));
            d.push_new(
                "partition_leader_epoch",
                int(b.partition_leader_epoch.into()),
            );
            d.push_new("magic", int(b.magic.into()));
            d.push_new("crc", int(b.crc.into()));
            d.push_new("crc_ok", Value::Bool(b.crc_ok));
            d.push_new("attributes", int(b.attributes.into()));
            d.push_new("compression", compression(b.compression()));
            d.push_new("timestamp_type", ts_type(b.attributes & 8 != 0));
            d.push_new("is_transactional", Value::Bool(b.attributes & 16 != 0));
            d.push_new("is_control", Value::Bool(b.attributes & 32 != 0));
            d.push_new("has_delete_horizon", Value::Bool(b.attributes & 64 != 0));
            d.push_new("last_offset_delta", int(b.last_offset_delta.into()));
            d.push_new("base_timestamp", int(b.base_timestamp));
            d.push_new("max_timestamp", int(b.max_timestamp));
            d.push_new("producer_id", int(b.producer_id));
            d.push_new("producer_epoch", int(b.producer_epoch.into()));
            d.push_new("base_sequence", int(b.base_sequence.into()));
            d.push_new("records_count", int(b.records_count.into()));
            d.push_new("record_count", int(b.record_count));
            if let Some(cs) = &b.control_records {
                d.push_new(
                    "control_records",
                    Value::List(cs.iter().map(control).collect()),
                );
            }
        }
        Entry::Legacy(m) => {
            d.push_new("offset", int(m.offset));
            d.push_new("message_size", int(m.message_size));
            d.push_new("crc", int(m.crc.into()));
            d.push_new("crc_ok", Value::Bool(m.crc_ok));
            d.push_new("magic", int(m.magic.into()));
            d.push_new("attributes", int(m.attributes.into()));
            d.push_new("compression", compression(m.compression()));
            d.push_new("record_count", int(m.record_count));
            if let Some((ts, log_append)) = m.timestamp {
                d.push_new("timestamp", int(ts));
                d.push_new("timestamp_type", ts_type(log_append));
            }
            if let Some((n, ok)) = m.inner {
                d.push_new("inner_messages", int(n as i64));
                d.push_new("inner_crc_ok", Value::Bool(ok));
            }
        }
    }
    Value::Map(d)
}

fn control(c: &Control<'_>) -> Value {
    let mut d = Fields::new();
    match c {
        Control::Key(k) => {
            d.set("key", bytes(k));
        }
        Control::Typed {
            version,
            ctype,
            marker,
            decoded,
            value,
        } => {
            d.set("version", Value::Int((*version).into()));
            d.set("type", Value::Str(control_type_name(*ctype).into_owned()));
            if let Some((mv, epoch)) = marker {
                d.set("marker_version", Value::Int((*mv).into()));
                d.set("coordinator_epoch", Value::Int((*epoch).into()));
            } else if let Some(fields) = decoded {
                d.set(
                    "value_decoded",
                    Value::Map(super::fields::convert(fields, &mut Decoded::default())),
                );
            } else if value.is_some() {
                d.set("value", bytes(value));
            }
        }
    }
    Value::Map(d)
}

/// The records one partition of a Produce request carries, from `messages[first]` on: a
/// producer numbers them from 0; until the broker's answer gives the partition's base offset
/// the offset is unknown (null) and the place among the partition's records is kept.
pub fn await_offsets(messages: &mut [Message], first: usize) {
    for (delta, m) in messages.iter_mut().skip(first).enumerate() {
        m.offset_delta = Some(delta as i64);
        m.offset = None;
    }
}

/// Gives a Produce request's records their offsets from its response (base offset + delta),
/// for the partitions answered without error and with a base offset; a topic-partition
/// answered twice with different base offsets is ambiguous and stays null.
pub fn assign_offsets(messages: &mut [Message], body: &[BField<'_>], names: &TopicNames) {
    let mut bases: Vec<((String, i64), Option<i64>)> = Vec::new();
    let Some(BValue::Array(responses)) = get(body, "responses") else {
        return;
    };
    for t in responses {
        let BValue::Struct(t) = &t.value else {
            continue;
        };
        let keys = topic_keys(t, names);
        let Some(BValue::Array(parts)) = get(t, "partition_responses") else {
            continue;
        };
        for p in parts {
            let BValue::Struct(p) = &p.value else {
                continue;
            };
            let (Some(BValue::Int(index)), Some(BValue::Int(0)), Some(BValue::Int(base))) =
                (get(p, "index"), get(p, "error_code"), get(p, "base_offset"))
            else {
                continue;
            };
            if *base < 0 {
                continue;
            }
            for k in &keys {
                let key = (k.clone(), *index);
                match bases.iter_mut().find(|(bk, _)| *bk == key) {
                    Some((_, seen)) => {
                        if *seen != Some(*base) {
                            *seen = None;
                        }
                    }
                    None => bases.push((key, Some(*base))),
                }
            }
        }
    }
    if bases.is_empty() {
        return;
    }
    for m in messages {
        let (Some(delta), Some(topic), Some(partition)) = (m.offset_delta, &m.topic, m.partition)
        else {
            continue;
        };
        let base = bases
            .iter()
            .find(|((t, p), _)| t == topic && *p == i64::from(partition))
            .and_then(|(_, b)| *b);
        if let Some(base) = base {
            m.offset = Some(base.saturating_add(delta));
        }
    }
}

/// The names a record of topic structure `t` may carry: its name, or its id's learnt name and
/// the id (a record is named as it was when the request was decoded).
fn topic_keys(t: &[BField<'_>], names: &TopicNames) -> Vec<String> {
    if let Some(BValue::Str(name)) = get(t, "name") {
        return vec![name.to_string()];
    }
    let Some(BValue::Uuid(id)) = get(t, "topic_id") else {
        return Vec::new();
    };
    let id = uuid_string(id);
    match names.name_of(&id) {
        None => vec![id],
        Some(known) => vec![known.to_owned(), id],
    }
}

#[cfg(test)]
mod tests {
    use super::super::records::decode_record_set_listing;
    use super::super::records::test_sets::batch;
    use super::*;
    use crate::detail_json::write_value_orjson;

    /// The record set's text, and the text of its value as the tree path writes it.
    fn both(data: &[u8], partial_ok: bool) -> (String, String) {
        let rs = decode_record_set_listing(data, partial_ok, &mut Limits::default(), 0, 0, 0, true);
        let mut text = String::new();
        write_set_json(&mut text, &rs);
        let mut want = String::new();
        write_value_orjson(&mut want, &set_value(&rs), 1).expect("shallow");
        (text, want)
    }

    #[test]
    fn text_is_the_values_text() {
        let plain = batch(b"hi", 0);
        // Transactional, log-append time: the flags the text spells out.
        let flagged = batch(b"v", 16 | 8);
        let two = [plain.clone(), flagged.clone()].concat();
        // A control batch (attributes: control | transactional): its entry carries
        // `control_records` (its record's key is null here).
        let mut control = batch(&[0, 0, 0, 0, 0, 0], 32 | 16);
        let cases: Vec<(Vec<u8>, bool)> = vec![
            (plain.clone(), false),
            (flagged, false),
            (two.clone(), false),
            (two[..two.len() - 3].to_vec(), true), // a partial batch at the end
            (plain[..20].to_vec(), false),         // cut inside the batch header
            ([&plain[..16], &[9], &plain[17..]].concat(), false), // magic 9: undecodable
            (std::mem::take(&mut control), false),
            (Vec::new(), false),
        ];
        let mut seen = Vec::new();
        for (i, (data, partial)) in cases.iter().enumerate() {
            let (text, want) = both(data, *partial);
            assert_eq!(text, want, "case {i}");
            seen.push(text);
        }
        // Every optional part of the value is met by some case.
        for key in [
            "control_records",
            "partial_trailing_bytes",
            "undecoded_bytes",
            "LogAppendTime",
        ] {
            assert!(seen.iter().any(|t| t.contains(key)), "{key}: {seen:?}");
        }
        // Checked by hand against Kafka's layout: the first batch's fields and flags.
        let (text, _) = both(&plain, false);
        assert!(text.starts_with("{\"size\":"), "{text}");
        assert!(text.contains("\"base_offset\":42,"), "{text}");
        assert!(text.contains("\"magic\":2,"), "{text}");
        assert!(text.contains("\"timestamp_type\":\"CreateTime\",\"is_transactional\":false"));
        assert!(text.ends_with(",\"record_count\":1}"), "{text}");
    }
}
