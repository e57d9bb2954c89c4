//! The Pravega session on arbitrary bytes, driven as the framing engine drives it: the input is
//! cut into chunks given to the client or the server (the first byte of each chunk picks the
//! side and its length), each side's bytes are framed with `frame_length`, resynchronised with
//! `resync` past what is not a frame, decoded frame by frame, cut frames decoded with
//! `complete = false` at the end, then the session is closed. Any panic is a finding; every
//! field span must lie inside its frame.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wiredump_engine::model::{FrameRef, Role, Value};
use wiredump_engine::pravega::Pravega;
use wiredump_engine::protocol::{ConnCtx, FrameLen, Protocol};
use wiredump_engine::replay::{Replay, Stamp};

fn check_spans(frames: &[FrameRef], len: usize) {
    for f in frames {
        let f = f.borrow();
        for field in &f.fields.0 {
            if let Some(s) = field.span {
                assert!(s.start <= s.end && s.end as usize <= len, "span {s:?} outside {len}");
            }
            if let Value::Map(m) = &field.value {
                for inner in &m.0 {
                    if let Some(s) = inner.span {
                        assert!(s.end as usize <= len);
                    }
                }
            }
        }
    }
}

struct Side {
    buf: Vec<u8>,
    dead: bool,
}

fn pump(r: &mut Replay, side: &mut Side, role: Role, packet: u64) {
    let max = Pravega.max_frame() as usize;
    while !side.dead && !side.buf.is_empty() {
        match r.frame_length(&side.buf, role) {
            FrameLen::NeedMore => return,
            FrameLen::Undecodable => {
                side.dead = true;
                side.buf.clear();
            }
            FrameLen::Len(n) if (n as usize) <= max && n > 0 => {
                let n = n as usize;
                if side.buf.len() < n {
                    return;
                }
                let frame: Vec<u8> = side.buf.drain(..n).collect();
                let at = Stamp { packet, first_packet: packet, ts_us: packet as i64 * 1000 };
                let frames = r.decode(&frame, role, true, at);
                check_spans(&frames, frame.len());
            }
            FrameLen::Len(_) | FrameLen::NotAFrame => {
                // Skip at least one byte, then resynchronise on what is left.
                match r.resync(&side.buf[1..], role) {
                    Some(at) => {
                        assert!(at + 1 <= side.buf.len());
                        side.buf.drain(..at + 1);
                    }
                    None => {
                        // Keep the last bytes (a header may be starting there), as the engine does.
                        let keep = side.buf.len().min(7);
                        let cut = side.buf.len() - keep;
                        side.buf.drain(..cut.max(1));
                        return;
                    }
                }
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let ctx = ConnCtx::standalone("pravega", 1);
    let mut r = Replay::new(&Pravega, ctx);
    let mut sides = [Side { buf: Vec::new(), dead: false }, Side { buf: Vec::new(), dead: false }];
    let mut pos = 0;
    let mut packet = 1u64;
    while pos < data.len() {
        let ctl = data[pos];
        pos += 1;
        let len = ((ctl & 0x7F) as usize + 1).min(data.len() - pos);
        let (i, role) = if ctl & 0x80 == 0 { (0, Role::Client) } else { (1, Role::Server) };
        sides[i].buf.extend_from_slice(&data[pos..pos + len]);
        pos += len;
        pump(&mut r, &mut sides[i], role, packet);
        packet += 1;
    }
    for (i, role) in [(0, Role::Client), (1, Role::Server)] {
        if !sides[i].dead && !sides[i].buf.is_empty() {
            let rest = std::mem::take(&mut sides[i].buf);
            let at = Stamp { packet, first_packet: packet, ts_us: 0 };
            let frames = r.decode(&rest, role, false, at);
            check_spans(&frames, rest.len());
        }
    }
    r.close(Stamp::default());
});
