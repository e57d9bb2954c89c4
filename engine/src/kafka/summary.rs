//! One-line summaries of Kafka bodies for the timeline (mirrors
//! `wiredump/dissect/protocols/kafka/summary.py`, the body part; the error suffix is the
//! session's): which topics and partitions, how many records and bytes, acks, fetch positions,
//! lookup targets, group ids. APIs without a dedicated line get a generic one.
//!
//! The reference formats values with Python's `str()`/`repr()`; [`py_str`] does the same for the
//! values a body holds (strings in lists are quoted, `None`, `True`…).

use std::borrow::Cow;
use std::fmt::Write as _;

use super::body::{field as get, uuid_string, Field, Node, Value};
use crate::printable::str_repr;

const MAX_ITEMS: usize = 4;

/// What a summary needs beyond the body: the record count of the record set at a span, and
/// the run's topic names (id -> name).
pub struct Context<'c> {
    pub version: i16,
    pub record_count: &'c dyn Fn(usize, usize) -> i64,
    pub topic_name: &'c dyn Fn(&str) -> Option<String>,
}

type Fields<'x, 'a> = &'x [Field<'a>];

fn get_str<'x>(d: Fields<'x, '_>, key: &str) -> Option<&'x str> {
    match get(d, key).map(|n| &n.value) {
        Some(Value::Str(s)) => Some(s),
        _ => None,
    }
}

fn get_int(d: Fields<'_, '_>, key: &str) -> Option<i64> {
    match get(d, key).map(|n| &n.value) {
        Some(Value::Int(i)) => Some(*i),
        _ => None,
    }
}

/// Python's `str(d.get(key))`.
fn show(d: Fields<'_, '_>, key: &str) -> String {
    let mut s = String::new();
    push_show(&mut s, d, key);
    s
}

/// Python's truthiness of `d.get(key)`.
fn truthy(d: Fields<'_, '_>, key: &str) -> bool {
    match get(d, key).map(|n| &n.value) {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Int(i)) => *i != 0,
        Some(Value::Float(f)) => *f != 0.0,
        Some(Value::Str(s)) => !s.is_empty(),
        Some(Value::Bytes(b)) => !b.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Struct(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// Python's `str()` of a decoded value.
pub fn py_str(v: &Value<'_>) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        Value::Masked(n) => format!("<{n} bytes masked>"),
        Value::Uuid(u) => uuid_string(u),
        _ => py_repr(v),
    }
}

fn float_repr(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 { "inf" } else { "-inf" }.into()
    } else if f == f.trunc() && f.abs() < 1e16 {
        format!("{f:.1}")
    } else {
        format!("{f}")
    }
}

/// Python's `repr()` of a decoded value (as inside a list or dict).
pub fn py_repr(v: &Value<'_>) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Int(i) => itoa::Buffer::new().format(*i).to_owned(),
        Value::Float(f) => float_repr(*f),
        Value::Str(s) => str_repr(s),
        Value::Masked(n) => str_repr(&format!("<{n} bytes masked>")),
        Value::Uuid(u) => str_repr(&uuid_string(u)),
        Value::Bytes(b) => bytes_repr(b),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(|n| py_repr(&n.value)).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Struct(fields) => dict_repr(fields),
        Value::Records { size } => format!("{{'size': {size}}}"),
    }
}

fn dict_repr(fields: &[Field<'_>]) -> String {
    // A repeated name keeps its first place and its last value, as a dict does.
    let mut keys: Vec<String> = Vec::new();
    let mut vals: Vec<String> = Vec::new();
    for f in fields {
        let k = f.name.as_str().into_owned();
        let v = py_repr(&f.node.value);
        match keys.iter().position(|x| *x == k) {
            Some(i) => vals[i] = v,
            None => {
                keys.push(k);
                vals.push(v);
            }
        }
    }
    let parts: Vec<String> = keys
        .iter()
        .zip(&vals)
        .map(|(k, v)| format!("{}: {v}", str_repr(k)))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

fn bytes_repr(b: &[u8]) -> String {
    let q = if b.contains(&b'\'') && !b.contains(&b'"') {
        b'"'
    } else {
        b'\''
    };
    let mut out = String::from("b");
    out.push(q as char);
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            c if c == q => {
                out.push('\\');
                out.push(c as char);
            }
            0x20..=0x7e => out.push(c as char),
            c => {
                let _ = write!(out, "\\x{c:02x}");
            }
        }
    }
    out.push(q as char);
    out
}

