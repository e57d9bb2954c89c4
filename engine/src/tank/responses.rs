//! Decoders for what a TANK broker answers (the twin of `protocols/tank/responses.py`).
//!
//! Responses start with the request id (Consume: after its header-length field), so each
//! decoder reads it first and pairs at once: the Produce response cannot be read at all without
//! its request's (topic, partition) list, and a Consume response's messages are marked against
//! the sequence numbers the request asked for.

use std::borrow::Cow;

use super::bundles::{decode_chunk, malformed, Chunk};
use super::common::{
    bundle_fields, bundle_messages, endpoint, int, join_items, key, plural, str8, ConsumeContext,
    DecodeState, DiscoverContext, ProduceContext, Res, Stop,
};
use super::constants as C;
use super::cursor::Cursor;
use super::requests::{ping, request_id, topics_value, TopicB};
use crate::correlation::Key;
use crate::model::{Direction, Fields, Frame, FrameRef, Span, Value};

/// Dispatches a response by message id; None for ids the broker never sends.
pub fn decode(
    msg_id: u8,
    c: &mut Cursor<'_>,
    f: &mut Frame,
    st: &mut DecodeState<'_>,
) -> Option<Res> {
    Some(match msg_id {
        C::PRODUCE => produce(c, f, st),
        C::CONSUME => consume(c, f, st),
        C::PING => ping(c, f, st),
        C::DISCOVER_PARTITIONS => discover_partitions(c, f, st),
        C::CREATE_TOPIC => create_topic(c, f, st),
        C::RELOAD_CONF => reload_conf(c, f, st),
        C::CONSUME_PEER => consume_peer(c, f, st),
        C::STATUS => status(c, f, st),
        C::DISCOVER_TOPICS => discover_topics(c, f, st),
        C::DISCOVER_TOPOLOGY => discover_topology(c, f, st),
        _ => return None,
    })
}

/// The frame's error is its first one (a response can carry one per partition).
fn set_error(f: &mut Frame, code: i32, name: impl Into<Cow<'static, str>>) {
    if f.error_code.is_none() {
        f.error_code = Some(code);
        f.error = Some(name.into());
    }
}

/// Responses that carry error codes report 0 when none of them is an error.
fn ok_unless_error(f: &mut Frame) {
    if f.error_code.is_none() {
        f.error_code = Some(0);
    }
}

