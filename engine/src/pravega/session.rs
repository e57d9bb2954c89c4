//! Per-connection Pravega decoding: framing, the table walk, versions, appends and reads (the
//! twin of `pravega/session.py`; same fields, anomalies, statuses and pairing, call for call).
//!
//! Framing is the 8-byte header `[int32 type][int32 length]` (big-endian); a type in the
//! signed-byte range that the table does not know still has a trustworthy length, so it becomes
//! an `unknown_type` frame and framing goes on. `correlation_id` is the requestId (the Java
//! client packs `(flowId << 32) | sequence`); the first frame of each direction must check out
//! as strictly as a resync candidate, because a capture that starts mid-connection starts
//! mid-frame. TLS on the port makes the connection undecodable. Hello ranges that differ but
//! overlap are normal; ranges that do not overlap are `version_mismatch`.

use crate::codecs::Limits;
use std::borrow::Cow;

use super::codec::{decode_fields, decodes_exactly, Cursor, FieldError};
use super::commands::{command, top_level, Command, Dir, HEADER_SIZE, MAX_WIRECOMMAND_SIZE};
use super::events::{describe_block, split_records, BlockAssembler, ReadJoiner, Records};
use super::ordered::OrderedMap;
use super::pairing::Pairing;
use super::partitions;
use super::summary::summarize;
use super::PROTOCOL;
use smallvec::smallvec;

use crate::model::{
    Anomaly, Direction, Fields, Frame, FrameRef, Frames, Kind, Message, Role, Span, Status, Value,
};
use crate::protocol::{ConnCtx, FrameLen, Session};

/// Bytes of a data blob kept in `fields` (all of it goes to messages; `-x` shows the frame).
pub const DATA_VIEW: usize = 1024;
pub const RESYNC_DECODE_MAX: i64 = 64 * 1024;
/// A candidate frame up to this size is verified whole before resynchronising on it.
pub const RESYNC_WAIT_MAX: i64 = 16 * 1024;
pub const MAX_WRITERS: usize = 10000;

fn header(buf: &[u8]) -> (i32, i32) {
    (
        i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]),
        i32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]),
    )
}

/// A known top-level code with a length the command allows.
pub fn plausible_header(code: i32, length: i32) -> bool {
    let Some(cmd) = command(code) else {
        return false;
    };
    if cmd.direction == Dir::Inner {
        return false;
    }
    if (length as i64) < cmd.min_payload() as i64 || length as i64 > MAX_WIRECOMMAND_SIZE as i64 {
        return false;
    }
    cmd.max_payload()
        .is_none_or(|top| length as i64 <= top as i64)
}

/// Do the `length` payload bytes after the header at `buf[at..]` decode exactly as `code`?
fn decodes(buf: &[u8], at: usize, code: i32, length: i32) -> bool {
    let Some(cmd) = command(code) else {
        return false;
    };
    let start = at + HEADER_SIZE;
    let end = start + length.max(0) as usize;
    match buf.get(start..end) {
        Some(payload) => decodes_exactly(payload, cmd.fields),
        None => false,
    }
}

fn kind_of(cmd: &Command, role: Role) -> Kind {
    match cmd.direction {
        Dir::Q => Kind::Request,
        Dir::Both if cmd.name == "Hello" => {
            if role == Role::Client {
                Kind::Request
            } else {
                Kind::Response
            }
        }
        Dir::Both | Dir::Inner => Kind::Event,
        Dir::R => Kind::Response,
    }
}

fn int(fields: &Fields, k: &str) -> Option<i64> {
    match fields.get(k) {
        Some(Value::Int(n)) => Some(*n),
        _ => None,
    }
}

fn text(fields: &Fields, k: &str) -> Option<String> {
    match fields.get(k) {
        Some(Value::Str(s)) => Some(s.clone()),
        _ => None,
    }
}

pub struct PravegaSession {
    pairs: Pairing,
    writer_segment: OrderedMap<String, String>,
    hello: [Option<(i64, i64)>; 2],
    blocks: BlockAssembler,
    reads: ReadJoiner,
    /// Directions whose first frame has been sized (client, server).
    started: [bool; 2],
}

impl PravegaSession {
    pub fn new(ctx: &ConnCtx) -> PravegaSession {
        PravegaSession {
            pairs: Pairing::new(ctx.correlator.max_pending),
            writer_segment: OrderedMap::default(),
            hello: [None, None],
            blocks: BlockAssembler::default(),
            reads: ReadJoiner::default(),
            started: [false, false],
        }
    }

