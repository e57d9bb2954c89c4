//! One row of each table appended to its column builders, with the reference's size estimate.
//!
//! Every function fills every column of its table once (a column left out would make the
//! table's columns unequal in length, which `RecordBatch::try_new` refuses and the tests catch).
//! Values that do not fit their column become null, as the Python reference's `column()` makes
//! them (a packet number beyond `i64`, a type code beyond `i32`), never a wrapped number.

use super::columns::{
    AnomaliesColumns, ConnectionsColumns, ExchangesColumns, FramesColumns, HeadersBuilder,
    MessagesColumns, PartitionsColumns,
};
use super::ROW_OVERHEAD;
use crate::detail_json::{write_fields_json, write_frame_json};
use std::rc::Rc;

use crate::model::{Anomaly, ConnectionSummary, Exchange, Fields, Frame, Message, TopicPartition};

/// Length as Python's `len(str)` counts it (code points), for the same size estimate.
/// `chars().count()` is std's word-at-a-time count (the byte-by-byte filter it replaces was
/// ~3% of the export's engine time, on every `detail` and `summary`).
fn chars(s: &str) -> usize {
    s.chars().count()
}

fn i64_of(v: u64) -> Option<i64> {
    i64::try_from(v).ok()
}

/// A message's headers: (key, value) pairs, a value may be null.
type Headers = [(String, Option<Vec<u8>>)];

fn headers(b: &mut HeadersBuilder, h: Option<&Headers>) {
    match h {
        Some(list) => {
            for (k, v) in list {
                b.keys().append_value(k);
                b.values().append_option(v.as_deref());
            }
            b.append(true).expect("keys and values appended in pairs");
        }
        None => b.append(false).expect("no entries pending"),
    }
}

/// Where a frame's body text goes in the `detail` written around it: NUL, which JSON text never
/// holds raw (a string's control characters are written escaped).
const BODY_MARK: &str = "\0";
/// [`BODY_MARK`] as the char it is: split on a char, the text is searched with `memchr`.
const BODY_MARK_CHAR: char = '\0';

/// A frames row; returns its estimated size (`ROW_OVERHEAD + len(detail) + len(summary)`).
/// `detail` is a scratch buffer for the JSON text, reused from row to row.
///
/// A body given as text ([`Frame::body_text`], megabytes for a big Fetch response) goes from
/// the frame into the column directly: the scratch holds the frame's other fields with a mark
/// where the body goes (where each field named `body` goes), and the column gets the text
/// around the marks and the body in their place.
pub fn frame(c: &mut FramesColumns, capture: &str, f: &Frame, detail: &mut String) -> usize {
    use std::fmt::Write;
    let body = f.body_text.as_deref();
    write_frame_json(detail, &f.fields, body.map(|_| BODY_MARK));
    let detail_chars = match body {
        Some(text) => {
            // Writing into a string builder cannot fail (it appends to a byte buffer).
            let mut pieces = detail.split(BODY_MARK_CHAR);
            let head = pieces.next().unwrap_or_default();
            let _ = c.detail.write_str(head);
            let mut n = chars(head);
            let mut text_chars = None;
            for piece in pieces {
                let _ = c.detail.write_str(text);
                n += *text_chars.get_or_insert_with(|| chars(text));
                let _ = c.detail.write_str(piece);
                n += chars(piece);
            }
            c.detail.append_value("");
            n
        }
        None => {
            c.detail.append_value(detail.as_str());
            chars(detail)
        }
    };
    let size = ROW_OVERHEAD + detail_chars + chars(&f.summary);
    c.capture.append_value(capture);
    c.packet.append_option(i64_of(f.packet));
    c.first_packet.append_option(i64_of(f.first_packet));
    c.ts.append_value(f.ts_us);
    c.stream.append_option(i64_of(f.stream));
    c.src.append_value(&*f.src);
    c.src_port.append_value(i32::from(f.src_port));
    c.dst.append_value(&*f.dst);
    c.dst_port.append_value(i32::from(f.dst_port));
    c.protocol.append_value(f.protocol);
    c.role.append_value(f.role.as_str());
    c.kind.append_value(f.kind.as_str());
    c.r#type.append_value(&*f.type_);
    c.type_code.append_option(i32::try_from(f.type_code).ok());
    c.version.append_option(f.version);
    c.correlation_id.append_option(f.correlation_id);
    c.length.append_option(i64_of(f.length));
    c.status.append_value(f.status.as_str());
    c.error_code.append_option(f.error_code);
    c.error.append_option(f.error.as_deref());
    c.peer_packet.append_option(f.peer_packet.and_then(i64_of));
    c.latency_us.append_option(f.latency_us);
    c.summary.append_value(&f.summary);
    size
}

/// The JSON text of the last message detail written, and which detail it is (a pointer
/// compared while the frame whose messages these are is borrowed, so no other detail can
/// take its address meanwhile: [`MessageDetail::clear`] before each frame's messages).
#[derive(Default)]
pub struct MessageDetail {
    of: Option<*const Fields>,
    text: String,
    chars: usize,
}

impl MessageDetail {
    /// Forgets the last detail (its frame may be gone, and its address reused).
    pub fn clear(&mut self) {
        self.of = None;
    }
}

