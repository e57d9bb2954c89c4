//! The framing engine, detection and the per-capture pipeline, driven with a small protocol of
//! this test's own (never in the registry), against expectations computed by hand from the
//! Python reference's rules (framing.py, detection.py, pipeline.py).
//!
//! The test protocol `lp`: a frame is a 4-byte big-endian body length, then the body: one kind
//! byte (0 request, 1 response, 0xEE a body whose decode panics), a 4-byte request id, padding.
//! Bodies are 5..=1020 bytes (max frame 1024). A declared body length of 0xDEAD makes
//! `frame_length` panic. Server port 9999.

use std::io::Cursor;

use wiredump_engine::capture::{CaptureReader, Input};
use wiredump_engine::correlation::Key;
use wiredump_engine::framing::{ConnectionFramer, Output};
use wiredump_engine::model::{
    Anomaly, Exchange, ExchangeStatus, Frame, FrameRef, Frames, Kind, Role, Status,
};
use wiredump_engine::pipeline::{Dissection, Options, Record};
use wiredump_engine::protocol::{ConnCtx, FrameLen, Protocol, Session};

const NAME: &str = "lp";

struct Lp;

struct LpSession;

fn body_len(buf: &[u8]) -> Option<u32> {
    buf.get(..4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

impl Session for LpSession {
    fn frame_length(&mut self, _ctx: &mut ConnCtx, buf: &[u8], _role: Role) -> FrameLen {
        let Some(n) = body_len(buf) else {
            return FrameLen::NeedMore;
        };
        if n == 0xDEAD {
            panic!("frame_length bug");
        }
        if n < 5 {
            return FrameLen::NotAFrame;
        }
        FrameLen::Len(4 + n as u64)
    }

    fn resync(&mut self, _ctx: &mut ConnCtx, buf: &[u8], _role: Role) -> Option<usize> {
        (0..buf.len().saturating_sub(4)).find(|&i| {
            let n = body_len(&buf[i..]).unwrap_or(0);
            (5..=1020).contains(&n) && matches!(buf[i + 4], 0 | 1)
        })
    }

    fn decode(&mut self, ctx: &mut ConnCtx, data: &[u8], _role: Role, complete: bool) -> Frames {
        let kind = data.get(4).copied().unwrap_or(0xFF);
        if kind == 0xEE {
            panic!("boom");
        }
        let id = data
            .get(5..9)
            .map(|b| i64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])));
        let mut f = Frame::new(NAME, if kind == 0 { "Req" } else { "Resp" }, kind as i64);
        f.kind = if kind == 0 {
            Kind::Request
        } else {
            Kind::Response
        };
        f.correlation_id = id;
        if !complete {
            f.status = Status::Truncated;
            return smallvec::smallvec![f.shared()];
        }
        let fr = f.shared();
        let key = Key::Int(id.unwrap_or(-1));
        if kind == 0 {
            ctx.correlator.request(&fr, key, true);
        } else {
            ctx.correlator.response(&fr, &key, None);
        }
        smallvec::smallvec![fr]
    }
}

impl Protocol for Lp {
    fn name(&self) -> &'static str {
        NAME
    }
    fn ports(&self) -> &'static [u16] {
        &[9999]
    }
    fn max_frame(&self) -> u64 {
        1024
    }
    fn new_session(&self, _ctx: &ConnCtx) -> Box<dyn Session> {
        Box::new(LpSession)
    }
}

fn frame(kind: u8, id: u32, pad: usize) -> Vec<u8> {
    let mut v = ((5 + pad) as u32).to_be_bytes().to_vec();
    v.push(kind);
    v.extend_from_slice(&id.to_be_bytes());
    v.extend(std::iter::repeat_n(0xAB, pad));
    v
}

#[derive(Default)]
struct Sink {
    frames: Vec<FrameRef>,
    anomalies: Vec<Anomaly>,
    exchanges: Vec<Exchange>,
}

impl Output for Sink {
    fn frame(&mut self, frame: FrameRef) {
        self.frames.push(frame);
    }
    fn anomaly(&mut self, anomaly: Anomaly) {
        self.anomalies.push(anomaly);
    }
    fn exchange(&mut self, exchange: Exchange) {
        self.exchanges.push(exchange);
    }
}

fn framer() -> ConnectionFramer {
    let ctx = ConnCtx::standalone(NAME, 3);
    ConnectionFramer::new(NAME, 1024, 128 << 20, Box::new(LpSession), ctx, false)
}

