//! Fuzzes the Kafka decoder: the first two bytes pick an (api key, version, direction) plan
//! from the generated tables (or, past them, the request/response headers), the rest is the
//! body. Every record set the body holds goes through the record-set decoder, the record sets
//! are located, the consumer protocol decoded and the summary line made. Checks that nothing
//! panics and that every span lies inside the input, and that the walk that builds nothing
//! (`check_body`, what layout trials use) agrees with the decode: error or not, the error's kind,
//! place and sizes, where the body ended, the record sets located (with the full element budget
//! and with a small one picked by the input).

#![no_main]

use libfuzzer_sys::fuzz_target;
use wiredump_engine::kafka::body::{
    check_against_decode, decode_body, Field, Node, Value, MAX_ELEMENTS,
};
use wiredump_engine::kafka::codecs::Limits;
use wiredump_engine::kafka::embedded::annotate;
use wiredump_engine::kafka::header::{request_header, response_header};
use wiredump_engine::kafka::records::{decode_record_set, locate_record_sets};
use wiredump_engine::kafka::schema::API_PLANS;
use wiredump_engine::kafka::summary::{summarize, Context};

fn check(n: &Node<'_>, len: usize, body: &[u8], limits: &mut Limits) {
    assert!(
        n.start <= n.end && n.end <= len,
        "span {}..{} outside {len}",
        n.start,
        n.end
    );
    match &n.value {
        Value::Struct(fields) => fields
            .iter()
            .for_each(|f: &Field<'_>| check(&f.node, len, body, limits)),
        Value::Array(items) => items.iter().for_each(|i| check(i, len, body, limits)),
        Value::Records { size } => {
            assert_eq!(n.end - n.start, *size);
            let rs = decode_record_set(&body[n.start..n.end], false, limits);
            assert!(rs.entries.len() <= *size);
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let pick = usize::from(u16::from_be_bytes([data[0], data[1]]));
    let body = &data[2..];
    let mut limits = Limits {
        max_decompressed_total: 256 << 20,
        ..Limits::default()
    };
    let Some(p) = API_PLANS.get(pick / 2) else {
        // Past the plans: headers of every version, and the bytes as a bare record set.
        let _ = request_header(body, (pick % 3) as u8);
        let _ = response_header(body, (pick % 2) as u8);
        let _ = decode_record_set(body, pick % 2 == 0, &mut limits);
        return;
    };
    let plan = if pick % 2 == 1 { p.response } else { p.request };
    let Some(plan) = plan else { return };
    // The full element budget, and a small one (0..=7, the input's last byte): elements past it
    // are not kept (nor their record sets).
    for budget in [MAX_ELEMENTS, u64::from(data[data.len() - 1] & 7)] {
        if let Err(e) = check_against_decode(body, 0, plan, budget) {
            panic!("check_body disagrees with decode_body (budget {budget}): {e}");
        }
    }
    let mut d = decode_body(body, 0, plan, &["auth_bytes"]);
    assert!(d.end <= body.len());
    for f in &d.fields {
        check(&f.node, body.len(), body, &mut limits);
    }
    for l in locate_record_sets(&d.fields) {
        assert!(l.start <= l.end && l.end <= body.len());
    }
    // What the timeline does with a body: the consumer protocol, then the summary line.
    let response = pick % 2 == 1;
    annotate(p.key, response, &mut d.fields, Some("consumer"));
    let count = |s: usize, e: usize| {
        decode_record_set(&body[s..e], false, &mut Limits::default()).record_count
    };
    let cx = Context {
        version: p.version,
        record_count: &count,
        topic_name: &|_| None,
    };
    let _ = summarize(p.key, !response, &d.fields, &cx);
});