/// Python's `str.strip()` (which also strips the ASCII separators 0x1c–0x1f).
fn strip(s: &str) -> String {
    s.trim_matches(is_py_space).to_owned()
}

fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// [`strip`] of a string the caller gives up: no copy when there is nothing to strip.
fn strip_owned(s: String) -> String {
    let t = s.trim_matches(is_py_space);
    if t.len() == s.len() {
        s
    } else {
        t.to_owned()
    }
}

pub fn human_bytes(n: i64) -> String {
    let mut s = String::new();
    push_human_bytes(&mut s, n);
    s
}

fn plural(count: usize, noun: &str) -> String {
    let mut s = String::with_capacity(noun.len() + 8);
    push_plural(&mut s, count, noun);
    s
}

/// `{count} {noun}`, with an `s` unless one, written into `out`.
fn push_plural(out: &mut String, count: usize, noun: &str) {
    out.push_str(itoa::Buffer::new().format(count));
    out.push(' ');
    out.push_str(noun);
    if count != 1 {
        out.push('s');
    }
}

/// `", ".join` of at most [`MAX_ITEMS`] items, then ` +N more`.
pub(crate) fn join(items: &[String]) -> String {
    let mut out = String::new();
    let mut joined = Joined {
        out: &mut out,
        n: 0,
    };
    for item in items {
        if joined.next() {
            joined.out.push_str(item);
        }
    }
    joined.finish();
    out
}

/// `_list`: the dict items of a list field (none when it is not a list).
fn list<'x, 'a>(d: Fields<'x, 'a>, key: &str) -> Vec<Fields<'x, 'a>> {
    items(d, key).collect()
}

/// [`list`] without the vector: for the lines every Produce and Fetch frame makes.
fn items<'x, 'a>(d: Fields<'x, 'a>, key: &str) -> impl Iterator<Item = Fields<'x, 'a>> {
    let arr: &'x [Node<'a>] = match get(d, key).map(|n| &n.value) {
        Some(Value::Array(items)) => items,
        _ => &[],
    };
    arr.iter().filter_map(|n| match &n.value {
        Value::Struct(f) => Some(&f[..]),
        _ => None,
    })
}

fn topic_name<'x>(t: Fields<'x, '_>, cx: &Context<'_>) -> Cow<'x, str> {
    for k in ["name", "topic"] {
        if let Some(s) = get_str(t, k) {
            return Cow::Borrowed(s);
        }
    }
    // The reference's topic_id is a string (a formatted UUID).
    if let Some(Value::Uuid(u)) = get(t, "topic_id").map(|n| &n.value) {
        let id = uuid_string(u);
        return Cow::Owned((cx.topic_name)(&id).unwrap_or_else(|| id[..8].to_owned()));
    }
    Cow::Borrowed("?")
}

/// Python's `str(p.get(k))` of the first partition key present, written into `out`.
fn push_partition(out: &mut String, p: Fields<'_, '_>) {
    match ["index", "partition_index", "partition"]
        .iter()
        .find_map(|k| get_int(p, k))
    {
        Some(i) => out.push_str(itoa::Buffer::new().format(i)),
        None => out.push('?'),
    }
}

/// Python's `str(d.get(key))` written into `out` (no string made for the common integers and
/// strings).
fn push_show(out: &mut String, d: Fields<'_, '_>, key: &str) {
    match get(d, key).map(|n| &n.value) {
        None => out.push_str("None"),
        Some(Value::Int(i)) => out.push_str(itoa::Buffer::new().format(*i)),
        Some(Value::Str(s)) => out.push_str(s),
        Some(v) => out.push_str(&py_str(v)),
    }
}