#[test]
fn frame_boundaries_across_packets_and_pairing() {
    let (mut f, mut out) = (framer(), Sink::default());
    let req = frame(0, 7, 0); // 9 bytes
    f.feed(&mut out, Role::Client, &req[..6], 1, 100);
    assert!(out.frames.is_empty());
    // The rest of the request and the first 2 bytes of a second one in packet 2.
    let req2 = frame(0, 8, 3); // 12 bytes
    let mut p2 = req[6..].to_vec();
    p2.extend_from_slice(&req2[..2]);
    f.feed(&mut out, Role::Client, &p2, 2, 200);
    f.feed(&mut out, Role::Client, &req2[2..], 3, 300);
    f.feed(&mut out, Role::Server, &frame(1, 7, 1), 4, 450);
    assert_eq!(out.frames.len(), 3);
    let a = out.frames[0].borrow();
    assert_eq!(
        (a.first_packet, a.packet, a.ts_us, a.length),
        (1, 2, 200, 9)
    );
    assert_eq!((a.peer_packet, a.awaiting), (Some(4), false));
    let b = out.frames[1].borrow();
    assert_eq!((b.first_packet, b.packet, b.length), (2, 3, 12));
    assert!(b.awaiting);
    let r = out.frames[2].borrow();
    assert_eq!(
        (r.first_packet, r.packet, r.length, r.role),
        (4, 4, 10, Role::Server)
    );
    assert_eq!(
        (r.latency_us, &*r.src, r.src_port),
        (Some(250), "10.0.0.2", 0)
    );
    assert_eq!(out.exchanges.len(), 1);
    let ex = &out.exchanges[0];
    assert_eq!(ex.status, ExchangeStatus::Answered);
    assert_eq!((ex.request_packet, ex.response_packet), (Some(2), Some(4)));
    drop((a, b, r));
    f.finish(&mut out);
    assert_eq!(out.exchanges[1].status, ExchangeStatus::Unanswered);
    assert_eq!(out.exchanges[1].correlation_id, Some(8));
    assert!(out.anomalies.is_empty());
    assert_eq!(f.frames, 3);
}

#[test]
fn gap_truncates_then_resync_skips_garbage() {
    let (mut f, mut out) = (framer(), Sink::default());
    let req = frame(0, 1, 0);
    f.feed(&mut out, Role::Client, &req[..6], 1, 10);
    f.gap(&mut out, Role::Client, 100, 2, 20);
    assert_eq!(out.frames.len(), 1);
    {
        let t = out.frames[0].borrow();
        assert_eq!((t.status, t.length, t.packet), (Status::Truncated, 6, 1));
        assert_eq!(t.anomalies.len(), 1);
        assert_eq!(t.anomalies[0].kind, "truncated");
        assert_eq!(t.anomalies[0].detail, "frame cut after 6 bytes");
        assert_eq!(t.anomalies[0].offset, Some(6));
    }
    // After the gap: 3 bytes of garbage, then a whole frame, in packet 3.
    let mut p3 = b"xyz".to_vec();
    p3.extend_from_slice(&frame(0, 2, 0));
    f.feed(&mut out, Role::Client, &p3, 3, 30);
    assert_eq!(out.anomalies.len(), 1);
    let a = &out.anomalies[0];
    assert_eq!(a.kind, "resync");
    // 6 bytes before the gap, 100 missing, 3 skipped: the frame starts at stream offset 109.
    assert_eq!(
        a.detail,
        "skipped 3 client bytes that are not lp frames; resynchronised at stream offset 109"
    );
    assert_eq!((a.packet, a.stream, a.protocol), (3, Some(3), Some(NAME)));
    assert_eq!(out.frames.len(), 2);
    assert_eq!(out.frames[1].borrow().correlation_id, Some(2));
    assert_eq!(out.frames[1].borrow().status, Status::Ok);
}

#[test]
fn oversize_frame_is_reported_and_skipped_without_buffering() {
    let (mut f, mut out) = (framer(), Sink::default());
    let mut p = 5000u32.to_be_bytes().to_vec();
    p.extend_from_slice(&frame(0, 9, 0));
    f.feed(&mut out, Role::Client, &p, 5, 50);
    assert_eq!(out.anomalies.len(), 2);
    assert_eq!(out.anomalies[0].kind, "oversize_frame");
    assert_eq!(
        out.anomalies[0].detail,
        "client frame at stream offset 0 declares 5004 bytes, over the lp maximum of 1024"
    );
    assert_eq!(out.anomalies[1].kind, "resync");
    assert_eq!(
        out.anomalies[1].detail,
        "skipped 4 client bytes that are not lp frames; resynchronised at stream offset 4"
    );
    assert_eq!(out.frames.len(), 1);
    assert_eq!(out.frames[0].borrow().correlation_id, Some(9));
}

