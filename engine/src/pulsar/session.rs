//! Per-connection Pulsar decoding: framing, commands, messages, pairing (the twin of
//! `session.py`).
//!
//! A frame is `[totalSize u32][commandSize u32][BaseCommand]`, and for SEND/MESSAGE the payload
//! section after it (see [`super::payload`]). The session remembers what the connection
//! registered (producer_id → topic, consumer_id → topic and subscription, the frame size the
//! broker allows) so that every message can name its topic, and it pairs requests with
//! responses through the connection's correlator.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::rc::Rc;

use crate::correlation::Key;
use smallvec::smallvec;

use crate::model::{
    Anomaly, Direction, Field, Fields, Frame, FrameRef, Frames, Kind, Message, Role, Span, Status,
    Value,
};
use crate::protocol::{ConnCtx, FrameLen, Session};

use super::chunks::{ChunkAssembler, ChunkKey};
use super::describe::{self, Extra};
use super::pairing::Pairing;
use super::partitions;
use super::payload;
use super::proto::{self, msg, Msg, PV};
use super::schema::{
    code, command_field, message_id_str, raw_type, server_error, signed64, type_name,
};
use super::PROTOCOL;

const MIB: u64 = 1024 * 1024;
pub const DEFAULT_MAX_MESSAGE_SIZE: u64 = 5 * MIB;
/// Brokers and clients accept a totalSize up to max_message_size + 10 KiB (Netty frame decoder).
pub const FRAME_PADDING: u64 = 10 * 1024;
/// Beyond this nothing is ever buffered, whatever a CONNECTED advertised.
pub const HARD_MAX_FRAME: u64 = 128 * MIB;
/// Producers/consumers remembered per connection.
pub const MAX_TRACKED_IDS: usize = 65536;
/// A broken first frame of a direction up to this size waits for the next frame to confirm it.
pub const CONFIRM_WAIT: u64 = 16 * 1024;
/// Nesting depth for protobuf rendering (Python's `Limits.max_depth`).
const MAX_DEPTH: u32 = 16;

const HAPROXY_V2_SIGNATURE: &[u8] = b"\r\n\r\n\x00\r\nQUIT\n";

/// Largest frame (length prefix included) for a broker's max_message_size.
pub const fn max_frame_for(max_message_size: u64) -> u64 {
    4 + max_message_size + FRAME_PADDING
}

pub const DEFAULT_MAX_FRAME: u64 = max_frame_for(DEFAULT_MAX_MESSAGE_SIZE);

/// The partition a topic name ends with (`…-partition-3`).
pub fn partition_of(topic: Option<&str>) -> Option<i32> {
    let t = topic.filter(|t| !t.is_empty())?;
    // Python's `$` also matches before one final newline.
    let t = t.strip_suffix('\n').unwrap_or(t);
    let digits_start = t.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits_start == t.len() || !t[..digits_start].ends_with("-partition-") {
        return None;
    }
    t[digits_start..].parse().ok()
}

fn be32(d: &[u8], at: usize) -> u64 {
    match d.get(at..at + 4) {
        Some(b) => u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        None => 0,
    }
}

/// A map that forgets its oldest entries past a size (ids chosen by the peer are untrusted).
struct Bounded<K, V> {
    cap: usize,
    map: HashMap<K, (u64, V)>,
    order: VecDeque<(K, u64)>,
    gen: u64,
}

impl<K: Hash + Eq + Clone, V> Bounded<K, V> {
    fn new(cap: usize) -> Self {
        Bounded {
            cap,
            map: HashMap::new(),
            order: VecDeque::new(),
            gen: 0,
        }
    }

    fn put(&mut self, key: K, value: V) {
        self.gen += 1;
        self.map.insert(key.clone(), (self.gen, value));
        self.order.push_back((key, self.gen));
        while self.map.len() > self.cap {
            let Some((k, g)) = self.order.pop_front() else {
                break;
            };
            if self.map.get(&k).is_some_and(|e| e.0 == g) {
                self.map.remove(&k);
            }
        }
        if self.order.len() > 2 * self.cap.max(16) {
            let map = &self.map;
            self.order
                .retain(|(k, g)| map.get(k).is_some_and(|e| e.0 == *g));
        }
    }

    fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key).map(|e| &e.1)
    }

    fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.map.get_mut(key).map(|e| &mut e.1)
    }
}

struct Producer {
    topic: String,
    #[allow(dead_code)] // kept as Python keeps it (what the producer was named)
    producer_name: Option<String>,
}

struct Consumer {
    topic: String,
    subscription: String,
    #[allow(dead_code)]
    consumer_name: Option<String>,
    permits: i64,
    delivered: i64,
    acked: i64,
}

impl Consumer {
    fn view(&self) -> Value {
        let mut f = Fields::new();
        f.set("topic", Value::Str(self.topic.clone()));
        f.set("subscription", Value::Str(self.subscription.clone()));
        f.set("permits_granted", Value::Int(self.permits));
        f.set("messages_delivered", Value::Int(self.delivered));
        f.set("permits_left", Value::Int(self.permits - self.delivered));
        f.set("messages_acked", Value::Int(self.acked));
        Value::Map(f)
    }
}

/// What a Pulsar frame keeps for the session (Python's `f.context` dict).
#[derive(Debug, Default)]
pub struct FrameCtx {
    /// The raw BaseCommand type.
    pub t: Option<u128>,
    /// A chunk's MessageIdData as a string (first_chunk_message_id of the joined message).
    pub message_id: Option<String>,
}

/// The type codes the session branches on, looked up once.
struct Codes {
    connect: u128,
    connected: u128,
    auth_challenge: u128,
    auth_response: u128,
    ping: u128,
    pong: u128,
    error: u128,
    send: u128,
    send_receipt: u128,
    send_error: u128,
    message: u128,
    producer: u128,
    producer_success: u128,
    subscribe: u128,
    ack: u128,
    flow: u128,
    close_producer: u128,
    close_consumer: u128,
}

impl Codes {
    fn new() -> Codes {
        Codes {
            connect: code("CONNECT"),
            connected: code("CONNECTED"),
            auth_challenge: code("AUTH_CHALLENGE"),
            auth_response: code("AUTH_RESPONSE"),
            ping: code("PING"),
            pong: code("PONG"),
            error: code("ERROR"),
            send: code("SEND"),
            send_receipt: code("SEND_RECEIPT"),
            send_error: code("SEND_ERROR"),
            message: code("MESSAGE"),
            producer: code("PRODUCER"),
            producer_success: code("PRODUCER_SUCCESS"),
            subscribe: code("SUBSCRIBE"),
            ack: code("ACK"),
            flow: code("FLOW"),
            close_producer: code("CLOSE_PRODUCER"),
            close_consumer: code("CLOSE_CONSUMER"),
        }
    }

    fn is_payload(&self, t: u128) -> bool {
        t == self.send || t == self.message
    }
}

/// The session knowledge a decode gathers beside the command (Python's `extra`).
#[derive(Default)]
struct Ext {
    line: Extra,
    request: Option<FrameRef>,
}

