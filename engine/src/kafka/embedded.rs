//! Structures Kafka carries as opaque bytes inside other messages, decoded where known: the
//! consumer protocol's subscription and assignment in JoinGroup/SyncGroup (mirrors
//! `wiredump/dissect/protocols/kafka/embedded.py`). KRaft control record values are in
//! `records`. Anything that does not fit stays raw.

use std::borrow::Cow;

use super::body::{decode_body, field as get, Field, Name, Node, Value};
use super::schema::DATA_PLANS;

/// Decodes a version-prefixed data structure (`{"version": v, ...fields}`); `None` when it does
/// not fit. Newer versions only append fields, so an unknown newer version is read with the
/// newest layout known (and may leave bytes). Spans are shifted by `base` (where `data` sits).
pub fn decode_data<'a>(name: &str, data: &'a [u8], base: usize) -> Option<Vec<Field<'a>>> {
    if data.len() < 2 {
        return None;
    }
    let version = i16::from_be_bytes([data[0], data[1]]);
    let known: Vec<_> = DATA_PLANS.iter().filter(|d| d.name == name).collect();
    if known.is_empty() || version < 0 {
        return None;
    }
    let exact = known.iter().find(|d| d.version == version);
    let d = exact.or_else(|| known.iter().max_by_key(|d| d.version))?;
    let dec = decode_body(data, 2, d.plan, &[]);
    if dec.error.is_some() || (dec.end != data.len() && exact.is_some()) {
        return None;
    }
    let mut out = vec![Field {
        name: Name::Field("version"),
        node: Node {
            value: Value::Int(i64::from(version)),
            start: base,
            end: base + 2,
        },
    }];
    out.extend(dec.fields.into_iter().map(|f| shift(f, base)));
    Some(out)
}

fn shift_node(n: Node<'_>, by: usize) -> Node<'_> {
    let value = match n.value {
        Value::Array(items) => Value::Array(items.into_iter().map(|i| shift_node(i, by)).collect()),
        Value::Struct(fields) => Value::Struct(fields.into_iter().map(|f| shift(f, by)).collect()),
        v => v,
    };
    Node {
        value,
        start: n.start + by,
        end: n.end + by,
    }
}

fn shift(f: Field<'_>, by: usize) -> Field<'_> {
    Field {
        name: f.name,
        node: shift_node(f.node, by),
    }
}

/// The bytes of a BYTES node and where they start (after the length prefix).
fn bytes_of<'a>(n: Option<&Node<'a>>) -> Option<(&'a [u8], usize)> {
    match n {
        Some(Node {
            value: Value::Bytes(Cow::Borrowed(b)),
            end,
            ..
        }) => Some((b, end - b.len())),
        _ => None,
    }
}

fn decoded<'a>(name: &'static str, what: &str, fields: &[Field<'a>]) -> Option<Field<'a>> {
    let (b, at) = bytes_of(get(fields, what))?;
    let d = decode_data(name, b, at)?;
    let (start, end) = (at, at + b.len());
    Some(Field {
        name: Name::Field(name_of(what)),
        node: Node {
            value: Value::Struct(d),
            start,
            end,
        },
    })
}

fn name_of(what: &str) -> &'static str {
    match what {
        "metadata" => "metadata_decoded",
        _ => "assignment_decoded",
    }
}

/// Adds `*_decoded` siblings to the consumer-protocol BYTES of JoinGroup (11) and SyncGroup (14)
/// bodies when the protocol type (the body's own, else `protocol_type` from the request) is
/// "consumer".
pub fn annotate(
    api_key: i16,
    response: bool,
    body: &mut Vec<Field<'_>>,
    protocol_type: Option<&str>,
) {
    let ptype = match get(body, "protocol_type") {
        Some(Node {
            value: Value::Str(s),
            ..
        }) => Some(s.as_ref()),
        Some(_) => None,
        None => protocol_type,
    };
    if ptype != Some("consumer") {
        return;
    }
    let items = |body: &mut Vec<Field<'_>>, array: &str, what: &str, name: &'static str| {
        let Some(f) = body.iter_mut().rev().find(|f| array == f.name) else {
            return;
        };
        if let Value::Array(items) = &mut f.node.value {
            for item in items {
                if let Value::Struct(fields) = &mut item.value {
                    if let Some(d) = decoded(name, what, fields) {
                        fields.push(d);
                    }
                }
            }
        }
    };
    match (api_key, response) {
        (11, false) => items(
            body,
            "protocols",
            "metadata",
            "ConsumerProtocolSubscription",
        ),
        (11, true) => items(body, "members", "metadata", "ConsumerProtocolSubscription"),
        (14, false) => items(
            body,
            "assignments",
            "assignment",
            "ConsumerProtocolAssignment",
        ),
        (14, true) => {
            if let Some(d) = decoded("ConsumerProtocolAssignment", "assignment", body) {
                body.push(d);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignment_v0_by_hand() {
        // version 0, one topic "t" with partitions [3], user_data null.
        let b = [
            0, 0, 0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 1, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff,
        ];
        let d = decode_data("ConsumerProtocolAssignment", &b, 100).expect("fits");
        assert_eq!(d[0].node.value, Value::Int(0));
        let Value::Array(topics) = &get(&d, "assigned_partitions").unwrap().value else {
            panic!()
        };
        let Value::Struct(t) = &topics[0].value else {
            panic!()
        };
        assert_eq!(get(t, "topic").unwrap().value, Value::Str("t".into()));
        let parts = get(t, "partitions").unwrap();
        assert_eq!(
            parts.value,
            Value::Array(vec![Node {
                value: Value::Int(3),
                start: 113,
                end: 117
            }])
        );
        assert_eq!(get(&d, "user_data").unwrap().value, Value::Null);
        // Left-over bytes after an exactly known version: not this structure.
        let mut longer = b.to_vec();
        longer.push(0);
        assert!(decode_data("ConsumerProtocolAssignment", &longer, 0).is_none());
    }
}
