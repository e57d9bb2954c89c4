//! One short timeline line per Pravega command (the twin of `pravega/summary.py`, same text).
//!
//! What a reader of the timeline looks for: the segment, the writer, event numbers, offsets,
//! byte and event counts, and for errors the error and what it names. The type name is shown by
//! the timeline itself, so it is not repeated here.

use super::commands::{auth_error_code, error_message_code, scale_type, LONG_MIN};
use crate::model::{Fields, Frame, Value};

const SKIP: [&str; 6] = [
    "delegation_token",
    "server_stack_trace",
    "request_id",
    "absent_optional_fields",
    "flow",
    "data_shown",
];

/// Python's `str(v)` of a decoded value (`None` when absent).
pub fn py(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "None".into(),
        Some(Value::Bool(true)) => "True".into(),
        Some(Value::Bool(false)) => "False".into(),
        Some(Value::Int(n)) => n.to_string(),
        Some(Value::UInt(n)) => n.to_string(),
        Some(Value::Float(x)) => x.to_string(),
        Some(Value::Str(s)) => s.clone(),
        Some(Value::Bytes(b)) => format!("<{} bytes>", b.len()),
        Some(Value::List(l)) => format!("<list of {}>", l.len()),
        Some(Value::Map(_)) => "<dict>".into(),
    }
}

/// Python truthiness of a decoded value.
fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Int(n)) => *n != 0,
        Some(Value::UInt(n)) => *n != 0,
        Some(Value::Float(x)) => *x != 0.0,
        Some(Value::Str(s)) => !s.is_empty(),
        Some(Value::Bytes(b)) => !b.is_empty(),
        Some(Value::List(l)) => !l.is_empty(),
        Some(Value::Map(m)) => !m.is_empty(),
    }
}

fn int(d: &Fields, k: &str) -> Option<i64> {
    match d.get(k) {
        Some(Value::Int(n)) => Some(*n),
        Some(Value::Bool(b)) => Some(*b as i64),
        _ => None,
    }
}

/// `d.get(k, default)` as text.
fn get_or(d: &Fields, k: &str, default: &str) -> String {
    match d.get(k) {
        None => default.to_owned(),
        v => py(v),
    }
}

fn w(d: &Fields) -> String {
    match d.get("writer_id") {
        Some(Value::Str(s)) => format!("writer {}", s.chars().take(8).collect::<String>()),
        _ => String::new(),
    }
}

fn en(v: Option<&Value>) -> String {
    match v {
        Some(Value::Int(n)) if *n == LONG_MIN => "none".into(),
        v => py(v),
    }
}

fn data(d: &Fields) -> String {
    let size = match d.get("appended_length") {
        Some(v) => py(Some(v)),
        None => py(d.get("data_length")),
    };
    match d.get("data_kind") {
        Some(Value::Str(k)) if k == "events" => {
            let n = d.get("events").map_or("0".to_owned(), |v| py(Some(v)));
            let s = if n == "1" { "" } else { "s" };
            format!("{n} event{s}, {size} B")
        }
        Some(Value::Str(k)) if k == "raw" => format!("{size} B raw (byte stream)"),
        Some(Value::Str(k)) if k == "empty" => "no data".into(),
        _ => String::new(),
    }
}

fn join(parts: &[String]) -> String {
    let mut out = String::new();
    for p in parts.iter().filter(|p| !p.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(p);
    }
    out
}

fn hello(d: &Fields) -> String {
    let mut s = format!(
        "wire version {} (oldest {})",
        py(d.get("high_version")),
        py(d.get("low_version"))
    );
    if let Some(Value::Map(peer)) = d.get("peer_versions") {
        if !peer.is_empty() {
            s += &format!(
                "; peer {} (oldest {}), versions {}",
                py(peer.get("high_version")),
                py(peer.get("low_version")),
                py(d.get("versions"))
            );
        }
    }
    s
}

fn block_end(d: &Fields) -> String {
    let (num, last) = (int(d, "num_events"), int(d, "last_event_number"));
    let first = match (num, last) {
        (Some(num), Some(last)) => Some(last as i128 - num as i128 + 1),
        _ => None,
    };
    let rng = match (first, last) {
        (Some(first), Some(last)) if first != last as i128 => format!("events {first}..{last}"),
        _ => format!("event {}", py(d.get("last_event_number"))),
    };
    let dt = data(d);
    let trailer = d.get("block_trailer");
    join(&[
        w(d),
        rng,
        if dt.is_empty() {
            String::new()
        } else {
            format!("({dt})")
        },
        if truthy(trailer) {
            format!(
                "[block {} B + {}]",
                py(d.get("block_data_length")),
                py(trailer)
            )
        } else {
            String::new()
        },
    ])
}

fn data_appended(d: &Fields) -> String {
    let mut s = join(&[
        w(d),
        format!("acked up to event {}", py(d.get("event_number"))),
        format!("(previous {})", en(d.get("previous_event_number"))),
    ]);
    if let Some(Value::Int(off)) = d.get("current_segment_write_offset") {
        if *off >= 0 {
            s += &format!(", segment write offset {off}");
        }
    }
    s
}