    fn decode_one(
        &mut self,
        ctx: &mut ConnCtx,
        data: &[u8],
        role: Role,
        complete: bool,
    ) -> FrameRef {
        if data.len() < 4 {
            let mut f = Frame::new(PROTOCOL, "?", -1);
            if complete {
                f.flag(
                    Status::Malformed,
                    "malformed",
                    format!("{} bytes cannot hold a frame header", data.len()),
                    None,
                );
            }
            f.summary = format!("{} bytes of a cut header", data.len());
            return f.shared();
        }
        let code = i32::from_be_bytes([data[0], data[1], data[2], data[3]]);
        let cmd = command(code);
        let type_: Cow<'static, str> = match cmd {
            Some(c) => Cow::Borrowed(c.name),
            None => Cow::Owned(format!("Unknown({code})")),
        };
        let mut f = Frame::new(PROTOCOL, type_, code as i64);
        if data.len() < HEADER_SIZE {
            if let Some(c) = cmd {
                f.kind = kind_of(c, role);
            }
            f.summary = format!("cut after {} header bytes", data.len());
            return f.shared();
        }
        let length = header(data).1;
        let Some(cmd) = cmd else {
            f.kind = Kind::Event;
            let end = data.len().min(HEADER_SIZE + DATA_VIEW);
            f.fields
                .set_span("type_code", Value::Int(code as i64), Some(Span::new(0, 4)));
            f.fields
                .set_span("length", Value::Int(length as i64), Some(Span::new(4, 8)));
            f.fields.set_span(
                "payload",
                Value::Bytes(data[HEADER_SIZE..end].to_vec()),
                Some(Span::new(HEADER_SIZE, end)),
            );
            f.flag(
                Status::UnknownType,
                "unknown_type",
                format!("type code {code} is not a Pravega WireCommandType ({length} bytes)"),
                Some(0),
            );
            f.summary = format!("unknown type {code}, {length} bytes");
            return f.shared();
        };
        f.kind = kind_of(cmd, role);
        let end = data.len().min(HEADER_SIZE + length.max(0) as usize);
        let mut c = Cursor::new(data, HEADER_SIZE, end);
        f.fields.0.reserve(cmd.fields.len() + 8);
        let mut absent: Vec<&'static str> = Vec::new();
        let mut decoded = false;
        match decode_fields(&mut c, cmd.fields, &mut f.fields) {
            Ok(a) => {
                absent = a;
                decoded = true;
            }
            Err(e @ FieldError::Short { .. }) => {
                if complete {
                    let at = e.offset() as u64;
                    f.flag(
                        Status::Malformed,
                        "malformed",
                        format!("{}: {}", cmd.name, e.message()),
                        Some(at),
                    );
                } else if let FieldError::Short { what, .. } = e {
                    f.fields.set("cut_in", Value::Str(what.text()));
                }
            }
            Err(e) => {
                let at = e.offset() as u64;
                f.flag(
                    Status::Malformed,
                    "malformed",
                    format!("{}: {}", cmd.name, e.message()),
                    Some(at),
                );
            }
        }
        if decoded && c.left() > 0 {
            let left = c.left();
            f.fields.set_span(
                "trailing_bytes",
                Value::Int(left as i64),
                Some(Span::new(c.pos, c.end)),
            );
            f.add(
                Anomaly::new(
                    "trailing_bytes",
                    format!("{left} bytes after the last known field of {}", cmd.name),
                )
                .at(Some(c.pos as u64)),
            );
        }
        if !absent.is_empty() {
            f.fields.set(
                "absent_optional_fields",
                Value::List(absent.iter().map(|a| Value::Str((*a).into())).collect()),
            );
        }
        if let Some(Value::Int(rid)) = f.fields.get("request_id") {
            let rid = *rid;
            if !absent.contains(&"request_id") {
                f.correlation_id = Some(rid);
                if rid > 0xFFFF_FFFF {
                    // Flow.asLong(): flow id in the high 32 bits.
                    let mut flow = Fields::new();
                    flow.set("flow_id", Value::Int(rid >> 32));
                    flow.set("sequence", Value::Int(rid & 0x0FFF_FFFF));
                    f.fields.set("flow", Value::Map(flow));
                }
            }
        }
        if cmd.failure {
            f.error = Some(Cow::Borrowed(cmd.name));
            f.error_code = Some(cmd.code);
        }
        let ok = decoded && complete;
        let fr = f.shared();
        self.interpret(ctx, &fr, cmd, role, ok);
        {
            let mut f = fr.borrow_mut();
            trim_data(&mut f.fields);
            f.summary = summarize(&f);
            f.partitions = partitions::of_frame(&f, &self.writer_segment);
        }
        fr
    }

    /// Everything beyond the field walk: versions, events, pairing.
    fn interpret(&mut self, ctx: &mut ConnCtx, fr: &FrameRef, cmd: &Command, role: Role, ok: bool) {
        let name = cmd.name;
        if cmd.direction == Dir::Inner {
            fr.borrow_mut().add(Anomaly::new(
                "unexpected_command",
                format!("{name} outside an APPEND_BLOCK (it only belongs inside one)"),
            ));
            return;
        }
        self.check_block_order(fr, name, role);
        match name {
            "Hello" => {
                {
                    let mut f = fr.borrow_mut();
                    if let Some(h) = int(&f.fields, "high_version") {
                        f.version = Some(h as i32);
                    }
                }
                if ok {
                    self.on_hello(ctx, fr, role);
                }
                return;
            }
            "KeepAlive" => return,
            "AppendBlock" => {
                if ok {
                    let problems = {
                        let mut f = fr.borrow_mut();
                        let data = match f.fields.get("data") {
                            Some(Value::Bytes(b)) => b.clone(),
                            _ => Vec::new(),
                        };
                        describe_block(&data, &mut f.fields);
                        f.fields.set("data_length", Value::Int(data.len() as i64));
                        let writer = text(&f.fields, "writer_id").unwrap_or_default();
                        self.blocks.add_block(&writer, data)
                    };
                    {
                        let mut f = fr.borrow_mut();
                        for p in problems {
                            f.add(Anomaly::new("append_block", p));
                        }
                    }
                    self.pairs.no_reply(&mut ctx.correlator, fr);
                }
                return;
            }
            _ => {}
        }
        if !ok {
            return;
        }
        match name {
            "SetupAppend" | "AppendSetup" => {
                let (w, s) = {
                    let f = fr.borrow();
                    (text(&f.fields, "writer_id"), text(&f.fields, "segment"))
                };
                if let (Some(w), Some(s)) = (w, s) {
                    self.writer_segment.insert_last(w, s);
                    while self.writer_segment.len() > MAX_WRITERS {
                        self.writer_segment.pop_first();
                    }
                }
            }
            "AppendBlockEnd" => self.on_block_end(ctx, fr),
            "ConditionalAppend" => {
                let mut f = fr.borrow_mut();
                let event = match f.fields.get("event") {
                    Some(Value::Map(m)) => match m.get("data") {
                        Some(Value::Bytes(b)) => b.clone(),
                        _ => Vec::new(),
                    },
                    _ => Vec::new(),
                };
                f.fields.set("data_length", Value::Int(event.len() as i64));
                let writer = text(&f.fields, "writer_id").unwrap_or_default();
                let en = int(&f.fields, "event_number").unwrap_or(0);
                let len = event.len();
                self.produce(&mut f, &writer, std::iter::once((event, 0..len)), en, 1);
            }
            "ConditionalBlockEnd" => {
                let mut f = fr.borrow_mut();
                let data = match f.fields.get_mut("data") {
                    Some(Value::Bytes(b)) => std::mem::take(b),
                    _ => Vec::new(),
                };
                let en = int(&f.fields, "event_number").unwrap_or(0);
                self.on_append_data(ctx, &mut f, &data, en, None);
                if let Some(Value::Bytes(b)) = f.fields.get_mut("data") {
                    *b = data;
                }
            }
            "SegmentRead" => self.on_segment_read(ctx, fr),
            _ => {}
        }
        let kind = fr.borrow().kind;
        match kind {
            Kind::Request => self.pairs.register(&mut ctx.correlator, fr, cmd),
            Kind::Response => self.pairs.answer(&mut ctx.correlator, fr, cmd),
            Kind::Event => {}
        }
    }

    fn on_hello(&mut self, ctx: &mut ConnCtx, fr: &FrameRef, role: Role) {
        let mine = {
            let f = fr.borrow();
            (
                int(&f.fields, "high_version").unwrap_or(0),
                int(&f.fields, "low_version").unwrap_or(0),
            )
        };
        self.hello[role.index()] = Some(mine);
        if role == Role::Client {
            self.pairs.hello_request(&mut ctx.correlator, fr);
        } else {
            self.pairs.hello_reply(&mut ctx.correlator, fr);
        }
        let (Some((ch, cl)), Some((sh, sl))) = (self.hello[0], self.hello[1]) else {
            return;
        };
        let other = self.hello[role.other().index()].unwrap_or((0, 0));
        let mut f = fr.borrow_mut();
        let mut peer = Fields::new();
        peer.set("high_version", Value::Int(other.0));
        peer.set("low_version", Value::Int(other.1));
        f.fields.set("peer_versions", Value::Map(peer));
        if cl > sh || ch < sl {
            f.fields.set("versions", Value::Str("incompatible".into()));
            f.flag(
                Status::UnsupportedVersion,
                "version_mismatch",
                format!(
                    "client speaks wire versions {cl}..{ch}, server {sl}..{sh}: no common version \
                     (the segment store closes the connection)"
                ),
                None,
            );
        } else if ch != sh || cl != sl {
            // Normal in Pravega: each side accepts any peer whose range overlaps its own.
            f.fields.set("versions", Value::Str("differ".into()));
        } else {
            f.fields.set("versions", Value::Str("equal".into()));
        }
    }

    /// An APPEND_BLOCK must be followed by its APPEND_BLOCK_END and nothing else (§6.3, §6.4).
    fn check_block_order(&mut self, fr: &FrameRef, name: &str, role: Role) {
        if role != Role::Client || self.blocks.pending() == 0 {
            return;
        }
        let mut f = fr.borrow_mut();
        let writer = text(&f.fields, "writer_id");
        for w in self.blocks.pending_writers() {
            if (name == "AppendBlock" || name == "AppendBlockEnd")
                && writer.as_deref() == Some(w.as_str())
            {
                continue;
            }
            self.blocks.drop_block(&w);
            f.add(Anomaly::new(
                "append_block",
                format!("the APPEND_BLOCK of writer {w} is followed by {name}, not its end"),
            ));
        }
    }

    fn on_block_end(&mut self, ctx: &mut ConnCtx, fr: &FrameRef) {
        let mut f = fr.borrow_mut();
        let writer = text(&f.fields, "writer_id").unwrap_or_default();
        let sow = int(&f.fields, "size_of_whole_events").unwrap_or(0);
        let assembled = {
            let end_data: &[u8] = match f.fields.get("data") {
                Some(Value::Bytes(b)) => b,
                _ => &[],
            };
            self.blocks.end_block(&writer, sow, end_data)
        };
        for p in assembled.problems {
            f.add(Anomaly::new("append_block", p));
        }
        if assembled.from_block > 0 {
            f.fields
                .set("block_data_length", Value::Int(assembled.from_block as i64));
            f.fields.set(
                "block_trailer",
                assembled
                    .trailer
                    .map_or(Value::Null, |t| Value::Str(t.into())),
            );
        }
        let num = int(&f.fields, "num_events").unwrap_or(0);
        let last = int(&f.fields, "last_event_number").unwrap_or(0);
        if num <= 0 {
            f.add(Anomaly::new(
                "append_block",
                format!("numEvents is {num}, must be > 0"),
            ));
        }
        self.on_append_data(ctx, &mut f, &assembled.data, last, Some(num));
    }

    /// Splits appended bytes into events (or notes a byte stream) and makes produce messages.
    fn on_append_data(
        &mut self,
        ctx: &mut ConnCtx,
        f: &mut Frame,
        data: &[u8],
        last_event: i64,
        num_events: Option<i64>,
    ) {
        f.fields
            .set("appended_length", Value::Int(data.len() as i64));
        if data.is_empty() {
            f.fields.set("data_kind", Value::Str("empty".into()));
            return;
        }
        let max = ctx.limits.borrow().max_messages;
        let recs = split_records(data, false, usize::try_from(max).unwrap_or(usize::MAX));
        if !recs.is_events {
            f.fields.set("data_kind", Value::Str("raw".into()));
            f.fields.set("events", Value::Int(0));
            return;
        }
        f.fields.set("data_kind", Value::Str("events".into()));
        f.fields.set("events", Value::Int(recs.count as i64));
        if let Some(num) = num_events {
            if num != recs.count as i64 {
                f.add(Anomaly::new(
                    "event_count_mismatch",
                    format!("numEvents says {num}, the data holds {}", recs.count),
                ));
            }
        }
        self.over(f, &recs, &ctx.limits.borrow());
        let writer = text(&f.fields, "writer_id").unwrap_or_default();
        let count = recs.count;
        f.messages.reserve(recs.events.len());
        self.produce(
            f,
            &writer,
            recs.events.into_iter().map(|(_, r)| (data, r)),
            last_event,
            count,
        );
    }

    /// Says so when the frame held more events than it keeps (`Limits.max_messages`); the
    /// status stays: the cap is ours, not the frame's fault.
    fn over(&self, f: &mut Frame, recs: &Records, limits: &Limits) {
        let (kept, total) = (recs.events.len() as u64, recs.count as u64);
        if let Some(detail) = limits.over_messages(kept, total) {
            f.add(Anomaly::new("message_limit", detail));
            f.messages_counted += total - kept;
        }
    }

    fn produce<B: AsRef<[u8]>>(
        &self,
        f: &mut Frame,
        writer: &str,
        payloads: impl Iterator<Item = (B, std::ops::Range<usize>)>,
        last_event: i64,
        count: usize,
    ) {
        let segment = self.writer_segment.get(&writer.to_owned()).cloned();
        // Python's ints do not overflow: past i64 the numbers wrap here (never on real traffic).
        let first = last_event.wrapping_sub(count as i64).wrapping_add(1);
        for (i, (buf, range)) in payloads.enumerate() {
            let n = first.wrapping_add(i as i64);
            let payload = buf.as_ref()[range].to_vec();
            let mut detail = Fields::new();
            detail.set("writer_id", Value::Str(writer.to_owned()));
            detail.set("event_number", Value::Int(n));
            f.messages.push(Message {
                direction: Some(Direction::Produce),
                value_size: payload.len() as i64,
                topic: segment.clone(),
                offset: Some(n),
                value: Some(payload),
                detail: Some(std::rc::Rc::new(detail)),
                ..Message::default()
            });
        }
    }

    fn on_segment_read(&mut self, ctx: &mut ConnCtx, fr: &FrameRef) {
        let mut f = fr.borrow_mut();
        // The data is lent out of `fields` (no copy of a multi-MB read) and put back after.
        let data = match f.fields.get_mut("data") {
            Some(Value::Bytes(b)) => std::mem::take(b),
            _ => Vec::new(),
        };
        self.read_events(ctx, &mut f, &data);
        if let Some(Value::Bytes(b)) = f.fields.get_mut("data") {
            *b = data;
        }
    }

    fn read_events(&mut self, ctx: &mut ConnCtx, f: &mut Frame, data: &[u8]) {
        let segment = text(&f.fields, "segment").unwrap_or_default();
        let offset = int(&f.fields, "offset").unwrap_or(0);
        f.fields.set("data_length", Value::Int(data.len() as i64));
        if data.is_empty() {
            f.fields.set("data_kind", Value::Str("empty".into()));
            return;
        }
        let max = ctx.limits.borrow().max_messages;
        let split = self.reads.split(
            &segment,
            offset,
            data,
            usize::try_from(max).unwrap_or(usize::MAX),
        );
        if !split.recs.is_events {
            f.fields.set("data_kind", Value::Str("raw".into()));
            f.fields.set("events", Value::Int(0));
            return;
        }
        f.fields.set("data_kind", Value::Str("events".into()));
        f.fields.set("events", Value::Int(split.recs.count as i64));
        self.over(f, &split.recs, &ctx.limits.borrow());
        if split.joined > 0 {
            f.fields
                .set("joined_from_previous_read", Value::Int(split.joined as i64));
        }
        let cut = self.reads.pending(&segment);
        if cut > 0 {
            f.fields
                .set("incomplete_tail_bytes", Value::Int(cut as i64));
        }
        let buf: &[u8] = split.buf.as_deref().unwrap_or(data);
        f.messages.reserve(split.recs.events.len());
        for (pos, range) in &split.recs.events {
            let payload = buf[range.clone()].to_vec();
            let mut detail = Fields::new();
            // Wraps past i64 only on a hostile offset (Python's ints do not overflow).
            detail.set(
                "segment_offset",
                Value::Int((split.base + *pos as i128) as i64),
            );
            f.messages.push(Message {
                direction: Some(Direction::Deliver),
                value_size: payload.len() as i64,
                topic: Some(segment.clone()),
                value: Some(payload),
                detail: Some(std::rc::Rc::new(detail)),
                ..Message::default()
            });
        }
    }
}

