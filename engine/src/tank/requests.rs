//! Decoders for what clients (and replicating brokers) send to a TANK broker (the twin of
//! `protocols/tank/requests.py`).
//!
//! Each decoder reads the payload after the 5-byte header with a bounds-checked cursor, fills the
//! frame's fields (each with the span it was read from), summary and correlation id as soon as it
//! is known (so a cut frame still pairs), and keeps in the frame's context what the response will
//! need. A decoder that stops early leaves every field it read, as the reference does.

use super::bundles::decode_bundle;
use super::common::{
    bundle_fields, bundle_messages, int, join_items, plural, str8, ConsumeContext, DecodeState,
    DiscoverContext, ProduceContext, Res,
};
use super::constants as C;
use super::cursor::Cursor;
use crate::model::{Direction, Fields, Frame, Span, Value};

/// Clients ask for a wait of 2**32-1 ms (49.7 days: until data comes) or more to mean "no limit".
const WAIT_FOREVER: u64 = 0xFFFF_FFFF;

/// `250ms`, or `forever` for the no-limit values (a summary saying `4294967295ms` helps nobody).
fn wait_text(ms: u64) -> String {
    if ms >= WAIT_FOREVER {
        "forever".to_string()
    } else {
        format!("{ms}ms")
    }
}

/// A topic of a request while it is read: its name and its partition entries so far.
pub struct TopicB {
    pub name: String,
    pub span: Option<Span>,
    pub parts: Vec<Fields>,
    /// A Consume response's 0xFFFF marker in place of the partitions.
    pub unknown_topic: bool,
}

/// The `topics` list as the reference builds it (`{"name", "partitions": [...]}` each).
pub fn topics_value(topics: Vec<TopicB>) -> Value {
    Value::List(
        topics
            .into_iter()
            .map(|t| {
                let mut m = Fields::new();
                m.set_span("name", Value::Str(t.name), t.span);
                m.set(
                    "partitions",
                    Value::List(t.parts.into_iter().map(Value::Map).collect()),
                );
                if t.unknown_topic {
                    m.set("unknown_topic", Value::Bool(true));
                }
                Value::Map(m)
            })
            .collect(),
    )
}

/// Dispatches a request by message id; None for ids clients never send.
pub fn decode(
    msg_id: u8,
    c: &mut Cursor<'_>,
    f: &mut Frame,
    st: &mut DecodeState<'_>,
) -> Option<Res> {
    Some(match msg_id {
        C::PRODUCE | C::PRODUCE_WITH_SEQNUM => produce(c, f, st),
        C::CONSUME => consume(c, f),
        C::PING => ping(c, f, st),
        C::REG_REPLICA => reg_replica(c, f),
        C::DISCOVER_PARTITIONS => discover_partitions(c, f),
        C::CREATE_TOPIC => create_topic(c, f),
        C::RELOAD_CONF => reload_conf(c, f),
        C::CONSUME_PEER => consume_peer(c, f),
        C::STATUS => status(c, f),
        C::DISCOVER_TOPICS | C::DISCOVER_TOPOLOGY => discover_with_flags(c, f),
        _ => return None,
    })
}

/// Reads the request id into the frame (field, correlation id).
pub fn request_id(c: &mut Cursor<'_>, f: &mut Frame) -> Res<u32> {
    let p = c.pos;
    let rid = c.u32le("request id")?;
    f.correlation_id = Some(i64::from(rid));
    f.fields.set_span("request_id", int(rid), c.span(p));
    Ok(rid)
}

fn client_version(c: &mut Cursor<'_>, f: &mut Frame) -> Res<u16> {
    let p = c.pos;
    let v = c.u16le("client version")?;
    f.version = Some(i32::from(v));
    f.fields.set_span("client_version", int(v), c.span(p));
    Ok(v)
}

fn client_id(c: &mut Cursor<'_>, f: &mut Frame) -> Res {
    let (s, sp) = str8(c, "client id length", "client id")?;
    f.fields.set_span("client_id", Value::Str(s), sp);
    Ok(())
}