fn named(name: Option<&'static str>, prefix: &str, code: u8) -> Cow<'static, str> {
    match name {
        Some(n) => Cow::Borrowed(n),
        None => Cow::Owned(format!("{prefix}{code}")),
    }
}

// -- Produce -------------------------------------------------------------------------------

fn produce_error(c: &mut Cursor<'_>, code: u8, at: usize) -> Res<(Fields, Cow<'static, str>)> {
    let name = named(C::produce_error(code), "error_", code);
    let mut e = Fields::new();
    e.set_span("error_code", int(code), Some(Span::new(at, at + 1)));
    e.set_span(
        "error",
        Value::Str(name.to_string()),
        Some(Span::new(at, at + 1)),
    );
    if code == C::OTHER_LEADER {
        let (v, sp) = endpoint(c, "leader address", "leader port")?;
        e.set_span("leader", v, sp);
    }
    Ok((e, name))
}

/// Produce response (0x01, also the answer to ProduceWithSeqnum): one error per requested
/// partition, in the order the request listed them.
fn produce(c: &mut Cursor<'_>, f: &mut Frame, st: &mut DecodeState<'_>) -> Res {
    let rid = request_id(c, f)?;
    let req = st.pair(f, key(C::PRODUCE, rid));
    let req = req.as_ref().map(|r| r.borrow());
    let Some(ctx) = req.as_ref().and_then(|r| r.context_ref::<ProduceContext>()) else {
        return produce_unpaired(c, f, rid);
    };
    if ctx.msg_id != C::PRODUCE {
        let answers = C::msg_name(ctx.msg_id).unwrap_or("Unknown");
        f.fields.set("answers", Value::Str(answers.to_string()));
    }
    f.fields.set("topics", Value::List(Vec::new()));
    let mut topics = Vec::new();
    let mut items = Vec::new();
    let r = produce_errors(c, f, ctx, &mut topics, &mut items);
    f.fields.set("topics", topics_value(topics));
    r?;
    f.summary = format!("req {rid} {}", join_items(&items));
    ok_unless_error(f);
    Ok(())
}

fn produce_errors(
    c: &mut Cursor<'_>,
    f: &mut Frame,
    ctx: &ProduceContext,
    topics: &mut Vec<TopicB>,
    items: &mut Vec<String>,
) -> Res {
    for (name, pids) in &ctx.topics {
        topics.push(TopicB {
            name: name.clone(),
            span: None,
            parts: Vec::new(),
            unknown_topic: false,
        });
        let parts = &mut topics.last_mut().expect("pushed above").parts;
        if pids.is_empty() {
            continue;
        }
        let at = c.pos;
        let first = c.u8("topic error")?;
        if C::produce_topic_level(first) {
            let err = C::produce_error(first).unwrap_or("");
            for &pid in pids {
                let mut e = Fields::new();
                e.set("partition", int(pid));
                e.set_span("error_code", int(first), Some(Span::new(at, at + 1)));
                e.set_span(
                    "error",
                    Value::Str(err.to_string()),
                    Some(Span::new(at, at + 1)),
                );
                parts.push(e);
            }
            set_error(f, i32::from(first), err);
            items.push(format!("{name} {err}"));
            continue;
        }
        for (i, &pid) in pids.iter().enumerate() {
            let (code, at) = if i == 0 {
                (first, at)
            } else {
                let at = c.pos;
                (c.u8("partition error")?, at)
            };
            let (rest, err) = produce_error(c, code, at)?;
            let mut e = Fields::new();
            e.set("partition", int(pid));
            e.0.extend(rest.0);
            parts.push(e);
            items.push(format!("{name}/{pid} {err}"));
            if code != 0 {
                set_error(f, i32::from(code), err);
            }
        }
    }
    Ok(())
}

/// Without the request the error bytes cannot be tied to partitions: listed in order.
fn produce_unpaired(c: &mut Cursor<'_>, f: &mut Frame, rid: u32) -> Res {
    let mut errors = Vec::new();
    let mut names = Vec::new();
    while c.left() > 0 {
        let at = c.pos;
        let code = c.u8("error")?;
        let (e, name) = produce_error(c, code, at)?;
        errors.push(Value::Map(e));
        if code != 0 {
            set_error(f, i32::from(code), name.clone());
        }
        names.push(name.into_owned());
    }
    f.fields.set("errors", Value::List(errors));
    f.fields.set(
        "note",
        Value::Str("request not captured: (topic, partition) of each error unknown".to_string()),
    );
    f.summary = format!("req {rid} {} (request not seen)", join_items(&names));
    ok_unless_error(f);
    Ok(())
}

// -- Consume -------------------------------------------------------------------------------

fn header_length(c: &mut Cursor<'_>, f: &mut Frame) -> Res<usize> {
    let p = c.pos;
    let hlen = c.u32le("header length")?;
    f.fields.set_span("header_length", int(hlen), c.span(p));
    Ok(c.pos + hlen as usize)
}

/// Consume response (0x02): a header of partition entries, then their chunks of bundles.
fn consume(c: &mut Cursor<'_>, f: &mut Frame, st: &mut DecodeState<'_>) -> Res {
    let hdr_end = header_length(c, f)?;
    let rid = request_id(c, f)?;
    let req = st.pair(f, key(C::CONSUME, rid));
    let ntopics = u16::from(c.u8("topics count")?);
    consume_body(c, f, st, req, ntopics, hdr_end, false)
}

/// ConsumePeer response (0x09): Consume's layout with u16 counts and no request id.
fn consume_peer(c: &mut Cursor<'_>, f: &mut Frame, st: &mut DecodeState<'_>) -> Res {
    let hdr_end = header_length(c, f)?;
    let req = st.pair(f, Key::Tuple(vec![Key::Int(i64::from(C::CONSUME_PEER))]));
    let ntopics = c.u16le("topics count")?;
    consume_body(c, f, st, req, ntopics, hdr_end, true)
}

/// A partition entry of a Consume response header with what the chunks need of it.
struct Entry {
    fields: Fields,
    partition: u16,
    flag: u8,
    chunk_length: u32,
    base_seqnum: Option<u64>,
    high_watermark: Option<u64>,
    first_available: Option<u64>,
    error: Option<Cow<'static, str>>,
}

#[allow(clippy::too_many_arguments)]
fn consume_body(
    c: &mut Cursor<'_>,
    f: &mut Frame,
    st: &mut DecodeState<'_>,
    req: Option<FrameRef>,
    ntopics: u16,
    hdr_end: usize,
    wide: bool,
) -> Res {
    let req = req.as_ref().map(|r| r.borrow());
    let requested = req.as_ref().and_then(|r| r.context_ref::<ConsumeContext>());
    f.fields.set("topics", Value::List(Vec::new()));
    let mut topics: Vec<TopicB> = Vec::new();
    // (topic index, entry) in header order; the entries go back into their topics at the end.
    let mut entries: Vec<(usize, Entry)> = Vec::new();
    let mut items = Vec::new();
    let r = consume_entries(
        c,
        f,
        st,
        requested,
        ntopics,
        hdr_end,
        wide,
        &mut topics,
        &mut entries,
        &mut items,
    );
    for (ti, e) in entries {
        topics[ti].parts.push(e.fields);
    }
    f.fields.set("topics", topics_value(topics));
    r?;
    let what = match f.correlation_id {
        Some(id) => format!("req {id} "),
        None => String::new(),
    };
    f.summary = what + &join_items(&items);
    ok_unless_error(f);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn consume_entries(
    c: &mut Cursor<'_>,
    f: &mut Frame,
    st: &mut DecodeState<'_>,
    requested: Option<&ConsumeContext>,
    ntopics: u16,
    hdr_end: usize,
    wide: bool,
    topics: &mut Vec<TopicB>,
    entries: &mut Vec<(usize, Entry)>,
    items: &mut Vec<String>,
) -> Res {
    for _ in 0..ntopics {
        let (name, span) = str8(c, "topic name length", "topic name")?;
        let nparts = if wide {
            c.u16le("partitions count")?
        } else {
            u16::from(c.u8("partitions count")?)
        };
        topics.push(TopicB {
            name: name.clone(),
            span,
            parts: Vec::new(),
            unknown_topic: false,
        });
        let ti = topics.len() - 1;
        // The broker writes the marker even when the request listed no partitions.
        let p = c.pos;
        if p + 2 <= hdr_end.min(c.end) && c.buf[p] == 0xFF && c.buf[p + 1] == 0xFF {
            c.pos += 2;
            topics[ti].unknown_topic = true;
            set_error(f, C::UNKNOWN_TOPIC_CODE, "unknown_topic");
            items.push(format!("{name} unknown_topic"));
            continue;
        }
        for _ in 0..nparts {
            let e = partition_entry(c, f)?;
            entries.push((ti, e));
        }
    }
    if c.pos != hdr_end {
        st.problems.push(malformed(
            format!(
                "header length says the chunks start at byte {hdr_end}, entries end at {}",
                c.pos
            ),
            Some(c.pos),
        ));
        c.pos = hdr_end;
    }
    for (ti, entry) in entries.iter_mut() {
        let name = &topics[*ti].name;
        let pid = entry.partition;
        let clen = entry.chunk_length as usize;
        let seq_from = if entry.flag == C::CONSUME_OK {
            entry.base_seqnum
        } else {
            None
        };
        let min_seq = requested
            .and_then(|r| r.get(name, pid))
            .filter(|&s| s != C::SEQ_FIRST && s != C::SEQ_TAIL);
        let mut chunk = None;
        let mut partial = false;
        if clen != 0 {
            let at = c.pos;
            let end = at.saturating_add(clen).min(c.end);
            let room = st.batch_room();
            let keep = st.keep();
            let mut bundles = Vec::new();
            let (problems, kept, read) = (&mut st.problems, &mut st.kept, &mut st.read);
            let ch = decode_chunk(c.buf, at, end, seq_from, st.limits, keep, |b, i| {
                if (i as u64) < room {
                    bundles.push(bundle_fields(b));
                }
                *kept += b.messages.len() as u64;
                *read += b.parsed;
                problems.append(&mut b.problems);
                bundle_messages(f, b, Direction::Deliver, name, pid, i, min_seq);
            });
            st.batches += ch.count;
            // No span when the header length pointed past the frame (the chunk is then empty).
            let span = (at <= end).then(|| Span::new(at, end));
            entry.fields.set_span("bundles", Value::List(bundles), span);
            let mut chunk_ = ch;
            if let Some(p) = chunk_.partial.take() {
                // Normal: the fetch size is in bytes, the broker cuts the last bundle.
                entry.fields.set("partial_bundle", Value::Map(p));
                partial = true;
            }
            if let Some(u) = chunk_.unread.take() {
                entry.fields.set("unread", Value::Map(u));
                st.problems.append(&mut chunk_.problems);
            }
            chunk = Some(chunk_);
            c.pos = end;
            let missing = clen as i64 - (end as i64 - at as i64);
            c.need_i(missing, format!("chunk of {name}/{pid}"))?;
        }
        items.push(entry_text(name, entry, chunk.as_ref(), partial));
    }
    Ok(())
}

fn partition_entry(c: &mut Cursor<'_>, f: &mut Frame) -> Res<Entry> {
    let p = c.pos;
    let pid = c.u16le("partition id")?;
    let mut e = Entry {
        fields: Fields::new(),
        partition: pid,
        flag: 0,
        chunk_length: 0,
        base_seqnum: None,
        high_watermark: None,
        first_available: None,
        error: None,
    };
    e.fields.set_span("partition", int(pid), c.span(p));
    let p = c.pos;
    let flag = c.u8("errorOrFlags")?;
    e.flag = flag;
    let fspan = c.span(p);
    e.fields.set_span("error_or_flags", int(flag), fspan);
    let Some(name) = C::consume_flag(flag) else {
        let err = format!("flags_{flag:#04x}");
        set_error(f, i32::from(flag), err);
        // Unknown layout after an unknown flag: nothing else in this header can be trusted.
        return Err(Stop::UnknownFlag {
            offset: c.pos - 1,
            flag,
        });
    };
    if flag != C::CONSUME_OK && flag != C::CONSUME_SPARSE {
        e.fields
            .set_span("error", Value::Str(name.to_string()), fspan);
        e.error = Some(Cow::Borrowed(name));
        set_error(f, i32::from(flag), name);
    }
    if flag == C::CONSUME_OK || flag == C::CONSUME_BOUNDARY {
        let p = c.pos;
        let v = c.u64le("base seqnum")?;
        e.base_seqnum = Some(v);
        e.fields.set_span("base_seqnum", Value::UInt(v), c.span(p));
    }
    if flag == C::CONSUME_OK || flag == C::CONSUME_BOUNDARY || flag == C::CONSUME_SPARSE {
        let p = c.pos;
        let v = c.u64le("high-water mark")?;
        e.high_watermark = Some(v);
        e.fields
            .set_span("high_watermark", Value::UInt(v), c.span(p));
        let p = c.pos;
        let v = c.u32le("chunk length")?;
        e.chunk_length = v;
        e.fields.set_span("chunk_length", int(v), c.span(p));
    }
    if flag == C::CONSUME_SPARSE {
        e.fields.set_span("sparse", Value::Bool(true), fspan);
    }
    if flag == C::CONSUME_BOUNDARY {
        let p = c.pos;
        let v = c.u64le("first available seqnum")?;
        e.first_available = Some(v);
        e.fields
            .set_span("first_available_seqnum", Value::UInt(v), c.span(p));
    }
    if flag == C::OTHER_LEADER {
        let (v, sp) = endpoint(c, "leader address", "leader port")?;
        e.fields.set_span("leader", v, sp);
    }
    Ok(e)
}

/// Python's rendering of an optional number in an f-string.
fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "None".to_string(), |v| v.to_string())
}

