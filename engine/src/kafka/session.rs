//! Per-connection Kafka state: framing, headers, pairing, SASL tokens and TLS (the twin of
//! `wiredump/dissect/protocols/kafka/session.py`, same frames call for call).
//!
//! Kafka frames are `[int32 size][header][body]`. Requests name their API key and version;
//! responses carry only the correlation id, so a response is decoded with the key and version
//! of the request it pairs with. After SaslHandshake v0 the two sides exchange raw SASL tokens
//! without Kafka headers; a TLS listener on a Kafka port sends TLS records. Both are reported
//! for what they are instead of being decoded as garbage. Bodies are decoded by the one
//! schema-driven walker ([`super::body`]); nothing here is written per API beyond the few
//! APIs whose meaning changes the connection's state (SASL, acks=0 Produce, the consumer
//! protocol carried as bytes).

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

use super::body::{self, DecodeError, Field as BField, Value as BValue};
use super::fields::{self, computed};
use super::framing::{
    batch_tail, framed_request, i16_at, i32_at, newer_request, plausible_client_id,
    plausible_request, record_set, request_fits, tls_chain, tls_type, Verdict, MAX_FRAME,
};
use super::recordsets::{self, FrameStats, Hook};
use super::schema::{self, Plan};
use super::topics::{can_teach, get, TopicNames, Topics, RUN_KEY};
use super::{embedded, header, partitions, summary};
use crate::codecs::ELEMENT_LIMIT;
use crate::correlation::Key;
use crate::framing::INTERNAL_ERROR;
use smallvec::smallvec;

use crate::model::{
    Anomaly, Direction, Fields, Frame, FrameRef, Frames, Kind, Role, Span, Status, Value,
};
use crate::protocol::{ConnCtx, FrameLen, Session};

pub const PROTOCOL: &str = "kafka";
const SECRET_FIELDS: [&str; 4] = ["auth_bytes", "salted_password", "hmac", "salt"];
const SECRETS_BUT_AUTH: [&str; 3] = ["salted_password", "hmac", "salt"];
const MAX_GUESS_BYTES: usize = 1024 * 1024;
const GUESS_ALL_BELOW: usize = 4096;
const COMMON_APIS: [i16; 23] = [
    0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 18, 19, 20, 22, 32, 36, 17, 60, 68, 71, 72, 75,
];
/// Bytes of an undecodable response body kept in its fields (the answer to an unknown API).
const RAW_BODY_SHOWN: usize = 256;
/// While resynchronising, a frame up to this long is confirmed only once it is buffered whole.
const CONFIRM_WHOLE: i64 = 48 * 1024;
/// Responses without a captured request confirmed in a row by the confirmed frame after them.
const MAX_ORPHAN_CHAIN: u32 = 4;
/// acks=0 Produce requests remembered per connection, for a broker that answers them anyway.
const MAX_ACKS0: usize = 4096;

/// What a request frame keeps for its response: the (api key, version) it was sent with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestKey {
    pub api_key: i16,
    pub version: i16,
}

fn request_key(f: &Frame) -> Option<RequestKey> {
    f.context_ref::<RequestKey>().copied()
}

/// acks=0 Produce requests by correlation id, oldest first (an OrderedDict in the reference).
#[derive(Default)]
struct Acks0 {
    frames: HashMap<i32, FrameRef>,
    order: VecDeque<i32>,
}

impl Acks0 {
    fn contains(&self, corr: i32) -> bool {
        self.frames.contains_key(&corr)
    }

    fn get(&self, corr: i32) -> Option<FrameRef> {
        self.frames.get(&corr).cloned()
    }

    fn insert(&mut self, corr: i32, f: FrameRef) {
        if self.frames.insert(corr, f).is_none() {
            self.order.push_back(corr);
        }
        if self.frames.len() > MAX_ACKS0 {
            if let Some(old) = self.order.pop_front() {
                self.frames.remove(&old);
            }
        }
    }

    fn pop(&mut self, corr: i32) -> Option<FrameRef> {
        let f = self.frames.remove(&corr)?;
        if let Some(i) = self.order.iter().position(|c| *c == corr) {
            self.order.remove(i);
        }
        Some(f)
    }
}

/// What `body()` read: the body (or the part read before it stopped) and its record sets.
struct Body<'a> {
    tree: Vec<BField<'a>>,
    /// The reference's return value is not None: decoded whole, or cut and partial.
    usable: bool,
    sets: recordsets::Decoded,
}

/// One connection: framing state per direction, SASL/TLS state, layouts seen.
pub struct KafkaSession {
    tls: bool,
    tls_reported: bool,
    sasl_raw: bool,
    sasl_mechanism: Option<String>,
    handshakes: HashMap<i32, Option<String>>,
    /// (api key, version) of the requests seen, least recent first.
    seen: Vec<(i16, i16)>,
    last_seen: Option<(i16, i16)>,
    show_secrets: bool,
    /// False when no sink reads the records: records are checked, no messages made.
    messages: bool,
    /// Convert walked bodies into `Frame::fields` (see [`SessionOptions::detail`]).
    detail: bool,
    /// Keep messages' values (see [`SessionOptions::values`]).
    values: bool,
    /// Write bodies' `detail` text rather than their trees (see
    /// [`SessionOptions::detail_text`]).
    detail_text: bool,
    /// Framing a connection another worker decodes: the state is kept exactly as when
    /// decoding; records are not read and no frame is returned.
    observe: bool,
    synced: [bool; 2],
    raw_auth: Option<Vec<u8>>,
    acks0: Acks0,
    /// The run state's topic map (`RUN_KEY`: topic names learnt on any connection of the
    /// capture), held: looked up once, not for every frame.
    topics: Topics,
}

/// The first pending correlation id (responses come in request order).
fn min_pending(ctx: &ConnCtx) -> Option<i64> {
    ctx.correlator
        .pending_keys()
        .filter_map(|k| match k {
            Key::Int(i) => Some(*i),
            _ => None,
        })
        .min()
}

fn peek(ctx: &ConnCtx, corr: i32) -> Option<FrameRef> {
    ctx.correlator.peek(&Key::Int(corr.into()), None)
}

impl KafkaSession {
    pub fn new(ctx: &ConnCtx) -> KafkaSession {
        // The run's topic map exists from the first session on, so that every lookup reaches
        // it (and is counted: `TopicNames::looked_up`) rather than an empty stand-in.
        let topics = ctx.run_state.borrow_mut().entry::<Topics>(RUN_KEY).clone();
        KafkaSession {
            tls: false,
            tls_reported: false,
            sasl_raw: false,
            sasl_mechanism: None,
            handshakes: HashMap::new(),
            seen: Vec::new(),
            last_seen: None,
            show_secrets: ctx.options.show_secrets,
            messages: ctx.options.messages,
            detail: ctx.options.detail,
            values: ctx.options.values,
            detail_text: ctx.options.detail_text,
            observe: ctx.options.observe,
            synced: [false, false],
            raw_auth: None,
            acks0: Acks0::default(),
            topics,
        }
    }