/// Produce (0x01) and ProduceWithSeqnum (0x05): one bundle per (topic, partition).
fn produce(c: &mut Cursor<'_>, f: &mut Frame, st: &mut DecodeState<'_>) -> Res {
    client_version(c, f)?;
    let rid = request_id(c, f)?;
    let mut ctx = ProduceContext {
        msg_id: f.type_code as u8,
        topics: Vec::new(),
    };
    let r = produce_rest(c, f, st, &mut ctx, rid);
    f.context = Some(Box::new(ctx));
    r
}

fn produce_rest(
    c: &mut Cursor<'_>,
    f: &mut Frame,
    st: &mut DecodeState<'_>,
    ctx: &mut ProduceContext,
    rid: u32,
) -> Res {
    client_id(c, f)?;
    let p = c.pos;
    let acks = c.u8("required acks")?;
    f.fields.set_span("required_acks", int(acks), c.span(p));
    let p = c.pos;
    let timeout = c.u32le("ack timeout")?;
    f.fields.set_span("ack_timeout_ms", int(timeout), c.span(p));
    let ntopics = c.u8("topics count")?;
    let mut topics = Vec::new();
    let mut items = Vec::new();
    let r = produce_topics(c, f, st, ctx, ntopics, &mut topics, &mut items);
    f.fields.set("topics", topics_value(topics));
    r?;
    f.summary = format!("req {rid} {}", join_items(&items));
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn produce_topics(
    c: &mut Cursor<'_>,
    f: &mut Frame,
    st: &mut DecodeState<'_>,
    ctx: &mut ProduceContext,
    ntopics: u8,
    topics: &mut Vec<TopicB>,
    items: &mut Vec<String>,
) -> Res {
    let with_seqnum = f.type_code == i64::from(C::PRODUCE_WITH_SEQNUM);
    for _ in 0..ntopics {
        let (name, span) = str8(c, "topic name length", "topic name")?;
        let nparts = c.u8("partitions count")?;
        topics.push(TopicB {
            name: name.clone(),
            span,
            parts: Vec::new(),
            unknown_topic: false,
        });
        ctx.topics.push((name.clone(), Vec::new()));
        for _ in 0..nparts {
            let p = c.pos;
            let pid = c.u16le("partition id")?;
            if let Some(t) = ctx.topics.last_mut() {
                t.1.push(pid);
            }
            let parts = &mut topics.last_mut().expect("pushed above").parts;
            let mut entry = Fields::new();
            entry.set_span("partition", int(pid), c.span(p));
            parts.push(entry);
            let entry = parts.last_mut().expect("pushed above");
            let p = c.pos;
            let blen = c.uvarint("bundle length", 5)?;
            entry.set_span("bundle_length", int(blen as i64), c.span(p));
            let mut first_seq = None;
            if with_seqnum {
                let p = c.pos;
                let s = c.u64le("first message seqnum")?;
                entry.set_span("first_seqnum", Value::UInt(s), c.span(p));
                first_seq = Some(s);
            }
            c.need(blen, "bundle")?;
            let blen = blen as usize;
            let mut bundle =
                decode_bundle(c.buf, c.pos, c.pos + blen, first_seq, st.limits, st.keep());
            st.count(&bundle);
            let bspan = Some(Span::new(c.pos, c.pos + blen));
            c.pos += blen;
            if st.batch_room() != 0 {
                entry.set_span("bundle", bundle_fields(&mut bundle), bspan);
            }
            st.batches += 1;
            st.problems.append(&mut bundle.problems);
            bundle_messages(f, &mut bundle, Direction::Produce, &name, pid, 0, None);
            let n = bundle.parsed;
            let seqs = match (n, bundle.first_seq, bundle.last_seq) {
                (1.., Some(a), Some(b)) => format!(" seq {a}..{b}"),
                (1.., Some(a), None) => format!(" seq {a}..None"),
                _ => String::new(),
            };
            let snappy = if bundle.codec == "snappy" {
                " snappy"
            } else {
                ""
            };
            items.push(format!("{name}/{pid} {}{seqs}{snappy}", plural(n, "msg")));
        }
    }
    Ok(())
}

fn seq_text(seq: u64) -> String {
    match seq {
        C::SEQ_FIRST => "first".to_string(),
        C::SEQ_TAIL => "tail".to_string(),
        s => s.to_string(),
    }
}

/// Consume (0x02): per (topic, partition) the sequence number to start from and a fetch size.
fn consume(c: &mut Cursor<'_>, f: &mut Frame) -> Res {
    let version = client_version(c, f)?;
    let rid = request_id(c, f)?;
    let mut ctx = ConsumeContext::default();
    let r = consume_rest(c, f, &mut ctx, version);
    let r = r.map(|max_wait| {
        f.summary = format!(
            "req {rid} {} max_wait {}",
            join_items(&requested_items(&ctx)),
            wait_text(max_wait)
        );
    });
    f.context = Some(Box::new(ctx));
    r
}

fn requested_items(ctx: &ConsumeContext) -> Vec<String> {
    ctx.order
        .iter()
        .map(|((t, p), s)| format!("{t}/{p}@{}", seq_text(*s)))
        .collect()
}

fn max_wait_and_min_bytes(c: &mut Cursor<'_>, f: &mut Frame) -> Res<u64> {
    let p = c.pos;
    let max_wait = c.u64le("max wait")?;
    f.fields
        .set_span("max_wait_ms", Value::UInt(max_wait), c.span(p));
    let p = c.pos;
    let min_bytes = c.u32le("min bytes")?;
    f.fields.set_span("min_bytes", int(min_bytes), c.span(p));
    Ok(max_wait)
}

fn consume_rest(
    c: &mut Cursor<'_>,
    f: &mut Frame,
    ctx: &mut ConsumeContext,
    version: u16,
) -> Res<u64> {
    client_id(c, f)?;
    let max_wait = max_wait_and_min_bytes(c, f)?;
    if version >= 3 {
        let p = c.pos;
        let flags = c.u8("op flags")?;
        f.fields.set_span("op_flags", int(flags), c.span(p));
        f.fields
            .set_span("prefer_local_node", Value::Bool(flags & 1 != 0), c.span(p));
    }
    consume_topics(c, &mut f.fields, ctx, false)?;
    Ok(max_wait)
}

/// The topics of a Consume (u8 counts) or ConsumePeer (u16 counts) request.
fn consume_topics(
    c: &mut Cursor<'_>,
    fields: &mut Fields,
    ctx: &mut ConsumeContext,
    wide: bool,
) -> Res {
    let ntopics = if wide {
        c.u16le("topics count")?
    } else {
        u16::from(c.u8("topics count")?)
    };
    let mut topics = Vec::new();
    let r = consume_topic_list(c, ctx, wide, ntopics, &mut topics);
    fields.set("topics", topics_value(topics));
    r
}

fn consume_topic_list(
    c: &mut Cursor<'_>,
    ctx: &mut ConsumeContext,
    wide: bool,
    ntopics: u16,
    topics: &mut Vec<TopicB>,
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
        let parts = &mut topics.last_mut().expect("pushed above").parts;
        for _ in 0..nparts {
            let p0 = c.pos;
            let pid = c.u16le("partition id")?;
            let p1 = c.pos;
            let seq = c.u64le("sequence number")?;
            let p2 = c.pos;
            let fetch = c.u32le("fetch size")?;
            let mut entry = Fields::new();
            entry.set_span("partition", int(pid), Some(Span::new(p0, p1)));
            entry.set_span("seqnum", Value::UInt(seq), Some(Span::new(p1, p2)));
            entry.set_span("fetch_size", int(fetch), c.span(p2));
            if seq == C::SEQ_FIRST || seq == C::SEQ_TAIL {
                let from = if seq == C::SEQ_FIRST {
                    "first_available"
                } else {
                    "tail"
                };
                entry.set("from", Value::Str(from.to_string()));
            }
            parts.push(entry);
            ctx.insert(name.clone(), pid, seq);
        }
    }
    Ok(())
}

