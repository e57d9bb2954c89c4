//! Fuzzes the TANK session as the framing engine drives it. The input is the session format the
//! Python atheris targets share (fuzz/atheris/_harness.py, seeds by scripts/fuzz_seeds.py):
//! byte 0 picks the limits (bit 0: a message cap of 3, so the message_limit paths are reached),
//! then records of `[role: bit 0 = server][length: u16 big-endian][bytes]` (a record cut short
//! takes what is left), appended to that role's buffer. A small framer asks `frame_length`,
//! resynchronises on `NotAFrame`, decodes whole frames, and at the end decodes what is left as
//! cut frames and closes the connection. Checks that nothing panics and that every field span
//! lies inside its frame.

#![no_main]

use libfuzzer_sys::fuzz_target;
use wiredump_engine::model::{Fields, Role, Value};
use wiredump_engine::protocol::{ConnCtx, FrameLen, Protocol};
use wiredump_engine::replay::{Replay, Stamp};
use wiredump_engine::tank::{Tank, PROTOCOL};

fn check(fields: &Fields, len: usize) {
    for f in &fields.0 {
        if let Some(s) = f.span {
            assert!(
                s.start <= s.end && s.end as usize <= len,
                "{}: span {}..{} outside {len}",
                f.name,
                s.start,
                s.end
            );
        }
        check_value(&f.value, len);
    }
}

fn check_value(v: &Value, len: usize) {
    match v {
        Value::Map(m) => check(m, len),
        Value::List(items) => items.iter().for_each(|i| check_value(i, len)),
        _ => {}
    }
}

fn decode(r: &mut Replay, data: &[u8], role: Role, complete: bool, packet: u64) {
    let at = Stamp {
        packet,
        first_packet: packet,
        ts_us: packet as i64,
    };
    for f in r.decode(data, role, complete, at) {
        check(&f.borrow().fields, data.len());
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&profile, mut rest)) = data.split_first() else {
        return;
    };
    let ctx = ConnCtx::standalone(PROTOCOL, 0);
    if profile & 1 != 0 {
        ctx.limits.borrow_mut().max_messages = 3;
    }
    let mut r = Replay::new(&Tank, ctx);
    let mut bufs: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    let mut packet = 0u64;
    while let Some((&ctl, tail)) = rest.split_first() {
        let n = match tail {
            [a, b, ..] => usize::from(u16::from_be_bytes([*a, *b])),
            _ => 0,
        };
        let body = tail.get(2..).unwrap_or(&[]);
        let n = n.min(body.len());
        rest = &body[n..];
        let (role, side) = if ctl & 1 != 0 {
            (Role::Server, 1)
        } else {
            (Role::Client, 0)
        };
        bufs[side].extend_from_slice(&body[..n]);
        packet += 1;
        loop {
            let buf = &bufs[side];
            match r.frame_length(buf, role) {
                FrameLen::NeedMore | FrameLen::Undecodable => break,
                FrameLen::NotAFrame => match r.resync(&buf[1..], role) {
                    Some(at) => {
                        assert!(at + 1 < buf.len());
                        bufs[side].drain(..at + 1);
                    }
                    None => {
                        let keep = buf.len().min(4);
                        let cut = buf.len() - keep;
                        bufs[side].drain(..cut.max(1));
                    }
                },
                FrameLen::Len(len) => {
                    if len > Tank.max_frame() {
                        bufs[side].drain(..1);
                        continue;
                    }
                    let len = len as usize;
                    if len > buf.len() {
                        break;
                    }
                    let frame: Vec<u8> = bufs[side].drain(..len).collect();
                    decode(&mut r, &frame, role, true, packet);
                }
            }
        }
    }
    for (side, role) in [(0, Role::Client), (1, Role::Server)] {
        if !bufs[side].is_empty() {
            let rest = std::mem::take(&mut bufs[side]);
            decode(&mut r, &rest, role, false, packet + 1);
        }
    }
    r.close(Stamp::default());
});
