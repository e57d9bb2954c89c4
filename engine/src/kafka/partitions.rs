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

use super::body::{field, uuid_string, Field as BField, Node, Value as BValue};
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

/// A decoded body as the partitions rows read it, whichever form it has: the frame's fields
/// ([`Value`], see [`of_body`]) or the tree the walker made with its record sets (the export's,
/// see [`of_tree`]). Both read alike, as the converted tree holds them: a struct's field is the
/// last of its name, UUIDs and masked secrets are text, a record set is its decode. One walk
/// ([`collect`]) is written over this, so the two forms cannot disagree.
trait View: Copy {
    /// A struct's field by name; None when absent or when this is not a struct.
    fn field(self, key: &str) -> Option<Self>;
    /// Whether this is a struct (a map).
    fn is_struct(self) -> bool;
    /// A list's items; None when this is not a list.
    fn items(self) -> Option<impl Iterator<Item = Self>>;
    /// Python's `type(v) is int` (a bool is not one).
    fn int(self) -> Option<i64>;
    /// A string's text.
    fn text(self) -> Option<String>;
    /// (records carried, first offset among them) when this is a record set's decode.
    fn record_set(self) -> (Option<i64>, Option<i64>);
}

impl View for &Value {
    fn field(self, key: &str) -> Option<Self> {
        match self {
            Value::Map(m) => m.get(key),
            _ => None,
        }
    }

    fn is_struct(self) -> bool {
        matches!(self, Value::Map(_))
    }

    fn items(self) -> Option<impl Iterator<Item = Self>> {
        match self {
            Value::List(items) => Some(items.iter()),
            _ => None,
        }
    }

    fn int(self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::UInt(u) => i64::try_from(*u).ok(),
            _ => None,
        }
    }

    fn text(self) -> Option<String> {
        match self {
            Value::Str(s) => Some(s.clone()),
            _ => None,
        }
    }

    fn record_set(self) -> (Option<i64>, Option<i64>) {
        match self {
            Value::Map(rs) => records_of(rs),
            _ => (None, None),
        }
    }
}

/// (records carried, first offset among them) of a record set's decode.
fn records_of(rs: &Fields) -> (Option<i64>, Option<i64>) {
    let int = |v: Option<&Value>| v.and_then(View::int);
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

/// A place in a walked tree: the body's fields, or one node, with the body's record sets.
#[derive(Clone, Copy)]
struct Walked<'x, 'a> {
    at: At<'x, 'a>,
    sets: &'x Decoded,
}

#[derive(Clone, Copy)]
enum At<'x, 'a> {
    Fields(&'x [BField<'a>]),
    Node(&'x Node<'a>),
}

impl<'x, 'a> Walked<'x, 'a> {
    fn node(self) -> Option<&'x Node<'a>> {
        match self.at {
            At::Node(n) => Some(n),
            At::Fields(_) => None,
        }
    }

    fn fields(self) -> Option<&'x [BField<'a>]> {
        match self.at {
            At::Fields(f) => Some(f),
            At::Node(n) => match &n.value {
                BValue::Struct(f) => Some(f),
                _ => None,
            },
        }
    }

    fn at(self, node: &'x Node<'a>) -> Self {
        Walked {
            at: At::Node(node),
            sets: self.sets,
        }
    }
}

impl View for Walked<'_, '_> {
    fn field(self, key: &str) -> Option<Self> {
        // The last of a name, as `convert` keeps it (keys here are schema names, never a tag's
        // number).
        Some(self.at(field(self.fields()?, key)?))
    }

    fn is_struct(self) -> bool {
        // A record set's node converts to a map too, but no walk reads a record set's decode
        // as a struct of topics (the generated walks descend into arrays and structs only).
        self.fields().is_some()
    }

    fn items(self) -> Option<impl Iterator<Item = Self>> {
        match &self.node()?.value {
            BValue::Array(items) => Some(items.iter().map(move |n| self.at(n))),
            _ => None,
        }
    }

    fn int(self) -> Option<i64> {
        match self.node()?.value {
            BValue::Int(i) => Some(i),
            _ => None,
        }
    }

    fn text(self) -> Option<String> {
        match &self.node()?.value {
            BValue::Str(s) => Some(s.to_string()),
            BValue::Uuid(u) => Some(uuid_string(u)),
            BValue::Masked(len) => Some(format!("<{len} bytes masked>")),
            _ => None,
        }
    }

