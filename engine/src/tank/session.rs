//! Per-connection TANK state: framing, resynchronisation, dispatch and pairing (the twin of
//! `protocols/tank/session.py`).
//!
//! TANK frames are `msgId u8 | payloadSize u32 LE | payload`. Who sent a frame decides what it
//! is: from the client a request (Ping aside), from the broker a response with the same msgId
//! (ProduceWithSeqnum is answered with Produce). Requests pair with responses by (response
//! msgId, request id), so a long-poll Consume answered seconds later, or responses out of order,
//! still pair.

use std::borrow::Cow;

use super::common::{DecodeState, Stop};
use super::constants as C;
use super::cursor::Cursor;
use super::{partitions, requests, responses, PROTOCOL};
use crate::correlation::Key;
use smallvec::smallvec;

use crate::model::{Frame, FrameRef, Frames, Kind, Role, Span, Status, Value};
use crate::protocol::{ConnCtx, FrameLen, Session};

fn size_at(buf: &[u8], pos: usize) -> Option<u64> {
    let b = buf.get(pos..pos + 4)?;
    Some(u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
}

/// Could a TANK frame sent by `role` start at `buf[pos]`? (resync and sniffing)
///
/// Needs the 5 header bytes. Checks the id is one this side sends, the length is within that
/// message's bounds and, with `strict`, the first payload bytes where they are cheap to check
/// (client version, str8 lengths).
pub fn plausible_header(buf: &[u8], pos: usize, role: Role, strict: bool) -> bool {
    if pos + C::HEADER_SIZE > buf.len() {
        return false;
    }
    let msg_id = buf[pos];
    let Some(size) = size_at(buf, pos + 1) else {
        return false;
    };
    let minimum = match role {
        Role::Client => C::min_request_payload(msg_id),
        Role::Server => C::min_response_payload(msg_id),
    };
    let Some(minimum) = minimum else {
        return false;
    };
    if size < minimum || size > C::MAX_PAYLOAD {
        return false;
    }
    if msg_id == C::PING {
        return size == 0;
    }
    if msg_id == C::STATUS && role == Role::Client {
        return size == 4;
    }
    if !strict {
        return true;
    }
    let p = pos + C::HEADER_SIZE;
    let avail = buf.len() - p;
    if role == Role::Client && matches!(msg_id, C::PRODUCE | C::CONSUME | C::PRODUCE_WITH_SEQNUM) {
        if avail >= 2 && u16::from(buf[p]) + (u16::from(buf[p + 1]) << 8) > 16 {
            return false; // client version: TANK clients send 2 or 3
        }
        if avail >= 7 && u64::from(buf[p + 6]) > size - minimum + 1 {
            return false; // client id str8 longer than the payload allows
        }
    }
    if role == Role::Server && msg_id == C::CONSUME && avail >= 4 {
        if let Some(hlen) = size_at(buf, p) {
            if hlen + 4 > size {
                return false;
            }
        }
    }
    true
}

/// One connection's TANK decoder state.
#[derive(Default)]
pub struct TankSession {
    /// Directions (client, server) whose first frame passed the strict check; until then (start
    /// of a capture taken mid-connection) a header must look right before its length is trusted.
    synced: [bool; 2],
}

impl TankSession {
    pub fn new() -> TankSession {
        TankSession::default()
    }

    /// A session that already framed a frame of `role` (tests: the framing after the first frame).
    pub fn synced(role: Role) -> TankSession {
        let mut s = TankSession::default();
        s.synced[role.index()] = true;
        s
    }
}

impl Session for TankSession {
    fn frame_length(&mut self, _ctx: &mut ConnCtx, buf: &[u8], role: Role) -> FrameLen {
        if buf.len() < C::HEADER_SIZE {
            return FrameLen::NeedMore;
        }
        if !self.synced[role.index()] {
            if !plausible_header(buf, 0, role, true) {
                return FrameLen::NotAFrame;
            }
            self.synced[role.index()] = true;
        }
        let msg_id = buf[0];
        let size = size_at(buf, 1).unwrap_or(0);
        if C::msg_name(msg_id).is_none() && size > C::MAX_UNKNOWN_PAYLOAD {
            return FrameLen::NotAFrame;
        }
        if msg_id == C::PING && size > C::MAX_PING_PAYLOAD {
            return FrameLen::NotAFrame;
        }
        FrameLen::Len(C::HEADER_SIZE as u64 + size)
    }

    fn resync(&mut self, _ctx: &mut ConnCtx, buf: &[u8], role: Role) -> Option<usize> {
        let end = buf.len().checked_sub(C::HEADER_SIZE)?;
        (0..=end).find(|&p| {
            if !plausible_header(buf, p, role, true) {
                return false;
            }
            let size = size_at(buf, p + 1).unwrap_or(0);
            let next = p as u64 + C::HEADER_SIZE as u64 + size;
            // When the next header is buffered too, it must look like a frame as well.
            next + C::HEADER_SIZE as u64 > buf.len() as u64
                || plausible_header(buf, next as usize, role, false)
        })
    }

    fn decode(&mut self, ctx: &mut ConnCtx, data: &[u8], role: Role, complete: bool) -> Frames {
        smallvec![decode_frame(ctx, data, role, complete)]
    }
}

fn decode_frame(ctx: &mut ConnCtx, data: &[u8], role: Role, complete: bool) -> FrameRef {
    if data.len() < C::HEADER_SIZE {
        let (type_, code): (&'static str, i64) = match data.first() {
            Some(&b) => (C::msg_name(b).unwrap_or("Unknown"), i64::from(b)),
            None => ("?", -1),
        };
        let mut f = Frame::new(PROTOCOL, type_, code);
        f.fields.set_span(
            "header_bytes",
            Value::Bytes(data.to_vec()),
            Some(Span::new(0, data.len())),
        );
        f.summary = format!("{} bytes of a frame header", data.len());
        if complete {
            f.flag(
                Status::Malformed,
                "malformed",
                "frame shorter than its 5-byte header",
                Some(0),
            );
        }
        return f.shared();
    }
    let msg_id = data[0];
    let size = size_at(data, 1).unwrap_or(0);
    let Some(name) = C::msg_name(msg_id) else {
        let mut f = Frame::new(
            PROTOCOL,
            format!("Unknown({msg_id:#04x})"),
            i64::from(msg_id),
        );
        f.fields.set_span(
            "payload_size",
            Value::Int(size as i64),
            Some(Span::new(1, 5)),
        );
        f.fields.set_span(
            "payload",
            Value::Bytes(data[C::HEADER_SIZE..].to_vec()),
            Some(Span::new(C::HEADER_SIZE, data.len())),
        );
        f.summary = format!("unknown message id {msg_id:#04x}, {size} bytes");
        f.flag(
            Status::UnknownType,
            "unknown_type",
            format!("unknown TANK message id {msg_id:#04x} ({size} bytes)"),
            Some(0),
        );
        return f.shared();
    };
    let fr = Frame::new(PROTOCOL, name, i64::from(msg_id)).shared();
    {
        let mut f = fr.borrow_mut();
        f.kind = if msg_id == C::PING {
            Kind::Event
        } else if role == Role::Client {
            Kind::Request
        } else {
            Kind::Response
        };
        let is_request = msg_id == C::PING || role == Role::Client;
        let known = if is_request {
            C::min_request_payload(msg_id).is_some()
        } else {
            C::min_response_payload(msg_id).is_some()
        };
        if !known {
            // A message only clients send, coming from the broker (or the reverse).
            f.kind = Kind::Event;
            f.fields.set_span(
                "payload",
                Value::Bytes(data[C::HEADER_SIZE..].to_vec()),
                Some(Span::new(C::HEADER_SIZE, data.len())),
            );
            let who = role.as_str();
            f.summary = format!("{name} sent by the {who}, which TANK never does");
            f.flag(
                Status::Malformed,
                "malformed",
                format!("{name} (id {msg_id:#04x}) is not sent by the {who}"),
                Some(0),
            );
            drop(f);
            return fr;
        }
        f.fields.set_span(
            "payload_size",
            Value::Int(size as i64),
            Some(Span::new(1, 5)),
        );
        let limits_rc = ctx.limits.clone();
        let mut limits = limits_rc.borrow_mut();
        let mut st = DecodeState {
            limits: &mut limits,
            correlator: &mut ctx.correlator,
            me: &fr,
            problems: Default::default(),
            batches: 0,
            kept: 0,
            read: 0,
        };
        let mut c = Cursor::new(data, C::HEADER_SIZE, data.len());
        let res = if is_request {
            requests::decode(msg_id, &mut c, &mut f, &mut st)
        } else {
            responses::decode(msg_id, &mut c, &mut f, &mut st)
        }
        .unwrap_or(Ok(()));
        match res {
            Ok(()) => {
                let left = c.left_signed();
                if left != 0 && complete {
                    st.problems.push((
                        Cow::Borrowed("malformed"),
                        format!("{left} bytes left after the {name} payload"),
                        Some(c.pos as u64),
                    ));
                }
            }
            Err(Stop::Short(e)) => {
                if complete {
                    f.flag(
                        Status::Malformed,
                        "malformed",
                        format!("{name}: {e}"),
                        Some(e.offset as u64),
                    );
                } else {
                    f.fields.set("cut_at", Value::Int(e.offset as i64));
                }
            }
            Err(e @ Stop::UnknownFlag { offset, .. }) => {
                f.flag(
                    Status::Malformed,
                    "malformed",
                    format!("{name}: {e}"),
                    Some(offset as u64),
                );
            }
        }
        let listed = st.batches.min(st.limits.max_batches);
        if let Some(detail) = st.limits.over_batches(listed, st.batches) {
            st.problems
                .push((Cow::Borrowed("batch_limit"), detail, None));
        }
        if let Some(detail) = st.limits.over_messages(st.kept, st.read) {
            st.problems
                .push((Cow::Borrowed("message_limit"), detail, None));
            f.messages_counted += st.read - st.kept;
        }
        // Our caps are not the frame's fault: noted, the status stays.
        std::mem::take(&mut st.problems).put_on(&mut f, |kind| {
            (!matches!(
                kind,
                "decompression_limit" | "message_limit" | "batch_limit"
            ))
            .then_some(Status::Malformed)
        });
        if f.summary.is_empty() {
            // The decoder stopped before writing its line: say who it was and what went wrong.
            let rid = f
                .correlation_id
                .map_or_else(String::new, |id| format!("req {id} "));
            if !complete {
                f.summary = format!(
                    "{rid}cut after {} of {} bytes",
                    data.len(),
                    C::HEADER_SIZE as u64 + size
                );
            } else if let Some(a) = f.anomalies.first() {
                f.summary = format!("{rid}{}", a.detail);
            }
        }
    }
    correlate(ctx, &fr, msg_id);
    {
        let mut f = fr.borrow_mut();
        f.partitions = partitions::of_frame(&f);
    }
    fr
}

/// Registers requests; responses already paired themselves while decoding.
fn correlate(ctx: &mut ConnCtx, fr: &FrameRef, msg_id: u8) {
    let (kind, cid) = {
        let f = fr.borrow();
        (f.kind, f.correlation_id)
    };
    if kind != Kind::Request {
        return;
    }
    if C::no_response(msg_id) {
        ctx.correlator.request(fr, Key::None, false);
        return;
    }
    if msg_id == C::CONSUME_PEER {
        ctx.correlator.request(
            fr,
            Key::Tuple(vec![Key::Int(i64::from(C::CONSUME_PEER))]),
            true,
        );
        return;
    }
    let Some(cid) = cid else {
        return; // cut before its request id: nothing can answer it
    };
    ctx.correlator.request(
        fr,
        Key::Tuple(vec![
            Key::Int(i64::from(C::response_id(msg_id))),
            Key::Int(cid),
        ]),
        true,
    );
}
