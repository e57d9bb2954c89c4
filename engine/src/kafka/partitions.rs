//! Kafka's per-topic/partition results, found from the API specs, for the `partitions` table
//! (the twin of `wiredump/dissect/protocols/kafka/partitions.py`).
//!
//! Why: every Kafka API that touches topics nests them the same way — an array of topic structs
//! (named by `name`, `topic` or `topic_name`, or by `topic_id` alone in newer versions), each
//! holding an array of partition structs or a list of partition numbers — but the names differ
//! from API to API. The paths are found at build time from `kafka_schema.json`
//! (`codegen/kafka_partitions.rs`, the reference's `walk_of`), so every API and version is
//! covered and nothing is listed by hand; here they are followed through the frame's decoded
//! body (`fields["body"]`, as the reference reads its dict).
//!
//! Topic ids are shown as the name the run learnt for them ([`TopicNames`], taught by
//! Metadata-like responses on any connection of the capture before this frame), else as the id.

use super::body::{uuid_string, Field as BField, Name, Node, Value as BValue};
use super::recordsets::{Decoded, SetDecode};
use super::schema;
use super::topics::TopicNames;
use crate::model::{Fields, TopicPartition, Value};

/// String fields that name a topic inside a topic struct (which one depends on the API).
const TOPIC_KEYS: [&str; 3] = ["name", "topic", "topic_name"];
const TOPIC_ID: &str = "topic_id";

/// An array of partition structs (`is_struct`) or of partition numbers inside a topic struct.
#[derive(Debug)]
pub struct PartitionArray {
    pub field: &'static str,
    pub is_struct: bool,
    /// The partition-number fields the struct has (in any version), tried in this order.
    pub index: &'static [&'static str],
    /// The offset fields the struct has, in their order of preference.
    pub offsets: &'static [&'static str],
    /// The struct carries a record set.
    pub records: bool,
}

/// Where topics are in one struct of an API's body: topic arrays here, fields to descend.
#[derive(Debug)]
pub struct Walk {
    /// (array field, its partition arrays) for every topic array directly in this struct.
    pub topics: &'static [(&'static str, &'static [PartitionArray])],
    /// (field, walk) for arrays or structs below this one that hold topic arrays deeper down.
    pub descend: &'static [(&'static str, Walk)],
}

include!(concat!(env!("OUT_DIR"), "/kafka_partitions.rs"));

/// The topic paths of an API's request (`response` false) or response body.
pub fn walk_of(api_key: i64, response: bool) -> Option<&'static Walk> {
    let (_, req, resp) = WALKS.iter().find(|(k, _, _)| i64::from(*k) == api_key)?;
    if response {
        *resp
    } else {
        *req
    }
}

/// Python's `type(v) is int` (a bool is not one).
fn int(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Int(i) => Some(*i),
        Value::UInt(u) => i64::try_from(*u).ok(),
        _ => None,
    }
}

fn error_of(code: Option<i64>) -> Option<String> {
    match code {
        None | Some(0) => None,
        Some(c) => Some(match i16::try_from(c) {
            Ok(c) => schema::error_name(c).into_owned(),
            Err(_) => format!("UNKNOWN_ERROR_{c}"),
        }),
    }
}

fn topic_name(t: &Fields, names: &TopicNames) -> Option<String> {
    for k in TOPIC_KEYS {
        if let Some(Value::Str(s)) = t.get(k) {
            return Some(s.clone());
        }
    }
    match t.get(TOPIC_ID) {
        // An empty learnt name is falsy in the reference (`name_of(id) or id`).
        Some(Value::Str(id)) => Some(
            names
                .name_of(id)
                .filter(|n| !n.is_empty())
                .unwrap_or(id)
                .to_owned(),
        ),
        _ => None,
    }
}

/// (records carried, first offset among them) of a partition's record set, if it has one.
fn records(p: &Fields) -> (Option<i64>, Option<i64>) {
    let Some(Value::Map(rs)) = p.get("records") else {
        return (None, None);
    };
    records_of(rs)
}