/// `human_bytes` written into `out`.
fn push_human_bytes(out: &mut String, n: i64) {
    if n < 1024 {
        out.push_str(itoa::Buffer::new().format(n));
        out.push_str(" B");
        return;
    }
    let mut x = n as f64;
    for unit in ["KB", "MB", "GB"] {
        x /= 1024.0;
        if x < 1024.0 {
            let _ = write!(out, "{x:.1} {unit}");
            return;
        }
    }
    let _ = write!(out, "{x:.1} TB");
}

/// `join` made as it goes: the first [`MAX_ITEMS`] items are written, the rest counted.
struct Joined<'o> {
    out: &'o mut String,
    n: usize,
}

impl Joined<'_> {
    /// Starts the next item: false when it is past the shown ones (only counted).
    fn next(&mut self) -> bool {
        self.n += 1;
        if self.n > MAX_ITEMS {
            return false;
        }
        if self.n > 1 {
            self.out.push_str(", ");
        }
        true
    }

    /// Ends the list: ` +N more` for the items not shown.
    fn finish(self) -> usize {
        if self.n > MAX_ITEMS {
            self.out.push_str(" +");
            self.out
                .push_str(itoa::Buffer::new().format(self.n - MAX_ITEMS));
            self.out.push_str(" more");
        }
        self.n
    }
}

/// `{name}[{idx}]` and ` {n} record(s)` per partition, joined into `out`; returns the items,
/// the records and the bytes of the record sets.
fn records_line(
    out: &mut String,
    body: Fields<'_, '_>,
    topics_key: &str,
    parts_key: &str,
    cx: &Context<'_>,
) -> (usize, i64, i64) {
    let (mut total, mut size) = (0i64, 0i64);
    let mut joined = Joined { out, n: 0 };
    for t in items(body, topics_key) {
        let name = topic_name(t, cx);
        for p in items(t, parts_key) {
            let n = match get(p, "records") {
                Some(
                    node @ Node {
                        value: Value::Records { size: s },
                        ..
                    },
                ) => {
                    size += *s as i64;
                    (cx.record_count)(node.start, node.end)
                }
                _ => 0,
            };
            total += n;
            if joined.next() {
                let o = &mut *joined.out;
                o.push_str(&name);
                o.push('[');
                push_partition(o, p);
                o.push(']');
                if n != 0 {
                    o.push(' ');
                    o.push_str(itoa::Buffer::new().format(n));
                    o.push_str(if n == 1 { " record" } else { " records" });
                }
            }
        }
    }
    (joined.finish(), total, size)
}

fn produce(body: Fields<'_, '_>, is_req: bool, cx: &Context<'_>) -> Option<String> {
    let mut s = String::with_capacity(64);
    if is_req {
        let (n, total, size) = records_line(&mut s, body, "topic_data", "partition_data", cx);
        if n > 1 {
            s.push_str("; ");
            push_plural(&mut s, total as usize, "record");
        }
        s.push(' ');
        push_human_bytes(&mut s, size);
        s.push_str(" acks=");
        push_show(&mut s, body, "acks");
        return Some(strip_owned(s));
    }
    let mut joined = Joined { out: &mut s, n: 0 };
    for t in items(body, "responses") {
        let name = topic_name(t, cx);
        for p in items(t, "partition_responses") {
            if joined.next() {
                let o = &mut *joined.out;
                o.push_str(&name);
                o.push('[');
                push_show(o, p, "index");
                o.push_str("]@");
                push_show(o, p, "base_offset");
            }
        }
    }
    joined.finish();
    Some(s)
}