/// Keeps `fields` readable: a big data blob is shown by its first DATA_VIEW bytes.
fn trim_data(fields: &mut Fields) {
    if let Some(Value::Bytes(v)) = fields.get_mut("data") {
        let n = v.len();
        v.truncate(DATA_VIEW);
        fields.set("data_length", Value::Int(n as i64));
        if n > DATA_VIEW {
            fields.set("data_shown", Value::Int(DATA_VIEW as i64));
        }
    }
    if let Some(Value::Map(ev)) = fields.get_mut("event") {
        if let Some(Value::Bytes(d)) = ev.get_mut("data") {
            let n = d.len();
            if n > DATA_VIEW {
                d.truncate(DATA_VIEW);
                ev.set("data_length", Value::Int(n as i64));
            }
        }
    }
}

impl Session for PravegaSession {
    fn frame_length(&mut self, _ctx: &mut ConnCtx, buf: &[u8], role: Role) -> FrameLen {
        let avail = buf.len();
        if avail < HEADER_SIZE {
            return FrameLen::NeedMore;
        }
        let (code, length) = header(buf);
        let s = role.index();
        if !self.started[s] {
            // The first frame of a direction must check out as strictly as a resync candidate:
            // a capture that starts mid-connection starts mid-frame, and small ints (lengths,
            // counts) there look like type codes.
            if buf[0] == 0x16 && buf[1] == 0x03 && buf[2] <= 0x04 {
                self.started[s] = true;
                return FrameLen::Undecodable; // TLS on the segment-store port (§1)
            }
            if !plausible_header(code, length) {
                self.started[s] = true;
                return FrameLen::NotAFrame;
            }
            if length as i64 <= RESYNC_WAIT_MAX {
                if avail < HEADER_SIZE + length as usize {
                    return FrameLen::NeedMore;
                }
                if !decodes(buf, 0, code, length) {
                    self.started[s] = true;
                    return FrameLen::NotAFrame;
                }
            }
            self.started[s] = true;
        }
        if !(-128..=127).contains(&code) || length < 0 {
            return FrameLen::NotAFrame;
        }
        FrameLen::Len(HEADER_SIZE as u64 + length as u64)
    }