fn segment_read(d: &Fields) -> String {
    let mut parts = vec![format!("{} @{}", py(d.get("segment")), py(d.get("offset")))];
    let dt = data(d);
    parts.push(if dt.is_empty() {
        format!("{} B", get_or(d, "data_length", "0"))
    } else {
        dt
    });
    for (label, k) in [("at tail", "at_tail"), ("end of segment", "end_of_segment")] {
        if truthy(d.get(k)) {
            parts.push(label.into());
        }
    }
    join(&parts)
}

/// Items of a decoded list, counting those cut from `fields`.
fn n_items(d: &Fields, key: &str) -> String {
    match d.get(&format!("{key}_total")) {
        Some(v) => py(Some(v)),
        None => match d.get(key) {
            Some(Value::List(l)) => l.len().to_string(),
            _ => "0".into(),
        },
    }
}

fn generic(f: &Frame, d: &Fields) -> String {
    let mut parts: Vec<String> = Vec::new();
    let absent: Vec<&str> = match d.get("absent_optional_fields") {
        Some(Value::List(l)) => l
            .iter()
            .filter_map(|v| match v {
                Value::Str(s) => Some(s.as_str()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    for field in &d.0 {
        let k: &str = &field.name;
        let v = &field.value;
        if SKIP.contains(&k)
            || absent.contains(&k)
            || k.ends_with("_total")
            || matches!(k, "entries" | "keys" | "data" | "padding")
            || matches!(v, Value::Bytes(_) | Value::Map(_) | Value::List(_))
        {
            continue;
        }
        if k == "writer_id" {
            parts.push(w(d));
        } else if k == "segment" {
            parts.push(py(Some(v)));
        } else if k == "scale_type" {
            let name = match v {
                Value::Int(n) => scale_type(*n),
                _ => None,
            };
            parts.push(format!(
                "scale {}",
                name.map_or_else(|| py(Some(v)), str::to_owned)
            ));
        } else if k == "error_code" && f.type_ == "AuthTokenCheckFailed" {
            let name = match v {
                Value::Int(n) => auth_error_code(*n),
                _ => None,
            };
            parts.push(format!(
                "error {}",
                name.map_or_else(|| py(Some(v)), str::to_owned)
            ));
        } else if k == "error_code" && f.type_ == "ErrorMessage" {
            let name = match v {
                Value::Int(n) => error_message_code(*n),
                _ => None,
            };
            parts.push(format!(
                "error {}",
                name.map_or_else(|| py(Some(v)), str::to_owned)
            ));
        } else if matches!(v, Value::Int(-1)) && k.ends_with("offset") {
            continue; // -1 = no offset given
        } else if k == "last_event_number" || k == "event_number" {
            parts.push(format!("{} {}", k.replace('_', " "), en(Some(v))));
        } else {
            parts.push(format!("{k}={}", py(Some(v))));
        }
    }
    for key in ["entries", "keys"] {
        if let Some(Value::List(_)) = d.get(key) {
            let t = format!("{} {key}", n_items(d, key));
            let at = parts.len().min(1);
            parts.insert(at, t);
            break;
        }
    }
    for (key, label) in [
        ("sources", "sources"),
        ("merged", "merged"),
        ("updated_versions", "versions"),
        ("chunks", "chunks"),
    ] {
        if let Some(Value::List(_)) = d.get(key) {
            parts.push(format!("{} {label}", n_items(d, key)));
        }
    }
    if let Some(e) = &f.error {
        parts.insert(0, format!("error {e}:"));
    }
    join(&parts)
}

/// The frame's timeline line (at most 300 characters).
pub fn summarize(f: &Frame) -> String {
    let d = &f.fields;
    let s = match &*f.type_ {
        "Hello" => hello(d),
        "AppendBlockEnd" => block_end(d),
        "DataAppended" => data_appended(d),
        "SegmentRead" => segment_read(d),
        "AppendBlock" => join(&[
            w(d),
            format!("{} B", get_or(d, "data_length", "0")),
            format!("{} whole events", get_or(d, "whole_events", "0")),
            if truthy(d.get("trailer")) {
                format!("+ {}", py(d.get("trailer")))
            } else {
                String::new()
            },
        ]),
        "ConditionalAppend" => join(&[
            w(d),
            format!(
                "event {} at expected offset {}",
                py(d.get("event_number")),
                py(d.get("expected_offset"))
            ),
            format!("({} B)", get_or(d, "data_length", "0")),
        ]),
        "ConditionalBlockEnd" => {
            let dt = data(d);
            join(&[
                w(d),
                format!(
                    "event {} at expected offset {}",
                    py(d.get("event_number")),
                    py(d.get("expected_offset"))
                ),
                if dt.is_empty() {
                    String::new()
                } else {
                    format!("({dt})")
                },
            ])
        }
        "ReadSegment" => format!(
            "{} @{} up to {} B",
            py(d.get("segment")),
            py(d.get("offset")),
            py(d.get("suggested_length"))
        ),
        "KeepAlive" => "keep-alive".into(),
        _ => generic(f, d),
    };
    match s.char_indices().nth(300) {
        Some((i, _)) => s[..i].to_owned(),
        None => s,
    }
}