/// ConsumePeer (0x09, broker to broker): like Consume with u16 counts and a replica id, no
/// request id.
fn consume_peer(c: &mut Cursor<'_>, f: &mut Frame) -> Res {
    let p = c.pos;
    let replica = c.u16le("replica id")?;
    f.fields.set_span("replica_id", int(replica), c.span(p));
    let max_wait = max_wait_and_min_bytes(c, f)?;
    let mut ctx = ConsumeContext::default();
    let r = consume_topics(c, &mut f.fields, &mut ctx, true);
    if r.is_ok() {
        f.summary = format!(
            "replica {replica} {} max_wait {}",
            join_items(&requested_items(&ctx)),
            wait_text(max_wait)
        );
    }
    f.context = Some(Box::new(ctx));
    r
}

/// Ping (0x03): the broker's greeting; no payload, no answer.
pub fn ping(c: &mut Cursor<'_>, f: &mut Frame, st: &mut DecodeState<'_>) -> Res {
    if c.left() > 0 {
        let p = c.pos;
        let rest = c.rest();
        let n = rest.len();
        f.fields
            .set_span("payload", Value::Bytes(rest.to_vec()), c.span(p));
        st.problems.push(super::bundles::malformed(
            format!("Ping carries {n} bytes; TANK sends none"),
            Some(5),
        ));
    }
    // The type says it all: a summary "Ping" would print "Ping  Ping".
    f.summary = String::new();
    Ok(())
}