    /// First header that checks out: a known code, a length the command allows, and, when the
    /// whole frame is buffered, fields that decode and a plausible next header. A small
    /// candidate not all buffered yet is passed over if a later one checks out, else waited for
    /// (None); a large one is taken on its header alone.
    fn resync(&mut self, _ctx: &mut ConnCtx, buf: &[u8], _role: Role) -> Option<usize> {
        let n = buf.len();
        let mut at = 0usize;
        while at + 4 <= n {
            let lead = buf[at];
            // Every top-level code is 00 00 00 xx or ff ff ff xx.
            if (lead == 0 || lead == 0xFF) && buf[at + 1] == lead && buf[at + 2] == lead {
                let code = i32::from_be_bytes([lead, lead, lead, buf[at + 3]]);
                if top_level(code) {
                    if at + HEADER_SIZE > n {
                        return None; // wait for the rest of this header
                    }
                    if let Some(found) = self.candidate(buf, at) {
                        return Some(found);
                    }
                }
            }
            at += 1;
        }
        None
    }

    fn decode(&mut self, ctx: &mut ConnCtx, data: &[u8], role: Role, complete: bool) -> Frames {
        smallvec![self.decode_one(ctx, data, role, complete)]
    }

    fn close(&mut self, ctx: &mut ConnCtx) -> Vec<FrameRef> {
        for w in self.blocks.pending_writers() {
            ctx.report(Anomaly::new(
                "append_block",
                format!("connection ended with the APPEND_BLOCK of writer {w} open"),
            ));
        }
        Vec::new()
    }
}