/// (records carried, first offset among them) of a record set's decode.
fn records_of(rs: &Fields) -> (Option<i64>, Option<i64>) {
    let count = int(rs.get("record_count"));
    let first = match rs.get("batches") {
        Some(Value::List(batches)) => match batches.first() {
            Some(Value::Map(b)) => int(b.get("base_offset")).or_else(|| int(b.get("offset"))),
            _ => None,
        },
        _ => None,
    };
    (count, first)
}

fn partition_row(
    topic: &Option<String>,
    t_error: Option<i64>,
    p: &Fields,
    pa: &PartitionArray,
    response: bool,
) -> TopicPartition {
    let partition = pa.index.iter().find_map(|k| int(p.get(k)));
    let code = int(p.get("error_code")).or(t_error);
    let mut offset = pa
        .offsets
        .iter()
        .find_map(|k| int(p.get(k)))
        .map(i128::from);
    let mut count = None;
    if pa.records {
        let (c, first) = records(p);
        count = c;
        if offset.is_none() && response {
            // A request's batches carry client-side offsets (0), not the log's.
            offset = first.map(i128::from);
        }
    }
    TopicPartition {
        topic: topic.clone(),
        partition,
        error_code: code,
        error: error_of(code),
        offset,
        high_watermark: int(p.get("high_watermark")).map(i128::from),
        log_start_offset: int(p.get("log_start_offset")).map(i128::from),
        records: count,
    }
}

