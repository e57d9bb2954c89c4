//! Hand-built frames through the session (values computed by hand from Kafka's layouts).

use super::*;
use crate::replay::{Replay, Stamp};

fn replay() -> Replay {
    Replay::new(&super::super::Kafka, ConnCtx::standalone("kafka", 1))
}

pub(super) fn stamp(packet: u64) -> Stamp {
    Stamp {
        packet,
        first_packet: packet,
        ts_us: packet as i64 * 1000,
    }
}

pub(super) fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = (body.len() as i32).to_be_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

/// Request header v1: key, version, correlation id, client id.
fn req(key: i16, version: i16, corr: i32, client: &str, body: &[u8]) -> Vec<u8> {
    let mut b = key.to_be_bytes().to_vec();
    b.extend(version.to_be_bytes());
    b.extend(corr.to_be_bytes());
    b.extend((client.len() as i16).to_be_bytes());
    b.extend(client.as_bytes());
    b.extend_from_slice(body);
    frame(&b)
}

fn resp(corr: i32, body: &[u8]) -> Vec<u8> {
    let mut b = corr.to_be_bytes().to_vec();
    b.extend_from_slice(body);
    frame(&b)
}

fn one(r: &mut Replay, data: &[u8], role: Role, packet: u64) -> FrameRef {
    let mut out = r.decode(data, role, true, stamp(packet));
    assert_eq!(out.len(), 1);
    out.remove(0)
}

#[test]
fn api_versions_v0_pair() {
    let mut r = replay();
    let q = req(18, 0, 5, "c", &[]);
    assert_eq!(
        r.frame_length(&q, Role::Client),
        FrameLen::Len(q.len() as u64)
    );
    let qf = one(&mut r, &q, Role::Client, 1);
    // error_code 0, one api (Produce 0..9).
    let body = [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 9];
    let a = resp(5, &body);
    assert_eq!(r.frame_length(&a, Role::Server), FrameLen::Len(20));
    let af = one(&mut r, &a, Role::Server, 2);
    let (q, a) = (qf.borrow(), af.borrow());
    assert_eq!(
        (q.type_.as_ref(), q.version, q.status),
        ("ApiVersions", Some(0), Status::Ok)
    );
    let Some(Value::Map(h)) = q.fields.get("header") else {
        panic!()
    };
    assert_eq!(h.get("client_id"), Some(&Value::Str("c".into())));
    assert_eq!(h.0[3].span, Some(Span::new(12, 15)));
    assert_eq!((a.type_.as_ref(), a.status), ("ApiVersions", Status::Ok));
    assert_eq!(a.peer_packet, Some(1));
    assert_eq!(q.peer_packet, Some(2));
    assert_eq!(a.latency_us, Some(1000));
    let Some(Value::Map(b)) = a.fields.get("body") else {
        panic!()
    };
    let Some(Value::List(apis)) = b.get("api_keys") else {
        panic!()
    };
    let Value::Map(api) = &apis[0] else { panic!() };
    assert_eq!(api.get("max_version"), Some(&Value::Int(9)));
    // The max version's two bytes: frame offset 8 + 2 (error) + 4 (count) + 4.
    assert_eq!(api.0[2].span, Some(Span::new(18, 20)));
    assert_eq!(r.exchanges.len(), 1);
}

#[test]
fn unknown_key_and_unexpected_acks0_answer() {
    let mut r = replay();
    let q = req(900, 3, 1, "c", &[1, 2, 3]);
    let f = one(&mut r, &q, Role::Client, 1);
    {
        let f = f.borrow();
        assert_eq!(f.status, Status::UnknownType);
        assert_eq!(
            f.anomalies[0].detail,
            "unknown Kafka API key 900 (version 3)"
        );
        assert_eq!(f.anomalies[0].offset, Some(4));
    }
    let a = one(&mut r, &resp(1, &[9, 9]), Role::Server, 2);
    assert_eq!(
        a.borrow().summary,
        "response to API key 900, 2 body bytes not decoded"
    );
    // Produce v3 with acks=0: transactional id null, acks 0, timeout, no topics.
    let body = [0xff, 0xff, 0, 0, 0, 0, 0x03, 0xe8, 0, 0, 0, 0];
    let p = one(&mut r, &req(0, 3, 7, "c", &body), Role::Client, 3);
    assert!(!p.borrow().awaiting);
    // The broker answers anyway: Produce v3 response, no topics, throttle 0.
    let a = one(&mut r, &resp(7, &[0, 0, 0, 0, 0, 0, 0, 0]), Role::Server, 4);
    let a = a.borrow();
    assert_eq!(a.status, Status::Ok);
    assert_eq!(a.anomalies[0].kind, "unexpected_response");
    assert_eq!(a.peer_packet, Some(3));
}

