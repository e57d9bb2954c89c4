//! An observing session (`SessionOptions::observe`: a connection another worker decodes) walks
//! only what can change later frames: Produce's `acks`, SaslHandshake, and the responses that can
//! name topic ids. Frames and values here are built by hand from Kafka's layouts.

use super::tests::{frame, stamp};
use super::*;
use crate::protocol::SessionOptions;
use crate::replay::Replay;
use std::rc::Rc;

fn replay(observe: bool) -> Replay {
    let mut ctx = ConnCtx::standalone("kafka", 1);
    ctx.options = Rc::new(SessionOptions {
        observe,
        ..SessionOptions::default()
    });
    Replay::new(&super::super::Kafka, ctx)
}

/// Request header v1: key, version, correlation id, client id "c".
fn req(key: i16, version: i16, corr: i32, body: &[u8]) -> Vec<u8> {
    let mut b = key.to_be_bytes().to_vec();
    b.extend(version.to_be_bytes());
    b.extend(corr.to_be_bytes());
    b.extend(1i16.to_be_bytes());
    b.push(b'c');
    b.extend_from_slice(body);
    frame(&b)
}

/// Request header v2 (flexible versions): header v1 and an empty tagged-field section.
fn req_flexible(key: i16, version: i16, corr: i32, body: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8];
    b.extend_from_slice(body);
    req(key, version, corr, &b)
}

fn resp(corr: i32, body: &[u8]) -> Vec<u8> {
    let mut b = corr.to_be_bytes().to_vec();
    b.extend_from_slice(body);
    frame(&b)
}

/// The request pending under `corr` (the one the correlator would pair an answer with).
fn pending(r: &Replay, corr: i32) -> Option<FrameRef> {
    r.ctx.correlator.peek(&Key::Int(corr.into()), None)
}

/// Produce v3, transactional id null, `acks`, timeout 1000, one topic "t" whose partition 4
/// declares 50 bytes of records where 3 follow: a body the walker cannot read past `acks`.
fn broken_produce(acks: i16) -> Vec<u8> {
    let mut body = vec![0xff, 0xff];
    body.extend(acks.to_be_bytes());
    body.extend([
        0, 0, 0x03, 0xe8, 0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 1, 0, 0, 0, 4,
    ]);
    body.extend(50i32.to_be_bytes());
    body.extend([1, 2, 3]);
    body
}

#[test]
fn an_observer_does_not_walk_a_produce_body() {
    // Decoding: the body is walked, found short, and the frame says so.
    let mut r = replay(false);
    let out = r.decode(
        &req(0, 3, 9, &broken_produce(1)),
        Role::Client,
        true,
        stamp(1),
    );
    assert_eq!(out.len(), 1);
    let f = out[0].borrow();
    assert_eq!(f.status, Status::Malformed);
    assert!(f.fields.get("body").is_some());
    drop(f);
    // Observing: no frame out, and the request kept for its answer was never walked (no body,
    // no status from it), yet it waits for an answer as acks=1 asks.
    let mut r = replay(true);
    let out = r.decode(
        &req(0, 3, 9, &broken_produce(1)),
        Role::Client,
        true,
        stamp(1),
    );
    assert!(out.is_empty());
    let q = pending(&r, 9).expect("acks=1: the request waits for its answer");
    let q = q.borrow();
    assert_eq!((q.type_.as_ref(), q.status), ("Produce", Status::Ok));
    assert!(q.fields.get("body").is_none() && q.messages.is_empty());
    assert!(q.anomalies.is_empty());
}

#[test]
fn an_observer_still_sees_acks_0() {
    let mut r = replay(true);
    r.decode(
        &req(0, 3, 9, &broken_produce(0)),
        Role::Client,
        true,
        stamp(1),
    );
    assert!(pending(&r, 9).is_none(), "acks=0 asks for no answer");
    assert_eq!(r.ctx.correlator.pending(), 0);
}