pub struct PulsarSession {
    max_frame: u64,
    started: [bool; 2],
    protocol_version: Option<i64>,
    producers: Bounded<u64, Producer>,
    consumers: Bounded<u64, Consumer>,
    /// (consumer_id, ledger, entry) → the MESSAGE frame that delivered it, for acks.
    deliveries: Bounded<(u64, u64, u64), FrameRef>,
    chunks: ChunkAssembler,
    show_secrets: bool,
    pairing: Pairing,
    c: Codes,
}

fn idx(role: Role) -> usize {
    match role {
        Role::Client => 0,
        Role::Server => 1,
    }
}

fn key(parts: Vec<Key>) -> Key {
    Key::Tuple(parts)
}

fn role_key(tag: &'static str, role: Role) -> Key {
    key(vec![Key::Str(tag), Key::Str(role.as_str())])
}

impl PulsarSession {
    pub fn new(ctx: &ConnCtx) -> PulsarSession {
        let max_bytes = ctx.limits.borrow().max_decompressed.min(64 * MIB);
        PulsarSession {
            max_frame: DEFAULT_MAX_FRAME,
            started: [false, false],
            protocol_version: None,
            producers: Bounded::new(MAX_TRACKED_IDS),
            consumers: Bounded::new(MAX_TRACKED_IDS),
            deliveries: Bounded::new(MAX_TRACKED_IDS),
            chunks: ChunkAssembler::new(max_bytes),
            show_secrets: ctx.options.show_secrets,
            pairing: Pairing::default(),
            c: Codes::new(),
        }
    }

    /// The protocol version the client's CONNECT announced.
    pub fn protocol_version(&self) -> Option<i64> {
        self.protocol_version
    }

    // -- framing -------------------------------------------------------------------------

    fn oversize(&self, ctx: &mut ConnCtx, role: Role, n: u64) {
        ctx.report(Anomaly::new(
            "oversize_frame",
            format!(
                "{} frame declares {n} bytes, over the {} this connection allows (max_message_size + {FRAME_PADDING} + 4)",
                role.as_str(),
                self.max_frame
            ),
        ));
    }

    /// A BaseCommand that parses and holds the message its type names.
    fn command_checks_out(raw: &[u8]) -> bool {
        let Some(base) = proto::parse(msg::BaseCommand, raw, 0) else {
            return false;
        };
        let t = raw_type(raw).unwrap_or(0);
        matches!(command_field(t), Some(f) if base.has(f))
    }

    fn plausible(&self, buf: &[u8], i: usize) -> bool {
        let total = be32(buf, i);
        let cmd = be32(buf, i + 4);
        if !(6..=self.max_frame.saturating_sub(4)).contains(&total) || cmd < 2 || cmd > total - 4 {
            return false;
        }
        let end = i + 8 + cmd as usize;
        if end > buf.len() {
            // Cannot parse it yet: every known encoder writes the type first (08 <type>).
            return buf.get(i + 8) == Some(&0x08)
                && buf
                    .get(i + 9)
                    .is_some_and(|&b| type_name(u128::from(b)).is_some())
                && cmd <= 64 * 1024;
        }
        Self::command_checks_out(&buf[i + 8..end])
    }

    fn first_unplausible(&mut self, ctx: &mut ConnCtx, buf: &[u8], role: Role) -> FrameLen {
        let total = be32(buf, 0);
        let n = total + 4;
        if n > self.max_frame {
            let cmd = be32(buf, 4);
            if !(2..=64 * 1024).contains(&cmd) || buf.get(8) != Some(&0x08) {
                return FrameLen::NotAFrame;
            }
            let end = 8 + cmd as usize;
            if end > buf.len() {
                return FrameLen::NeedMore;
            }
            if !Self::command_checks_out(&buf[8..end]) {
                return FrameLen::NotAFrame;
            }
            if n <= HARD_MAX_FRAME {
                self.oversize(ctx, role, n);
                return FrameLen::NotAFrame;
            }
            return FrameLen::Len(n); // the engine reports it against its own ceiling
        }
        if total < 4 {
            return FrameLen::NotAFrame;
        }
        let nxt = n as usize;
        if nxt + 10 > buf.len() {
            // Wait for the next frame only for a small first frame: bytes of a capture begun
            // mid-connection must not hold this direction back (its answers would overtake it).
            return if n <= CONFIRM_WAIT {
                FrameLen::NeedMore
            } else {
                FrameLen::NotAFrame
            };
        }
        if !self.plausible(buf, nxt) {
            return FrameLen::NotAFrame;
        }
        self.started[idx(role)] = true;
        FrameLen::Len(n)
    }

    /// Length of an HAProxy PROXY header at the head of `buf`, or 0 (not one, or not yet whole:
    /// the reference's NEED_MORE is 0 too, so a partial header is framed as a command would be).
    fn proxy_header_length(buf: &[u8]) -> u64 {
        let avail = buf.len();
        if buf.starts_with(b"PROXY ") {
            let win = &buf[..avail.min(108)];
            return match win.windows(2).position(|w| w == b"\r\n") {
                Some(end) => end as u64 + 2,
                None => 0,
            };
        }
        if avail < 16 {
            return 0;
        }
        if &buf[..12] == HAPROXY_V2_SIGNATURE {
            return 16 + u64::from(u16::from_be_bytes([buf[14], buf[15]]));
        }
        0
    }

    // -- decoding ------------------------------------------------------------------------

    fn proxy_frame(data: &[u8]) -> Frame {
        let mut f = Frame::new(PROTOCOL, "PROXY_PROTOCOL", 0);
        if data.starts_with(b"PROXY ") {
            let end = data
                .iter()
                .rposition(|&b| b != b'\r' && b != b'\n')
                .map_or(0, |i| i + 1);
            let text: String = data[..end]
                .iter()
                .map(|&b| if b < 0x80 { b as char } else { '\u{fffd}' })
                .collect();
            f.fields.set("version", Value::Int(1));
            f.fields.set("header", Value::Str(text.clone()));
            f.summary = text;
        } else {
            f.fields.set("version", Value::Int(2));
            f.fields.set("length", Value::Int(data.len() as i64));
            f.summary = format!("PROXY protocol v2 header ({} bytes)", data.len());
        }
        f
    }

    fn name(f: &mut Frame, raw_t: Option<u128>) {
        let Some(t) = raw_t else {
            return;
        };
        f.type_code = if t < 1 << 31 { t as i64 } else { -1 };
        f.type_ = match type_name(t) {
            Some(n) => Cow::Borrowed(n),
            None => Cow::Owned(format!("UNKNOWN_{t}")),
        };
    }

    /// Keeps credentials out of hex dumps too: the frame's bytes with auth data starred out.
    fn mask_raw(&self, f: &mut Frame, data: &[u8], sub: &Msg) {
        if self.show_secrets {
            return;
        }
        let mut secrets: Vec<&[u8]> = Vec::new();
        for name in proto::SECRET_FIELDS {
            if sub.has(name) {
                secrets.push(sub.raw(name));
            }
        }
        for holder in ["challenge", "response"] {
            if let Some(inner) = sub.msg(holder) {
                if inner.has("auth_data") {
                    secrets.push(inner.raw("auth_data"));
                }
            }
        }
        let mut masked: Option<Vec<u8>> = None;
        for s in secrets {
            if s.is_empty() {
                continue;
            }
            let cur = masked.as_deref().unwrap_or(data);
            if let Some(out) = replace_all(cur, s) {
                masked = Some(out);
            }
        }
        if masked.is_some() {
            f.data = masked;
        }
    }