fn fetch(body: Fields<'_, '_>, is_req: bool, cx: &Context<'_>) -> Option<String> {
    if is_req {
        let mut parts = Vec::new();
        for t in list(body, "topics") {
            for p in list(t, "partitions") {
                parts.push(format!(
                    "{}[{}]@{}",
                    topic_name(t, cx),
                    show(p, "partition"),
                    show(p, "fetch_offset")
                ));
            }
        }
        let j = join(&parts);
        return Some(if j.is_empty() {
            format!("session {}", show(body, "session_id"))
        } else {
            j
        });
    }
    let mut listed = String::new();
    let (n, total, size) = records_line(&mut listed, body, "responses", "partitions", cx);
    let mut s = String::with_capacity(40 + listed.len());
    push_plural(&mut s, n, "partition");
    s.push_str(", ");
    push_plural(&mut s, total as usize, "record");
    s.push(' ');
    push_human_bytes(&mut s, size);
    if n != 0 && n <= MAX_ITEMS {
        s.push_str(": ");
        s.push_str(&listed);
    }
    Some(s)
}

fn metadata(body: Fields<'_, '_>, is_req: bool, cx: &Context<'_>) -> Option<String> {
    let names = || {
        list(body, "topics")
            .into_iter()
            .map(|t| topic_name(t, cx).into_owned())
            .collect::<Vec<_>>()
    };
    if is_req {
        let topics = get(body, "topics").map(|n| &n.value);
        let none = matches!(topics, None | Some(Value::Null));
        if none || matches!(topics, Some(Value::Array(a)) if a.is_empty()) {
            return Some(
                if none || cx.version == 0 {
                    "all topics"
                } else {
                    "no topics"
                }
                .into(),
            );
        }
        return Some(join(&names()));
    }
    let j = join(&names());
    Some(format!(
        "{}, topics: {}",
        plural(list(body, "brokers").len(), "broker"),
        if j.is_empty() { "-" } else { &j }
    ))
}

fn api_versions(body: Fields<'_, '_>, is_req: bool) -> Option<String> {
    if is_req {
        if !truthy(body, "client_software_name") {
            return Some(String::new());
        }
        return Some(format!(
            "client {} {}",
            show(body, "client_software_name"),
            show(body, "client_software_version")
        ));
    }
    Some(format!("{} APIs", list(body, "api_keys").len()))
}

fn find_coordinator(body: Fields<'_, '_>, is_req: bool) -> Option<String> {
    if is_req {
        let keys: Vec<String> = if truthy(body, "coordinator_keys") {
            match get(body, "coordinator_keys").map(|n| &n.value) {
                Some(Value::Array(a)) => a.iter().map(|n| py_str(&n.value)).collect(),
                _ => return None, // iterating a non-list: the reference's summary fails
            }
        } else if matches!(get(body, "key").map(|n| &n.value), Some(v) if *v != Value::Null) {
            vec![show(body, "key")]
        } else {
            Vec::new()
        };
        let transaction = match get(body, "key_type").map(|n| &n.value) {
            Some(Value::Int(1)) | Some(Value::Bool(true)) => true,
            Some(Value::Float(f)) => *f == 1.0,
            _ => false,
        };
        return Some(format!(
            "{} {}",
            if transaction { "transaction" } else { "group" },
            join(&keys)
        ));
    }
    let coords = list(body, "coordinators");
    if !coords.is_empty() {
        let parts: Vec<String> = coords
            .iter()
            .map(|c| {
                format!(
                    "{} -> {}:{}",
                    show(c, "key"),
                    show(c, "host"),
                    show(c, "port")
                )
            })
            .collect();
        return Some(join(&parts));
    }
    Some(format!(
        "node {} {}:{}",
        show(body, "node_id"),
        show(body, "host"),
        show(body, "port")
    ))
}