#[test]
fn bytes_left_at_the_end_are_a_truncated_frame_and_garbage_a_resync_until_the_end() {
    let (mut f, mut out) = (framer(), Sink::default());
    f.feed(&mut out, Role::Client, &frame(0, 1, 10)[..8], 1, 1);
    f.feed(&mut out, Role::Server, &[0, 0, 0, 1, 9, 9, 9], 2, 2);
    f.finish(&mut out);
    assert_eq!(out.frames.len(), 1);
    assert_eq!(out.frames[0].borrow().status, Status::Truncated);
    let kinds: Vec<&str> = out.anomalies.iter().map(|a| a.kind.as_ref()).collect();
    assert_eq!(kinds, ["resync"]);
    assert_eq!(
        out.anomalies[0].detail,
        "skipped 7 server bytes that are not lp frames; until the stream ended"
    );
    assert_eq!(out.anomalies[0].packet, 2);
}

#[test]
fn panics_in_the_session_become_internal_errors() {
    let (mut f, mut out) = (framer(), Sink::default());
    // decode panics: the frame is kept, undecodable, with the internal error.
    let mut bad = frame(0xEE, 0, 0);
    bad[4] = 0xEE;
    f.feed(&mut out, Role::Client, &bad, 1, 1);
    assert_eq!(out.frames.len(), 1);
    {
        let x = out.frames[0].borrow();
        assert_eq!(
            (x.status, x.type_.as_ref(), x.type_code),
            (Status::Undecodable, "?", -1)
        );
        assert_eq!(x.length, 9);
        assert_eq!(x.anomalies[0].kind, "internal_error");
        assert_eq!(
            x.anomalies[0].detail,
            "internal error: panic in lp.decode on the client frame at stream offset 0: boom"
        );
        assert_eq!(x.anomalies[0].packet, 1);
    }
    // frame_length panics: reported, the bytes skipped, framing goes on after them.
    let mut p = 0xDEADu32.to_be_bytes().to_vec();
    p.extend_from_slice(&frame(0, 4, 0));
    f.feed(&mut out, Role::Client, &p, 2, 2);
    let kinds: Vec<&str> = out.anomalies.iter().map(|a| a.kind.as_ref()).collect();
    assert_eq!(kinds, ["internal_error", "resync"]);
    assert_eq!(
        out.anomalies[0].detail,
        "internal error: panic in lp.frame_length on client bytes at stream offset 9: frame_length bug"
    );
    assert_eq!(
        out.anomalies[1].detail,
        "skipped 4 client bytes after an internal error in lp.frame_length; resynchronised at stream offset 13"
    );
    assert_eq!(out.frames.len(), 2);
    assert_eq!(out.frames[1].borrow().correlation_id, Some(4));
}

// -- the pipeline over a capture ------------------------------------------------------------------

struct Pcap {
    out: Vec<u8>,
    seq: [u32; 2],
    n: u32,
}

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const PSH: u8 = 0x08;
const FIN: u8 = 0x01;

impl Pcap {
    fn new() -> Pcap {
        let mut out = Vec::new();
        out.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
        out.extend_from_slice(&2u16.to_le_bytes());
        out.extend_from_slice(&4u16.to_le_bytes());
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(&262144u32.to_le_bytes());
        out.extend_from_slice(&101u32.to_le_bytes()); // raw IP
        Pcap {
            out,
            seq: [1000, 5000],
            n: 0,
        }
    }

    /// One segment from the client (0) or the server (1) of 10.0.0.1:40000 ↔ 10.0.0.2:`port`.
    fn seg(&mut self, from: usize, port: u16, flags: u8, payload: &[u8]) {
        self.n += 1;
        let (src, dst, sp, dp) = if from == 0 {
            ([10, 0, 0, 1], [10, 0, 0, 2], 40000u16, port)
        } else {
            ([10, 0, 0, 2], [10, 0, 0, 1], port, 40000u16)
        };
        let seq = self.seq[from];
        let ack = self.seq[1 - from];
        self.seq[from] = seq
            .wrapping_add(payload.len() as u32)
            .wrapping_add(u32::from(flags & (SYN | FIN) != 0));
        let mut p = vec![0x45, 0];
        p.extend_from_slice(&((40 + payload.len()) as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(&sp.to_be_bytes());
        p.extend_from_slice(&dp.to_be_bytes());
        p.extend_from_slice(&seq.to_be_bytes());
        p.extend_from_slice(&ack.to_be_bytes());
        p.extend_from_slice(&[0x50, flags | if flags & SYN == 0 { ACK } else { 0 }]);
        p.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]);
        p.extend_from_slice(payload);
        let ts_us = self.n * 1000;
        self.out.extend_from_slice(&1u32.to_le_bytes());
        self.out.extend_from_slice(&ts_us.to_le_bytes());
        self.out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        self.out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        self.out.extend_from_slice(&p);
    }