    fn ids(&self, f: &mut Frame, sub: &Msg, extra: &mut Ext) {
        if sub.field_index("request_id").is_some() && sub.has("request_id") {
            let id = signed64(sub.uint("request_id"));
            f.correlation_id = Some(id);
            extra.line.request_id = Some(id);
        } else if sub.field_index("sequence_id").is_some() && sub.has("sequence_id") {
            f.correlation_id = Some(signed64(sub.uint("sequence_id")));
        }
        for name in ["error", "error_code"] {
            if sub.field_index(name).is_some() && sub.has(name) {
                let c = sub.int(name);
                f.error_code = Some(c as i32);
                f.error = Some(match server_error(c) {
                    Some(n) => Cow::Borrowed(n),
                    None => Cow::Owned(c.to_string()),
                });
                break;
            }
        }
    }

    fn topic_of(&self, req: &Frame) -> Option<String> {
        let Some(Value::Map(cmd)) = req.fields.get("command") else {
            return None;
        };
        if let Some(Value::Str(t)) = cmd.get("topic") {
            if !t.is_empty() {
                return Some(t.clone());
            }
        }
        let id = |k: &str| match cmd.get(k) {
            Some(Value::UInt(u)) => Some(*u),
            Some(Value::Int(i)) => Some(*i as u64),
            _ => None,
        };
        if let Some(p) = id("producer_id").and_then(|p| self.producers.get(&p)) {
            return Some(p.topic.clone());
        }
        if let Some(c) = id("consumer_id").and_then(|c| self.consumers.get(&c)) {
            return Some(c.topic.clone());
        }
        None
    }

    /// The receipt tells the ledger:entry a SEND was stored at: name its messages with it.
    fn stamp_message_ids(send: &mut Frame, mid: &Msg) {
        let own = mid.int("partition");
        for m in send.messages.iter_mut() {
            let bi = match m.detail.as_ref().filter(|d| !d.is_empty()) {
                Some(d) => match d.get("batch_index") {
                    Some(Value::Int(i)) => Some(*i),
                    _ => None,
                },
                None => None,
            };
            m.message_id = Some(message_id_str(
                mid,
                Some(bi.unwrap_or(-1)),
                m.partition.map(i64::from),
            ));
            if m.partition.is_none() && own >= 0 {
                m.partition = Some(own as i32);
            }
        }
    }

    #[allow(clippy::too_many_lines)]
    fn pair(
        &mut self,
        ctx: &mut ConnCtx,
        fr: &FrameRef,
        role: Role,
        t: u128,
        sub: &Msg,
        extra: &mut Ext,
    ) {
        let c = &self.c;
        let other = role.other();
        let set_kind = |k: Kind| fr.borrow_mut().kind = k;
        let corr = &mut ctx.correlator;
        if self.pairing.is_request(t) {
            if t == c.ack && !sub.has("request_id") {
                set_kind(Kind::Event);
                return;
            }
            if (t == c.close_producer || t == c.close_consumer) && role == Role::Server {
                set_kind(Kind::Event); // broker-initiated close: nobody answers it
                return;
            }
            set_kind(Kind::Request);
            let k = key(vec![
                Key::Str("req"),
                Key::Str(role.as_str()),
                Key::Int(sub.uint("request_id") as i64),
            ]);
            corr.request(fr, k, true);
            return;
        }
        if self.pairing.is_response(t) {
            set_kind(Kind::Response);
            if t == c.producer_success
                && sub.has("producer_ready")
                && !sub.boolean("producer_ready")
            {
                return; // the real answer follows with producer_ready=true
            }
            let rid = sub.uint("request_id");
            let k = key(vec![
                Key::Str("req"),
                Key::Str(other.as_str()),
                Key::Int(rid as i64),
            ]);
            let pairing = &self.pairing;
            let fit = |r: &Frame| pairing.fits(t, r.context_ref::<FrameCtx>().and_then(|x| x.t));
            let req = corr.peek(&k, Some(&fit));
            if req.is_none() && t == c.error && rid == u64::MAX {
                let ck = role_key("connect", other);
                if corr.peek(&ck, None).is_some() {
                    extra.request = corr.response(fr, &ck, None);
                    return;
                }
            }
            let req = corr.response(fr, &k, Some(&fit));
            if let Some(req) = req {
                let topic = {
                    let r = req.borrow();
                    extra.line.answers = Some(r.type_.to_string());
                    self.topic_of(&r)
                };
                extra.request = Some(req);
                if let Some(topic) = topic {
                    extra.line.topic = Some(topic.clone());
                    fr.borrow_mut().fields.set("topic", Value::Str(topic));
                }
            }
            return;
        }
        if t == c.send {
            set_kind(Kind::Request);
            let k = key(vec![
                Key::Str("send"),
                Key::Str(role.as_str()),
                Key::Int(sub.uint("producer_id") as i64),
                Key::Int(sub.uint("sequence_id") as i64),
            ]);
            corr.request(fr, k, true);
            return;
        }
        if t == c.send_receipt || t == c.send_error {
            set_kind(Kind::Response);
            let pid = sub.uint("producer_id") as i64;
            let mut k = key(vec![
                Key::Str("send"),
                Key::Str(other.as_str()),
                Key::Int(pid),
                Key::Int(sub.uint("sequence_id") as i64),
            ]);
            if corr.peek(&k, None).is_none()
                && t == c.send_receipt
                && sub.has("highest_sequence_id")
            {
                let alt = key(vec![
                    Key::Str("send"),
                    Key::Str(other.as_str()),
                    Key::Int(pid),
                    Key::Int(sub.uint("highest_sequence_id") as i64),
                ]);
                if corr.peek(&alt, None).is_some() {
                    k = alt;
                }
            }
            let req = corr.response(fr, &k, None);
            if let Some(req) = req {
                if t == c.send_receipt && sub.has("message_id") {
                    let mid = sub.msg_or_empty("message_id");
                    Self::stamp_message_ids(&mut req.borrow_mut(), &mid);
                }
            }
            return;
        }
        if t == c.connect || t == c.auth_response {
            set_kind(Kind::Request);
            if t == c.auth_response && corr.peek(&role_key("auth", other), None).is_some() {
                set_kind(Kind::Response);
                corr.response(fr, &role_key("auth", other), None);
                return;
            }
            corr.request(fr, role_key("connect", role), true);
            return;
        }
        if t == c.connected {
            set_kind(Kind::Response);
            corr.response(fr, &role_key("connect", other), None);
            return;
        }
        if t == c.auth_challenge {
            if corr.peek(&role_key("connect", other), None).is_some() {
                set_kind(Kind::Response);
                corr.response(fr, &role_key("connect", other), None);
            } else {
                set_kind(Kind::Request); // auth refresh initiated by the broker
                corr.request(fr, role_key("auth", role), true);
            }
            return;
        }
        if t == c.ping {
            set_kind(Kind::Request);
            corr.request(fr, role_key("ping", role), true);
            return;
        }
        if t == c.pong {
            set_kind(Kind::Response);
            corr.response(fr, &role_key("ping", other), None);
            return;
        }
        if let Some(name) = self.pairing.session_request(t) {
            set_kind(Kind::Request);
            let k = key(vec![
                Key::Str("session"),
                Key::Int(t as i64),
                Key::Int(sub.uint(name) as i64),
            ]);
            corr.request(fr, k, true);
            return;
        }
        if let Some((name, req_t)) = self.pairing.session_response(t) {
            let k = key(vec![
                Key::Str("session"),
                Key::Int(req_t as i64),
                Key::Int(sub.uint(name) as i64),
            ]);
            if corr.peek(&k, None).is_some() {
                set_kind(Kind::Response);
                corr.response(fr, &k, None);
            }
            return;
        }
        set_kind(Kind::Event);
    }