/// A messages row (the message `m` carried by `f`); returns its estimated size.
pub fn message(
    c: &mut MessagesColumns,
    capture: &str,
    f: &Frame,
    m: &Message,
    values: bool,
    detail: &mut MessageDetail,
) -> usize {
    let mut size = ROW_OVERHEAD;
    c.capture.append_value(capture);
    c.packet.append_option(i64_of(f.packet));
    c.stream.append_option(i64_of(f.stream));
    c.protocol.append_value(f.protocol);
    c.direction.append_option(m.direction.map(|d| d.as_str()));
    c.topic.append_option(m.topic.as_deref());
    c.partition.append_option(m.partition);
    c.offset.append_option(m.offset);
    c.message_id.append_option(m.message_id.as_deref());
    c.key.append_option(m.key.as_deref());
    if let Some(k) = &m.key {
        size += k.len();
    }
    c.value_size.append_value(m.value_size);
    let value = if values { m.value.as_deref() } else { None };
    c.value.append_option(value);
    if let Some(v) = value {
        size += v.len();
    }
    c.timestamp.append_option(m.timestamp_ms);
    headers(&mut c.headers, m.headers.as_deref());
    c.compression.append_option(m.compression.as_deref());
    c.checksum_ok.append_option(m.checksum_ok);
    // An empty detail is null, as Python's `to_json(m.detail) if m.detail else None`.
    match m.detail.as_ref().filter(|d| !d.is_empty()) {
        Some(d) => {
            // The records of a Kafka batch share one detail: its text is written once.
            if detail.of != Some(Rc::as_ptr(d)) {
                write_fields_json(&mut detail.text, d);
                detail.chars = chars(&detail.text);
                detail.of = Some(Rc::as_ptr(d));
            }
            size += detail.chars;
            c.detail.append_value(&detail.text);
        }
        None => c.detail.append_null(),
    }
    c.offset_delta.append_option(m.offset_delta);
    size
}

/// A partitions row (the topic/partition `p` named by `f`), as `tables.partition_tuples`; the
/// reference's size estimate of a partitions row is `ROW_OVERHEAD` alone.
pub fn partition(c: &mut PartitionsColumns, capture: &str, f: &Frame, p: &TopicPartition) {
    c.capture.append_value(capture);
    c.packet.append_option(i64_of(f.packet));
    c.ts.append_value(f.ts_us);
    c.stream.append_option(i64_of(f.stream));
    c.protocol.append_value(f.protocol);
    c.role.append_value(f.role.as_str());
    c.kind.append_value(f.kind.as_str());
    c.r#type.append_value(&*f.type_);
    c.correlation_id.append_option(f.correlation_id);
    c.latency_us.append_option(f.latency_us);
    c.topic.append_option(p.topic.as_deref());
    c.partition
        .append_option(p.partition.and_then(|v| i32::try_from(v).ok()));
    c.error_code
        .append_option(p.error_code.and_then(|v| i32::try_from(v).ok()));
    c.error.append_option(p.error.as_deref());
    c.offset
        .append_option(p.offset.and_then(|v| i64::try_from(v).ok()));
    c.high_watermark
        .append_option(p.high_watermark.and_then(|v| i64::try_from(v).ok()));
    c.log_start_offset
        .append_option(p.log_start_offset.and_then(|v| i64::try_from(v).ok()));
    c.records.append_option(p.records);
}

/// An anomalies row; returns its estimated size (`ROW_OVERHEAD + len(detail)`).
pub fn anomaly(c: &mut AnomaliesColumns, capture: &str, a: &Anomaly) -> usize {
    c.capture.append_value(capture);
    c.packet.append_option(i64_of(a.packet));
    c.stream.append_option(a.stream.and_then(i64_of));
    c.protocol.append_option(a.protocol);
    c.kind.append_value(&*a.kind);
    c.offset.append_option(a.offset.and_then(i64_of));
    c.detail.append_value(&a.detail);
    ROW_OVERHEAD + chars(&a.detail)
}

pub fn exchange(c: &mut ExchangesColumns, capture: &str, e: &Exchange) {
    c.capture.append_value(capture);
    c.stream.append_option(i64_of(e.stream));
    c.protocol.append_value(e.protocol);
    c.r#type.append_value(&*e.type_);
    c.correlation_id.append_option(e.correlation_id);
    c.request_packet
        .append_option(e.request_packet.and_then(i64_of));
    c.response_packet
        .append_option(e.response_packet.and_then(i64_of));
    c.request_ts.append_option(e.request_ts_us);
    c.response_ts.append_option(e.response_ts_us);
    c.latency_us.append_option(e.latency_us);
    c.error_code.append_option(e.error_code);
    c.status.append_value(e.status.as_str());
}

pub fn connection(c: &mut ConnectionsColumns, capture: &str, s: &ConnectionSummary) {
    c.capture.append_value(capture);
    c.stream.append_option(i64_of(s.stream));
    c.client.append_value(&*s.client);
    c.client_port.append_value(i32::from(s.client_port));
    c.server.append_value(&*s.server);
    c.server_port.append_value(i32::from(s.server_port));
    c.protocol.append_option(s.protocol);
    c.packets.append_option(i64_of(s.packets));
    c.bytes_client.append_option(i64_of(s.bytes_client));
    c.bytes_server.append_option(i64_of(s.bytes_server));
    c.frames.append_option(i64_of(s.frames));
    c.gaps.append_option(i64_of(s.gaps));
    c.retransmissions.append_option(i64_of(s.retransmissions));
    c.first_ts.append_value(s.first_ts_us);
    c.last_ts.append_value(s.last_ts_us);
    c.state.append_value(s.state);
}