/// Metadata v12 response (flexible: header tags, compact arrays): no brokers, no cluster id,
/// controller 1, one topic `name` with id 00…0`id`, no partitions.
fn metadata_v12(name: &str, id: u8) -> Vec<u8> {
    let mut b = vec![0u8]; // response header tags
    b.extend(0i32.to_be_bytes()); // throttle
    b.push(1); // brokers: 0 elements
    b.push(0); // cluster_id null
    b.extend(1i32.to_be_bytes()); // controller
    b.push(2); // topics: 1 element
    b.extend(0i16.to_be_bytes()); // error_code
    b.push(name.len() as u8 + 1);
    b.extend(name.as_bytes());
    let mut uuid = [0u8; 16];
    uuid[15] = id;
    b.extend(uuid);
    b.push(0); // is_internal
    b.push(1); // partitions: 0 elements
    b.extend(0i32.to_be_bytes()); // topic_authorized_operations
    b.push(0); // topic tags
    b.push(0); // body tags
    b
}

#[test]
fn an_observer_learns_topic_names_from_metadata() {
    let mut r = replay(true);
    // Metadata v12 request: topics null, allow auto creation, include authorized operations.
    r.decode(
        &req_flexible(3, 12, 4, &[0, 1, 0, 0]),
        Role::Client,
        true,
        stamp(1),
    );
    let out = r.decode(
        &resp(4, &metadata_v12("orders", 7)),
        Role::Server,
        true,
        stamp(2),
    );
    assert!(out.is_empty());
    let rs = r.ctx.run_state.borrow();
    let names = rs.get::<Topics>(RUN_KEY).expect("learnt").borrow();
    assert_eq!(
        names.name_of("00000000-0000-0000-0000-000000000007"),
        Some("orders")
    );
}

#[test]
fn an_observer_reads_a_sasl_handshake() {
    // After SaslHandshake v0 answered without error, raw tokens follow: an observer must frame
    // them as the decoding session does (a token is not a Kafka request).
    let mut r = replay(true);
    let plain = [0, 5, b'P', b'L', b'A', b'I', b'N'];
    r.decode(&req(17, 0, 1, &plain), Role::Client, true, stamp(1));
    let mut ok = vec![0, 0, 0, 0, 0, 1];
    ok.extend(plain);
    r.decode(&resp(1, &ok), Role::Server, true, stamp(2));
    let token = frame(b"\0alice\0secret");
    assert_eq!(
        r.frame_length(&token, Role::Client),
        FrameLen::Len(token.len() as u64)
    );
}

/// `produce_acks` reads what walking the whole body reads, for every Produce version, every
/// transactional id shape (null, empty, short, negative, over-long varint) and every cut.
#[test]
fn produce_acks_agrees_with_the_walker() {
    let ids: [&[u8]; 8] = [
        &[0xff, 0xff],
        &[0, 0],
        &[0, 2, b'a', b'b'],
        &[0xff, 0xfe],
        &[0, 0x40],
        &[0],
        &[3, b'a', b'b'],
        &[0x80, 0x80, 0x80, 0x80, 0x80, 1],
    ];
    let mut checked = 0;
    for v in schema::api_versions()
        .filter(|(k, _)| *k == 0)
        .map(|(_, v)| v)
    {
        let plan = schema::plan(0, v, false).expect("a Produce layout");
        for id in ids {
            for acks in [0i16, 1, -1] {
                let mut data = vec![9u8; 5]; // a header the body starts after
                if v >= 3 {
                    data.extend(id);
                }
                data.extend(acks.to_be_bytes());
                data.extend([0, 0, 0x03, 0xe8, 0, 0, 0, 0]);
                for cut in 0..=data.len() {
                    let d = &data[..cut];
                    let walked = match get(&body::decode_body(d, 5, plan, &[]).fields, "acks") {
                        Some(BValue::Int(a)) => Some(*a),
                        _ => None,
                    };
                    assert_eq!(produce_acks(d, 5, plan), walked, "v{v} {id:?} cut {cut}");
                    checked += usize::from(walked == Some(i64::from(acks)));
                }
            }
        }
    }
    assert!(checked > 100, "acks found in {checked} cases only");
}