/// The entry's part of the summary; `chunk`: what its bundles held (messages counted whether or
/// not they were kept, see `Limits::max_messages`, bundles whether or not they are listed).
fn entry_text(name: &str, e: &Entry, chunk: Option<&Chunk>, partial: bool) -> String {
    let pid = e.partition;
    if e.flag == C::CONSUME_BOUNDARY {
        return format!(
            "{name}/{pid} boundary_check first available {} hw {}",
            opt(e.first_available),
            opt(e.high_watermark)
        );
    }
    if let Some(err) = &e.error {
        return format!("{name}/{pid} {err}");
    }
    let mut text = format!("{name}/{pid} ");
    if let Some(ch) = chunk.filter(|ch| ch.read_any) {
        text += &plural(ch.messages, "msg");
        if let Some(a) = ch.first_seq {
            text += &format!(" seq {a}..{}", opt(ch.last_seq));
        }
    } else {
        text += "no data";
    }
    text += &format!(" hw {}", opt(e.high_watermark));
    if partial {
        text += " +partial bundle";
    }
    text
}

// -- the others ----------------------------------------------------------------------------

fn topic(c: &mut Cursor<'_>, f: &mut Frame) -> Res<String> {
    let (t, sp) = str8(c, "topic length", "topic")?;
    f.fields.set_span("topic", Value::Str(t.clone()), sp);
    Ok(t)
}

