//! Where each Kafka API's bodies hold topics and partitions, from `kafka_schema.json` (the
//! build-time half of `src/kafka/partitions.rs`; the mirror of `walk_of` in
//! `wiredump/dissect/protocols/kafka/partitions.py`).
//!
//! Why at build time: the paths depend only on the specs, so they are found once here for every
//! (API, direction) over all its versions, and nothing is listed per API by hand. The rules are
//! the reference's, step for step (first occurrence wins, dict semantics where it uses dicts).

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::Value;

const TOPIC_ID: &str = "topic_id";
const PARTITION_KEYS: [&str; 4] = ["partition_index", "index", "partition", "partition_id"];
const PARTITION_LISTS: [&str; 3] = ["partition_indexes", "partitions", "partition_ids"];
const OFFSET_KEYS: [&str; 4] = ["base_offset", "fetch_offset", "committed_offset", "offset"];

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A field's sub-fields, when it has any (Python's truthy `f.get("fields")`).
fn sub_of(f: &Value) -> Option<&Vec<Value>> {
    f.get("fields")
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
}

/// `{name: type}` of a struct's fields, the last of a repeated name winning (a dict
/// comprehension).
fn types_of(sub: &[Value]) -> Vec<(&str, &str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for g in sub {
        let (n, t) = (str_of(g, "name"), str_of(g, "type"));
        match out.iter_mut().find(|(k, _)| *k == n) {
            Some(e) => e.1 = t,
            None => out.push((n, t)),
        }
    }
    out
}

fn type_of<'a>(types: &[(&str, &'a str)], name: &str) -> Option<&'a str> {
    types.iter().find(|(k, _)| *k == name).map(|(_, t)| *t)
}

fn is_topic_struct(f: &Value) -> bool {
    let ftype = str_of(f, "type");
    let Some(sub) = sub_of(f) else { return false };
    if !ftype.starts_with("[]") {
        return false;
    }
    let names = types_of(sub);
    if type_of(&names, TOPIC_ID) == Some("uuid")
        || type_of(&names, "topic") == Some("string")
        || type_of(&names, "topic_name") == Some("string")
    {
        return true;
    }
    type_of(&names, "name") == Some("string") && ftype.contains("Topic")
}

fn partition_arrays(fields: &[Value]) -> String {
    let mut out = String::from("&[");
    for g in fields {
        let gtype = str_of(g, "type");
        if !gtype.starts_with("[]") {
            continue;
        }
        let name = str_of(g, "name");
        if let Some(sub) = sub_of(g) {
            let have = types_of(sub);
            let index: Vec<&str> = PARTITION_KEYS
                .into_iter()
                .filter(|k| type_of(&have, k) == Some("int32"))
                .collect();
            if !index.is_empty() {
                let offsets: Vec<&str> = OFFSET_KEYS
                    .into_iter()
                    .filter(|k| type_of(&have, k) == Some("int64"))
                    .collect();
                let records = type_of(&have, "records") == Some("records");
                let _ = write!(
                    out,
                    "PartitionArray {{ field: {name:?}, is_struct: true, index: &{index:?}, \
                     offsets: &{offsets:?}, records: {records} }}, "
                );
            }
        } else if gtype == "[]int32" && PARTITION_LISTS.contains(&name) {
            let _ = write!(
                out,
                "PartitionArray {{ field: {name:?}, is_struct: false, index: &[], offsets: &[], \
                 records: false }}, "
            );
        }
    }
    out.push(']');
    out
}

/// The walk of one struct's fields as a `Walk { .. }` expression, None when no topic is below.
fn walk(fields: &[&Value]) -> Option<String> {
    let mut found: Vec<(&str, String)> = Vec::new();
    let mut below: Vec<(&str, String)> = Vec::new();
    for f in fields {
        let Some(sub) = sub_of(f) else { continue };
        let name = str_of(f, "name");
        if is_topic_struct(f) {
            if !found.iter().any(|(k, _)| *k == name) {
                found.push((name, partition_arrays(sub)));
            }
            continue;
        }
        let subs: Vec<&Value> = sub.iter().collect();
        if let Some(w) = walk(&subs) {
            if !below.iter().any(|(k, _)| *k == name) {
                below.push((name, w));
            }
        }
    }
    if found.is_empty() && below.is_empty() {
        return None;
    }
    let mut s = String::from("Walk { topics: &[");
    for (k, p) in &found {
        let _ = write!(s, "({k:?}, {p}), ");
    }
    s.push_str("], descend: &[");
    for (k, w) in &below {
        let _ = write!(s, "({k:?}, {w}), ");
    }
    s.push_str("] }");
    Some(s)
}

/// Writes `kafka_partitions.rs`: `WALKS`, one `(api key, request walk, response walk)` per API.
pub fn generate(schema: &Value) {
    let mut apis: Vec<(i64, &Value)> = schema["apis"]
        .as_object()
        .expect("apis")
        .iter()
        .map(|(k, v)| (k.parse().expect("api key"), v))
        .collect();
    apis.sort_by_key(|(k, _)| *k);
    let mut out = String::from(
        "// Generated by engine/build.rs (codegen/kafka_partitions.rs) from \
         wiredump/proto/kafka_schema.json: do not edit.\n\
         pub static WALKS: &[(i16, Option<&Walk>, Option<&Walk>)] = &[\n",
    );
    for (key, api) in apis {
        let mut sides = Vec::new();
        for direction in ["request", "response"] {
            let mut fields: Vec<&Value> = Vec::new();
            for entry in api[direction].as_array().expect("entries") {
                if let Some(fs) = entry["fields"].as_array() {
                    fields.extend(fs);
                }
            }
            sides.push(walk(&fields).map_or_else(|| "None".to_owned(), |w| format!("Some(&{w})")));
        }
        let _ = writeln!(out, "    ({key}, {}, {}),", sides[0], sides[1]);
    }
    out.push_str("];\n");
    println!("cargo:rerun-if-changed=codegen/kafka_partitions.rs");
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("kafka_partitions.rs");
    std::fs::write(dest, out).expect("write kafka_partitions.rs");
}
