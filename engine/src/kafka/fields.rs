//! The body walker's tree as the frame's fields ([`crate::model::Fields`]): the same names,
//! order and values as the Python session's `frame.fields`, each with the byte span it was read
//! from; or straight as those fields' `detail` text ([`write_json`]). UUIDs become their text
//! form, masked secrets their `<n bytes masked>` text, record sets their decode (see
//! [`super::recordsets`]).

use std::borrow::Cow;

use super::body::MAX_DEPTH;
use super::body::{uuid_string, Field as BField, Name, Node, Value as BValue};
use super::recordsets::{Decoded, SetDecode};
use crate::detail_json::{
    write_float_orjson, write_hex, write_int, write_str, write_value_orjson, TooDeep,
    ORJSON_MAX_DEPTH,
};
use crate::model::{Fields, Span, Value};

/// The span of a value computed by the session rather than read (no bytes to mark).
pub const COMPUTED: usize = usize::MAX;

/// A node for a value the session adds to a body (the SASL mechanism, a user name…).
pub fn computed(value: BValue<'static>) -> Node<'static> {
    Node {
        value,
        start: COMPUTED,
        end: COMPUTED,
    }
}

fn span(n: &Node<'_>) -> Option<Span> {
    (n.start != COMPUTED).then(|| Span::new(n.start, n.end))
}

fn name(n: &Name) -> Cow<'static, str> {
    n.as_str()
}