fn discover_partitions(c: &mut Cursor<'_>, f: &mut Frame, st: &mut DecodeState<'_>) -> Res {
    let rid = request_id(c, f)?;
    let req = st.pair(f, key(C::DISCOVER_PARTITIONS, rid));
    let asked: Vec<u16> = req
        .as_ref()
        .and_then(|r| {
            r.borrow()
                .context_ref::<DiscoverContext>()
                .map(|d| d.partitions.clone())
        })
        .unwrap_or_default();
    let topic = topic(c, f)?;
    let p = c.pos;
    let count = c.u16le("partitions count")?;
    f.fields.set_span("count", int(count), c.span(p));
    if count == 0 {
        set_error(f, C::UNKNOWN_TOPIC_CODE, "unknown_topic");
        f.summary = format!("req {rid} {topic} unknown_topic");
        return Ok(());
    }
    f.fields.set("partitions", Value::List(Vec::new()));
    let mut parts: Vec<Fields> = Vec::new();
    let mut items: Vec<String> = Vec::new();
    let limit = if asked.is_empty() {
        usize::from(count)
    } else {
        asked.len()
    };
    // TANK writes `count` = all partitions but loops over the enabled ones: stop when bytes end.
    let r = (|| -> Res {
        while parts.len() < limit && c.left() > 0 {
            let i = parts.len();
            let pid = if asked.is_empty() {
                i as i64
            } else {
                i64::from(asked[i])
            };
            let mut e = Fields::new();
            e.set("partition", Value::Int(pid));
            let p = c.pos;
            let first = c.u64le("first available seqnum")?;
            let p2 = c.pos;
            let hw = c.u64le("high-water mark")?;
            let item;
            if first == C::NO_SEQ && hw == C::NO_SEQ {
                let p = c.pos;
                let reason = c.u8("reason")?;
                let name = named(C::discover_partition_reason(reason), "reason_", reason);
                e.set_span("error_code", int(reason), c.span(p));
                e.set_span("error", Value::Str(name.to_string()), c.span(p));
                if reason == C::OTHER_LEADER {
                    let (v, sp) = endpoint(c, "leader address", "leader port")?;
                    e.set_span("leader", v, sp);
                }
                item = format!("{topic}/{pid} {name}");
                set_error(f, i32::from(reason), name);
            } else {
                e.set_span(
                    "first_available_seqnum",
                    Value::UInt(first),
                    Some(Span::new(p, p2)),
                );
                e.set_span("high_watermark", Value::UInt(hw), c.span(p2));
                item = format!("{topic}/{pid} {first}..{hw}");
            }
            parts.push(e);
            items.push(item);
        }
        Ok(())
    })();
    f.fields.set(
        "partitions",
        Value::List(parts.into_iter().map(Value::Map).collect()),
    );
    r?;
    f.summary = format!(
        "req {rid} {}: {}",
        plural(u64::from(count), "partition"),
        join_items(&items)
    );
    ok_unless_error(f);
    Ok(())
}

