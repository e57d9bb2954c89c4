//! The one-line timeline summary of each Pulsar command (the twin of `describe.py`).
//!
//! Says what an operator looks for first: topics, producer/consumer names and ids, lookup
//! answers and redirects, permits, message counts and sizes, errors. Commands without a
//! dedicated line get their scalar fields, shortened. Values print as Python prints them.

use crate::model::{Fields, Value};

const MAX_LEN: usize = 160;

/// What the session knows beside the command (Python's `extra` dict).
#[derive(Default)]
pub struct Extra {
    pub request_id: Option<i64>,
    pub answers: Option<String>,
    pub topic: Option<String>,
    pub payload_line: Option<String>,
}

fn short(text: String) -> String {
    if text.chars().count() <= MAX_LEN {
        return text;
    }
    let mut s: String = text.chars().take(MAX_LEN - 1).collect();
    s.push('…');
    s
}

/// Python's `str()` of a value.
pub fn py_str(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) => py_float(*f),
        Value::Str(s) => s.clone(),
        // Never printed by the lines below (lists, maps and bytes are skipped or counted).
        Value::Bytes(_) | Value::List(_) | Value::Map(_) => String::new(),
    }
}

/// Python's `repr` of a float: the shortest round-trip digits, exponent form below 1e-4 and
/// from 1e16.
pub fn py_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    let e = format!("{f:e}"); // shortest digits: "1.5e-7", "-2e16"
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..16).contains(&exp) {
        let s = format!("{f}");
        if s.contains('.') {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    }
}

fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Int(i)) => *i != 0,
        Some(Value::UInt(u)) => *u != 0,
        Some(Value::Float(f)) => *f != 0.0,
        Some(Value::Str(s)) => !s.is_empty(),
        Some(Value::Bytes(b)) => !b.is_empty(),
        Some(Value::List(l)) => !l.is_empty(),
        Some(Value::Map(m)) => !m.is_empty(),
    }
}

/// Scalar fields as `k=v`, shortened.
pub fn generic(cmd: &Fields) -> String {
    let parts: Vec<String> = cmd
        .0
        .iter()
        .filter(|f| !matches!(f.value, Value::Map(_) | Value::List(_) | Value::Bytes(_)))
        .map(|f| format!("{}={}", f.name, py_str(&f.value)))
        .collect();
    short(parts.join(" "))
}

/// A MessageIdData map as ledger:entry (with partition/batch when set).
pub fn mid(d: Option<&Value>) -> String {
    let Some(Value::Map(d)) = d else {
        return "?".into();
    };
    if d.is_empty() {
        return "?".into();
    }
    let g = |k: &str| d.get(k).map(py_str).unwrap_or_else(|| "?".into());
    let mut s = format!("{}:{}", g("ledgerId"), g("entryId"));
    let unset = |k: &str| matches!(d.get(k), None | Some(Value::Int(-1)) | Some(Value::Null));
    if !unset("partition") || !unset("batch_index") {
        let h = |k: &str| d.get(k).map(py_str).unwrap_or_else(|| "-1".into());
        s.push_str(&format!(":{}:{}", h("partition"), h("batch_index")));
    }
    s
}