    /// Is the connection TLS (a TLS record header was framed)?
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    fn with_topics<T>(&self, f: impl FnOnce(&mut TopicNames) -> T) -> T {
        f(&mut self.topics.borrow_mut())
    }

    /// Sets the frame's `body` field to the walked tree and its partitions from it. Not called
    /// for an observer's frames (never returned) nor, with `detail` off, for frames whose fields
    /// no sink reads.
    fn keep_body(
        &self,
        f: &mut Frame,
        api_key: i16,
        response: bool,
        tree: &[BField<'_>],
        sets: &mut recordsets::Decoded,
    ) {
        // The export's frames are read only for their tables: the body's text and partitions
        // are made from the walked tree, and the `body` placeholder `body()` set stays null.
        // Not for a JoinGroup or SyncGroup request, whose response reads `protocol_type` from
        // the request's body; nor past orjson's depth (never, with the walker's own limit).
        let text = self.detail_text && (response || !matches!(api_key, 11 | 14));
        if text && f.fields.get("body").is_some() {
            // About twice the body's bytes (names and quotes around each value), so that the
            // text is seldom copied to a larger buffer while it is written.
            let read = fields::bytes_read(tree);
            let mut out = String::with_capacity((2 * read + 128).min(1 << 16));
            match fields::write_json(&mut out, tree, sets, 2) {
                Ok(()) => f.body_text = Some(out),
                // Unreachable: the walker's depth limit keeps a body far from orjson's
                // (`fields::TEXT_DEPTH_BOUND`); were it not, the body is left out and said so
                // (its record sets were made as text, so no tree can be made of it here).
                Err(_) => f.add(Anomaly::new(
                    INTERNAL_ERROR,
                    "internal error: the body's detail nests deeper than its JSON text may; \
                     left out",
                )),
            }
            let names = self.topics.borrow();
            f.partitions = partitions::of_tree(api_key.into(), response, tree, sets, &names);
            return;
        }
        let converted = fields::convert(tree, sets);
        f.fields.set("body", Value::Map(converted));
        self.partitions(f, api_key, response);
    }

    /// The topics/partitions the frame's decoded body names, topic ids named through the run
    /// state as it stands now (the reference's `partitions.of_body(..., self.topics) or None`,
    /// called at the same point: after a response taught its topic names).
    fn partitions(&self, f: &mut Frame, api_key: impl Into<i64>, response: bool) {
        let names = self.topics.borrow();
        f.partitions = partitions::of_body(api_key.into(), response, f.fields.get("body"), &names);
    }

    // -- framing ----------------------------------------------------------------------------

    /// Is buf[pos..] the start of a request (the first bytes of the client's direction)?
    fn request_start(&self, buf: &[u8], pos: usize) -> Verdict {
        let avail = buf.len() - pos;
        if avail < 14 {
            return Verdict::Wait;
        }
        if !plausible_request(buf, pos, true) {
            return if newer_request(buf, pos) {
                Verdict::Yes
            } else {
                framed_request(buf, pos)
            };
        }
        let size = i64::from(i32_at(buf, pos).unwrap_or(0));
        let key = i16_at(buf, pos + 4).unwrap_or(-1);
        let version = i16_at(buf, pos + 6).unwrap_or(-1);
        if avail as i64 >= size + 4 {
            if request_fits(&buf[pos..pos + 4 + size as usize], key, version) {
                return Verdict::Yes;
            }
            return framed_request(buf, pos);
        }
        if schema::request_header_version(key, version) >= 1 {
            let n = i64::from(i16_at(buf, pos + 12).unwrap_or(0));
            if n >= 1
                && avail as i64 >= 14 + n
                && plausible_client_id(buf, pos + 12, pos + 14 + n as usize) == Some(true)
            {
                return Verdict::Yes;
            }
        }
        Verdict::Wait
    }

    /// Is buf[pos..] the start of a response? Its id is pending, or (nothing pending) it chains.
    fn response_start(&self, ctx: &ConnCtx, buf: &[u8], pos: usize) -> Verdict {
        let avail = buf.len() - pos;
        if avail < 8 {
            return Verdict::Wait;
        }
        let size = i64::from(i32_at(buf, pos).unwrap_or(0));
        let corr = i32_at(buf, pos + 4).unwrap_or(-1);
        if !(4..=MAX_FRAME - 4).contains(&size) || corr < 0 {
            return Verdict::No;
        }
        if peek(ctx, corr).is_some() || self.acks0.contains(corr) {
            return self.confirmed_response(ctx, buf, pos, 0);
        }
        if let Some(low) = min_pending(ctx) {
            if i64::from(corr) >= low {
                return Verdict::No;
            }
        }
        let nxt = pos + 4 + size as usize;
        let end = buf.len();
        if nxt <= end && (record_set(buf, pos + 4, nxt) || batch_tail(buf, pos, nxt)) {
            return Verdict::No;
        }
        if nxt == end {
            return Verdict::Yes;
        }
        if nxt + 8 <= end {
            let size2 = i64::from(i32_at(buf, nxt).unwrap_or(0));
            let corr2 = i32_at(buf, nxt + 4).unwrap_or(-1);
            let d = i64::from(corr2) - i64::from(corr);
            let chained = (0 < d && d <= 4) || peek(ctx, corr2).is_some();
            return if (4..=MAX_FRAME - 4).contains(&size2) && chained {
                Verdict::Yes
            } else {
                Verdict::No
            };
        }
        Verdict::Wait
    }

    /// A request that decodes whole and is followed by another one or by the end of the bytes;
    /// one too long to be buffered whole needs a body whose start reads without contradiction.
    fn confirmed_request(&self, buf: &[u8], at: usize) -> Verdict {
        let end = buf.len();
        if end - at < 14 || !plausible_request(buf, at, true) {
            return Verdict::No;
        }
        let size = i64::from(i32_at(buf, at).unwrap_or(0));
        let key = i16_at(buf, at + 4).unwrap_or(-1);
        let version = i16_at(buf, at + 6).unwrap_or(-1);
        let nxt = at + 4 + size as usize;
        if nxt > end {
            if size + 4 <= CONFIRM_WHOLE {
                return Verdict::Wait;
            }
            return yes(self.prefix_reads(buf, at, key, version, false));
        }
        if !request_fits(&buf[at..nxt], key, version) {
            return Verdict::No;
        }
        if nxt == end {
            return Verdict::Yes;
        }
        if end - nxt < 14 {
            return Verdict::Wait;
        }
        yes(plausible_request(buf, nxt, false))
    }

    /// A response confirmed by what this connection knows (see the reference's docstring):
    /// a pending id whose request's layout reads it whole, followed by a plausible next
    /// response or the bytes' end; or, without a captured request, an id below every pending
    /// one that some layout reads, not a records field, with a confirmed frame after it.
    fn confirmed_response(&self, ctx: &ConnCtx, buf: &[u8], at: usize, depth: u32) -> Verdict {
        let end = buf.len();
        if end - at < 8 {
            return Verdict::Wait;
        }
        let size = i64::from(i32_at(buf, at).unwrap_or(0));
        let corr = i32_at(buf, at + 4).unwrap_or(-1);
        if !(4..=MAX_FRAME - 4).contains(&size) || corr < 0 {
            return Verdict::No;
        }
        let req = peek(ctx, corr).or_else(|| self.acks0.get(corr));
        let nxt = at + 4 + size as usize;
        let Some(req) = req else {
            let Some(low) = min_pending(ctx) else {
                return Verdict::No;
            };
            if depth >= MAX_ORPHAN_CHAIN || i64::from(corr) >= low || nxt > end {
                return Verdict::No;
            }
            if record_set(buf, at + 4, nxt) || batch_tail(buf, at, nxt) {
                return Verdict::No;
            }
            if end - nxt < 8 {
                return Verdict::Wait;
            }
            if self.confirmed_response(ctx, buf, nxt, depth + 1) != Verdict::Yes {
                return Verdict::No;
            }
            return yes(self.some_layout_reads(ctx, &buf[at..nxt]));
        };
        if nxt > end {
            if size + 4 <= CONFIRM_WHOLE {
                return Verdict::Wait;
            }
            let k = request_key(&req.borrow()).unwrap_or(RequestKey {
                api_key: -1,
                version: -1,
            });
            return yes(self.prefix_reads(buf, at, k.api_key, k.version, true));
        }
        if !self.answers(ctx, &buf[at..nxt], &req.borrow()) {
            return Verdict::No;
        }
        if nxt == end {
            return Verdict::Yes;
        }
        if end - nxt < 8 {
            return Verdict::Wait;
        }
        let size2 = i64::from(i32_at(buf, nxt).unwrap_or(0));
        let corr2 = i32_at(buf, nxt + 4).unwrap_or(-1);
        if !(4..=MAX_FRAME - 4).contains(&size2) || corr2 < 0 {
            return Verdict::No;
        }
        let d = i64::from(corr2) - i64::from(corr);
        yes((0 < d && d <= 4) || peek(ctx, corr2).is_some() || self.acks0.contains(corr2))
    }

    /// Does a layout this connection used, or any layout, read this response whole?
    fn some_layout_reads(&self, ctx: &ConnCtx, data: &[u8]) -> bool {
        if self
            .seen
            .iter()
            .rev()
            .any(|(k, v)| self.try_layout(ctx, data, *k, *v))
        {
            return true;
        }
        if data.len() > MAX_GUESS_BYTES {
            return false;
        }
        schema::api_versions().any(|(k, v)| self.try_layout(ctx, data, k, v))
    }

    /// Do the buffered bytes of a frame too long to wait for read as its start? The body is
    /// walked until the bytes run out, which must happen inside a records field ending within
    /// the declared frame.
    fn prefix_reads(&self, buf: &[u8], at: usize, key: i16, version: i16, response: bool) -> bool {
        let Some(plan) = schema::plan(key, version, response) else {
            return false;
        };
        let size = i64::from(i32_at(buf, at).unwrap_or(0));
        let stop = buf.len().min(at + 4 + size.max(0) as usize);
        let data = &buf[at..stop];
        let start = if response {
            match resp_body_start(data, key, version) {
                Some(s) => s,
                None => return false,
            }
        } else {
            match header::request_header(data, schema::request_header_version(key, version)) {
                Ok(h) => h.body_start,
                Err(_) => return false,
            }
        };
        match body::check_body(data, start, plan, body::MAX_ELEMENTS).error {
            Some(DecodeError::Short { what, offset, .. }) => {
                if what != "records" {
                    return false;
                }
                if schema::is_flexible(key, version) || offset < 4 {
                    return true; // a compact (varint) length before it: its end is not checked
                }
                let n = i64::from(i32_at(data, offset - 4).unwrap_or(-1));
                0 <= n && offset as i64 + n <= 4 + size
            }
            _ => false, // a contradiction, or the body ended before the declared frame did
        }
    }

    // -- layout trials ----------------------------------------------------------------------

    /// Does a whole response frame decode as the answer to `req` (header v1 or v0)?
    fn answers(&self, ctx: &ConnCtx, data: &[u8], req: &Frame) -> bool {
        let Some(k) = request_key(req) else {
            return true;
        };
        if matches!(req.status, Status::UnknownType | Status::UnsupportedVersion) {
            return true;
        }
        let Some(mut plan) = schema::plan(k.api_key, k.version, true) else {
            return true;
        };
        if k.api_key == 18 && data.len() >= 10 && i16_at(data, 8) == Some(35) {
            plan = schema::plan(18, 0, true).unwrap_or(plan);
        }
        let start = resp_body_start(data, k.api_key, k.version);
        start.is_some_and(|s| self.fits(ctx, data, plan, s)) || self.fits(ctx, data, plan, 8)
    }

    /// Does `data[start..]` read whole with `plan`, records included? Checked, not decoded: no
    /// tree is built for a layout that is only tried.
    fn fits(&self, ctx: &ConnCtx, data: &[u8], plan: &'static Plan, start: usize) -> bool {
        let c = body::check_body(data, start, plan, body::MAX_ELEMENTS);
        if c.error.is_some() || c.end != data.len() {
            return false;
        }
        recordsets::fit(data, &c.records, &mut ctx.limits.borrow_mut())
    }

    /// Does the response layout of (key, v) read `data` whole?
    fn try_layout(&self, ctx: &ConnCtx, data: &[u8], key: i16, v: i16) -> bool {
        let Some(plan) = schema::plan(key, v, true) else {
            return false;
        };
        let Some(start) = resp_body_start(data, key, v) else {
            return false;
        };
        self.fits(ctx, data, plan, start)
    }

    // -- decoding ---------------------------------------------------------------------------

    fn tls(&mut self, data: &[u8]) -> Frame {
        let ctype = data[0];
        let mut f = Frame::new(PROTOCOL, "TLS", i64::from(ctype));
        f.kind = Kind::Event;
        f.status = Status::Undecodable;
        let name = tls_type(ctype).map_or_else(|| ctype.to_string(), str::to_owned);
        let version = format!("{}.{}", data[1], data[2]);
        let n = data.len() as i64 - 5;
        f.fields.set_span(
            "tls_content_type",
            Value::Str(name.clone()),
            Some(Span::new(0, 1)),
        );
        f.fields
            .set_span("tls_version", Value::Str(version), Some(Span::new(1, 3)));
        f.fields.set("tls_length", Value::Int(n));
        f.summary = format!("TLS {name} record, {n} bytes (encrypted connection)");
        if !self.tls_reported {
            self.tls_reported = true;
            f.add(Anomaly::new(
                "undecodable",
                "TLS on a Kafka port: the connection is encrypted, not decoded",
            ));
        }
        f
    }

    fn sasl_token(&self, data: &[u8], role: Role) -> Frame {
        let mut f = Frame::new(PROTOCOL, "SaslToken", -1);
        f.kind = Kind::Event;
        let token = data.get(4..).unwrap_or(&[]);
        let span = Some(Span::new(4.min(data.len()), data.len()));
        let mech = self.sasl_mechanism.clone();
        f.fields
            .set("mechanism", mech.clone().map_or(Value::Null, Value::Str));
        f.fields.set("length", Value::Int(token.len() as i64));
        let mut who: Option<String> = None;
        if self.show_secrets {
            f.fields
                .set_span("token", Value::Bytes(token.to_vec()), span);
        } else if mech.as_deref() == Some("PLAIN")
            && role == Role::Client
            && token.iter().filter(|b| **b == 0).count() == 2
        {
            let mut parts = token.split(|b| *b == 0);
            let authzid = String::from_utf8_lossy(parts.next().unwrap_or(&[])).into_owned();
            let user = String::from_utf8_lossy(parts.next().unwrap_or(&[])).into_owned();
            f.fields.set("authzid", Value::Str(authzid));
            f.fields.set("username", Value::Str(user.clone()));
            f.fields.set("password", Value::Str("<masked>".into()));
            who = Some(user);
        } else {
            f.fields.set_span(
                "token",
                Value::Str(format!("<{} bytes masked>", token.len())),
                span,
            );
        }
        f.summary = format!(
            "SASL {} token, {} bytes",
            mech.as_deref().unwrap_or("?"),
            token.len()
        );
        if let Some(w) = who.filter(|w| !w.is_empty()) {
            f.summary.push_str(&format!(", user {w}"));
        }
        f
    }

    fn request(&mut self, ctx: &mut ConnCtx, data: &[u8], complete: bool) -> FrameRef {
        let mut f = self.frame(ctx);
        f.kind = Kind::Request;
        if data.len() < 12 {
            if complete {
                f.flag(
                    Status::Malformed,
                    "malformed",
                    format!("request of {} bytes is shorter than a header", data.len()),
                    Some(0),
                );
            }
            return f.shared();
        }
        let api_key = i16_at(data, 4).unwrap_or(-1);
        let version = i16_at(data, 6).unwrap_or(-1);
        let corr = i32_at(data, 8).unwrap_or(-1);
        if self.sasl_raw {
            if plausible_request(data, 0, true) {
                self.sasl_raw = false; // authentication is over: Kafka requests again
            } else {
                return self.sasl_token(data, Role::Client).shared();
            }
        }
        let info = schema::api(api_key);
        let name = info.map(|a| a.name);
        let hv = if name.is_some() {
            schema::request_header_version(api_key, version)
        } else {
            1
        };
        let plan = name.and_then(|_| schema::plan(api_key, version, false));
        f.type_ = Cow::Borrowed(name.unwrap_or("Unknown"));
        f.type_code = i64::from(api_key);
        f.version = Some(i32::from(version));
        f.correlation_id = Some(i64::from(corr));
        f.context = Some(Box::new(RequestKey { api_key, version }));
        // The header's fields are made only for a frame whose fields are kept: not for an
        // observer's (never shown) nor when no sink reads fields (the plain timeline). The
        // header is still read: where the body starts, and whether it reads, decide what follows.
        let keep_head = self.detail && !self.observe;
        let mut head = Fields::new();
        if keep_head {
            head = Fields::with_capacity(5); // key, version, id, client id, tags
            head.set_span("api_key", Value::Int(api_key.into()), Some(Span::new(4, 6)));
            head.set_span(
                "api_version",
                Value::Int(version.into()),
                Some(Span::new(6, 8)),
            );
            head.set_span(
                "correlation_id",
                Value::Int(corr.into()),
                Some(Span::new(8, 12)),
            );
        }
        let key = Key::Int(corr.into());
        let pos = match header::request_header(data, hv) {
            Ok(h) => {
                if keep_head {
                    add_header(&mut head, &h);
                }
                Some(h.body_start)
            }
            Err(e) => {
                // Header v2 failing in its tagged fields: the client id and the unknown tags
                // read before the failure are in the reference's header dict.
                let h1 = header::request_header(data, 1).ok();
                let tags = match (&h1, hv >= 2) {
                    (Some(h1), true) => body::decode_tags_partial(data, h1.body_start).0,
                    _ => Vec::new(),
                };
                if name.is_some() && plan.is_some() {
                    if keep_head {
                        if let (Some(h1), true) = (&h1, hv >= 2) {
                            add_client_id(&mut head, h1);
                        }
                        add_tags(&mut head, &tags);
                        f.fields.set("header", Value::Map(head));
                    }
                    if complete {
                        f.flag(
                            Status::Malformed,
                            "malformed",
                            format!("request header: {e}"),
                            Some(e.offset() as u64),
                        );
                    }
                    let f = f.shared();
                    ctx.correlator.request(&f, key, true);
                    return f;
                }
                // An unknown key or version: its header version is a guess, so read what a
                // header v1 holds (the client id) and let the status say what is unknown.
                if keep_head {
                    add_tags(&mut head, &tags);
                    if let Some(h1) = &h1 {
                        add_client_id(&mut head, h1);
                    }
                }
                None
            }
        };
        if keep_head {
            f.fields.set("header", Value::Map(head));
        }
        let Some(name) = name else {
            f.flag(
                Status::UnknownType,
                "unknown_type",
                format!("unknown Kafka API key {api_key} (version {version})"),
                Some(4),
            );
            f.summary = format!("unknown API key {api_key} v{version}");
            let f = f.shared();
            ctx.correlator.request(&f, key, true);
            return f;
        };
        let (Some(plan), Some(pos)) = (plan, pos) else {
            f.flag(
                Status::UnsupportedVersion,
                "unsupported_version",
                format!("{name} v{version} is not in the Kafka specs"),
                Some(6),
            );
            f.summary = format!("{name} v{version} (unsupported version)");
            let f = f.shared();
            ctx.correlator.request(&f, key, true);
            return f;
        };
        let lk = (api_key, version);
        if self.last_seen != Some(lk) {
            self.seen.retain(|s| *s != lk);
            self.seen.push(lk);
            self.last_seen = Some(lk);
        }
        if self.observe && api_key != 17 {
            // An observer's request frame is never shown: what of it can change how this
            // connection is framed later is its key and version (read above, kept for the
            // response) and, for Produce, whether acks=0 asks for no answer. The body is not
            // walked (SaslHandshake's is, below: it switches the connection to raw tokens).
            let acks0 = api_key == 0 && produce_acks(data, pos, plan) == Some(0);
            let f = f.shared();
            ctx.correlator.request(&f, key, !acks0);
            if acks0 {
                self.acks0.insert(corr, f.clone());
            }
            return f;
        }
        let mut stats = FrameStats::default();
        let mut b = self.body(
            ctx,
            &mut f,
            data,
            pos,
            plan,
            Direction::Produce,
            complete,
            false,
            &mut stats,
        );
        let acks0 = api_key == 0 && matches!(get(&b.tree, "acks"), Some(BValue::Int(0)));
        if b.usable {
            if api_key == 17 {
                self.sasl_mechanism = match get(&b.tree, "mechanism") {
                    Some(BValue::Str(s)) => Some(s.to_string()),
                    _ => None,
                };
                if version == 0 {
                    self.handshakes.insert(corr, self.sasl_mechanism.clone());
                }
            }
            if api_key == 11 || api_key == 14 {
                embedded::annotate(api_key, false, &mut b.tree, None);
            }
            if api_key == 36 {
                self.sasl_authenticate(&mut b.tree);
            }
        }
        if self.detail && !stats.is_empty() {
            f.fields.set("record_stats", stats.value());
        }
        if !self.observe {
            let tree = b.usable.then_some(b.tree.as_slice());
            f.summary = self.summarize(&f, tree, &b.sets);
        }
        // JoinGroup/SyncGroup responses read their request's `protocol_type` from its body.
        if !self.observe && (self.detail || api_key == 11 || api_key == 14) {
            self.keep_body(&mut f, api_key, false, &b.tree, &mut b.sets);
        }
        let f = f.shared();
        ctx.correlator.request(&f, key, !acks0);
        if acks0 {
            self.acks0.insert(corr, f.clone());
        }
        f
    }

    /// Shows the mechanism and user of a SaslAuthenticate request; the secret stays masked.
    fn sasl_authenticate(&mut self, tree: &mut Vec<BField<'_>>) {
        let mech = self
            .sasl_mechanism
            .clone()
            .map_or(BValue::Null, |m| BValue::Str(m.into()));
        set_field(tree, "mechanism", computed(mech));
        let Some(raw) = self.raw_auth.take() else {
            return;
        };
        let mut user: Option<String> = None;
        let m = self.sasl_mechanism.as_deref();
        if m == Some("PLAIN") && raw.iter().filter(|b| **b == 0).count() == 2 {
            let u = raw.split(|b| *b == 0).nth(1).unwrap_or(&[]);
            user = Some(String::from_utf8_lossy(u).into_owned());
        } else if m.is_some_and(|m| m.starts_with("SCRAM"))
            && (raw.starts_with(b"n,") || raw.starts_with(b"y,") || raw.starts_with(b"p="))
        {
            for attr in raw.split(|b| *b == b',') {
                if let Some(u) = attr.strip_prefix(b"n=") {
                    user = Some(String::from_utf8_lossy(u).into_owned());
                    break;
                }
            }
        }
        if let Some(u) = user {
            set_field(tree, "username", computed(BValue::Str(u.into())));
        }
    }

    /// Decodes a body into `f` (the reference's `_body`): sets `body` (a placeholder the
    /// caller replaces with the final tree), `body_stops_at`, the error code, `_errors`, and the
    /// anomalies, and reads the record sets.
    #[allow(clippy::too_many_arguments)]
    fn body<'a>(
        &mut self,
        ctx: &mut ConnCtx,
        f: &mut Frame,
        data: &'a [u8],
        start: usize,
        plan: &'static Plan,
        direction: Direction,
        complete: bool,
        response: bool,
        stats: &mut FrameStats,
    ) -> Body<'a> {
        let is_req36 = f.type_code == 36 && !response;
        let secrets: &[&str] = if self.show_secrets {
            &[]
        } else if is_req36 {
            &SECRETS_BUT_AUTH
        } else {
            &SECRET_FIELDS
        };
        let max_elements = ctx.limits.borrow().max_elements;
        let mut d = body::decode_body_limited(data, start, plan, secrets, max_elements);
        let sets = if self.observe || d.record_nodes == 0 {
            recordsets::Decoded::default()
        } else {
            let names = self.topics.borrow();
            let names = &*names;
            let hook = Hook {
                direction,
                partial_ok: response,
                messages: self.messages,
                detail: self.detail,
                values: self.values,
                // `keep_body` writes this body as text (not for a JoinGroup or SyncGroup
                // request, which holds no record set).
                text: self.detail_text,
                names,
            };
            recordsets::read_into(
                f,
                data,
                &d.fields,
                &hook,
                &mut ctx.limits.borrow_mut(),
                stats,
            )
        };
        if let Some((at, offset)) = &d.first_dropped {
            let over = ctx.limits.borrow().over_elements(d.kept, d.dropped, at);
            if let Some(detail) = over {
                f.add(Anomaly::new(ELEMENT_LIMIT, detail).at(Some(*offset as u64)));
            }
        }
        let kind = if response { "response" } else { "request" };
        let what = |f: &Frame| format!("{} v{}", f.type_, py_version(f.version));
        if self.detail {
            // The body's place among the fields (`keep_body` fills it); nothing reads the
            // fields of a frame when `detail` is off.
            f.fields.set("body", Value::Null);
        }
        if let Some(e) = d.error.take() {
            f.fields.set("body_stops_at", Value::Int(e.offset() as i64));
            if complete {
                f.flag(
                    Status::Malformed,
                    "malformed",
                    format!("{} {kind}: {e}", what(f)),
                    Some(e.offset() as u64),
                );
            }
            if let Some((_, code)) = d.errors.first() {
                f.error_code = Some(*code as i32);
                f.error = Some(schema::error_name(*code as i16));
            }
            return Body {
                tree: d.fields,
                usable: !complete,
                sets,
            };
        }
        if is_req36 {
            let raw = match get(&d.fields, "auth_bytes") {
                Some(BValue::Bytes(b)) => Some(b.to_vec()),
                _ => None,
            };
            if let (Some(r), false) = (&raw, self.show_secrets) {
                let n = r.len();
                if let Some(fl) = d.fields.iter_mut().rev().find(|x| "auth_bytes" == x.name) {
                    fl.node.value = BValue::Masked(n);
                }
            }
            self.raw_auth = raw;
        }
        let len = data.len();
        if d.end != len && !response && f.type_code == 18 && f.version.unwrap_or(0) <= 2 {
            f.add(
                Anomaly::new(
                    "trailing_bytes",
                    format!(
                        "{} request: {} bytes after the (empty) body, which brokers ignore \
                         (librdkafka writes an empty int32 array here)",
                        what(f),
                        len - d.end
                    ),
                )
                .at(Some(d.end as u64)),
            );
        } else if d.end != len {
            f.flag(
                Status::Malformed,
                "malformed",
                format!("{} {kind}: {} bytes after the body", what(f), len - d.end),
                Some(d.end as u64),
            );
        }
        if let Some((_, code)) = d.errors.first() {
            f.error_code = Some(*code as i32);
            f.error = Some(schema::error_name(*code as i16));
            let list = d
                .errors
                .iter()
                .map(|(p, c)| {
                    let mut e = Fields::new();
                    e.set("path", Value::Str(p.clone()));
                    e.set("error_code", Value::Int(*c));
                    e.set(
                        "error",
                        Value::Str(schema::error_name(*c as i16).into_owned()),
                    );
                    Value::Map(e)
                })
                .collect();
            f.fields.set("_errors", Value::List(list));
        }
        Body {
            tree: d.fields,
            usable: true,
            sets,
        }
    }

    /// The timeline line (`summary.summarize`): the body's line and the error names.
    fn summarize(
        &self,
        f: &Frame,
        tree: Option<&[BField<'_>]>,
        sets: &recordsets::Decoded,
    ) -> String {
        let version = f.version.unwrap_or(0) as i16;
        let mut text = String::new();
        if let Some(tree) = tree {
            let names = self.topics.borrow();
            let count = |s: usize, _e: usize| sets.record_count(s);
            let name_of = |id: &str| names.name_of(id).map(str::to_owned);
            let cx = summary::Context {
                version,
                record_count: &count,
                topic_name: &name_of,
            };
            text = summary::summarize(f.type_code as i16, f.kind == Kind::Request, tree, &cx);
        }
        if let Some(err) = &f.error {
            let mut names: Vec<String> = match f.fields.get("_errors") {
                Some(Value::List(errs)) if !errs.is_empty() => errs
                    .iter()
                    .filter_map(|e| match e {
                        Value::Map(m) => match m.get("error") {
                            Some(Value::Str(s)) => Some(s.clone()),
                            _ => None,
                        },
                        _ => None,
                    })
                    .collect(),
                _ => vec![err.to_string()],
            };
            names.sort();
            names.dedup();
            text = format!("{text} error {}", summary::join(&names))
                .trim()
                .to_owned();
        }
        text
    }

    /// A new request or response frame. Its endpoints start as the connection's client address,
    /// shared rather than made for the frame: the framing engine sets them when it emits the
    /// frame, and an observer's is never shown.
    fn frame(&self, ctx: &ConnCtx) -> Frame {
        // The framing engine sets every emitted frame's endpoints (`ConnectionFramer::emit`).
        Frame::new_at(PROTOCOL, "Unknown", -1, &ctx.client)
    }

    fn response(&mut self, ctx: &mut ConnCtx, data: &[u8], complete: bool) -> FrameRef {
        if self.sasl_raw && (data.len() < 8 || peek(ctx, i32_at(data, 4).unwrap_or(-1)).is_none()) {
            return self.sasl_token(data, Role::Server).shared();
        }
        let mut f = self.frame(ctx);
        f.kind = Kind::Response;
        if data.len() < 8 {
            if complete {
                f.flag(
                    Status::Malformed,
                    "malformed",
                    format!("response of {} bytes is shorter than a header", data.len()),
                    Some(0),
                );
            }
            return f.shared();
        }
        let corr = i32_at(data, 4).unwrap_or(-1);
        f.correlation_id = Some(i64::from(corr));
        if self.detail && !self.observe {
            let mut head = Fields::new();
            head.set_span(
                "correlation_id",
                Value::Int(corr.into()),
                Some(Span::new(4, 8)),
            );
            f.fields.set("header", Value::Map(head));
        }
        let fref = f.shared();
        let key = Key::Int(corr.into());
        let req = if peek(ctx, corr).is_none() && self.acks0.contains(corr) {
            // A Produce sent with acks=0 asks for no answer; this broker answers anyway.
            let req = self.acks0.pop(corr).expect("contained");
            ctx.correlator.event_pair(&req, &fref);
            let (rt, rv, rp) = {
                let r = req.borrow();
                (r.type_.clone(), r.version, r.packet)
            };
            fref.borrow_mut().add(Anomaly::new(
                "unexpected_response",
                format!(
                    "the broker answered {rt} v{} (correlation id {corr}, packet {rp}) although \
                     it was sent with acks=0, which asks for no response",
                    py_version(rv)
                ),
            ));
            Some(req)
        } else {
            ctx.correlator.response(&fref, &key, None)
        };
        let Some(req) = req else {
            if !self.observe {
                self.guess(ctx, &mut fref.borrow_mut(), data, complete);
            }
            return fref;
        };
        {
            let mut f = fref.borrow_mut();
            self.paired(ctx, &mut f, &req, data, corr, complete);
        }
        fref
    }

    /// The rest of `_response` once the request is known.
    fn paired(
        &mut self,
        ctx: &mut ConnCtx,
        f: &mut Frame,
        req: &FrameRef,
        data: &[u8],
        corr: i32,
        complete: bool,
    ) {
        let (rk, rstatus, rtype) = {
            let r = req.borrow();
            (request_key(&r), r.status, r.type_.clone())
        };
        let (api_key, mut version) = rk.map_or((-1, -1), |k| (k.api_key, k.version));
        f.type_ = rtype.clone();
        f.type_code = req.borrow().type_code;
        f.version = Some(i32::from(version));
        if api_key == 18 && rstatus == Status::UnsupportedVersion {
            // A broker answers an ApiVersions version it does not know with a v0 body.
            version = 0;
            set_in_header(f, "body_version", Value::Int(0));
        } else if matches!(rstatus, Status::UnknownType | Status::UnsupportedVersion) {
            let what = if rstatus == Status::UnknownType {
                format!("API key {api_key}")
            } else {
                format!("{rtype} v{version}")
            };
            let s = rstatus.as_str();
            f.flag(
                rstatus,
                s,
                format!("response to a request with {}", s.replace('_', " ")),
                None,
            );
            let n = data.len() - 8;
            f.fields.set("body_length", Value::Int(n as i64));
            let stop = data.len().min(8 + RAW_BODY_SHOWN);
            f.fields.set_span(
                "raw_body",
                Value::Bytes(data[8..stop].to_vec()),
                Some(Span::new(8, stop)),
            );
            f.summary = format!("response to {what}, {n} body bytes not decoded");
            return;
        }
        let Some(mut plan) = schema::plan(api_key, version, true) else {
            f.flag(
                Status::UnsupportedVersion,
                "unsupported_version",
                format!("no response layout for {} v{version}", f.type_),
                None,
            );
            return;
        };
        if self.observe && api_key != 17 && !can_teach(plan) {
            // An observer's response frame is never shown and this body cannot name topics
            // (the run state observers keep): only SaslHandshake's (raw tokens follow it) and
            // those that list topic ids with names are walked.
            if !self.handshakes.is_empty() {
                self.handshakes.remove(&corr);
            }
            return;
        }
        let hv = schema::response_header_version(api_key, version);
        let mut start = 8;
        if hv == 1 {
            if data.len() > 8 && data[8] == 0 {
                start = 9;
            } else {
                let (tags, read) = body::decode_tags_partial(data, 8);
                if let Some(Value::Map(h)) = f.fields.get_mut("header") {
                    add_tags(h, &tags); // also those read before a failure, as the reference
                }
                match read {
                    Ok(end) => start = end,
                    Err(e) => {
                        if complete {
                            f.flag(
                                Status::Malformed,
                                "malformed",
                                format!("response header: {e}"),
                                Some(e.offset() as u64),
                            );
                        }
                        return;
                    }
                }
            }
        }
        if api_key == 18
            && version > 0
            && data.len() >= start + 2
            && i16_at(data, start) == Some(35)
        {
            plan = schema::plan(18, 0, true).unwrap_or(plan);
            set_in_header(f, "body_version", Value::Int(0));
        }
        let mut stats = FrameStats::default();
        let (n_msgs, n_anoms, status) = (f.messages.len(), f.anomalies.len(), f.status);
        let mut b = self.body(
            ctx,
            f,
            data,
            start,
            plan,
            Direction::Deliver,
            complete,
            true,
            &mut stats,
        );
        if !b.usable && start != 8 && complete && self.fits(ctx, data, plan, 8) {
            // Some brokers answer a flexible version with response header v0: decode it that
            // way when only that reading fits, and say so.
            f.messages.truncate(n_msgs);
            f.anomalies.truncate(n_anoms);
            f.flagged.clear(); // the per-kind counts of `Frame::flag` counted what was dropped
            f.status = status;
            stats.clear();
            let mut head = Fields::new();
            head.set_span(
                "correlation_id",
                Value::Int(corr.into()),
                Some(Span::new(4, 8)),
            );
            head.set("header_version", Value::Int(0));
            f.fields.set("header", Value::Map(head));
            f.add(
                Anomaly::new(
                    "header_version",
                    format!(
                        "{} v{version} response uses header v0 (no tagged fields) where Kafka \
                         specifies v1",
                        f.type_
                    ),
                )
                .at(Some(8)),
            );
            b = self.body(
                ctx,
                f,
                data,
                8,
                plan,
                Direction::Deliver,
                complete,
                true,
                &mut stats,
            );
        }
        if self.detail && !stats.is_empty() {
            f.fields.set("record_stats", stats.value());
        }
        if b.usable {
            self.with_topics(|t| t.learn(&b.tree));
            if api_key == 0 {
                let mut r = req.borrow_mut();
                if !r.messages.is_empty() && !r.released {
                    let names = self.topics.borrow();
                    recordsets::assign_offsets(&mut r.messages, &b.tree, &names);
                }
            }
            if api_key == 11 || api_key == 14 {
                let ptype = match req.borrow().fields.get("body") {
                    Some(Value::Map(m)) => match m.get("protocol_type") {
                        Some(Value::Str(s)) => Some(s.clone()),
                        _ => None,
                    },
                    _ => None,
                };
                embedded::annotate(api_key, true, &mut b.tree, ptype.as_deref());
            }
            if api_key == 17
                && self.handshakes.contains_key(&corr)
                && !truthy(&b.tree, "error_code")
            {
                self.sasl_raw = true;
            }
        }
        self.handshakes.remove(&corr);
        if !self.observe {
            let tree = b.usable.then_some(b.tree.as_slice());
            f.summary = self.summarize(f, tree, &b.sets);
        }
        if !self.observe && self.detail {
            self.keep_body(f, api_key, true, &b.tree, &mut b.sets);
        }
    }

    /// A response whose request was not captured: try the layouts that could fit.
    fn guess(&mut self, ctx: &mut ConnCtx, f: &mut Frame, data: &[u8], complete: bool) {
        let mut fits: Vec<(i16, i16)> = Vec::new();
        for (k, v) in self.seen.iter().rev() {
            if self.try_layout(ctx, data, *k, *v) {
                fits.push((*k, *v));
                break; // a layout this connection uses fits: prefer it
            }
        }
        if fits.is_empty() && data.len() <= MAX_GUESS_BYTES {
            // Every other layout, the APIs clients use most first. Small bodies often fit
            // several layouts: for them, collect the alternatives to show the ambiguity.
            let mut keys: Vec<i16> = schema::APIS.iter().map(|a| a.key).collect();
            let used = |k: i16| self.seen.iter().any(|s| s.0 == k);
            keys.sort_by_key(|k| (!used(*k), !COMMON_APIS.contains(k), *k));
            for key in keys {
                let mut versions: Vec<i16> = schema::api_versions()
                    .filter(|(k, _)| *k == key)
                    .map(|(_, v)| v)
                    .collect();
                versions.sort_unstable_by(|a, b| b.cmp(a));
                for v in versions {
                    if self.seen.contains(&(key, v)) {
                        continue;
                    }
                    if self.try_layout(ctx, data, key, v) {
                        fits.push((key, v));
                    }
                }
                if !fits.is_empty() && (data.len() > GUESS_ALL_BELOW || fits.len() >= 10) {
                    break;
                }
            }
        }
        f.fields.set("no_request", Value::Bool(true));
        let Some(&(key, v)) = fits.first() else {
            f.status = Status::UnknownType;
            f.add(Anomaly::new(
                "unknown_type",
                "response without a captured request; no API layout fits",
            ));
            f.summary = format!(
                "response without request, correlation id {}",
                f.correlation_id.unwrap_or(0)
            );
            return;
        };
        if fits.len() > 1 {
            let c = fits
                .iter()
                .take(10)
                .map(|(k, v)| Value::Str(format!("{} v{v}", api_name(*k))))
                .collect();
            f.fields.set("candidates", Value::List(c));
        }
        f.type_ = Cow::Borrowed(api_name(key));
        f.type_code = i64::from(key);
        f.version = Some(i32::from(v));
        f.fields.set("guessed", Value::Bool(true));
        let Some(plan) = schema::plan(key, v, true) else {
            return;
        };
        let start = resp_body_start(data, key, v).unwrap_or(8);
        let mut stats = FrameStats::default();
        let mut b = self.body(
            ctx,
            f,
            data,
            start,
            plan,
            Direction::Deliver,
            complete,
            true,
            &mut stats,
        );
        if self.detail && !stats.is_empty() {
            f.fields.set("record_stats", stats.value());
        }
        let tree = b.usable.then_some(b.tree.as_slice());
        f.summary = self.summarize(f, tree, &b.sets) + " (no request; layout guessed)";
        if !self.observe && self.detail {
            self.keep_body(f, key, true, &b.tree, &mut b.sets);
        }
    }
}