    /// What the connection registers, and what frames learn from it.
    fn state(&mut self, f: &mut Frame, t: u128, sub: &Msg, extra: &mut Ext) {
        let c = &self.c;
        if t == c.connect {
            self.protocol_version = Some(sub.int("protocol_version"));
        } else if t == c.connected {
            if sub.has("max_message_size") && sub.int("max_message_size") > 0 {
                let m = sub.int("max_message_size") as u64;
                self.max_frame = max_frame_for(m).min(HARD_MAX_FRAME);
            }
            f.fields.set("max_frame", Value::Int(self.max_frame as i64));
        } else if t == c.producer {
            let name = sub.text("producer_name");
            self.producers.put(
                sub.uint("producer_id"),
                Producer {
                    topic: sub.text("topic").into_owned(),
                    producer_name: (!name.is_empty()).then(|| name.into_owned()),
                },
            );
        } else if t == c.producer_success {
            let pid = match &extra.request {
                Some(req) => {
                    let r = req.borrow();
                    if r.type_ == "PRODUCER" {
                        match r.fields.get("command") {
                            Some(Value::Map(cmd)) => match cmd.get("producer_id") {
                                Some(Value::UInt(u)) => Some(*u),
                                Some(Value::Int(i)) => Some(*i as u64),
                                _ => None,
                            },
                            _ => None,
                        }
                    } else {
                        None
                    }
                }
                None => None,
            };
            if let Some(p) = pid.and_then(|p| self.producers.get_mut(&p)) {
                p.producer_name = Some(sub.text("producer_name").into_owned());
                extra.line.topic = Some(p.topic.clone());
            }
        } else if t == c.subscribe {
            let name = sub.text("consumer_name");
            self.consumers.put(
                sub.uint("consumer_id"),
                Consumer {
                    topic: sub.text("topic").into_owned(),
                    subscription: sub.text("subscription").into_owned(),
                    consumer_name: (!name.is_empty()).then(|| name.into_owned()),
                    permits: 0,
                    delivered: 0,
                    acked: 0,
                },
            );
        } else if t == c.flow {
            if let Some(cn) = self.consumers.get_mut(&sub.uint("consumer_id")) {
                cn.permits += sub.int("messagePermits");
                extra.line.topic = Some(cn.topic.clone());
                f.fields.set("consumer", cn.view());
            }
        } else if t == c.ack {
            let cid = sub.uint("consumer_id");
            let ids = sub.list("message_id");
            if let Some(cn) = self.consumers.get_mut(&cid) {
                cn.acked += ids.len() as i64;
                f.fields.set("consumer", cn.view());
                extra.line.topic = Some(cn.topic.clone());
            }
            let mut delivered = Vec::new();
            for it in ids {
                if let PV::Msg(mid) = &it.val {
                    let k = (cid, mid.uint("ledgerId"), mid.uint("entryId"));
                    if let Some(fr) = self.deliveries.get(&k) {
                        let p = fr.borrow().packet;
                        if p != 0 {
                            delivered.push(Value::Int(p as i64));
                        }
                    }
                }
            }
            if !delivered.is_empty() {
                f.fields.set("delivered_in_packets", Value::List(delivered));
            }
        } else if t == c.send_receipt || t == c.send_error || t == c.close_producer {
            if let Some(p) = self.producers.get(&sub.uint("producer_id")) {
                extra.line.topic = Some(p.topic.clone());
                f.fields.set("topic", Value::Str(p.topic.clone()));
            }
        } else if t == c.close_consumer {
            if let Some(cn) = self.consumers.get(&sub.uint("consumer_id")) {
                extra.line.topic = Some(cn.topic.clone());
                f.fields.set("topic", Value::Str(cn.topic.clone()));
                f.fields.set("consumer", cn.view());
            }
        }
    }
}

/// `bytes.replace(needle, b"*" * len(needle))`: None when `needle` does not occur.
fn replace_all(hay: &[u8], needle: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    let mut last = 0;
    while i + needle.len() <= hay.len() {
        if &hay[i..i + needle.len()] == needle {
            let o = out.get_or_insert_with(|| Vec::with_capacity(hay.len()));
            o.extend_from_slice(&hay[last..i]);
            o.extend(std::iter::repeat_n(b'*', needle.len()));
            i += needle.len();
            last = i;
        } else {
            i += 1;
        }
    }
    let mut o = out?;
    o.extend_from_slice(&hay[last..]);
    Some(o)
}

impl Session for PulsarSession {
    fn frame_length(&mut self, ctx: &mut ConnCtx, buf: &[u8], role: Role) -> FrameLen {
        let avail = buf.len();
        let r = idx(role);
        if !self.started[r] {
            if avail < 3 {
                return FrameLen::NeedMore;
            }
            if buf[0] == 0x16 && buf[1] == 0x03 && buf[2] <= 0x04 {
                return FrameLen::Undecodable; // TLS (port 6651): nothing to decode without keys
            }
            let head = &buf[..avail.min(16)];
            let proxy_like = if head.len() >= 6 {
                head.starts_with(b"PROXY ")
            } else {
                b"PROXY ".starts_with(head)
            };
            if proxy_like || HAPROXY_V2_SIGNATURE.starts_with(&head[..head.len().min(12)]) {
                let n = Self::proxy_header_length(buf);
                if n > 0 {
                    return FrameLen::Len(n);
                }
            }
        }
        if avail < 4 {
            return FrameLen::NeedMore;
        }
        if !self.started[r] {
            // A capture may begin mid-connection: trust the first length only if a command
            // follows, or if the frame is broken inside but its framing is confirmed.
            if avail < 10 {
                return FrameLen::NeedMore;
            }
            if !self.plausible(buf, 0) {
                return self.first_unplausible(ctx, buf, role);
            }
        }
        let total = be32(buf, 0);
        if total < 4 {
            return FrameLen::NotAFrame;
        }
        let n = total + 4;
        if self.max_frame < n && n <= HARD_MAX_FRAME {
            // Over what this connection allows, yet under the engine's hard ceiling: say so.
            self.oversize(ctx, role, n);
            return FrameLen::NotAFrame;
        }
        self.started[r] = true;
        FrameLen::Len(n)
    }