fn list_offsets(body: Fields<'_, '_>, is_req: bool, cx: &Context<'_>) -> Option<String> {
    let mut parts = Vec::new();
    for t in list(body, "topics") {
        for p in list(t, "partitions") {
            let idx = show(p, "partition_index");
            if is_req {
                parts.push(format!(
                    "{}[{idx}] t={}",
                    topic_name(t, cx),
                    show(p, "timestamp")
                ));
            } else {
                let off = if get(p, "offset").is_some() {
                    show(p, "offset")
                } else {
                    show(p, "old_style_offsets")
                };
                parts.push(format!("{}[{idx}]={off}", topic_name(t, cx)));
            }
        }
    }
    Some(join(&parts))
}

fn str_list(body: Fields<'_, '_>, key: &str) -> Option<Vec<String>> {
    if !truthy(body, key) {
        return Some(Vec::new());
    }
    match get(body, key).map(|n| &n.value) {
        Some(Value::Array(a)) => Some(a.iter().map(|n| py_str(&n.value)).collect()),
        Some(Value::Str(s)) => Some(s.chars().map(String::from).collect()),
        _ => None,
    }
}

fn sasl_handshake(body: Fields<'_, '_>, is_req: bool) -> Option<String> {
    if is_req {
        return Some(format!("mechanism {}", show(body, "mechanism")));
    }
    Some(format!(
        "mechanisms {}",
        join(&str_list(body, "mechanisms")?)
    ))
}

fn sasl_authenticate(body: Fields<'_, '_>, is_req: bool) -> Option<String> {
    if is_req {
        let user = if truthy(body, "username") {
            format!(" user {}", show(body, "username"))
        } else {
            String::new()
        };
        return Some(format!("mechanism {}{user}", show(body, "mechanism")));
    }
    Some(if truthy(body, "error_message") {
        show(body, "error_message")
    } else {
        String::new()
    })
}

fn init_producer_id(body: Fields<'_, '_>, is_req: bool) -> Option<String> {
    if is_req {
        return Some(if truthy(body, "transactional_id") {
            format!("txn {}", show(body, "transactional_id"))
        } else {
            String::new()
        });
    }
    Some(format!(
        "producer {} epoch {}",
        show(body, "producer_id"),
        show(body, "producer_epoch")
    ))
}

fn generic(body: Fields<'_, '_>, cx: &Context<'_>) -> Option<String> {
    let mut bits = Vec::new();
    for (k, label) in [
        ("group_id", "group"),
        ("transactional_id", "transactional"),
        ("member_id", "member"),
        ("key", "key"),
    ] {
        if let Some(v) = get_str(body, k) {
            if !v.is_empty() {
                bits.push(format!("{label} {v}"));
            }
        }
    }
    if let Some(Value::Array(groups)) = get(body, "groups").map(|n| &n.value) {
        if !groups.is_empty() {
            let names: Vec<String> = groups
                .iter()
                .filter_map(|g| match &g.value {
                    Value::Str(s) => Some(s.to_string()),
                    Value::Struct(f) => {
                        Some(get(f, "group_id").map_or_else(|| "?".into(), |n| py_str(&n.value)))
                    }
                    _ => None,
                })
                .collect();
            bits.push(format!("groups {}", join(&names)));
        }
    }
    let topics = ["topics", "resources", "results", "responses"]
        .iter()
        .map(|k| list(body, k))
        .find(|l| !l.is_empty());
    if let Some(topics) = topics {
        let names: Vec<String> = topics
            .iter()
            .filter_map(|t| match get(t, "resource_name") {
                Some(n) => match &n.value {
                    Value::Null => None,
                    Value::Str(s) if s == "?" => None,
                    v => Some(py_str(v)),
                },
                None => Some(topic_name(t, cx).into_owned()).filter(|n| n != "?"),
            })
            .collect();
        if !names.is_empty() {
            let kind = if get(topics[0], "resource_name").is_some() {
                "resources"
            } else {
                "topics"
            };
            bits.push(format!("{kind} {}", join(&names)));
        }
    } else if let Some(Value::Array(a)) = get(body, "topic_names").map(|n| &n.value) {
        let names: Vec<String> = a.iter().map(|n| py_str(&n.value)).collect();
        bits.push(format!("topics {}", join(&names)));
    }
    Some(bits.join(" "))
}

