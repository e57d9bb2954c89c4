//! The body walker's tree as the frame's fields ([`crate::model::Fields`]): the same names,
//! order and values as the Python session's `frame.fields`, each with the byte span it was read
//! from. UUIDs become their text form, masked secrets their `<n bytes masked>` text, record sets
//! their decode (see [`super::recordsets`]).

use std::borrow::Cow;

use super::body::{uuid_string, Field as BField, Name, Node, Value as BValue};
use super::recordsets::Decoded;
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