    fn resync(&mut self, _ctx: &mut ConnCtx, buf: &[u8], _role: Role) -> Option<usize> {
        // Next offset where [size][size][08 type] starts a BaseCommand that parses.
        let end = buf.len();
        let mut j = 8;
        while j + 1 < end {
            let k = buf[j..end - 1].iter().position(|&b| b == 0x08)?;
            let at = j + k;
            if self.plausible(buf, at - 8) {
                return Some(at - 8);
            }
            j = at + 1;
        }
        None
    }

    fn decode(&mut self, ctx: &mut ConnCtx, data: &[u8], role: Role, complete: bool) -> Frames {
        if data.starts_with(b"PROXY ") || data.starts_with(HAPROXY_V2_SIGNATURE) {
            return smallvec![Self::proxy_frame(data).shared()];
        }
        let fr = Frame::new(PROTOCOL, "?", -1).shared();
        self.decode_into(ctx, &fr, data, role, complete);
        smallvec![fr]
    }

    fn close(&mut self, ctx: &mut ConnCtx) -> Vec<FrameRef> {
        for (key, seen, expected) in self.chunks.pending() {
            ctx.report(Anomaly::new(
                "chunk_incomplete",
                format!("chunked message {key}: only {seen} of {expected} chunks seen"),
            ));
        }
        Vec::new()
    }
}

impl PulsarSession {
    fn decode_into(
        &mut self,
        ctx: &mut ConnCtx,
        fr: &FrameRef,
        data: &[u8],
        role: Role,
        complete: bool,
    ) {
        let mut fm = fr.borrow_mut();
        let f = &mut *fm;
        f.role = role;
        f.context = Some(Box::new(FrameCtx::default()));
        if data.len() < 8 {
            f.flag(
                Status::Malformed,
                "malformed",
                format!("{} bytes cannot hold totalSize and commandSize", data.len()),
                Some(0),
            );
            return;
        }
        let total = be32(data, 0) as i64;
        let cmd_size = be32(data, 4) as i64;
        f.fields
            .set_span("total_size", Value::Int(total), Some(Span::new(0, 4)));
        f.fields
            .set_span("command_size", Value::Int(cmd_size), Some(Span::new(4, 8)));
        let cmd_end = (8 + cmd_size as usize).min(data.len());
        let cmd_bytes = &data[8..cmd_end];
        if cmd_size > total - 4 {
            Self::name(f, raw_type(cmd_bytes));
            f.flag(
                Status::Malformed,
                "malformed",
                format!(
                    "commandSize {cmd_size} does not fit in totalSize {total} (at most {})",
                    total - 4
                ),
                Some(4),
            );
            return;
        }
        if (cmd_bytes.len() as i64) < cmd_size {
            // Only when the frame was cut (complete=false).
            Self::name(f, raw_type(cmd_bytes));
            f.summary = format!("cut after {} of {} bytes", data.len(), total + 4);
            return;
        }
        let raw_t = raw_type(cmd_bytes);
        Self::name(f, raw_t);
        if let Some(cx) = f.context_mut::<FrameCtx>() {
            cx.t = raw_t;
        }
        let limit = ctx.limits.borrow().max_command_bytes;
        if cmd_size as u64 > limit {
            // Parsing it would cost a value per repeated entry (20M in a 120 MB ACK).
            let detail = format!(
                "{} command of {cmd_size} bytes is not decoded (limit {limit} bytes)",
                f.type_
            );
            f.note("command_limit", detail, Some(8));
            f.summary = format!("{cmd_size}-byte command, not decoded");
            return;
        }
        let Some(base) = proto::parse(msg::BaseCommand, cmd_bytes, 8) else {
            f.flag(
                Status::Malformed,
                "malformed",
                format!(
                    "BaseCommand does not parse: {}",
                    proto::parse_error(msg::BaseCommand)
                ),
                Some(8),
            );
            return;
        };
        let Some(t) = raw_t else {
            f.flag(
                Status::Malformed,
                "malformed",
                "BaseCommand has no type",
                Some(8),
            );
            return;
        };
        if type_name(t).is_none() {
            f.flag(
                Status::UnknownType,
                "unknown_type",
                format!("BaseCommand type {t} is not in PulsarApi.proto"),
                Some(8),
            );
            f.fields.set_span(
                "command_bytes",
                Value::Bytes(cmd_bytes.to_vec()),
                Some(Span::new(8, cmd_end)),
            );
            f.summary = format!("unknown command type {t}");
            return;
        }
        let field = command_field(t);
        let sub = match field.and_then(|n| base.msg(n)) {
            Some(s) => s,
            None => {
                let d = format!(
                    "{} command without its {} message",
                    f.type_,
                    field.unwrap_or("?")
                );
                f.flag(Status::Malformed, "malformed", d, Some(8));
                return;
            }
        };
        let missing = sub.missing_required();
        if !missing.is_empty() {
            let d = format!(
                "{} lacks required field(s): {}",
                f.type_,
                missing.join(", ")
            );
            f.flag(Status::Malformed, "malformed", d, Some(8));
        }
        let cmd = proto::to_dict(sub, self.show_secrets, 0, MAX_DEPTH);
        f.fields.0.push(Field {
            name: Cow::Borrowed("command"),
            value: Value::Map(cmd),
            span: Some(Span::new(8, cmd_end)),
        });
        self.mask_raw(f, data, sub);
        let mut extra = Ext::default();
        let rest = cmd_end;
        if self.c.is_payload(t) {
            if complete {
                drop(fm);
                self.payload(ctx, fr, data, rest, role, t, sub, &mut extra);
                fm = fr.borrow_mut();
            } else {
                extra.line.payload_line =
                    Some(format!("payload cut after {} bytes", data.len() - rest));
            }
        } else if data.len() > rest {
            let d = format!("{} bytes after a {} command", data.len() - rest, fm.type_);
            fm.flag(Status::Malformed, "malformed", d, Some(rest as u64));
        }
        self.ids(&mut fm, sub, &mut extra);
        drop(fm);
        self.pair(ctx, fr, role, t, sub, &mut extra);
        let mut f = fr.borrow_mut();
        self.state(&mut f, t, sub, &mut extra);
        let topic = partitions::topic_in(&f, &extra.line).or_else(|| self.topic_of(&f));
        f.partitions = partitions::of_frame(&f, topic.as_deref(), partition_of(topic.as_deref()));
        if f.summary.is_empty() {
            let cmd = match f.fields.get("command") {
                Some(Value::Map(m)) => m,
                _ => &Fields::new(),
            };
            f.summary = describe::line(&f.type_, cmd, &extra.line);
        }
    }

