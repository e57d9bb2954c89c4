//! Fuzzes the TANK session as the framing engine drives it: the input is a run of chunks, each
//! `[ctl][bytes…]` (ctl: bit 7 the role, bits 0–6 the chunk length), appended to that role's
//! buffer; a small framer asks `frame_length`, resynchronises on `NotAFrame`, decodes whole
//! frames, and at the end decodes what is left as cut frames and closes the connection. Checks
//! that nothing panics and that every field span lies inside its frame.

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
    let mut r = Replay::new(&Tank, ConnCtx::standalone(PROTOCOL, 0));
    let mut bufs: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    let mut i = 0;
    let mut packet = 0u64;
    while i < data.len() {
        let ctl = data[i];
        i += 1;
        let n = usize::from(ctl & 0x7F).min(data.len() - i);
        let (role, side) = if ctl & 0x80 != 0 {
            (Role::Server, 1)
        } else {
            (Role::Client, 0)
        };
        bufs[side].extend_from_slice(&data[i..i + n]);
        i += n;
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