/// RegReplica (0x04): obsolete (the docs' ReplicaIDReq); the current broker closes the connection.
fn reg_replica(c: &mut Cursor<'_>, f: &mut Frame) -> Res {
    let p = c.pos;
    let id = c.u16le("replica id")?;
    f.fields.set_span("replica_id", int(id), c.span(p));
    f.fields.set("obsolete", Value::Bool(true));
    f.summary = format!("replica {id} (obsolete message)");
    Ok(())
}

fn topic(c: &mut Cursor<'_>, f: &mut Frame) -> Res<String> {
    let (t, sp) = str8(c, "topic length", "topic")?;
    f.fields.set_span("topic", Value::Str(t.clone()), sp);
    Ok(t)
}

fn discover_partitions(c: &mut Cursor<'_>, f: &mut Frame) -> Res {
    let rid = request_id(c, f)?;
    let topic = topic(c, f)?;
    let start = c.pos;
    let mut ids = Vec::with_capacity(c.left() / 2);
    while c.left() >= 2 {
        ids.push(c.u16le("partition id")?);
    }
    if c.left() > 0 {
        c.u16le("partition id")?; // fails: one stray byte
    }
    if !ids.is_empty() {
        f.fields.set_span(
            "partitions",
            Value::List(ids.iter().map(|&i| int(i)).collect()),
            c.span(start),
        );
    }
    f.summary = if ids.is_empty() {
        format!("req {rid} {topic}")
    } else {
        let list: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
        format!("req {rid} {topic} partitions [{}]", list.join(", "))
    };
    f.context = Some(Box::new(DiscoverContext { partitions: ids }));
    Ok(())
}

fn create_topic(c: &mut Cursor<'_>, f: &mut Frame) -> Res {
    let rid = request_id(c, f)?;
    let topic = topic(c, f)?;
    let p = c.pos;
    let n = c.u16le("partitions")?;
    f.fields.set_span("partitions", int(n), c.span(p));
    let clen = c.uvarint("config length", 5)?;
    let p = c.pos;
    let config = c.take(clen as usize, "config")?;
    f.fields.set_span(
        "config",
        Value::Str(String::from_utf8_lossy(config).into_owned()),
        c.span(p),
    );
    let cfg = if clen != 0 {
        format!(" config {clen} bytes")
    } else {
        String::new()
    };
    f.summary = format!(
        "req {rid} {topic} {}{cfg}",
        plural(u64::from(n), "partition")
    );
    Ok(())
}

fn reload_conf(c: &mut Cursor<'_>, f: &mut Frame) -> Res {
    let rid = request_id(c, f)?;
    let topic = topic(c, f)?;
    let p = c.pos;
    let pid = c.u16le("partition")?;
    f.fields.set_span("partition", int(pid), c.span(p));
    f.summary = format!("req {rid} {topic}/{pid}");
    Ok(())
}

fn status(c: &mut Cursor<'_>, f: &mut Frame) -> Res {
    let rid = request_id(c, f)?;
    f.summary = format!("req {rid}");
    Ok(())
}

/// DiscoverTopics (0x0b) and DiscoverTopology (0x0c): request id and a flags byte (0).
fn discover_with_flags(c: &mut Cursor<'_>, f: &mut Frame) -> Res {
    let rid = request_id(c, f)?;
    if c.left() > 0 {
        let p = c.pos;
        let flags = c.u8("flags")?;
        f.fields.set_span("flags", int(flags), c.span(p));
    }
    f.summary = format!("req {rid}");
    Ok(())
}