/// The `acks` of a Produce request body at `data[start..]` laid out by `plan`, as walking the
/// whole body would read it (`get(tree, "acks")`), without walking the rest: the fields before
/// it (the transactional id) are skipped by the walker's rules, and a body that ends or breaks
/// before `acks` has none. A layout of another shape is walked whole.
fn produce_acks(data: &[u8], start: usize, plan: &'static Plan) -> Option<i64> {
    let mut pos = start.min(data.len());
    for op in plan.ops {
        match op.kind {
            schema::Kind::String => pos = skip_string(data, pos, op)?,
            schema::Kind::Run(run) => {
                let Some(at) = run.iter().position(|f| f.name == "acks") else {
                    break;
                };
                if op.min_size as usize > data.len() - pos {
                    return None; // the walker reads a run whole or not at all
                }
                let off = pos + run[..at].iter().map(|f| f.ty.size()).sum::<usize>();
                return match run[at].ty {
                    schema::Fixed::I16 => i16_at(data, off).map(i64::from),
                    _ => break,
                };
            }
            _ => break,
        }
    }
    match get(&body::decode_body(data, start, plan, &[]).fields, "acks") {
        Some(BValue::Int(a)) => Some(*a),
        _ => None,
    }
}

/// Where a string field at `data[pos..]` ends, or None where the body walker stops with an
/// error (a short or negative length, a null where none is allowed).
fn skip_string(data: &[u8], pos: usize, op: &schema::Op) -> Option<usize> {
    let (n, at) = if op.compact {
        let mut v: u64 = 0;
        let mut at = pos;
        loop {
            let b = *data.get(at)?;
            v |= u64::from(b & 0x7F) << (7 * (at - pos));
            at += 1;
            if b & 0x80 == 0 {
                break;
            }
            if at - pos == 5 {
                return None;
            }
        }
        (v as i64 - 1, at)
    } else {
        (i64::from(i16_at(data, pos)?), pos + 2)
    };
    if n < -1 || (n == -1 && !op.nullable) {
        return None;
    }
    let end = at + n.max(0) as usize;
    (end <= data.len()).then_some(end)
}