    #[allow(clippy::too_many_arguments, clippy::too_many_lines)]
    fn payload(
        &mut self,
        ctx: &mut ConnCtx,
        fr: &FrameRef,
        data: &[u8],
        start: usize,
        role: Role,
        t: u128,
        sub: &Msg,
        extra: &mut Ext,
    ) {
        let sec = payload::parse_section(data, start);
        let mut f = fr.borrow_mut();
        let bem = sec
            .broker_entry_metadata
            .as_ref()
            .map(|b| Value::Map(proto::to_dict(b, false, 0, MAX_DEPTH)));
        if let Some(b) = &bem {
            f.fields.set("broker_entry_metadata", b.clone());
        }
        let checksum_ok = sec.checksum_ok();
        if let Some(cs) = sec.checksum {
            f.fields.set("checksum", Value::Str(format!("{cs:08x}")));
            f.fields.set(
                "checksum_computed",
                match sec.checksum_computed {
                    Some(c) => Value::Str(format!("{c:08x}")),
                    None => Value::Null,
                },
            );
        }
        f.fields
            .set("checksum_ok", checksum_ok.map_or(Value::Null, Value::Bool));
        if checksum_ok == Some(false) {
            let d = format!(
                "CRC32C {:08x} on the wire, {:08x} computed",
                sec.checksum.unwrap_or(0),
                sec.checksum_computed.unwrap_or(0)
            );
            f.flag(
                Status::BadChecksum,
                "bad_checksum",
                d,
                Some(sec.metadata_offset as u64 - 4),
            );
        }
        // After the checksum: a corrupted frame's first status is bad_checksum.
        for (kind, detail, offset) in &sec.problems {
            f.flag(
                Status::Malformed,
                *kind,
                detail.clone(),
                Some(*offset as u64),
            );
        }
        let Some(meta) = &sec.metadata else {
            extra.line.payload_line = Some("payload section unreadable".into());
            return;
        };
        f.fields.set(
            "metadata",
            Value::Map(proto::to_dict(meta, self.show_secrets, 0, MAX_DEPTH)),
        );
        let body_all = &data[sec.payload.0..sec.payload.1];
        f.fields
            .set("payload_size", Value::Int(body_all.len() as i64));

        // Who and where.
        let is_msg = t == self.c.message;
        let (topic, direction, mid, who) = if !is_msg {
            let pid = sub.uint("producer_id");
            (
                self.producers.get(&pid).map(|p| p.topic.clone()),
                Direction::Produce,
                None,
                format!("producer_id={pid}"),
            )
        } else {
            let cid = sub.uint("consumer_id");
            (
                self.consumers.get(&cid).map(|c| c.topic.clone()),
                Direction::Deliver,
                Some(sub.msg_or_empty("message_id")),
                format!("consumer_id={cid}"),
            )
        };
        if let Some(tp) = topic.as_deref().filter(|t| !t.is_empty()) {
            f.fields.set("topic", Value::Str(tp.to_string()));
        }
        let mut partition = partition_of(topic.as_deref());
        if partition.is_none() {
            if let Some(m) = &mid {
                if m.int("partition") >= 0 {
                    partition = Some(m.int("partition") as i32);
                }
            }
        }

        // Chunks: hold until the last one, then decode the joined payload once.
        let mut body: Cow<[u8]> = Cow::Borrowed(body_all);
        let mut checksum_ok = checksum_ok;
        let mut chunk_note = String::new();
        let mut chunk_detail: Vec<(&'static str, Value)> = Vec::new();
        let uuid = meta.text("uuid").into_owned();
        let num_chunks = meta.int("num_chunks_from_msg");
        if meta.has("uuid") && num_chunks > 1 {
            let chunk_id = meta.int("chunk_id");
            let total_size = meta.int("total_chunk_msg_size");
            let mut ch = Fields::new();
            ch.set("uuid", Value::Str(uuid.clone()));
            ch.set("chunk_id", Value::Int(chunk_id));
            ch.set("num_chunks", Value::Int(num_chunks));
            ch.set("total_chunk_msg_size", Value::Int(total_size));
            f.fields.set("chunk", Value::Map(ch));
            let key = ChunkKey {
                role,
                consumer_id: is_msg.then(|| sub.uint("consumer_id")),
                producer_name: meta.text("producer_name").into_owned(),
                uuid: uuid.clone(),
            };
            if let Some(cx) = f.context_mut::<FrameCtx>() {
                cx.message_id = mid.as_ref().map(|m| message_id_str(m, None, None));
            }
            let (joined, problems) = self.chunks.add(
                key,
                chunk_id,
                num_chunks,
                total_size,
                &body,
                checksum_ok,
                fr,
            );
            for p in problems {
                f.add(Anomaly::new("chunk_incomplete", p));
            }
            let Some(joined) = joined else {
                let line = format!(
                    "{who} {} chunk {}/{num_chunks} of {uuid} ({} bytes)",
                    topic.as_deref().unwrap_or(""),
                    chunk_id + 1,
                    body.len()
                )
                .replace("  ", " ");
                extra.line.payload_line = Some(line);
                return;
            };
            if let Some(p) = &joined.problem {
                f.add(Anomaly::new(
                    "malformed",
                    format!("chunked message {uuid}: {p}"),
                ));
            }
            checksum_ok = joined.checksum_ok;
            let packets: Vec<Value> = joined
                .frames
                .iter()
                .filter(|x| !Rc::ptr_eq(x, fr))
                .map(|x| Value::Int(x.borrow().packet as i64))
                .collect();
            chunk_detail.push(("chunks", Value::Int(joined.chunks as i64)));
            chunk_detail.push(("uuid", Value::Str(uuid.clone())));
            chunk_detail.push(("chunk_packets", Value::List(packets)));
            if is_msg {
                let first = &joined.frames[0];
                let first_mid = if Rc::ptr_eq(first, fr) {
                    f.context_ref::<FrameCtx>()
                        .and_then(|c| c.message_id.clone())
                } else {
                    first
                        .borrow()
                        .context_ref::<FrameCtx>()
                        .and_then(|c| c.message_id.clone())
                };
                if let Some(m) = first_mid.filter(|m| !m.is_empty()) {
                    chunk_detail.push(("first_chunk_message_id", Value::Str(m)));
                }
            }
            chunk_note = format!(" joined from {} chunks", joined.chunks);
            body = Cow::Owned(joined.payload);
        }

        let mut unpacked = {
            let mut limits = ctx.limits.borrow_mut();
            let keep = limits.max_messages as usize;
            payload::unpack(meta, &body, &mut limits, keep)
        };
        let poff = Some(sec.payload_offset as u64);
        for (kind, detail) in &unpacked.problems {
            if *kind == "malformed" {
                f.flag(Status::Malformed, *kind, detail.clone(), poff);
            } else {
                f.add(Anomaly::new(*kind, detail.clone()).at(poff));
            }
        }
        let batched = meta.has("num_messages_in_batch");
        let batch_entries = batched && !unpacked.encrypted;
        f.fields.set(
            "batch_entries",
            if batch_entries {
                Value::Int(unpacked.read as i64)
            } else {
                Value::Null
            },
        );
        let (kept, total) = (unpacked.entries.len() as u64, unpacked.read as u64);
        if let Some(detail) = ctx.limits.borrow().over_messages(kept, total) {
            // Our cap: the status stays.
            f.add(Anomaly::new("message_limit", detail).at(poff));
            f.messages_counted += total - kept;
        }
        let singles: Vec<Option<Fields>> = unpacked
            .entries
            .iter()
            .map(|e| {
                e.single
                    .as_ref()
                    .map(|s| proto::to_dict(s, self.show_secrets, 0, MAX_DEPTH))
            })
            .collect();
        if batch_entries {
            let list = unpacked
                .entries
                .iter()
                .zip(&singles)
                .map(|(e, sd)| {
                    let mut m = Fields::new();
                    m.set("batch_index", e.batch_index.map_or(Value::Null, Value::Int));
                    m.set(
                        "single_metadata",
                        sd.clone().map_or(Value::Null, Value::Map),
                    );
                    m.set("value_size", Value::Int(e.value_size as i64));
                    Value::Map(m)
                })
                .collect();
            f.fields.set("entries", Value::List(list));
        }
        if unpacked.encrypted {
            f.fields.set("encrypted", Value::Bool(true));
        }
        if unpacked.compression.is_some() {
            f.fields.set(
                "decompressed_size",
                unpacked.size.map_or(Value::Null, |s| Value::Int(s as i64)),
            );
        }

        let mut base = Fields::new();
        base.set(
            "producer_name",
            Value::Str(meta.text("producer_name").into_owned()),
        );
        base.set("sequence_id", Value::UInt(meta.uint("sequence_id")));
        if meta.has("event_time") && meta.uint("event_time") != 0 {
            base.set("event_time", Value::UInt(meta.uint("event_time")));
        }
        if is_msg {
            base.set("redelivery_count", Value::Int(sub.int("redelivery_count")));
            base.set("consumer_id", Value::UInt(sub.uint("consumer_id")));
        } else {
            base.set("producer_id", Value::UInt(sub.uint("producer_id")));
        }
        if let Some(b) = &bem {
            base.set("broker_entry_metadata", b.clone());
        }
        if unpacked.encrypted {
            base.set("encrypted", Value::Bool(true));
            let algo = meta.text("encryption_algo");
            base.set(
                "encryption_algo",
                if algo.is_empty() {
                    Value::Null
                } else {
                    Value::Str(algo.into_owned())
                },
            );
        }
        if !unpacked.decompressed && !unpacked.encrypted {
            base.set("decompressed", Value::Bool(false));
        }
        for (k, v) in chunk_detail {
            base.set(k, v);
        }

        let publish = meta.uint("publish_time");
        let compression = unpacked.compression.map(Cow::Borrowed);
        for (e, sd) in unpacked.entries.iter_mut().zip(singles) {
            let mut detail = base.clone();
            let (key, props, null_value) = if let Some(s) = &e.single {
                detail.set("batch_index", e.batch_index.map_or(Value::Null, Value::Int));
                detail.set("single_metadata", sd.map_or(Value::Null, Value::Map));
                if s.has("sequence_id") {
                    detail.set("sequence_id", Value::UInt(s.uint("sequence_id")));
                } else if let Some(bi) = e.batch_index {
                    let v = i128::from(meta.uint("sequence_id")) + i128::from(bi);
                    detail.set("sequence_id", int128(v));
                }
                if s.has("event_time") && s.uint("event_time") != 0 {
                    detail.set("event_time", Value::UInt(s.uint("event_time")));
                }
                if s.has("ordering_key") {
                    detail.set("ordering_key", Value::Bytes(s.raw("ordering_key").to_vec()));
                }
                let null = s.boolean("null_value");
                if null {
                    detail.set("null_value", Value::Bool(true));
                }
                let key = if s.boolean("null_partition_key") {
                    None
                } else {
                    payload::key_of(
                        s.raw("partition_key"),
                        s.boolean("partition_key_b64_encoded"),
                    )
                };
                (key, s.list("properties"), null)
            } else {
                if meta.has("ordering_key") {
                    detail.set(
                        "ordering_key",
                        Value::Bytes(meta.raw("ordering_key").to_vec()),
                    );
                }
                let null = meta.boolean("null_value");
                if null {
                    detail.set("null_value", Value::Bool(true));
                }
                let key = if meta.boolean("null_partition_key") {
                    None
                } else {
                    payload::key_of(
                        meta.raw("partition_key"),
                        meta.boolean("partition_key_b64_encoded"),
                    )
                };
                (key, meta.list("properties"), null)
            };
            if e.single
                .as_ref()
                .is_some_and(|s| s.boolean("compacted_out"))
            {
                detail.set("compacted_out", Value::Bool(true));
            }
            let message_id = mid
                .as_ref()
                .map(|m| message_id_str(m, e.batch_index, partition.map(i64::from)));
            let headers: Vec<(String, Option<Vec<u8>>)> = props
                .iter()
                .filter_map(|it| match &it.val {
                    PV::Msg(kv) => {
                        Some((kv.text("key").into_owned(), Some(kv.raw("value").to_vec())))
                    }
                    _ => None,
                })
                .collect();
            // Moved, not copied: a message near the 128 MiB frame maximum would cost its
            // size once more (the entries are not read after this loop).
            let value = if null_value { None } else { e.value.take() };
            f.messages.push(Message {
                direction: Some(direction),
                value_size: e.value_size as i64,
                topic: topic.clone(),
                partition,
                message_id,
                key,
                value,
                timestamp_ms: (publish != 0).then_some(publish as i64),
                headers: (!headers.is_empty()).then_some(headers),
                compression: compression.clone(),
                checksum_ok,
                detail: Some(std::rc::Rc::new(detail)),
                ..Message::default()
            });
        }
        if is_msg {
            let m = mid
                .as_deref()
                .cloned()
                .unwrap_or_else(|| Msg::empty(msg::MessageIdData));
            let cid = sub.uint("consumer_id");
            drop(f);
            self.deliveries
                .put((cid, m.uint("ledgerId"), m.uint("entryId")), fr.clone());
            f = fr.borrow_mut();
            if let Some(cn) = self.consumers.get_mut(&cid) {
                cn.delivered += unpacked.read as i64;
                f.fields.set("consumer", cn.view());
            }
        }

        let n = unpacked.read;
        let mut parts = vec![who];
        if let Some(tp) = topic.as_deref().filter(|t| !t.is_empty()) {
            parts.push(tp.to_string());
        }
        match &mid {
            Some(m) => {
                let d = Value::Map(proto::to_dict(m, false, 0, MAX_DEPTH));
                parts.push(describe::mid(Some(&d)));
            }
            None => parts.push(format!("seq={}", sub.uint("sequence_id"))),
        }
        parts.push(format!(
            "{n} msg{} {} bytes{chunk_note}",
            if n != 1 { "s" } else { "" },
            unpacked.value_bytes
        ));
        if let Some(comp) = unpacked.compression {
            let out = match (unpacked.decompressed, unpacked.size) {
                (true, Some(s)) => s.to_string(),
                _ => "?".into(),
            };
            parts.push(format!("{comp} {}→{out}", body.len()));
        }
        if unpacked.encrypted {
            parts.push("encrypted".into());
        }
        if let Some(b) = &sec.broker_entry_metadata {
            parts.push(if b.has("index") {
                format!("broker_index={}", b.int("index"))
            } else {
                "broker-entry-metadata".into()
            });
        }
        match checksum_ok {
            Some(false) => parts.push("BAD CHECKSUM".into()),
            None => parts.push("unchecked".into()),
            Some(true) => {}
        }
        extra.line.payload_line = Some(parts.join(" "));
    }
}

/// A Python int that may pass 64 bits signed as the closest Value.
fn int128(v: i128) -> Value {
    if let Ok(i) = i64::try_from(v) {
        Value::Int(i)
    } else if let Ok(u) = u64::try_from(v) {
        Value::UInt(u)
    } else {
        Value::Int(v as i64)
    }
}

#[cfg(test)]
mod tests {
    //! Framing and decodes on frames built by hand from PulsarApi.proto's field numbers.
    use super::*;
    use crate::protocol::Protocol;

