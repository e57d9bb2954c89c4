//! Framing and decodes with expectations computed by hand from `shared/reference/tank/WIRE.md`
//! (the differential tests against the Python reference live in tests/test_engine_rust_tank.py).

use super::*;
use crate::model::{Direction, FrameRef, Kind, Status, Value};
use crate::protocol::FrameLen;
use crate::replay::{Replay, Stamp};

fn frame(id: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![id];
    v.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    v.extend_from_slice(payload);
    v
}

fn replay() -> Replay {
    Replay::new(&Tank, ConnCtx::standalone(PROTOCOL, 0))
}

fn at(packet: u64) -> Stamp {
    Stamp {
        packet,
        first_packet: packet,
        ts_us: 1_000_000 + packet as i64 * 1000,
    }
}

fn one(frames: crate::model::Frames) -> FrameRef {
    assert_eq!(frames.len(), 1);
    frames.into_iter().next().unwrap()
}

/// Produce v2, request id 7, client "c", acks 1, timeout 1000, topic "t" partition 0 carrying
/// one bundle: flags 1<<2 (one message, no codec), message flags 0, ts 5, value "hi".
fn produce_7() -> Vec<u8> {
    let mut p = vec![
        2, 0, 7, 0, 0, 0, 1, b'c', 1, 0xe8, 3, 0, 0, 1, 1, b't', 1, 0, 0,
    ];
    let bundle = [0x04, 0, 5, 0, 0, 0, 0, 0, 0, 0, 2, b'h', b'i'];
    p.push(bundle.len() as u8);
    p.extend_from_slice(&bundle);
    frame(constants::PRODUCE, &p)
}

#[test]
fn frame_length_and_resync() {
    let mut r = replay();
    assert_eq!(
        r.frame_length(&[3, 0, 0, 0], Role::Server),
        FrameLen::NeedMore
    );
    assert_eq!(
        r.frame_length(b"GET / HTTP/1.1", Role::Client),
        FrameLen::NotAFrame
    );
    // The greeting: an empty Ping (5 bytes), which also syncs the server side.
    assert_eq!(r.frame_length(&PING_FRAME, Role::Server), FrameLen::Len(5));
    // Synced: an unknown id is framed up to 1 MiB, beyond that it is garbage.
    assert_eq!(
        r.frame_length(&[0x20, 10, 0, 0, 0], Role::Server),
        FrameLen::Len(15)
    );
    assert_eq!(
        r.frame_length(&[0x20, 0, 0, 0x20, 0], Role::Server),
        FrameLen::NotAFrame
    );
    // A Ping declaring 64 KiB + 1 is no Ping.
    assert_eq!(
        r.frame_length(&[3, 1, 0, 1, 0], Role::Server),
        FrameLen::NotAFrame
    );
    // Resync: 3 bytes of junk, then the Produce request (whose next header is not buffered).
    let mut buf = vec![0xee, 0xee, 0xee];
    buf.extend_from_slice(&produce_7());
    assert_eq!(r.resync(&buf, Role::Client), Some(3));
    // A client version above 16 is refused by the strict check.
    let mut bad = produce_7();
    bad[5] = 17;
    assert!(!plausible_header(&bad, 0, Role::Client, true));
    assert!(plausible_header(&bad, 0, Role::Client, false));
    assert!(Tank.sniff(&produce_7(), Role::Client));
    assert!(Tank.sniff(&PING_FRAME, Role::Server));
    assert!(!Tank.sniff(&[3, 0, 0, 0, 1], Role::Server));
}

#[test]
fn produce_pairs_with_its_response() {
    let mut r = replay();
    let req = one(r.decode(&produce_7(), Role::Client, true, at(2)));
    {
        let q = req.borrow();
        assert_eq!(q.kind, Kind::Request);
        assert_eq!(q.status, Status::Ok, "{:?}", q.anomalies);
        assert_eq!(q.correlation_id, Some(7));
        assert_eq!(q.version, Some(2));
        assert_eq!(q.summary, "req 7 t/0 1 msg");
        assert_eq!(q.messages.len(), 1);
        let m = &q.messages[0];
        assert_eq!(m.direction, Some(Direction::Produce));
        assert_eq!(m.value.as_deref(), Some(&b"hi"[..]));
        assert_eq!((m.timestamp_ms, m.offset), (Some(5), None));
        assert_eq!(q.fields.get("client_id"), Some(&Value::Str("c".into())));
        assert_eq!(q.fields.get("ack_timeout_ms"), Some(&Value::Int(1000)));
        // The client id's span: its length byte at 11 and the byte after it.
        let cid = q.fields.0.iter().find(|f| f.name == "client_id").unwrap();
        assert_eq!(cid.span, Some(crate::model::Span::new(11, 13)));
    }
    let resp = one(r.decode(&frame(1, &[7, 0, 0, 0, 0]), Role::Server, true, at(3)));
    let s = resp.borrow();
    assert_eq!(s.kind, Kind::Response);
    assert_eq!(s.summary, "req 7 t/0 ok");
    assert_eq!(s.error_code, Some(0));
    assert_eq!(s.peer_packet, Some(2));
    assert_eq!(s.latency_us, Some(1000));
    assert_eq!(req.borrow().peer_packet, Some(3));
    assert_eq!(r.exchanges.len(), 1);
}

#[test]
fn consume_response_with_an_unknown_flag_is_malformed() {
    let mut r = replay();
    // header: request id 1, one topic "t" with one partition: id 0, errorOrFlags 0x05.
    let hdr = [1, 0, 0, 0, 1, 1, b't', 1, 0, 0, 5];
    let mut p = (hdr.len() as u32).to_le_bytes().to_vec();
    p.extend_from_slice(&hdr);
    let f = one(r.decode(&frame(2, &p), Role::Server, true, at(1)));
    let f = f.borrow();
    assert_eq!(f.status, Status::Malformed);
    // The flag byte sits at 5 (header) + 4 (header length) + 10.
    assert_eq!(
        f.anomalies[0].detail,
        "Consume: unknown errorOrFlags 0x05 at byte 19"
    );
    assert_eq!(f.anomalies[0].offset, Some(19));
    assert_eq!(f.error.as_deref(), Some("flags_0x05"));
    assert_eq!(
        f.summary,
        "req 1 Consume: unknown errorOrFlags 0x05 at byte 19"
    );
}

#[test]
fn cut_frames_and_short_headers() {
    let mut r = replay();
    let p = produce_7();
    let f = one(r.decode(&p[..20], Role::Client, false, at(1)));
    let f = f.borrow();
    assert_eq!(f.status, Status::Truncated);
    // Cut before the topic name's byte (its length byte is byte 19): the read at 20 fails.
    assert_eq!(f.fields.get("cut_at"), Some(&Value::Int(20)));
    assert_eq!(
        f.summary,
        format!("req 7 cut after 20 of {} bytes", p.len())
    );
    let h = one(r.decode(&[1, 2], Role::Client, true, at(2)));
    let h = h.borrow();
    assert_eq!(h.summary, "2 bytes of a frame header");
    assert_eq!(
        h.anomalies[0].detail,
        "frame shorter than its 5-byte header"
    );
    assert_eq!(h.type_, "Produce");
}