fn error_byte(
    c: &mut Cursor<'_>,
    f: &mut Frame,
    table: fn(u8) -> Option<&'static str>,
) -> Res<Cow<'static, str>> {
    let p = c.pos;
    let code = c.u8("error")?;
    let name = named(table(code), "error_", code);
    f.fields.set_span("error_code", int(code), c.span(p));
    f.fields
        .set_span("error", Value::Str(name.to_string()), c.span(p));
    f.error_code = Some(i32::from(code));
    f.error = (code != 0).then(|| name.clone());
    Ok(name)
}

fn create_topic(c: &mut Cursor<'_>, f: &mut Frame, st: &mut DecodeState<'_>) -> Res {
    let rid = request_id(c, f)?;
    st.pair(f, key(C::CREATE_TOPIC, rid));
    let topic = topic(c, f)?;
    let name = error_byte(c, f, C::create_topic_error)?;
    f.summary = format!("req {rid} {topic} {name}");
    Ok(())
}

fn reload_conf(c: &mut Cursor<'_>, f: &mut Frame, st: &mut DecodeState<'_>) -> Res {
    let rid = request_id(c, f)?;
    st.pair(f, key(C::RELOAD_CONF, rid));
    let topic = topic(c, f)?;
    let p = c.pos;
    let pid = c.u16le("partition")?;
    f.fields.set_span("partition", int(pid), c.span(p));
    let name = error_byte(c, f, C::reload_conf_error)?;
    f.summary = format!("req {rid} {topic}/{pid} {name}");
    Ok(())
}

