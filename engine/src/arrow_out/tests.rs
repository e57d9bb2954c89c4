//! The builders on hand-made records: every column filled, values where the contract puts them,
//! nulls for what does not fit, batches cut at the bounds. (The differential test against the
//! Python reference on real captures is tests/test_arrow_tables.py.)

use std::borrow::Cow;
use std::rc::Rc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, TimestampMicrosecondType};
use arrow_array::{Array, RecordBatch};

use super::*;
use crate::model::{
    Anomaly, ConnectionSummary, Direction, Exchange, ExchangeStatus, Fields, Frame, Kind, Message,
    Role, Status, Value,
};

pub(crate) fn frame(packet: u64, messages: usize) -> Frame {
    let mut f = Frame::new("kafka", "Produce", 0);
    f.kind = Kind::Request;
    f.version = Some(9);
    f.correlation_id = Some(7);
    f.role = Role::Client;
    f.packet = packet;
    f.first_packet = packet - 1;
    f.ts_us = 1_700_000_000_123_456;
    f.stream = 3;
    f.src = Rc::from("10.0.0.1");
    f.src_port = 40000;
    f.dst = Rc::from("10.0.0.2");
    f.dst_port = 9092;
    f.length = 120;
    f.summary = "Produce t-é".into();
    f.fields.set("client_id", Value::Str("c".into()));
    for i in 0..messages {
        f.messages.push(Message {
            direction: Some(Direction::Produce),
            value_size: 5,
            topic: Some("t".into()),
            partition: Some(1),
            key: Some(b"k".to_vec()),
            value: Some(b"hello".to_vec()),
            timestamp_ms: Some(1_700_000_000_123),
            headers: Some(vec![("h".into(), Some(b"v".to_vec())), ("n".into(), None)]),
            compression: Some(Cow::Borrowed("lz4")),
            checksum_ok: Some(true),
            offset_delta: Some(i as i64),
            ..Message::default()
        });
    }
    f
}

fn all(set: &mut TableSet) -> Vec<(Table, RecordBatch)> {
    set.finish().unwrap();
    std::iter::from_fn(|| set.pop()).collect()
}

#[test]
fn a_frame_and_its_messages_fill_every_column() {
    let mut set = TableSet::new(TableOptions {
        values: true,
        ..TableOptions::default()
    });
    set.frame("cap.pcap", &frame(5, 2)).unwrap();
    let out = all(&mut set);
    assert_eq!(
        out.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
        [Table::Frames, Table::Messages]
    );
    let frames = &out[0].1;
    assert_eq!(frames.num_rows(), 1);
    assert_eq!(frames.schema(), Table::Frames.decl().schema());
    let col = |name: &str| frames.column_by_name(name).unwrap().clone();
    assert_eq!(col("packet").as_primitive::<Int64Type>().value(0), 5);
    assert_eq!(col("first_packet").as_primitive::<Int64Type>().value(0), 4);
    assert_eq!(
        col("ts")
            .as_primitive::<TimestampMicrosecondType>()
            .value(0),
        1_700_000_000_123_456
    );
    assert_eq!(col("dst_port").as_primitive::<Int32Type>().value(0), 9092);
    assert_eq!(col("role").as_string::<i32>().value(0), "client");
    assert_eq!(col("kind").as_string::<i32>().value(0), "request");
    assert_eq!(col("status").as_string::<i32>().value(0), "ok");
    assert_eq!(
        col("detail").as_string::<i32>().value(0),
        "{\"client_id\":\"c\"}"
    );
    assert!(col("error").is_null(0) && col("peer_packet").is_null(0));

    let msgs = &out[1].1;
    assert_eq!(msgs.num_rows(), 2);
    let m = |name: &str| msgs.column_by_name(name).unwrap().clone();
    assert_eq!(m("value").as_binary::<i32>().value(1), b"hello");
    assert_eq!(m("offset_delta").as_primitive::<Int64Type>().value(1), 1);
    assert!(m("offset").is_null(0) && m("detail").is_null(0));
    let headers = m("headers");
    let headers = headers.as_map();
    assert_eq!(headers.value_length(0), 2);
    let entries = headers.value(0);
    assert_eq!(entries.column(0).as_string::<i32>().value(1), "n");
    assert!(entries.column(1).is_null(1));
}