    fn record_set(self) -> (Option<i64>, Option<i64>) {
        let Some(n) = self.node() else {
            return (None, None);
        };
        match &n.value {
            BValue::Records { .. } => match self.sets.get(n.start) {
                Some(SetDecode::Tree(v)) => v.record_set(),
                // The text's value holds `record_count` and its batches' first offset.
                Some(SetDecode::Text { first_offset, .. }) => {
                    (Some(self.sets.record_count(n.start)), *first_offset)
                }
                None => (None, None), // none decoded: `{"size": n}` has neither
            },
            BValue::Struct(_) => {
                let count = self.field("record_count").and_then(View::int);
                let first = self
                    .field("batches")
                    .and_then(View::items)
                    .and_then(|mut b| b.next())
                    .filter(|b| b.is_struct())
                    .and_then(|b| {
                        b.field("base_offset")
                            .and_then(View::int)
                            .or_else(|| b.field("offset").and_then(View::int))
                    });
                (count, first)
            }
            _ => (None, None),
        }
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

fn int_of<V: View>(v: V, key: &str) -> Option<i64> {
    v.field(key).and_then(View::int)
}

fn topic_name<V: View>(t: V, names: &TopicNames) -> Option<String> {
    for k in TOPIC_KEYS {
        if let Some(s) = t.field(k).and_then(View::text) {
            return Some(s);
        }
    }
    let id = t.field(TOPIC_ID).and_then(View::text)?;
    // An empty learnt name is falsy in the reference (`name_of(id) or id`).
    Some(
        names
            .name_of(&id)
            .filter(|n| !n.is_empty())
            .map_or_else(|| id.clone(), str::to_owned),
    )
}

fn partition_row<V: View>(
    topic: &Option<String>,
    t_error: Option<i64>,
    p: V,
    pa: &PartitionArray,
    response: bool,
) -> TopicPartition {
    let partition = pa.index.iter().find_map(|k| int_of(p, k));
    let code = int_of(p, "error_code").or(t_error);
    let mut offset = pa.offsets.iter().find_map(|k| int_of(p, k)).map(i128::from);
    let mut count = None;
    if pa.records {
        let (c, first) = p.field("records").map_or((None, None), View::record_set);
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
        high_watermark: int_of(p, "high_watermark").map(i128::from),
        log_start_offset: int_of(p, "log_start_offset").map(i128::from),
        records: count,
    }
}

fn collect<V: View>(
    body: V,
    w: &Walk,
    names: &TopicNames,
    response: bool,
    out: &mut Vec<TopicPartition>,
) {
    for (field, parrays) in w.topics {
        let Some(arr) = body.field(field).and_then(View::items) else {
            continue;
        };
        for t in arr.filter(|t| t.is_struct()) {
            let topic = topic_name(t, names);
            let t_error = int_of(t, "error_code");
            let n = out.len();
            for pa in *parrays {
                let Some(parts) = t.field(pa.field).and_then(View::items) else {
                    continue;
                };
                for p in parts {
                    if pa.is_struct {
                        if p.is_struct() {
                            out.push(partition_row(&topic, t_error, p, pa, response));
                        }
                    } else if let Some(i) = p.int() {
                        out.push(TopicPartition {
                            topic: topic.clone(),
                            partition: Some(i),
                            error_code: t_error,
                            error: error_of(t_error),
                            ..TopicPartition::default()
                        });
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
        let Some(v) = body.field(field) else { continue };
        if v.is_struct() {
            collect(v, sub, names, response, out);
        } else if let Some(items) = v.items() {
            for item in items.filter(|i| i.is_struct()) {
                collect(item, sub, names, response, out);
            }
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
    let body = body.filter(|b| b.is_struct())?;
    let w = walk_of(api_key, response)?;
    let mut out = Vec::new();
    collect(body, w, names, response, &mut out);
    (!out.is_empty()).then_some(out)
}

/// As [`of_body`] on `convert(tree, sets)` (the frame's `body`), read from the walked tree
/// itself: the export writes a body's text without making its tree
/// ([`super::fields::write_json`]), and its partitions rows come from here.
pub fn of_tree(
    api_key: i64,
    response: bool,
    tree: &[BField<'_>],
    sets: &Decoded,
    names: &TopicNames,
) -> Option<Vec<TopicPartition>> {
    let w = walk_of(api_key, response)?;
    let body = Walked {
        at: At::Fields(tree),
        sets,
    };
    let mut out = Vec::new();
    collect(body, w, names, response, &mut out);
    (!out.is_empty()).then_some(out)
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