fn u32_field(
    c: &mut Cursor<'_>,
    f: &mut Frame,
    name: &'static str,
    what: &'static str,
) -> Res<u32> {
    let p = c.pos;
    let v = c.u32le(what)?;
    f.fields.set_span(name, int(v), c.span(p));
    Ok(v)
}

fn u8_field(c: &mut Cursor<'_>, f: &mut Frame, name: &'static str, what: &'static str) -> Res<u8> {
    let p = c.pos;
    let v = c.u8(what)?;
    f.fields.set_span(name, int(v), c.span(p));
    Ok(v)
}

fn status(c: &mut Cursor<'_>, f: &mut Frame, st: &mut DecodeState<'_>) -> Res {
    let rid = request_id(c, f)?;
    st.pair(f, key(C::STATUS, rid));
    u8_field(c, f, "global_flags", "global flags")?;
    let p = c.pos;
    let cluster = c.u8("cluster aware")? != 0;
    f.fields
        .set_span("cluster_aware", Value::Bool(cluster), c.span(p));
    let topics = u32_field(c, f, "topics", "topics")?;
    let partitions = u32_field(c, f, "partitions", "partitions")?;
    if cluster {
        u8_field(c, f, "cluster_flags", "cluster flags")?;
        let (name, sp) = str8(c, "cluster name length", "cluster name")?;
        f.fields.set_span("cluster_name", Value::Str(name), sp);
        u32_field(c, f, "available_nodes", "available nodes")?;
    }
    let mut release = String::new();
    if c.left() > 0 {
        // Older brokers stop before these.
        u32_field(c, f, "open_partitions", "open partitions")?;
        u32_field(c, f, "open_partitions_time", "open partitions time")?;
        u32_field(c, f, "startup_time", "startup time")?;
        let v = u32_field(c, f, "tank_version", "TANK version")?;
        let r = format!("{}.{}", v / 100, v % 100);
        f.fields.set("tank_release", Value::Str(r.clone()));
        release = format!(" TANK {r}");
    }
    f.summary = format!(
        "req {rid} {} {}{release}",
        plural(u64::from(topics), "topic"),
        plural(u64::from(partitions), "partition")
    );
    Ok(())
}