/// Summary for `t` with command fields `cmd`; `extra` holds session knowledge (topic…).
pub fn line(t: &str, cmd: &Fields, extra: &Extra) -> String {
    let g = |k: &str, default: &str| cmd.get(k).map(py_str).unwrap_or_else(|| default.into());
    let has = |k: &str| truthy(cmd.get(k));
    let topic_eq = || match &extra.topic {
        Some(t) if !t.is_empty() => format!(" topic={t}"),
        _ => String::new(),
    };
    let topic_sp = || match &extra.topic {
        Some(t) if !t.is_empty() => format!("{t} "),
        _ => String::new(),
    };
    match t {
        "CONNECT" => {
            let mut s = format!(
                "{} protocol v{} auth={}",
                g("client_version", "?"),
                g("protocol_version", "0"),
                g("auth_method_name", "none")
            );
            if has("proxy_to_broker_url") {
                s.push_str(&format!(" via proxy to {}", g("proxy_to_broker_url", "")));
            }
            short(s)
        }
        "CONNECTED" => {
            let mut s = format!(
                "{} protocol v{}",
                g("server_version", "?"),
                g("protocol_version", "0")
            );
            if !matches!(cmd.get("max_message_size"), None | Some(Value::Null)) {
                s.push_str(&format!(" max_message_size={}", g("max_message_size", "")));
            }
            short(s)
        }
        "PRODUCER" => {
            let name = if has("producer_name") {
                format!(" name={}", g("producer_name", ""))
            } else {
                String::new()
            };
            short(format!(
                "{} producer_id={}{name}",
                g("topic", "None"),
                g("producer_id", "None")
            ))
        }
        "PRODUCER_SUCCESS" => {
            let ready = cmd.get("producer_ready").is_none() || has("producer_ready");
            let ready = if ready {
                ""
            } else {
                " (not ready: waiting for exclusive access)"
            };
            short(format!(
                "producer_name={} last_sequence_id={}{ready}",
                g("producer_name", "None"),
                g("last_sequence_id", "-1")
            ))
        }
        "SUBSCRIBE" => {
            let name = if has("consumer_name") {
                format!(" consumer_name={}", g("consumer_name", ""))
            } else {
                String::new()
            };
            short(format!(
                "{} subscription={} {} consumer_id={}{name}",
                g("topic", "None"),
                g("subscription", "None"),
                g("subType", "None"),
                g("consumer_id", "None")
            ))
        }
        "SEND" | "MESSAGE" => short(extra.payload_line.clone().unwrap_or_default()),
        "SEND_RECEIPT" => short(format!(
            "producer_id={} seq={} → {}{}",
            g("producer_id", "None"),
            g("sequence_id", "None"),
            mid(cmd.get("message_id")),
            topic_eq()
        )),
        "SEND_ERROR" => short(format!(
            "producer_id={} seq={} {}: {}",
            g("producer_id", "None"),
            g("sequence_id", "None"),
            g("error", "None"),
            g("message", "")
        )),
        "ERROR" | "SUCCESS" => {
            let rid = match extra.request_id {
                Some(r) => r.to_string(),
                None => "None".into(),
            };
            let mut s = format!("request_id={rid}");
            if let Some(a) = extra.answers.as_deref().filter(|a| !a.is_empty()) {
                let topic = match &extra.topic {
                    Some(t) if !t.is_empty() => format!(" {t}"),
                    _ => String::new(),
                };
                s.push_str(&format!(" ({a}{topic})"));
            }
            if t == "ERROR" {
                s.push_str(&format!(" {}: {}", g("error", "None"), g("message", "")));
            }
            short(s)
        }
        "FLOW" => short(format!(
            "consumer_id={} +{} permits{}",
            g("consumer_id", "None"),
            g("messagePermits", "None"),
            topic_eq()
        )),
        "ACK" => {
            let ids: &[Value] = match cmd.get("message_id") {
                Some(Value::List(l)) => l,
                _ => &[],
            };
            let more = if ids.len() > 1 {
                format!(" (+{} more)", ids.len() - 1)
            } else {
                String::new()
            };
            short(format!(
                "consumer_id={} {} {}{more}{}",
                g("consumer_id", "None"),
                g("ack_type", "None"),
                mid(ids.first()),
                topic_eq()
            ))
        }
        "LOOKUP" => short(format!(
            "{}{}",
            g("topic", "None"),
            if has("authoritative") {
                " authoritative"
            } else {
                ""
            }
        )),
        "LOOKUP_RESPONSE" => {
            let resp = g("response", "?");
            if resp == "Failed" {
                return short(format!(
                    "Failed {}: {}",
                    g("error", "None"),
                    g("message", "")
                ));
            }
            let url = if has("brokerServiceUrl") {
                g("brokerServiceUrl", "")
            } else if has("brokerServiceUrlTls") {
                g("brokerServiceUrlTls", "")
            } else {
                "?".into()
            };
            let auth = if has("authoritative") {
                " (authoritative)"
            } else {
                ""
            };
            let proxy = if has("proxy_through_service_url") {
                " through proxy"
            } else {
                ""
            };
            short(format!("{}{resp} → {url}{auth}{proxy}", topic_sp()))
        }
        "PARTITIONED_METADATA" => short(g("topic", "None")),
        "PARTITIONED_METADATA_RESPONSE" => {
            if cmd.get("response") == Some(&Value::Str("Failed".into())) {
                return short(format!(
                    "Failed {}: {}",
                    g("error", "None"),
                    g("message", "")
                ));
            }
            short(format!("{}partitions={}", topic_sp(), g("partitions", "0")))
        }
        "CLOSE_PRODUCER" | "CLOSE_CONSUMER" => {
            let who = if t == "CLOSE_PRODUCER" {
                "producer_id"
            } else {
                "consumer_id"
            };
            let mut s = format!("{who}={}{}", g(who, "None"), topic_eq());
            if has("assignedBrokerServiceUrl") {
                s.push_str(&format!(" → {}", g("assignedBrokerServiceUrl", "")));
            }
            short(s)
        }
        "GET_LAST_MESSAGE_ID_RESPONSE" => format!("last={}", mid(cmd.get("last_message_id"))),
        "GET_TOPICS_OF_NAMESPACE_RESPONSE" => {
            let n = match cmd.get("topics") {
                Some(Value::List(l)) => l.len(),
                _ => 0,
            };
            short(format!("{n} topics"))
        }
        "TOPIC_MIGRATED" => {
            let url = if has("brokerServiceUrl") {
                g("brokerServiceUrl", "")
            } else {
                g("brokerServiceUrlTls", "None")
            };
            short(format!(
                "{} {} → {url}",
                g("resource_type", "None"),
                g("resource_id", "None")
            ))
        }
        "REDELIVER_UNACKNOWLEDGED_MESSAGES" => {
            let n = match cmd.get("message_ids") {
                Some(Value::List(l)) => l.len(),
                _ => 0,
            };
            let tail = if n > 0 {
                format!(" {n} messages")
            } else {
                " all unacked".into()
            };
            format!("consumer_id={}{tail}", g("consumer_id", "None"))
        }
        _ => generic(cmd),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_as_python_prints_them() {
        assert_eq!(py_float(1.0), "1.0");
        assert_eq!(py_float(0.1), "0.1");
        assert_eq!(py_float(1e-5), "1e-05");
        assert_eq!(py_float(1e16), "1e+16");
        assert_eq!(py_float(123.456), "123.456");
        assert_eq!(py_float(1.5e300), "1.5e+300");
    }
}