impl PravegaSession {
    /// `Some(at)` when the header at `at` is the one to resynchronise on.
    fn candidate(&self, buf: &[u8], at: usize) -> Option<usize> {
        let n = buf.len();
        let (code, length) = header(&buf[at..]);
        if !plausible_header(code, length) {
            return None;
        }
        let end = at + HEADER_SIZE + length as usize;
        if end > n {
            return (length as i64 > RESYNC_WAIT_MAX).then_some(at);
        }
        if length as i64 <= RESYNC_DECODE_MAX && !decodes(buf, at, code, length) {
            return None;
        }
        if end + HEADER_SIZE <= n {
            let (ncode, nlength) = header(&buf[end..]);
            if !plausible_header(ncode, nlength) {
                return None;
            }
        }
        Some(at)
    }
}

#[cfg(test)]
mod tests {
    //! Framing and decodes checked against frames laid out by hand from WIRE.md (§2 header, §3
    //! primitives, §5 fields in wire order, §6 append blocks), with expected values computed by
    //! hand, not taken from the decoder.

    use super::*;
    use crate::protocol::Protocol;

    const W: [u8; 16] = [
        0x6b, 0x44, 0x8a, 0x4b, 0x5e, 0x23, 0xf6, 0x95, 0x78, 0x0a, 0x6d, 0x60, 0x00, 0x40, 0x58,
        0x1e,
    ];
    const SEG: &str = "scope/stream/0.#epoch.0";