fn discover_topics(c: &mut Cursor<'_>, f: &mut Frame, st: &mut DecodeState<'_>) -> Res {
    let rid = request_id(c, f)?;
    st.pair(f, key(C::DISCOVER_TOPICS, rid));
    let count = c.u32le("topic count")?;
    let p = c.pos;
    let cluster = c.u8("cluster aware")? != 0;
    f.fields
        .set_span("cluster_aware", Value::Bool(cluster), c.span(p));
    f.fields.set("topics", Value::List(Vec::new()));
    let mut topics = Vec::new();
    let mut items = Vec::new();
    let r = (|| -> Res {
        for _ in 0..count {
            let mut t = Fields::new();
            let (name, sp) = str8(c, "topic name length", "topic name")?;
            t.set_span("name", Value::Str(name.clone()), sp);
            let p = c.pos;
            let enabled = c.u8("enabled")? != 0;
            t.set_span("enabled", Value::Bool(enabled), c.span(p));
            let p = c.pos;
            let parts = c.u16le("partitions")?;
            t.set_span("partitions", int(parts), c.span(p));
            if cluster {
                let p = c.pos;
                let rf = c.u8("replication factor")?;
                t.set_span("replication_factor", int(rf), c.span(p));
            }
            topics.push(Value::Map(t));
            items.push(format!("{name}({parts})"));
        }
        Ok(())
    })();
    f.fields.set("topics", Value::List(topics));
    r?;
    f.summary = format!(
        "req {rid} {}: {}",
        plural(u64::from(count), "topic"),
        join_items(&items)
    );
    Ok(())
}

fn discover_topology(c: &mut Cursor<'_>, f: &mut Frame, st: &mut DecodeState<'_>) -> Res {
    let rid = request_id(c, f)?;
    st.pair(f, key(C::DISCOVER_TOPOLOGY, rid));
    let count = c.u16le("node count")?;
    if count == 0xFFFF {
        f.fields.set("cluster", Value::Bool(false));
        f.summary = format!("req {rid} not a cluster");
        return Ok(());
    }
    f.fields.set("cluster", Value::Bool(true));
    let (cluster, sp) = str8(c, "cluster name length", "cluster name")?;
    f.fields
        .set_span("cluster_name", Value::Str(cluster.clone()), sp);
    f.fields.set("nodes", Value::List(Vec::new()));
    let mut nodes = Vec::new();
    let r = (|| -> Res {
        for _ in 0..count {
            let mut n = Fields::new();
            let p = c.pos;
            let id = c.u16le("node id")?;
            n.set_span("id", int(id), c.span(p));
            let p = c.pos;
            let flags = c.u8("node flags")?;
            let fs = c.span(p);
            n.set_span("flags", int(flags), fs);
            n.set_span("available", Value::Bool(flags & 2 != 0), fs);
            n.set_span("blocked", Value::Bool(flags & 4 != 0), fs);
            if flags & 1 != 0 {
                let (v, sp) = endpoint(c, "endpoint address", "endpoint port")?;
                n.set_span("endpoint", v, sp);
            }
            let p = c.pos;
            let rf = c.u16le("replica-for count")?;
            n.set_span("replica_for", int(rf), c.span(p));
            nodes.push(Value::Map(n));
        }
        Ok(())
    })();
    f.fields.set("nodes", Value::List(nodes));
    r?;
    f.summary = format!(
        "req {rid} cluster {cluster} {}",
        plural(u64::from(count), "node")
    );
    Ok(())
}