#[test]
fn tls_is_reported_once() {
    let mut r = replay();
    let rec = [22, 3, 1, 0, 2, 1, 0];
    assert_eq!(r.frame_length(&rec, Role::Client), FrameLen::Len(7));
    let f = one(&mut r, &rec, Role::Client, 1);
    assert_eq!(f.borrow().status, Status::Undecodable);
    assert_eq!(
        f.borrow().summary,
        "TLS Handshake record, 2 bytes (encrypted connection)"
    );
    let g = one(&mut r, &rec, Role::Client, 2);
    assert!(g.borrow().anomalies.is_empty());
}

#[test]
fn sasl_plain_token_after_handshake_v0() {
    let mut r = replay();
    one(
        &mut r,
        &req(17, 0, 1, "c", &[0, 5, b'P', b'L', b'A', b'I', b'N']),
        Role::Client,
        1,
    );
    // error 0, mechanisms ["PLAIN"].
    one(
        &mut r,
        &resp(1, &[0, 0, 0, 0, 0, 1, 0, 5, b'P', b'L', b'A', b'I', b'N']),
        Role::Server,
        2,
    );
    let token = frame(b"\0alice\0secret");
    let t = one(&mut r, &token, Role::Client, 3);
    let t = t.borrow();
    assert_eq!(t.type_.as_ref(), "SaslToken");
    assert_eq!(t.fields.get("username"), Some(&Value::Str("alice".into())));
    assert_eq!(
        t.fields.get("password"),
        Some(&Value::Str("<masked>".into()))
    );
    assert_eq!(t.summary, "SASL PLAIN token, 13 bytes, user alice");
}

/// A v2 batch of `n` records (values "v0", "v1"…), no compression.
fn batch(n: u8) -> Vec<u8> {
    let mut records = Vec::new();
    for i in 0..n {
        // attributes, ts delta 0, offset delta i, key null, value "v<i>", no headers.
        let rec = [0u8, 0, i * 2, 1, 4, b'v', b'0' + i, 0];
        records.push((rec.len() as u8) * 2);
        records.extend(rec);
    }
    let mut after_crc = 0i16.to_be_bytes().to_vec(); // attributes
    after_crc.extend(i32::from(n - 1).to_be_bytes()); // last offset delta
    after_crc.extend(0i64.to_be_bytes()); // base timestamp
    after_crc.extend(0i64.to_be_bytes()); // max timestamp
    after_crc.extend((-1i64).to_be_bytes()); // producer id
    after_crc.extend((-1i16).to_be_bytes()); // producer epoch
    after_crc.extend((-1i32).to_be_bytes()); // base sequence
    after_crc.extend(i32::from(n).to_be_bytes());
    after_crc.extend(records);
    let mut b = 0i64.to_be_bytes().to_vec(); // base offset
    b.extend(((after_crc.len() + 9) as i32).to_be_bytes()); // length from the epoch on
    b.extend(0i32.to_be_bytes()); // partition leader epoch
    b.push(2); // magic
    b.extend(crc32c::crc32c(&after_crc).to_be_bytes());
    b.extend(after_crc);
    b
}

#[test]
fn produced_records_get_their_offsets_from_the_answer() {
    let mut r = replay();
    let records = batch(2);
    // Produce v3: txn null, acks -1, timeout, [ "t" [ partition 4, records ] ].
    let mut body = vec![
        0xff, 0xff, 0xff, 0xff, 0, 0, 0x03, 0xe8, 0, 0, 0, 1, 0, 1, b't',
    ];
    body.extend([0, 0, 0, 1, 0, 0, 0, 4]);
    body.extend((records.len() as i32).to_be_bytes());
    body.extend(&records);
    let q = one(&mut r, &req(0, 3, 9, "c", &body), Role::Client, 1);
    {
        let q = q.borrow();
        assert_eq!(q.status, Status::Ok, "{:?}", q.anomalies);
        assert_eq!(q.messages.len(), 2);
        assert_eq!(q.messages[1].value, Some(b"v1".to_vec()));
        assert_eq!(
            (q.messages[1].offset, q.messages[1].offset_delta),
            (None, Some(1))
        );
        // 61 bytes of batch header and two records of 1 + 8 bytes.
        assert_eq!(q.summary, "t[4] 2 records 79 B acks=-1");
    }
    // Produce v3 response: [ "t" [ index 4, error 0, base 100, log append time -1 ] ], throttle.
    let mut a = vec![0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 1, 0, 0, 0, 4, 0, 0];
    a.extend(100i64.to_be_bytes());
    a.extend((-1i64).to_be_bytes());
    a.extend(0i32.to_be_bytes());
    let af = one(&mut r, &resp(9, &a), Role::Server, 2);
    assert_eq!(af.borrow().status, Status::Ok);
    let q = q.borrow();
    assert_eq!(q.messages[0].offset, Some(100));
    assert_eq!(q.messages[1].offset, Some(101));
}