    fn cmd(code: i32, payload: &[u8]) -> Vec<u8> {
        let mut v = code.to_be_bytes().to_vec();
        v.extend_from_slice(&(payload.len() as i32).to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    fn s(t: &str) -> Vec<u8> {
        let mut v = (t.len() as u16).to_be_bytes().to_vec();
        v.extend_from_slice(t.as_bytes());
        v
    }

    fn rec(payload: &[u8]) -> Vec<u8> {
        let mut v = vec![0, 0, 0, 0];
        v.extend_from_slice(&(payload.len() as i32).to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    fn hello() -> Vec<u8> {
        cmd(-127, &[0, 0, 0, 15, 0, 0, 0, 5])
    }

    fn setup_append(rid: i64) -> Vec<u8> {
        let mut p = rid.to_be_bytes().to_vec();
        p.extend_from_slice(&W);
        p.extend(s(SEG));
        p.extend(s(""));
        cmd(1, &p)
    }

    fn new() -> (PravegaSession, ConnCtx) {
        let ctx = ConnCtx::standalone(PROTOCOL, 1);
        let sess = PravegaSession::new(&ctx);
        (sess, ctx)
    }

    #[test]
    fn first_frame_must_check_out() {
        let (mut sess, mut ctx) = new();
        let h = hello();
        assert_eq!(
            sess.frame_length(&mut ctx, &h[..7], Role::Client),
            FrameLen::NeedMore
        );
        // A whole small first frame is waited for, then decoded before it is accepted.
        assert_eq!(
            sess.frame_length(&mut ctx, &h[..12], Role::Client),
            FrameLen::NeedMore
        );
        assert_eq!(
            sess.frame_length(&mut ctx, &h, Role::Client),
            FrameLen::Len(16)
        );
        // TLS ClientHello on the port.
        let tls = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc];
        assert_eq!(
            sess.frame_length(&mut ctx, &tls, Role::Server),
            FrameLen::Undecodable
        );
        // Later frames: an unknown code in the signed-byte range keeps its length; a code
        // beyond it or a negative length is not a frame.
        assert_eq!(
            sess.frame_length(&mut ctx, &cmd(6, &[1, 2]), Role::Client),
            FrameLen::Len(10)
        );
        let mut big = cmd(300, &[]);
        assert_eq!(
            sess.frame_length(&mut ctx, &big, Role::Client),
            FrameLen::NotAFrame
        );
        big = cmd(1, &[]);
        big[4..8].copy_from_slice(&(-5i32).to_be_bytes());
        assert_eq!(
            sess.frame_length(&mut ctx, &big, Role::Client),
            FrameLen::NotAFrame
        );
        // A first frame whose header is implausible (KeepAlive with a payload).
        let (mut sess, mut ctx) = new();
        assert_eq!(
            sess.frame_length(&mut ctx, &cmd(100, &[0; 4]), Role::Client),
            FrameLen::NotAFrame
        );
    }

    #[test]
    fn resync_finds_a_frame_that_decodes() {
        let (mut sess, mut ctx) = new();
        // Garbage holding 00 00 00 01 (SetupAppend's code) with a length no SetupAppend has,
        // then a real SetupAppend followed by a KeepAlive.
        let mut buf = vec![0x55, 0, 0, 0, 1, 0, 0, 0, 3, 9, 9];
        let at = buf.len();
        buf.extend(setup_append(7));
        buf.extend(cmd(100, &[]));
        assert_eq!(sess.resync(&mut ctx, &buf, Role::Client), Some(at));
        // A small candidate not all buffered yet: wait.
        let cut = &buf[..at + 12];
        assert_eq!(sess.resync(&mut ctx, cut, Role::Client), None);
        // Half a header at the end: wait too.
        assert_eq!(
            sess.resync(&mut ctx, &[1, 2, 0, 0, 0, 1], Role::Client),
            None
        );
    }

    #[test]
    fn setup_append_fields_spans_and_flow() {
        let (mut sess, mut ctx) = new();
        let rid = (5i64 << 32) | 7;
        let data = setup_append(rid);
        let f = sess.decode(&mut ctx, &data, Role::Client, true).remove(0);
        let f = f.borrow();
        assert_eq!(
            (f.type_.as_ref(), f.kind, f.status),
            ("SetupAppend", Kind::Request, Status::Ok)
        );
        assert_eq!(f.correlation_id, Some(rid));
        assert_eq!(
            f.fields.get("writer_id"),
            Some(&Value::Str("6b448a4b-5e23-f695-780a-6d600040581e".into()))
        );
        assert_eq!(f.fields.get("segment"), Some(&Value::Str(SEG.into())));
        // request_id at 8..16, writer 16..32, segment (u16 + 23 bytes) 32..57.
        let spans: Vec<_> = f
            .fields
            .0
            .iter()
            .map(|x| (x.name.as_ref(), x.span))
            .collect();
        assert_eq!(spans[0], ("request_id", Some(Span::new(8, 16))));
        assert_eq!(spans[2], ("segment", Some(Span::new(32, 57))));
        let mut flow = Fields::new();
        flow.set("flow_id", Value::Int(5));
        flow.set("sequence", Value::Int(7));
        assert_eq!(f.fields.get("flow"), Some(&Value::Map(flow)));
        assert_eq!(f.summary, format!("writer 6b448a4b {SEG}"));
    }

    #[test]
    fn cut_field_is_malformed_with_its_offset() {
        let (mut sess, mut ctx) = new();
        let mut data = setup_append(1);
        // 59 bytes (8 header + 8 + 16 + 2 + 23 + 2); keep the header's length but drop the last
        // 22: the segment string (its 23 bytes from byte 34) runs out with 37 - 34 = 3 left.
        data.truncate(data.len() - 22);
        let f = sess.decode(&mut ctx, &data, Role::Client, true).remove(0);
        let f = f.borrow();
        assert_eq!(f.status, Status::Malformed);
        assert_eq!(
            f.anomalies[0].detail,
            "SetupAppend: segment at byte 34 needs 23 bytes, 3 left"
        );
        assert_eq!(f.anomalies[0].offset, Some(34));
    }

    #[test]
    fn append_block_end_events_and_ack() {
        let (mut sess, mut ctx) = new();
        sess.decode(&mut ctx, &setup_append(1), Role::Client, true);
        // AppendBlockEnd carrying two events in its data, numEvents 2, last event 11.
        let mut events = rec(b"alpha");
        events.extend(rec(b"be"));
        let mut p = W.to_vec();
        p.extend_from_slice(&0i32.to_be_bytes());
        p.extend_from_slice(&(events.len() as i32).to_be_bytes());
        p.extend(&events);
        p.extend_from_slice(&2i32.to_be_bytes());
        p.extend_from_slice(&11i64.to_be_bytes());
        p.extend_from_slice(&3i64.to_be_bytes());
        let end = sess
            .decode(&mut ctx, &cmd(4, &p), Role::Client, true)
            .remove(0);
        {
            let f = end.borrow();
            assert_eq!(f.messages.len(), 2);
            assert_eq!(f.messages[0].offset, Some(10));
            assert_eq!(f.messages[1].value.as_deref(), Some(&b"be"[..]));
            assert_eq!(f.messages[1].topic.as_deref(), Some(SEG));
            assert_eq!(f.summary, "writer 6b448a4b events 10..11 (2 events, 23 B)");
        }
        // 13 + 10 bytes of records. DataAppended(writer, 11, previous 9, rid 3, offset 21) acknowledges it.
        let mut p = W.to_vec();
        for v in [11i64, 9, 3, 21] {
            p.extend_from_slice(&v.to_be_bytes());
        }
        let ack = sess
            .decode(&mut ctx, &cmd(7, &p), Role::Server, true)
            .remove(0);
        let rows = ctx.correlator.drain();
        assert!(rows
            .iter()
            .any(|r| r.type_ == "AppendBlockEnd"
                && r.status == crate::model::ExchangeStatus::Answered));
        assert!(!end.borrow().awaiting);
        assert_eq!(
            ack.borrow().summary,
            "writer 6b448a4b acked up to event 11 (previous 9), segment write offset 21"
        );
    }

    #[test]
    fn segment_read_joins_a_record_cut_across_reads() {
        let (mut sess, mut ctx) = new();
        let r = rec(b"0123456789");
        let read = |off: i64, data: &[u8]| {
            let mut p = s(SEG);
            p.extend_from_slice(&off.to_be_bytes());
            p.extend_from_slice(&[0, 0]);
            p.extend_from_slice(&(data.len() as i32).to_be_bytes());
            p.extend_from_slice(data);
            p.extend_from_slice(&4i64.to_be_bytes());
            cmd(10, &p)
        };
        let a = sess
            .decode(&mut ctx, &read(100, &r[..6]), Role::Server, true)
            .remove(0);
        assert_eq!(a.borrow().messages.len(), 0);
        assert_eq!(
            a.borrow().fields.get("incomplete_tail_bytes"),
            Some(&Value::Int(6))
        );
        let b = sess
            .decode(&mut ctx, &read(106, &r[6..]), Role::Server, true)
            .remove(0);
        let b = b.borrow();
        assert_eq!(b.messages.len(), 1);
        assert_eq!(b.messages[0].value.as_deref(), Some(&b"0123456789"[..]));
        let off = b.messages[0]
            .detail
            .as_ref()
            .and_then(|d| d.get("segment_offset").cloned());
        assert_eq!(off, Some(Value::Int(100)));
        assert_eq!(
            b.fields.get("joined_from_previous_read"),
            Some(&Value::Int(6))
        );
    }

    #[test]
    fn hello_versions_and_protocol() {
        let (mut sess, mut ctx) = new();
        sess.decode(
            &mut ctx,
            &cmd(-127, &[0, 0, 0, 9, 0, 0, 0, 5]),
            Role::Client,
            true,
        );
        let f = sess
            .decode(
                &mut ctx,
                &cmd(-127, &[0, 0, 0, 17, 0, 0, 0, 10]),
                Role::Server,
                true,
            )
            .remove(0);
        let f = f.borrow();
        assert_eq!(f.status, Status::UnsupportedVersion);
        assert_eq!(
            f.fields.get("versions"),
            Some(&Value::Str("incompatible".into()))
        );
        assert_eq!(f.version, Some(17));
        let p = super::super::Pravega;
        assert_eq!(
            (p.name(), p.ports(), p.max_frame()),
            ("pravega", &[12345u16][..], 0xFF_FFFF + 8)
        );
    }
}

#[cfg(test)]
mod speed {
    //! `cargo test --release -q pravega::session::speed -- --ignored --nocapture`: decode speed
    //! on a synthetic append workload (the figures go in the report, not in an assertion).

    use super::*;

    #[test]
    #[ignore]
    fn appends_and_acks() {
        let w = [7u8; 16];
        let mut setup = 1i64.to_be_bytes().to_vec();
        setup.extend_from_slice(&w);
        setup.extend_from_slice(&[0, 3, b's', b'/', b'x', 0, 0]);
        let frame = |code: i32, p: &[u8]| {
            let mut v = code.to_be_bytes().to_vec();
            v.extend_from_slice(&(p.len() as i32).to_be_bytes());
            v.extend_from_slice(p);
            v
        };
        let mut events = Vec::new();
        for _ in 0..10 {
            events.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 100]);
            events.extend_from_slice(&[b'e'; 100]);
        }
        let n = 100_000i64;
        let mut ctx = ConnCtx::standalone(PROTOCOL, 1);
        let mut sess = PravegaSession::new(&ctx);
        sess.decode(&mut ctx, &frame(1, &setup), Role::Client, true);
        let t = std::time::Instant::now();
        let mut bytes = 0usize;
        for i in 0..n {
            let mut p = w.to_vec();
            p.extend_from_slice(&0i32.to_be_bytes());
            p.extend_from_slice(&(events.len() as i32).to_be_bytes());
            p.extend_from_slice(&events);
            p.extend_from_slice(&10i32.to_be_bytes());
            p.extend_from_slice(&(i * 10 + 9).to_be_bytes());
            p.extend_from_slice(&(i + 2).to_be_bytes());
            let end = frame(4, &p);
            let mut a = w.to_vec();
            for v in [i * 10 + 9, i * 10 - 1, i + 2, i * 1080] {
                a.extend_from_slice(&v.to_be_bytes());
            }
            let ack = frame(7, &a);
            bytes += end.len() + ack.len();
            sess.decode(&mut ctx, &end, Role::Client, true);
            sess.decode(&mut ctx, &ack, Role::Server, true);
            ctx.correlator.drain();
        }
        let s = t.elapsed().as_secs_f64();
        eprintln!(
            "{} frames, {:.1} MB in {:.3} s: {:.0} frames/s, {:.0} MB/s, {:.0} events/s",
            2 * n,
            bytes as f64 / 1e6,
            s,
            2.0 * n as f64 / s,
            bytes as f64 / 1e6 / s,
            10.0 * n as f64 / s
        );
    }
}