fn collect(
    body: &Fields,
    w: &Walk,
    names: &TopicNames,
    response: bool,
    out: &mut Vec<TopicPartition>,
) {
    for (field, parrays) in w.topics {
        let Some(Value::List(arr)) = body.get(field) else {
            continue;
        };
        for t in arr {
            let Value::Map(t) = t else { continue };
            let topic = topic_name(t, names);
            let t_error = int(t.get("error_code"));
            let n = out.len();
            for pa in *parrays {
                let Some(Value::List(parts)) = t.get(pa.field) else {
                    continue;
                };
                for p in parts {
                    match p {
                        Value::Map(p) if pa.is_struct => {
                            out.push(partition_row(&topic, t_error, p, pa, response));
                        }
                        _ if !pa.is_struct => {
                            if let Some(i) = int(Some(p)) {
                                out.push(TopicPartition {
                                    topic: topic.clone(),
                                    partition: Some(i),
                                    error_code: t_error,
                                    error: error_of(t_error),
                                    ..TopicPartition::default()
                                });
                            }
                        }
                        _ => {}
                    }
                }
            }
            if out.len() == n {
                // No partitions listed: the topic's own result.
                out.push(TopicPartition {
                    topic,
                    error_code: t_error,
                    error: error_of(t_error),
                    ..TopicPartition::default()
                });
            }
        }
    }
    for (field, sub) in w.descend {
        match body.get(field) {
            Some(Value::Map(v)) => collect(v, sub, names, response, out),
            Some(Value::List(items)) => {
                for item in items {
                    if let Value::Map(item) = item {
                        collect(item, sub, names, response, out);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Every topic/partition a decoded (or partly decoded) body names, in wire order; None when it
/// names none (the reference's `of_body(...) or None`).
pub fn of_body(
    api_key: i64,
    response: bool,
    body: Option<&Value>,
    names: &TopicNames,
) -> Option<Vec<TopicPartition>> {
    let Some(Value::Map(body)) = body else {
        return None;
    };
    let w = walk_of(api_key, response)?;
    let mut out = Vec::new();
    collect(body, w, names, response, &mut out);
    (!out.is_empty()).then_some(out)
}

/// As [`of_body`] on `convert(tree, sets)` (the frame's `body`), read from the walked tree
/// itself: the export writes a body's text without making its tree
/// ([`super::fields::write_json`]), and its partitions rows come from here. Each lookup is
/// the converted tree's: a name's last value, UUIDs and masked values as their text, a record
/// set as its decode in `sets`.
pub fn of_tree(
    api_key: i64,
    response: bool,
    tree: &[BField<'_>],
    sets: &Decoded,
    names: &TopicNames,
) -> Option<Vec<TopicPartition>> {
    let w = walk_of(api_key, response)?;
    let mut out = Vec::new();
    collect_tree(tree, w, sets, names, response, &mut out);
    (!out.is_empty()).then_some(out)
}

/// A struct's field by name: its last value (`convert` keeps the last of a repeated name).
fn get<'x, 'a>(fields: &'x [BField<'a>], key: &str) -> Option<&'x Node<'a>> {
    fields.iter().rev().find_map(|f| {
        let same = match &f.name {
            Name::Field(n) => *n == key,
            Name::Tag(t) => key == t.to_string(),
        };
        same.then_some(&f.node)
    })
}

/// `int` of the converted value.
fn int_node(n: Option<&Node<'_>>) -> Option<i64> {
    match n?.value {
        BValue::Int(i) => Some(i),
        _ => None,
    }
}

/// The converted value when it is a string (`Value::Str`): text, UUID or masked secret.
fn text_node(n: Option<&Node<'_>>) -> Option<String> {
    match &n?.value {
        BValue::Str(s) => Some(s.to_string()),
        BValue::Uuid(u) => Some(uuid_string(u)),
        BValue::Masked(len) => Some(format!("<{len} bytes masked>")),
        _ => None,
    }
}

fn topic_name_tree(t: &[BField<'_>], names: &TopicNames) -> Option<String> {
    for k in TOPIC_KEYS {
        if let Some(s) = text_node(get(t, k)) {
            return Some(s);
        }
    }
    let id = text_node(get(t, TOPIC_ID))?;
    // An empty learnt name is falsy in the reference (`name_of(id) or id`).
    Some(
        names
            .name_of(&id)
            .filter(|n| !n.is_empty())
            .map_or(id.clone(), str::to_owned),
    )
}

/// [`records`] of the converted `records` field.
fn records_tree(p: &[BField<'_>], sets: &Decoded) -> (Option<i64>, Option<i64>) {
    let Some(n) = get(p, "records") else {
        return (None, None);
    };
    match &n.value {
        BValue::Records { .. } => match sets.get(n.start) {
            Some(SetDecode::Tree(Value::Map(rs))) => records_of(rs),
            // The text's value holds `record_count` and its batches' first offset.
            Some(SetDecode::Text { first_offset, .. }) => {
                (Some(sets.record_count(n.start)), *first_offset)
            }
            _ => (None, None), // none decoded: `{"size": n}` has neither
        },
        BValue::Struct(rs) => {
            let count = int_node(get(rs, "record_count"));
            let first = match get(rs, "batches").map(|b| &b.value) {
                Some(BValue::Array(batches)) => match batches.first().map(|b| &b.value) {
                    Some(BValue::Struct(b)) => {
                        int_node(get(b, "base_offset")).or_else(|| int_node(get(b, "offset")))
                    }
                    _ => None,
                },
                _ => None,
            };
            (count, first)
        }
        _ => (None, None),
    }
}

fn partition_row_tree(
    topic: &Option<String>,
    t_error: Option<i64>,
    p: &[BField<'_>],
    sets: &Decoded,
    pa: &PartitionArray,
    response: bool,
) -> TopicPartition {
    let partition = pa.index.iter().find_map(|k| int_node(get(p, k)));
    let code = int_node(get(p, "error_code")).or(t_error);
    let mut offset = pa
        .offsets
        .iter()
        .find_map(|k| int_node(get(p, k)))
        .map(i128::from);
    let mut count = None;
    if pa.records {
        let (c, first) = records_tree(p, sets);
        count = c;
        if offset.is_none() && response {
            offset = first.map(i128::from);
        }
    }
    TopicPartition {
        topic: topic.clone(),
        partition,
        error_code: code,
        error: error_of(code),
        offset,
        high_watermark: int_node(get(p, "high_watermark")).map(i128::from),
        log_start_offset: int_node(get(p, "log_start_offset")).map(i128::from),
        records: count,
    }
}

/// [`collect`] over the walked tree.
fn collect_tree(
    body: &[BField<'_>],
    w: &Walk,
    sets: &Decoded,
    names: &TopicNames,
    response: bool,
    out: &mut Vec<TopicPartition>,
) {
    for (field, parrays) in w.topics {
        let Some(BValue::Array(arr)) = get(body, field).map(|n| &n.value) else {
            continue;
        };
        for t in arr {
            let BValue::Struct(t) = &t.value else {
                continue;
            };
            let topic = topic_name_tree(t, names);
            let t_error = int_node(get(t, "error_code"));
            let n = out.len();
            for pa in *parrays {
                let Some(BValue::Array(parts)) = get(t, pa.field).map(|n| &n.value) else {
                    continue;
                };
                for p in parts {
                    match &p.value {
                        BValue::Struct(p) if pa.is_struct => {
                            out.push(partition_row_tree(&topic, t_error, p, sets, pa, response));
                        }
                        _ if !pa.is_struct => {
                            if let Some(i) = int_node(Some(p)) {
                                out.push(TopicPartition {
                                    topic: topic.clone(),
                                    partition: Some(i),
                                    error_code: t_error,
                                    error: error_of(t_error),
                                    ..TopicPartition::default()
                                });
                            }
                        }
                        _ => {}
                    }
                }
            }
            if out.len() == n {
                // No partitions listed: the topic's own result.
                out.push(TopicPartition {
                    topic,
                    error_code: t_error,
                    error: error_of(t_error),
                    ..TopicPartition::default()
                });
            }
        }
    }
    for (field, sub) in w.descend {
        match get(body, field).map(|n| &n.value) {
            Some(BValue::Struct(v)) => collect_tree(v, sub, sets, names, response, out),
            Some(BValue::Array(items)) => {
                for item in items {
                    if let BValue::Struct(item) = &item.value {
                        collect_tree(item, sub, sets, names, response, out);
                    }
                }
            }
            Some(BValue::Records { .. }) => {
                // A record set's decode is a map too (`{size, batches, …}`), as the converted
                // tree holds it; no walk descends into one, but the converted tree would.
                let set = get(body, field).and_then(|n| sets.get(n.start));
                if let Some(SetDecode::Tree(Value::Map(v))) = set {
                    collect(v, sub, names, response, out);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn produce_paths_come_from_the_specs() {
        // ProduceRequest: topic_data[].partition_data[] (index, records); the response:
        // responses[].partition_responses[] (index, base_offset, log_start_offset).
        let w = walk_of(0, false).expect("Produce request holds topics");
        assert_eq!(w.topics.len(), 1);
        assert_eq!(w.topics[0].0, "topic_data");
        let pa = &w.topics[0].1[0];
        assert_eq!(pa.field, "partition_data");
        assert!(pa.records && pa.index.contains(&"index"));
        let w = walk_of(0, true).expect("Produce response holds topics");
        assert_eq!(w.topics[0].0, "responses");
        assert_eq!(w.topics[0].1[0].offsets, &["base_offset"]);
        assert!(walk_of(18, false).is_none(), "ApiVersions names no topic");
    }

    #[test]
    fn topic_ids_resolve_through_the_run_and_errors_are_named() {
        let mut part = Fields::new();
        part.set("partition_index", Value::Int(3))
            .set("error_code", Value::Int(6))
            .set("high_watermark", Value::Int(42));
        let mut topic = Fields::new();
        topic
            .set(
                "topic_id",
                Value::Str("00000000-0000-0000-0000-000000000001".into()),
            )
            .set("partitions", Value::List(vec![Value::Map(part)]));
        let mut body = Fields::new();
        body.set("responses", Value::List(vec![Value::Map(topic)]));
        let body = Value::Map(body);
        let rows = of_body(1, true, Some(&body), &TopicNames::default()).expect("rows");
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(
            r.topic.as_deref(),
            Some("00000000-0000-0000-0000-000000000001")
        );
        assert_eq!(
            (r.partition, r.error_code, r.high_watermark),
            (Some(3), Some(6), Some(42))
        );
        assert_eq!(r.error.as_deref(), Some("NOT_LEADER_OR_FOLLOWER"));
    }
}