    fn handshake(&mut self, port: u16) {
        self.seg(0, port, SYN, &[]);
        self.seq[1] = 5000;
        self.seg(1, port, SYN | ACK, &[]);
        self.seg(0, port, 0, &[]);
    }

    fn run(self, protocols: Vec<Box<dyn Protocol>>) -> Vec<Record> {
        let reader = CaptureReader::open(Input::Reader(
            "t".to_string(),
            Box::new(Cursor::new(self.out)),
        ))
        .expect("a pcap");
        let mut d = Dissection::new(reader, Options::default(), protocols).expect("options");
        let mut out = Vec::new();
        while let Some(r) = d.next_record() {
            out.push(r);
        }
        out
    }
}

fn describe(r: &Record) -> String {
    match r {
        Record::Frame(f) => {
            let f = f.borrow();
            format!(
                "frame {} id={:?} packet={} peer={:?}",
                f.type_, f.correlation_id, f.packet, f.peer_packet
            )
        }
        Record::Anomaly(a) => format!("anomaly {} packet={}", a.kind, a.packet),
        Record::Exchange(e) => format!(
            "exchange {:?} id={:?} {:?}->{:?}",
            e.status, e.correlation_id, e.request_packet, e.response_packet
        ),
        Record::Connection(c) => format!(
            "connection {} {:?} frames={} packets={}",
            c.stream, c.protocol, c.frames, c.packets
        ),
        Record::CaptureEnd(e) => format!("end {}", e.packets),
    }
}

#[test]
fn an_awaiting_request_holds_later_frames_until_answered() {
    let mut p = Pcap::new();
    p.handshake(9999); // packets 1-3
    p.seg(0, 9999, PSH, &frame(0, 1, 0)); // 4: request 1
    p.seg(0, 9999, PSH, &frame(0, 2, 0)); // 5: request 2
    p.seg(1, 9999, PSH, &frame(1, 2, 0)); // 6: answer to 2
    p.seg(1, 9999, PSH, &frame(1, 1, 0)); // 7: answer to 1
    let got: Vec<String> = p.run(vec![Box::new(Lp)]).iter().map(describe).collect();
    // Request 1 awaits its answer until packet 7: the frames behind it wait with it, the
    // exchanges (no frame of their own) leave as they complete; then every frame in order,
    // request 1 carrying its peer's packet.
    assert_eq!(
        got,
        [
            "exchange Answered id=Some(2) Some(5)->Some(6)",
            "exchange Answered id=Some(1) Some(4)->Some(7)",
            "frame Req id=Some(1) packet=4 peer=Some(7)",
            "frame Req id=Some(2) packet=5 peer=Some(6)",
            "frame Resp id=Some(2) packet=6 peer=Some(5)",
            "frame Resp id=Some(1) packet=7 peer=Some(4)",
            "connection 0 Some(\"lp\") frames=4 packets=7",
            "end 7",
        ]
    );
}

#[test]
fn detection_by_the_first_bytes_replays_what_it_held() {
    let mut p = Pcap::new();
    p.handshake(5555); // no protocol's port: detection holds the bytes
    p.seg(0, 5555, PSH, &frame(0, 1, 0)); // 4
    p.seg(1, 5555, PSH, &frame(1, 1, 0)); // 5: the other side speaks: scored at once
    p.seg(0, 5555, PSH, &frame(0, 2, 0)); // 6
    let got: Vec<String> = p.run(vec![Box::new(Lp)]).iter().map(describe).collect();
    // Trial: one clean frame each way (30 + 30) and an answer (40): 100 ≥ CERTAIN, decided on
    // packet 5; the held packets 4 and 5 are replayed with their own packet numbers.
    assert_eq!(
        got,
        [
            "exchange Answered id=Some(1) Some(4)->Some(5)",
            "frame Req id=Some(1) packet=4 peer=Some(5)",
            "frame Resp id=Some(1) packet=5 peer=Some(4)",
            "exchange Unanswered id=Some(2) Some(6)->None",
            "frame Req id=Some(2) packet=6 peer=None",
            "connection 0 Some(\"lp\") frames=3 packets=6",
            "end 6",
        ]
    );
}