fn assigned(dec: Fields<'_, '_>) -> String {
    let parts: Vec<String> = list(dec, "assigned_partitions")
        .iter()
        .map(|a| format!("{}{}", show(a, "topic"), show(a, "partitions")))
        .collect();
    if parts.is_empty() {
        "nothing".into()
    } else {
        join(&parts)
    }
}

fn join_group(body: Fields<'_, '_>, is_req: bool, cx: &Context<'_>) -> Option<String> {
    let line = generic(body, cx)?;
    if is_req {
        let mut subs: Vec<String> = Vec::new();
        for p in list(body, "protocols") {
            let dec = match get(p, "metadata_decoded").map(|n| &n.value) {
                Some(Value::Struct(f)) if !f.is_empty() => &f[..],
                _ => continue,
            };
            match get(dec, "topics").map(|n| &n.value) {
                None => {}
                Some(Value::Array(a)) => subs.extend(a.iter().map(|n| match &n.value {
                    Value::Str(s) => s.to_string(),
                    v => py_repr(v),
                })),
                Some(_) => return None, // iterating null: the reference's summary fails
            }
        }
        subs.sort();
        subs.dedup();
        let protos: Vec<String> = list(body, "protocols")
            .iter()
            .map(|p| show(p, "name"))
            .collect();
        let mut s = format!("{line} protocols {}", join(&protos));
        if !subs.is_empty() {
            s.push_str(&format!(" subscribes {}", join(&subs)));
        }
        return Some(s);
    }
    let extra = if truthy(body, "leader") {
        format!(
            " generation {} leader {}",
            show(body, "generation_id"),
            show(body, "leader")
        )
    } else {
        String::new()
    };
    Some(strip(&format!(
        "{line}{extra} {}",
        plural(list(body, "members").len(), "member")
    )))
}

fn sync_group(body: Fields<'_, '_>, is_req: bool, cx: &Context<'_>) -> Option<String> {
    let line = generic(body, cx)?;
    if is_req {
        return Some(strip(&format!(
            "{line} {}",
            plural(list(body, "assignments").len(), "assignment")
        )));
    }
    match get(body, "assignment_decoded").map(|n| &n.value) {
        Some(Value::Struct(dec)) => Some(format!("assigned {}", assigned(dec))),
        _ => Some(line),
    }
}

/// The summary line of a body (without the type/version prefix and the error suffix); empty
/// when the body offers nothing to say or the reference's summary would fail on it.
pub fn summarize(api_key: i16, is_request: bool, body: &[Field<'_>], cx: &Context<'_>) -> String {
    let s = match api_key {
        11 => join_group(body, is_request, cx),
        14 => sync_group(body, is_request, cx),
        0 => produce(body, is_request, cx),
        1 => fetch(body, is_request, cx),
        2 => list_offsets(body, is_request, cx),
        3 => metadata(body, is_request, cx),
        10 => find_coordinator(body, is_request),
        17 => sasl_handshake(body, is_request),
        36 => sasl_authenticate(body, is_request),
        18 => api_versions(body, is_request),
        22 => init_producer_id(body, is_request),
        _ => generic(body, cx),
    };
    s.unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_bytes_as_the_reference() {
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KB");
        assert_eq!(human_bytes(5 * 1024 * 1024), "5.0 MB");
    }

    #[test]
    fn python_reprs() {
        assert_eq!(str_repr("it's"), "\"it's\"");
        assert_eq!(str_repr("a\nb\u{1}"), "'a\\nb\\x01'");
        assert_eq!(bytes_repr(b"a\x00'"), "b\"a\\x00'\"");
        assert_eq!(float_repr(1.5), "1.5");
        assert_eq!(float_repr(2.0), "2.0");
        assert_eq!(
            join(&["a", "b", "c", "d", "e", "f"].map(String::from)),
            "a, b, c, d +2 more"
        );
    }
}