/// A struct's fields; a repeated name keeps its first place and takes the last value.
pub fn convert(fields: &[BField<'_>], sets: &mut Decoded) -> Fields {
    let mut out = Fields(Vec::with_capacity(fields.len()));
    for f in fields {
        let v = value(&f.node, sets);
        out.set_span(name(&f.name), v, span(&f.node));
    }
    out
}

/// One value.
pub fn value(n: &Node<'_>, sets: &mut Decoded) -> Value {
    match &n.value {
        BValue::Null => Value::Null,
        BValue::Bool(b) => Value::Bool(*b),
        BValue::Int(i) => Value::Int(*i),
        BValue::Float(f) => Value::Float(*f),
        BValue::Str(s) => Value::Str(s.to_string()),
        BValue::Bytes(b) => Value::Bytes(b.to_vec()),
        BValue::Masked(len) => Value::Str(format!("<{len} bytes masked>")),
        BValue::Uuid(u) => Value::Str(uuid_string(u)),
        BValue::Array(items) => Value::List(items.iter().map(|i| value(i, sets)).collect()),
        BValue::Struct(fields) => Value::Map(convert(fields, sets)),
        BValue::Records { size } => match sets.take(n.start) {
            Some(v) => v,
            None => {
                let mut f = Fields::new();
                f.set("size", Value::Int(*size as i64));
                Value::Map(f)
            }
        },
    }
}

/// How deep a frame's `detail` nests at most when its body is text: the frame's object (1) and
/// the body's (2); two levels (a struct in an array) for each struct the walker enters, which
/// it refuses past [`MAX_DEPTH`]; a record set's value (its map, its batch list, a batch, a
/// control record list and map, 5) and a control record's value walked the same way again.
pub const TEXT_DEPTH_BOUND: usize = 2 + 2 * (MAX_DEPTH + 1) + 5 + 2 * (MAX_DEPTH + 1);

// A body written as text never reaches orjson's limit: its record sets' text is written before
// the body's depth is known, without a check of its own.
const _: () = assert!(TEXT_DEPTH_BOUND < ORJSON_MAX_DEPTH);

/// The `detail` JSON text of `convert(fields, sets)` at `depth` (the depth of the object it
/// is: 2 for a frame's body), as `detail_json` writes the converted tree, byte for byte,
/// without making it ([`crate::protocol::SessionOptions::detail_text`]: the export's frames
/// are read only for their tables, and the tree cost allocations to make and free that the text
/// alone does not). `sets` is only read: each record set's node has its own start, so
/// `convert`'s taking it leaves nothing different. Err when the text would nest deeper than
/// orjson writes, which [`TEXT_DEPTH_BOUND`] rules out for a body (the caller reports it as an
/// internal error).
pub fn write_json(
    out: &mut String,
    fields: &[BField<'_>],
    sets: &Decoded,
    depth: usize,
) -> Result<(), TooDeep> {
    if depth > ORJSON_MAX_DEPTH {
        return Err(TooDeep);
    }
    out.push('{');
    let mut first = true;
    for (i, f) in fields.iter().enumerate() {
        // A repeated name keeps its first place and takes the last value (`convert`).
        if fields[..i].iter().any(|e| same_name(&e.name, &f.name)) {
            continue;
        }
        let last = fields[i + 1..]
            .iter()
            .rev()
            .find(|e| same_name(&e.name, &f.name))
            .unwrap_or(f);
        if !first {
            out.push(',');
        }
        first = false;
        match &f.name {
            // Schema names are identifiers: nothing to escape (checked by a test).
            Name::Field(s) => {
                out.reserve(s.len() + 3);
                out.push('"');
                out.push_str(s);
                out.push_str("\":");
            }
            Name::Tag(t) => {
                write_str(out, &t.to_string());
                out.push(':');
            }
        }
        write_node(out, &last.node, sets, depth)?;
    }
    out.push('}');
    Ok(())
}

/// The bytes a body's top-level fields were read from (values the session computed, which
/// have no bytes, left out): a measure of how long its text will be.
pub fn bytes_read(fields: &[BField<'_>]) -> usize {
    let read = fields
        .iter()
        .map(|f| &f.node)
        .filter(|n| n.start != COMPUTED);
    let start = read.clone().map(|n| n.start).min();
    let end = read.map(|n| n.end).max();
    match (start, end) {
        (Some(s), Some(e)) => e.saturating_sub(s),
        _ => 0,
    }
}

/// Whether two names are the same key (as `convert`'s `set_span` compares them: as text).
fn same_name(a: &Name, b: &Name) -> bool {
    match (a, b) {
        (Name::Field(x), Name::Field(y)) => x.len() == y.len() && x == y,
        (Name::Tag(x), Name::Tag(y)) => x == y,
        (Name::Field(s), Name::Tag(t)) | (Name::Tag(t), Name::Field(s)) => *s == t.to_string(),
    }
}

/// One node's value as `value` converts it and `detail_json` writes that, at `depth`.
fn write_node(out: &mut String, n: &Node<'_>, sets: &Decoded, depth: usize) -> Result<(), TooDeep> {
    match &n.value {
        BValue::Null => out.push_str("null"),
        BValue::Bool(true) => out.push_str("true"),
        BValue::Bool(false) => out.push_str("false"),
        BValue::Int(i) => write_int(out, *i),
        BValue::Float(x) => write_float_orjson(out, *x),
        BValue::Str(s) => write_str(out, s),
        BValue::Bytes(b) => write_hex(out, b),
        BValue::Masked(len) => write_str(out, &format!("<{len} bytes masked>")),
        BValue::Uuid(u) => write_str(out, &uuid_string(u)),
        BValue::Array(items) => {
            if depth + 1 > ORJSON_MAX_DEPTH {
                return Err(TooDeep);
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_node(out, item, sets, depth + 1)?;
            }
            out.push(']');
        }
        BValue::Struct(fields) => write_json(out, fields, sets, depth + 1)?,
        BValue::Records { size } => match sets.get(n.start) {
            Some(SetDecode::Tree(v)) => write_value_orjson(out, v, depth)?,
            Some(SetDecode::Text { json, .. }) => out.push_str(json),
            None => {
                if depth + 1 > ORJSON_MAX_DEPTH {
                    return Err(TooDeep);
                }
                out.push_str("{\"size\":");
                write_int(out, *size as i64);
                out.push('}');
            }
        },
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::body::decode_body;
    use super::super::partitions::{of_body, of_tree};
    use super::super::schema;
    use super::super::topics::TopicNames;
    use super::*;
    use crate::detail_json::write_fields_json;

    fn node(value: BValue<'static>, start: usize) -> Node<'static> {
        Node {
            value,
            start,
            end: start + 1,
        }
    }

    fn field(name: &'static str, value: BValue<'static>, start: usize) -> BField<'static> {
        BField {
            name: Name::Field(name),
            node: node(value, start),
        }
    }

    /// The text `write_json` writes for a body, and the text of the converted tree (both as a
    /// frame's `detail` holds a body: the value of `{"body": …}`).
    fn both(tree: &[BField<'_>], sets: &Decoded) -> (String, String) {
        let mut text = String::from("{\"body\":");
        write_json(&mut text, tree, sets, 2).expect("shallow");
        text.push('}');
        let mut frame = Fields::new();
        frame.set("body", Value::Map(convert(tree, &mut sets_copy(sets))));
        let mut want = String::new();
        write_fields_json(&mut want, &frame);
        (text, want)
    }

    fn sets_copy(sets: &Decoded) -> Decoded {
        let mut out = Decoded::default();
        for start in [10, 20, 30] {
            if let Some(v) = sets.get(start) {
                out.insert(start, v.clone(), sets.record_count(start));
            }
        }
        out
    }

    #[test]
    fn text_is_the_converted_trees_text() {
        // Every kind of node, a repeated name (a tag repeating a field: the later value at the
        // earlier place), an unknown tag by number, a record set decoded and one not.
        let mut decoded = Fields::new();
        decoded
            .set("size", Value::Int(61))
            .set("record_count", Value::Int(2));
        let mut sets = Decoded::default();
        sets.insert(10, SetDecode::Tree(Value::Map(decoded)), 2);
        let inner = vec![
            field("index", BValue::Int(-3), 5),
            field("records", BValue::Records { size: 61 }, 10),
            field("other", BValue::Records { size: 7 }, 20),
        ];
        let tree = vec![
            field("name", BValue::Str("t\"q\n".into()), 1),
            field("acks", BValue::Int(1), 2),
            field("ratio", BValue::Float(0.1), 3),
            field("ok", BValue::Bool(true), 4),
            field("gone", BValue::Null, 6),
            field("raw", BValue::Bytes(vec![0, 0xab, 0xff].into()), 7),
            field("secret", BValue::Masked(12), 8),
            field("topic_id", BValue::Uuid([7; 16]), 9),
            field(
                "parts",
                BValue::Array(vec![
                    node(BValue::Struct(inner), 11),
                    node(BValue::Int(4), 12),
                ]),
                11,
            ),
            field("acks", BValue::Int(-1), 13),
            BField {
                name: Name::Tag(9),
                node: node(BValue::Str("é€".into()), 14),
            },
        ];
        let (text, want) = both(&tree, &sets);
        assert_eq!(text, want);
        // Checked by hand: the repeated `acks` keeps its place with the later value.
        assert!(want.starts_with("{\"body\":{\"name\":\"t\\\"q\\n\",\"acks\":-1,\"ratio\":0.1,"));
        assert!(want.contains("\"secret\":\"<12 bytes masked>\""));
        assert!(
            want.contains("\"records\":{\"size\":61,\"record_count\":2},\"other\":{\"size\":7}")
        );
        assert!(want.ends_with(",\"9\":\"é€\"}}"));
        assert_eq!(want.matches("\"acks\"").count(), 1);
    }

    #[test]
    fn partitions_from_the_tree_are_those_of_the_converted_tree() {
        // ProduceResponse v8 by hand: one topic "t" with partitions 0 (error 0, base offset 42)
        // and 1 (error 6, NOT_LEADER_OR_FOLLOWER), throttle 0.
        let mut body = Vec::new();
        body.extend(1i32.to_be_bytes()); // responses
        body.extend(1i16.to_be_bytes());
        body.extend(b"t");
        body.extend(2i32.to_be_bytes()); // partition_responses
        for (index, code, base) in [(0i32, 0i16, 42i64), (1, 6, -1)] {
            body.extend(index.to_be_bytes());
            body.extend(code.to_be_bytes());
            body.extend(base.to_be_bytes());
            body.extend((-1i64).to_be_bytes()); // log_append_time_ms
            body.extend(0i64.to_be_bytes()); // log_start_offset
            body.extend(0i32.to_be_bytes()); // record_errors: empty
            body.extend((-1i16).to_be_bytes()); // error_message: null
        }
        body.extend(0i32.to_be_bytes()); // throttle_time_ms
        let plan = schema::plan(0, 8, true).expect("Produce v8 response");
        let d = decode_body(&body, 0, plan, &[]);
        assert!(d.error.is_none(), "{:?}", d.error);
        let sets = Decoded::default();
        let names = TopicNames::default();
        let from_tree = of_tree(0, true, &d.fields, &sets, &names).expect("rows");
        let converted = Value::Map(convert(&d.fields, &mut Decoded::default()));
        assert_eq!(
            Some(from_tree.clone()),
            of_body(0, true, Some(&converted), &names)
        );
        assert_eq!(from_tree.len(), 2);
        assert_eq!(
            (
                from_tree[0].topic.as_deref(),
                from_tree[0].partition,
                from_tree[0].offset
            ),
            (Some("t"), Some(0), Some(42))
        );
        assert_eq!(
            from_tree[1].error.as_deref(),
            Some("NOT_LEADER_OR_FOLLOWER")
        );
        let (text, want) = both(&d.fields, &sets);
        assert_eq!(text, want);
    }

    #[test]
    fn schema_names_need_no_escape() {
        // `write_json` writes a field's name without looking for characters to escape.
        fn plan_names(p: &schema::Plan, out: &mut Vec<&'static str>) {
            for op in p.ops.iter().chain(p.tags.iter().map(|(_, op)| op)) {
                op_names(op, out);
            }
        }
        fn op_names(op: &schema::Op, out: &mut Vec<&'static str>) {
            out.extend(op.name);
            match &op.kind {
                schema::Kind::Array(e) => op_names(e, out),
                schema::Kind::Struct(p) => plan_names(p, out),
                schema::Kind::Run(fields) => out.extend(fields.iter().map(|f| f.name)),
                _ => {}
            }
        }
        let mut names = Vec::new();
        for (key, version) in schema::api_versions() {
            for response in [false, true] {
                if let Some(p) = schema::plan(key, version, response) {
                    plan_names(p, &mut names);
                }
            }
        }
        assert!(names.len() > 1000, "{}", names.len());
        for n in names {
            assert!(
                !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
                "{n:?}"
            );
        }
    }
}