    /// `[total][cmd size][cmd]` with `rest` after the command.
    fn frame(cmd: &[u8], rest: &[u8]) -> Vec<u8> {
        let mut f = ((4 + cmd.len() + rest.len()) as u32).to_be_bytes().to_vec();
        f.extend((cmd.len() as u32).to_be_bytes());
        f.extend(cmd);
        f.extend(rest);
        f
    }

    // BaseCommand{type: CONNECT(2), connect(2): {client_version(1): "a", protocol_version(4): 20}}
    const CONNECT: &[u8] = &[0x08, 0x02, 0x12, 0x05, 0x0a, 0x01, b'a', 0x20, 0x14];
    // BaseCommand{type: SEND(6), send(6): {producer_id(1): 1, sequence_id(2): 7}}
    const SEND: &[u8] = &[0x08, 0x06, 0x32, 0x04, 0x08, 0x01, 0x10, 0x07];

    fn session() -> (PulsarSession, ConnCtx) {
        let ctx = ConnCtx::standalone(PROTOCOL, 1);
        (PulsarSession::new(&ctx), ctx)
    }

    #[test]
    fn frame_lengths() {
        let (mut s, mut ctx) = session();
        let f = frame(CONNECT, &[]);
        assert_eq!(f.len(), 17);
        assert_eq!(
            s.frame_length(&mut ctx, &f[..9], Role::Client),
            FrameLen::NeedMore
        );
        assert_eq!(
            s.frame_length(&mut ctx, &f, Role::Client),
            FrameLen::Len(17)
        );
        let tls = [0x16, 0x03, 0x01, 0x02, 0x00];
        assert_eq!(
            s.frame_length(&mut ctx, &tls, Role::Server),
            FrameLen::Undecodable
        );
        let proxy = b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\nxx";
        assert_eq!(
            s.frame_length(&mut ctx, proxy, Role::Server),
            FrameLen::Len(32)
        );
        // Once started, a frame over 5 MiB + 10 KiB + 4 is refused and reported.
        let mut big = frame(CONNECT, &[]);
        big[..4].copy_from_slice(&(6u32 << 20).to_be_bytes());
        assert_eq!(
            s.frame_length(&mut ctx, &big, Role::Client),
            FrameLen::NotAFrame
        );
        assert_eq!(
            ctx.reports[0].detail,
            "client frame declares 6291460 bytes, over the 5253124 this connection allows (max_message_size + 10240 + 4)"
        );
        // Garbage, then a frame: resync finds it.
        let mut buf = vec![0x08u8; 20];
        buf.extend(&f);
        assert_eq!(s.resync(&mut ctx, &buf, Role::Client), Some(20));
        assert_eq!(s.resync(&mut ctx, &buf[..20], Role::Client), None);
    }

