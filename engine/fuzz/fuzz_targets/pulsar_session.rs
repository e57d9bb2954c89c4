//! Fuzzes the Pulsar session as the framing engine drives it. The input is the session format the
//! atheris targets share (fuzz/atheris/_harness.py): byte 0 picks the limits (bit 0: a message cap
//! of 3), then records `[role: bit 0 = server][u16 big-endian length][bytes]` (a record cut short
//! takes what is left), fed to a small framer per direction (frame_length, decode of whole frames, resync over what is not a
//! frame, the bytes left decoded as cut at the end, close). Checks that nothing panics, that
//! every field span lies inside its frame and that no frame is asked for beyond the hard ceiling.

#![no_main]

use libfuzzer_sys::fuzz_target;
use wiredump_engine::model::{Fields, Role, Value};
use wiredump_engine::protocol::{ConnCtx, FrameLen, Protocol};
use wiredump_engine::pulsar::{Pulsar, HARD_MAX_FRAME};
use wiredump_engine::replay::{Replay, Stamp};

fn spans_inside(fields: &Fields, len: u32) {
    for f in &fields.0 {
        if let Some(s) = f.span {
            assert!(s.start <= s.end && s.end <= len, "{} {s:?} outside {len}", f.name);
        }
        if let Value::Map(m) = &f.value {
            spans_inside(m, len);
        }
    }
}

fn pump(r: &mut Replay, buf: &mut Vec<u8>, role: Role, dead: &mut bool, packet: u64) {
    while !*dead && !buf.is_empty() {
        match r.frame_length(buf, role) {
            FrameLen::NeedMore => return,
            FrameLen::Undecodable => {
                *dead = true;
                buf.clear();
            }
            FrameLen::Len(n) if n > HARD_MAX_FRAME => {
                buf.clear(); // the engine reports it and skips it, never buffering it
            }
            FrameLen::Len(n) => {
                let n = n as usize;
                if n > buf.len() {
                    return;
                }
                let stamp = Stamp { packet, first_packet: packet, ts_us: packet as i64 };
                for f in r.decode(&buf[..n], role, true, stamp) {
                    let f = f.borrow();
                    spans_inside(&f.fields, n as u32);
                }
                buf.drain(..n);
            }
            FrameLen::NotAFrame => match r.resync(buf, role) {
                Some(i) if i > 0 && i <= buf.len() => {
                    buf.drain(..i);
                }
                Some(_) => {
                    buf.drain(..1);
                }
                None => {
                    // Keep the bytes a frame head could still start in.
                    let cut = buf.len().saturating_sub(9);
                    buf.drain(..cut);
                    return;
                }
            },
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&profile, mut rest)) = data.split_first() else {
        return;
    };
    let proto = Pulsar;
    let ctx = ConnCtx::standalone(proto.name(), 1);
    if profile & 1 != 0 {
        ctx.limits.borrow_mut().max_messages = 3;
    }
    let mut r = Replay::new(&proto, ctx);
    let mut bufs = [Vec::new(), Vec::new()];
    let mut dead = [false, false];
    let mut packet = 0;
    while let Some((&head, tail)) = rest.split_first() {
        let role = if head & 1 == 0 { Role::Client } else { Role::Server };
        let n = match tail {
            [a, b, ..] => usize::from(u16::from_be_bytes([*a, *b])),
            _ => 0,
        };
        let body = tail.get(2..).unwrap_or(&[]);
        let chunk = &body[..n.min(body.len())];
        rest = &body[chunk.len()..];
        let i = usize::from(head & 1);
        packet += 1;
        bufs[i].extend_from_slice(chunk);
        pump(&mut r, &mut bufs[i], role, &mut dead[i], packet);
    }
    for (i, role) in [(0, Role::Client), (1, Role::Server)] {
        if !bufs[i].is_empty() && !dead[i] {
            let stamp = Stamp { packet, first_packet: packet, ts_us: 0 };
            let b = std::mem::take(&mut bufs[i]);
            r.decode(&b, role, false, stamp);
        }
    }
    r.close(Stamp::default());
});
