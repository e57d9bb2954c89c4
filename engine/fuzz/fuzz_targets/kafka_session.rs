//! Fuzzes the Kafka session: arbitrary bytes are split into chunks, each sent by the client or
//! the server, and driven through the session as the framer would — frame_length on the
//! buffered bytes, resync when they are not a frame, decode of every whole frame, decode of the
//! cut rest (`complete = false`), then close. Any panic is a finding; every span must lie inside
//! its frame. When the first byte's top bit is set the session *observes* (a Spark share's view
//! of a connection another share decodes: `SessionOptions::observe`, which reads Produce's acks
//! without walking the body and only the responses that can teach topic names), so both paths are
//! fuzzed from the same inputs; three more bits turn off messages, field trees and message values
//! (the plain timeline's and the export's lean decoding). A fifth bit decodes the input twice,
//! with and without `SessionOptions::detail_text` (the export's bodies written as text straight
//! from the walked tree): every frame's `detail` text and partitions must be the same both ways.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::rc::Rc;
use wiredump_engine::detail_json::write_frame_json;
use wiredump_engine::kafka::Kafka;
use wiredump_engine::model::{Fields, Role, TopicPartition, Value};
use wiredump_engine::protocol::{ConnCtx, FrameLen, SessionOptions};
use wiredump_engine::replay::{Replay, Stamp};

fn spans_inside(f: &Fields, len: u64) {
    for fl in &f.0 {
        if let Some(s) = fl.span {
            assert!(
                s.start <= s.end && u64::from(s.end) <= len,
                "span {s:?} outside {len}"
            );
        }
        if let Value::Map(m) = &fl.value {
            spans_inside(m, len);
        }
    }
}

/// What the differential mode compares of each frame: its `detail` text and partitions.
type Seen = Vec<(String, Option<Vec<TopicPartition>>)>;

fn drive(r: &mut Replay, buf: &mut Vec<u8>, role: Role, packet: u64, seen: &mut Seen) {
    // At most a few rounds per chunk: each either consumes bytes or stops.
    for _ in 0..64 {
        if buf.is_empty() {
            return;
        }
        match r.frame_length(buf, role) {
            FrameLen::NeedMore => return,
            FrameLen::Undecodable => {
                buf.clear();
                return;
            }
            FrameLen::NotAFrame => match r.resync(&buf[1..], role) {
                Some(at) => {
                    buf.drain(..=at);
                }
                None => {
                    let keep = buf.len().min(64);
                    buf.drain(..buf.len() - keep);
                    return;
                }
            },
            FrameLen::Len(n) => {
                if n == 0 || n > 1 << 20 {
                    buf.clear();
                    return;
                }
                let n = n as usize;
                if n > buf.len() {
                    return;
                }
                let stamp = Stamp {
                    packet,
                    first_packet: packet,
                    ts_us: packet as i64,
                };
                for f in r.decode(&buf[..n], role, true, stamp) {
                    let f = f.borrow();
                    spans_inside(&f.fields, n as u64);
                    let mut text = String::new();
                    write_frame_json(&mut text, &f.fields, f.body_text.as_deref());
                    seen.push((text, f.partitions.clone()));
                }
                buf.drain(..n);
            }
        }
    }
}

fn run(data: &[u8], text: bool) -> Seen {
    let kafka = Kafka;
    let mut ctx = ConnCtx::standalone("kafka", 1);
    // The first byte's high bits choose the run's options: observe (0x80), and the lean ones the
    // plain timeline and the export run with: no messages (0x40), no field trees (0x20), no
    // message values (0x10); 0x08 runs the input a second time with `text` (the fuzz target).
    let first = data.first().copied().unwrap_or(0);
    let detail = first & 0x20 == 0;
    ctx.options = Rc::new(SessionOptions {
        observe: first & 0x80 != 0,
        messages: first & 0x40 == 0,
        detail,
        values: first & 0x10 == 0,
        detail_text: text && detail,
        ..SessionOptions::default()
    });
    let mut r = Replay::new(&kafka, ctx);
    let mut seen = Seen::new();
    let mut bufs = [Vec::new(), Vec::new()];
    let mut pos = 0;
    let mut packet = 0;
    // Each chunk: one byte (low bit: role, the rest: length / 2), then its bytes.
    while pos < data.len() {
        let head = data[pos];
        pos += 1;
        let role = if head & 1 == 0 {
            Role::Client
        } else {
            Role::Server
        };
        let len = (usize::from(head >> 1) * 3 + 1).min(data.len() - pos);
        let i = usize::from(head & 1);
        bufs[i].extend_from_slice(&data[pos..pos + len]);
        pos += len;
        packet += 1;
        drive(&mut r, &mut bufs[i], role, packet, &mut seen);
    }
    for (i, role) in [(0, Role::Client), (1, Role::Server)] {
        if !bufs[i].is_empty() {
            let stamp = Stamp {
                packet,
                first_packet: packet,
                ts_us: 0,
            };
            for f in r.decode(&bufs[i], role, false, stamp) {
                let f = f.borrow();
                let mut text = String::new();
                write_frame_json(&mut text, &f.fields, f.body_text.as_deref());
                seen.push((text, f.partitions.clone()));
            }
        }
    }
    r.close(Stamp::default());
    seen
}

fuzz_target!(|data: &[u8]| {
    let first = data.first().copied().unwrap_or(0);
    let trees = run(data, false);
    if first & 0x08 != 0 {
        // The export's text must be the tree's text, frame for frame.
        let texts = run(data, true);
        assert_eq!(texts.len(), trees.len());
        for (t, w) in texts.iter().zip(&trees) {
            assert_eq!(t, w);
        }
    }
});