#[test]
fn values_are_left_out_unless_asked() {
    let mut set = TableSet::new(TableOptions::default());
    set.frame("c", &frame(5, 3)).unwrap();
    let out = all(&mut set);
    let msgs = &out[1].1;
    assert_eq!(msgs.column_by_name("value").unwrap().null_count(), 3);
    assert_eq!(msgs.column_by_name("value_size").unwrap().null_count(), 0);
}

#[test]
fn values_that_do_not_fit_their_column_are_null() {
    let mut f = frame(5, 0);
    f.type_code = 1 << 40;
    f.packet = u64::MAX;
    let mut set = TableSet::new(TableOptions::default());
    set.frame("c", &f).unwrap();
    let mut a = Anomaly::new("gap", "lost").at(Some(u64::MAX));
    a.packet = 9;
    set.anomaly("c", &a).unwrap();
    let out = all(&mut set);
    let frames = &out[0].1;
    assert!(frames.column_by_name("type_code").unwrap().is_null(0));
    assert!(frames.column_by_name("packet").unwrap().is_null(0));
    let anomalies = &out[1].1;
    assert_eq!(out[1].0, Table::Anomalies);
    assert!(anomalies.column_by_name("offset").unwrap().is_null(0));
    assert!(anomalies.column_by_name("stream").unwrap().is_null(0));
}

#[test]
fn batches_are_cut_at_the_row_bound_after_the_frame_that_crosses_it() {
    let mut set = TableSet::new(TableOptions {
        values: false,
        batch_rows: 10,
        batch_bytes: usize::MAX,
        cut_anywhere: false,
    });
    for p in 1..=25 {
        set.frame("c", &frame(p + 1, 4)).unwrap();
    }
    let out = all(&mut set);
    let sizes = |t: Table| -> Vec<usize> {
        out.iter()
            .filter(|(x, _)| *x == t)
            .map(|(_, b)| b.num_rows())
            .collect()
    };
    assert_eq!(sizes(Table::Frames), [10, 10, 5]);
    // 4 messages a frame: cut after the frame that reaches 10, i.e. at 12.
    assert_eq!(sizes(Table::Messages), [12, 12, 12, 12, 12, 12, 12, 12, 4]);
    assert_eq!(set.counts()[0], (Table::Frames, 25));
    assert_eq!(set.counts()[2], (Table::Messages, 100));
}

#[test]
fn with_cut_anywhere_a_frames_messages_are_cut_at_the_bound_itself() {
    let mut set = TableSet::new(TableOptions {
        values: false,
        batch_rows: 10,
        batch_bytes: usize::MAX,
        cut_anywhere: true,
    });
    for p in 1..=25 {
        set.frame("c", &frame(p + 1, 4)).unwrap();
    }
    let out = all(&mut set);
    let messages: Vec<&RecordBatch> = out
        .iter()
        .filter(|(t, _)| *t == Table::Messages)
        .map(|(_, b)| b)
        .collect();
    // 100 messages in batches of exactly 10, the third frame's split 2 + 2.
    assert_eq!(
        messages.iter().map(|b| b.num_rows()).collect::<Vec<_>>(),
        [10; 10]
    );
    let packets = |b: &RecordBatch| {
        b.column_by_name("packet")
            .unwrap()
            .as_primitive::<Int64Type>()
            .values()
            .to_vec()
    };
    assert_eq!(packets(messages[0]), [2, 2, 2, 2, 3, 3, 3, 3, 4, 4]);
    assert_eq!(packets(messages[1]), [4, 4, 5, 5, 5, 5, 6, 6, 6, 6]);
    // Each row keeps its place in its frame, across the cut.
    let deltas = messages[1]
        .column_by_name("offset_delta")
        .unwrap()
        .as_primitive::<Int64Type>()
        .values()
        .to_vec();
    assert_eq!(deltas, [2, 3, 0, 1, 2, 3, 0, 1, 2, 3]);
    // Frames are still cut after the frame that reaches the bound.
    let frames: Vec<usize> = out
        .iter()
        .filter(|(t, _)| *t == Table::Frames)
        .map(|(_, b)| b.num_rows())
        .collect();
    assert_eq!(frames, [10, 10, 5]);
}