#[test]
fn without_a_protocol_that_fits_the_connection_stays_undecoded() {
    let mut p = Pcap::new();
    p.handshake(5555);
    p.seg(0, 5555, PSH, b"GET / HTTP/1.1\r\n\r\n");
    p.seg(1, 5555, PSH, b"HTTP/1.1 200 OK\r\n\r\n");
    let got: Vec<String> = p.run(vec![Box::new(Lp)]).iter().map(describe).collect();
    // Nothing scored above 0: no frame, no `undecoded` anomaly, no protocol in the row.
    assert_eq!(got, ["connection 0 None frames=0 packets=5", "end 5"]);
}

#[test]
fn a_frame_is_read_as_it_left_even_if_linked_later() {
    let mut p = Pcap::new();
    p.handshake(9999);
    p.seg(0, 9999, PSH, &frame(0, 1, 0)); // 4: request 1
    p.seg(1, 9999, PSH, &frame(1, 1, 0)); // 5: its answer
    let reader = CaptureReader::open(Input::Reader("t".to_string(), Box::new(Cursor::new(p.out))))
        .expect("a pcap");
    // No frame may be held: the request leaves at packet 5's release, before its answer is read.
    let opts = Options {
        hold_frames: 0,
        ..Options::default()
    };
    let mut d = Dissection::new(reader, opts, vec![Box::new(Lp)]).expect("options");
    let mut seen = Vec::new();
    while let Some(r) = d.next_record() {
        // Read when it leaves, as the Python consumers read each event when it is yielded.
        if let Record::Frame(f) = &r {
            let f = f.borrow();
            seen.push((f.packet, f.awaiting, f.peer_packet, f.released));
        }
    }
    assert_eq!(seen, [(4, true, None, true), (5, false, Some(4), true)]);
}

/// A session every call of which panics (a decoder bug everywhere).
struct Bad;

impl Session for Bad {
    fn frame_length(&mut self, _ctx: &mut ConnCtx, _buf: &[u8], _role: Role) -> FrameLen {
        panic!("bad frame_length");
    }
    fn resync(&mut self, _ctx: &mut ConnCtx, _buf: &[u8], _role: Role) -> Option<usize> {
        panic!("bad resync");
    }
    fn decode(&mut self, _: &mut ConnCtx, _: &[u8], _: Role, _: bool) -> Frames {
        panic!("bad decode");
    }
    fn close(&mut self, _ctx: &mut ConnCtx) -> Vec<FrameRef> {
        panic!("bad close");
    }
}

#[test]
fn internal_errors_of_framing_are_reported_one_by_one_up_to_a_bound() {
    let ctx = ConnCtx::standalone("bad", 1);
    let mut f = ConnectionFramer::new("bad", 1024, 128 << 20, Box::new(Bad), ctx, false);
    let mut out = Sink::default();
    let chunk = vec![0u8; 16 * 1024];
    for i in 0..70 {
        f.feed(&mut out, Role::Client, &chunk, i + 1, 0);
    }
    f.finish(&mut out);
    // The first segment: frame_length and then resync panic; each later one (RESYNC_STEP new
    // bytes each) resync once: 2 + 69; the flush at the end tries resync once more: 72.
    let kinds: Vec<&str> = out.anomalies.iter().map(|a| a.kind.as_ref()).collect();
    assert_eq!(kinds.len(), 64 + 3);
    assert!(kinds[..64].iter().all(|k| *k == "internal_error"));
    assert_eq!(kinds[64..], ["resync", "internal_error", "internal_error"]);
    assert_eq!(
        out.anomalies[0].detail,
        "internal error: panic in bad.frame_length on client bytes at stream offset 0: bad frame_length"
    );
    assert_eq!(
        out.anomalies[1].detail,
        "internal error: panic in bad.resync on client bytes at stream offset 1: bad resync"
    );
    assert_eq!(
        out.anomalies[64].detail,
        "skipped 1146880 client bytes after an internal error in bad.resync; until the stream ended"
    );
    assert_eq!(
        out.anomalies[65].detail,
        "internal error: panic in bad.close on the end of the connection: bad close"
    );
    assert_eq!(
        out.anomalies[66].detail,
        "internal error: 8 more internal errors in bad on this connection (only the first 64 are \
         reported one by one)"
    );
    assert!(out.frames.is_empty());
}