fn yes(b: bool) -> Verdict {
    if b {
        Verdict::Yes
    } else {
        Verdict::No
    }
}

fn api_name(key: i16) -> &'static str {
    schema::api(key).map_or("Unknown", |a| a.name)
}

/// Python's `str()` of an optional version.
fn py_version(v: Option<i32>) -> String {
    v.map_or_else(|| "None".to_owned(), |v| v.to_string())
}

/// Python's truthiness of `body.get(key)` for the values an error code can hold.
fn truthy(tree: &[BField<'_>], key: &str) -> bool {
    match get(tree, key) {
        None | Some(BValue::Null) => false,
        Some(BValue::Int(i)) => *i != 0,
        Some(BValue::Bool(b)) => *b,
        Some(BValue::Str(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// `body[name] = value` on a walker tree (a repeated name keeps its place).
fn set_field(tree: &mut Vec<BField<'_>>, name: &'static str, node: body::Node<'static>) {
    match tree.iter_mut().rev().find(|f| name == f.name) {
        Some(f) => f.node = node,
        None => tree.push(BField {
            name: body::Name::Field(name),
            node,
        }),
    }
}

fn set_in_header(f: &mut Frame, name: &'static str, v: Value) {
    if let Some(Value::Map(h)) = f.fields.get_mut("header") {
        h.set(name, v);
    }
}

fn add_client_id(head: &mut Fields, h: &header::RequestHeader<'_>) {
    if let Some(c) = &h.client_id {
        let v = match &c.value {
            BValue::Str(s) => Value::Str(s.to_string()),
            _ => Value::Null,
        };
        head.set_span("client_id", v, Some(Span::new(c.start, c.end)));
    }
}

fn add_header(head: &mut Fields, h: &header::RequestHeader<'_>) {
    add_client_id(head, h);
    add_tags(head, &h.tagged);
}

/// A header's unknown tagged fields (`_unknown_tags`), into its fields.
fn add_tags(head: &mut Fields, tags: &[BField<'_>]) {
    if !tags.is_empty() {
        let conv = fields::convert(tags, &mut recordsets::Decoded::default());
        for fl in conv.0 {
            head.set_span(fl.name, fl.value, fl.span);
        }
    }
}

/// Where a response body starts with the header version of (key, v), or None when its tagged
/// fields do not read.
fn resp_body_start(data: &[u8], key: i16, v: i16) -> Option<usize> {
    if schema::response_header_version(key, v) == 0 {
        return Some(8);
    }
    body::decode_tags(data, 8).ok().map(|(_, end)| end)
}

impl Session for KafkaSession {
    fn frame_length(&mut self, ctx: &mut ConnCtx, buf: &[u8], role: Role) -> FrameLen {
        let avail = buf.len();
        if avail < 2 {
            return FrameLen::NeedMore;
        }
        if buf[1] == 3 && tls_type(buf[0]).is_some() {
            // A TLS record header. As a Kafka size it would exceed 300 MiB: it cannot be Kafka.
            if avail < 5 {
                return FrameLen::NeedMore;
            }
            if buf[2] > 4 {
                return FrameLen::NotAFrame;
            }
            self.tls = true;
            self.synced[role.index()] = true;
            return FrameLen::Len(5 + ((u64::from(buf[3]) << 8) | u64::from(buf[4])));
        }
        if avail < 4 {
            return FrameLen::NeedMore;
        }
        let size = i64::from(i32_at(buf, 0).unwrap_or(0));
        if self.sasl_raw {
            return if size >= 0 {
                FrameLen::Len(size as u64 + 4)
            } else {
                FrameLen::NotAFrame
            };
        }
        if self.synced[role.index()] {
            if role == Role::Client {
                if size < 8 || (avail >= 8 && !plausible_request(buf, 0, false)) {
                    return FrameLen::NotAFrame;
                }
            } else if size < 4 {
                return FrameLen::NotAFrame;
            }
            return FrameLen::Len(size as u64 + 4);
        }
        // The first frame of a direction may be mid-stream garbage: be strict.
        let verdict = match role {
            Role::Client => self.request_start(buf, 0),
            Role::Server => self.response_start(ctx, buf, 0),
        };
        match verdict {
            Verdict::Wait => FrameLen::NeedMore,
            Verdict::No => FrameLen::NotAFrame,
            Verdict::Yes => {
                self.synced[role.index()] = true;
                FrameLen::Len(size as u64 + 4)
            }
        }
    }

    /// The first boundary that what is known confirms; unconfirmed candidates are never
    /// returned (their bytes stay skipped), and one that cannot be told yet makes the answer
    /// None when nothing after it is confirmed, so that the engine asks again with more bytes.
    fn resync(&mut self, ctx: &mut ConnCtx, buf: &[u8], role: Role) -> Option<usize> {
        let end = buf.len();
        for at in 0..end.saturating_sub(7) {
            if buf[at + 1] == 3 && tls_type(buf[at]).is_some() && tls_chain(buf, at) {
                return Some(at);
            }
            let v = match role {
                Role::Client => self.confirmed_request(buf, at),
                Role::Server => self.confirmed_response(ctx, buf, at, 0),
            };
            if v == Verdict::Yes {
                self.synced[role.index()] = true;
                return Some(at);
            }
        }
        None
    }

    fn decode(&mut self, ctx: &mut ConnCtx, data: &[u8], role: Role, complete: bool) -> Frames {
        let f = if data.len() >= 3 && data[1] == 3 && tls_type(data[0]).is_some() && data[2] <= 4 {
            self.tls(data).shared()
        } else if role == Role::Client {
            self.request(ctx, data, complete)
        } else {
            self.response(ctx, data, complete)
        };
        if self.observe {
            Frames::new()
        } else {
            smallvec![f]
        }
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "session_observe_tests.rs"]
mod observe_tests;