#[test]
fn batches_are_cut_at_the_byte_bound() {
    // Each anomaly costs ROW_OVERHEAD + its detail's characters (é is one, as Python counts).
    let mut set = TableSet::new(TableOptions {
        values: false,
        batch_rows: usize::MAX,
        batch_bytes: 3 * (ROW_OVERHEAD + 4),
        cut_anywhere: false,
    });
    for p in 1..=7 {
        let mut a = Anomaly::new("gap", "abcé");
        a.packet = p;
        set.anomaly("c", &a).unwrap();
    }
    let out = all(&mut set);
    let sizes: Vec<usize> = out.iter().map(|(_, b)| b.num_rows()).collect();
    assert_eq!(sizes, [3, 3, 1]);
}

#[test]
fn exchanges_and_connections() {
    let mut set = TableSet::new(TableOptions::default());
    set.exchange(
        "c",
        &Exchange {
            stream: 2,
            protocol: "kafka",
            type_: "Fetch".into(),
            correlation_id: Some(4),
            status: ExchangeStatus::NoResponseExpected,
            request_packet: Some(10),
            response_packet: None,
            request_ts_us: Some(5),
            response_ts_us: None,
            latency_us: None,
            error_code: None,
        },
    )
    .unwrap();
    set.connection(
        "c",
        &ConnectionSummary {
            stream: 2,
            client: Rc::from("::1"),
            client_port: 5,
            server: Rc::from("::2"),
            server_port: 9092,
            protocol: None,
            packets: 3,
            bytes_client: 1,
            bytes_server: 2,
            frames: 0,
            gaps: 0,
            retransmissions: 0,
            first_ts_us: 1,
            last_ts_us: 2,
            state: "midstream",
        },
    )
    .unwrap();
    let out = all(&mut set);
    assert_eq!(out[0].0, Table::Exchanges);
    let ex = &out[0].1;
    assert_eq!(
        ex.column_by_name("status")
            .unwrap()
            .as_string::<i32>()
            .value(0),
        "no_response_expected"
    );
    assert!(ex.column_by_name("response_ts").unwrap().is_null(0));
    let conn = &out[1].1;
    assert_eq!(conn.schema(), Table::Connections.decl().schema());
    assert!(conn.column_by_name("protocol").unwrap().is_null(0));
    assert_eq!(
        conn.column_by_name("state")
            .unwrap()
            .as_string::<i32>()
            .value(0),
        "midstream"
    );
}

#[test]
fn message_detail_is_null_when_empty_and_json_otherwise() {
    let mut f = frame(5, 2);
    f.messages[0].detail = Some(Fields::new().into());
    let mut d = Fields::new();
    d.set("batch_index", Value::Int(3));
    f.messages[1].detail = Some(d.into());
    f.status = Status::Malformed;
    let mut set = TableSet::new(TableOptions::default());
    set.frame("c", &f).unwrap();
    let out = all(&mut set);
    let detail = out[1].1.column_by_name("detail").unwrap().clone();
    assert!(detail.is_null(0));
    assert_eq!(detail.as_string::<i32>().value(1), "{\"batch_index\":3}");
}

/// Messages sharing one detail (a Kafka batch's records) and messages with their own: each row
/// has its own message's text, in both frames (the shared text is not carried to the next frame).
#[test]
fn shared_message_details_are_written_per_row() {
    let mut a = Fields::new();
    a.set("producer_id", Value::Int(7));
    let a = Rc::new(a);
    let mut b = Fields::new();
    b.set("producer_id", Value::Int(8));
    let b = Rc::new(b);
    let mut f = frame(5, 4);
    f.messages[0].detail = Some(Rc::clone(&a));
    f.messages[1].detail = Some(Rc::clone(&a));
    f.messages[2].detail = Some(Rc::clone(&b));
    f.messages[3].detail = Some(Rc::clone(&a));
    let mut g = frame(6, 2);
    g.messages[0].detail = None;
    g.messages[1].detail = Some(Rc::clone(&b));
    let mut set = TableSet::new(TableOptions::default());
    set.frame("c", &f).unwrap();
    set.frame("c", &g).unwrap();
    let out = all(&mut set);
    let messages = &out.iter().find(|(t, _)| *t == Table::Messages).unwrap().1;
    let detail = messages
        .column_by_name("detail")
        .unwrap()
        .as_string::<i32>();
    let seven = "{\"producer_id\":7}";
    let eight = "{\"producer_id\":8}";
    let want = [
        Some(seven),
        Some(seven),
        Some(eight),
        Some(seven),
        None,
        Some(eight),
    ];
    let got: Vec<Option<&str>> = (0..detail.len())
        .map(|i| (!detail.is_null(i)).then(|| detail.value(i)))
        .collect();
    assert_eq!(got, want);
}