    #[test]
    fn connect_decodes_and_waits_for_its_answer() {
        let (mut s, mut ctx) = session();
        let f = s.decode(&mut ctx, &frame(CONNECT, &[]), Role::Client, true);
        let f = f[0].borrow();
        assert_eq!(
            (f.type_.as_ref(), f.type_code, f.kind),
            ("CONNECT", 2, Kind::Request)
        );
        assert_eq!(f.status, Status::Ok);
        assert_eq!(f.summary, "a protocol v20 auth=none");
        let Some(Value::Map(cmd)) = f.fields.get("command") else {
            panic!("no command");
        };
        assert_eq!(cmd.get("client_version"), Some(&Value::Str("a".into())));
        assert_eq!(cmd.get("protocol_version"), Some(&Value::Int(20)));
        // The value "a" sits at byte 14 of the frame: 8 of framing, 08 02 12 05 0a 01.
        assert_eq!(cmd.0[0].span, Some(Span::new(14, 15)));
        assert!(f.awaiting);
    }

    #[test]
    fn send_with_checksum_and_metadata() {
        let (mut s, mut ctx) = session();
        // MessageMetadata{producer_name(1): "p", sequence_id(2): 7, publish_time(3): 1000}
        let meta = [0x0a, 0x01, b'p', 0x10, 0x07, 0x18, 0xe8, 0x07];
        let mut after = (meta.len() as u32).to_be_bytes().to_vec();
        after.extend(meta);
        after.extend(b"hi");
        let crc = crc32c::crc32c(&after);
        let mut rest = vec![0x0e, 0x01];
        rest.extend(crc.to_be_bytes());
        rest.extend(&after);
        let out = s.decode(&mut ctx, &frame(SEND, &rest), Role::Client, true);
        let f = out[0].borrow();
        assert_eq!((f.type_.as_ref(), f.status), ("SEND", Status::Ok));
        assert_eq!(f.correlation_id, Some(7));
        assert_eq!(f.fields.get("checksum_ok"), Some(&Value::Bool(true)));
        assert_eq!(f.fields.get("payload_size"), Some(&Value::Int(2)));
        assert_eq!(f.messages.len(), 1);
        let m = &f.messages[0];
        assert_eq!(m.value.as_deref(), Some(&b"hi"[..]));
        assert_eq!((m.timestamp_ms, m.checksum_ok), (Some(1000), Some(true)));
        assert_eq!(f.summary, "producer_id=1 seq=7 1 msg 2 bytes");
        drop(f);
        // The same frame with one payload byte changed fails its checksum.
        let mut bad = frame(SEND, &rest);
        let last = bad.len() - 1;
        bad[last] ^= 1;
        let out = s.decode(&mut ctx, &bad, Role::Client, true);
        let f = out[0].borrow();
        assert_eq!(f.status, Status::BadChecksum);
        assert!(f.summary.ends_with("BAD CHECKSUM"), "{}", f.summary);
    }

    #[test]
    fn broken_frames_are_frames_with_a_status() {
        let (mut s, mut ctx) = session();
        let short = s.decode(&mut ctx, &[0, 0, 0, 1], Role::Client, true);
        assert_eq!(short[0].borrow().status, Status::Malformed);
        let mut f = frame(CONNECT, &[]);
        f[7] = 200; // commandSize over totalSize
        let out = s.decode(&mut ctx, &f, Role::Client, true);
        let a = &out[0].borrow().anomalies[0];
        assert_eq!(
            a.detail,
            "commandSize 200 does not fit in totalSize 13 (at most 9)"
        );
        let unknown = s.decode(&mut ctx, &frame(&[0x08, 0x7f], &[]), Role::Client, true);
        assert_eq!(unknown[0].borrow().status, Status::UnknownType);
        assert_eq!(unknown[0].borrow().type_, "UNKNOWN_127");
    }

    #[test]
    fn partitions_from_topic_names() {
        assert_eq!(
            partition_of(Some("persistent://a/b/t-partition-3")),
            Some(3)
        );
        assert_eq!(partition_of(Some("persistent://a/b/t")), None);
        assert_eq!(partition_of(Some("t-partition-")), None);
        assert_eq!(super::super::Pulsar.max_frame(), 128 * MIB);
    }
}
