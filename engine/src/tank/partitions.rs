//! TANK's per-topic/partition results of a frame, for the `partitions` table (the twin of
//! `wiredump/dissect/protocols/tank/partitions.py`).
//!
//! Why here: TANK's Produce and Consume carry `topics[].partitions[]` (error per partition in
//! responses, the start sequence number of a Consume, a consumed chunk's base sequence number and
//! high watermark); CreateTopic and DiscoverPartitions name one `topic`. TANK's sequence numbers
//! are its offsets. A Consume response entry's error is its errorOrFlags byte when that byte is
//! an error (0 when the partition was served); `records` counts the messages the frame carries
//! for the partition.

use crate::model::{Fields, Frame, TopicPartition, Value};

/// Python's `type(v) is int` (a bool is not one).
fn int(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Int(i) => Some(*i),
        Value::UInt(u) => i64::try_from(*u).ok(),
        _ => None,
    }
}

/// As [`int`], for the u64 sequence numbers (kept exact, as the reference keeps them).
fn wide(v: Option<&Value>) -> Option<i128> {
    match v? {
        Value::Int(i) => Some(i128::from(*i)),
        Value::UInt(u) => Some(i128::from(*u)),
        _ => None,
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Str(s) => Some(s.clone()),
        _ => None,
    }
}

/// Messages the frame carries for (topic, partition) (the reference's `Counter`).
fn count(f: &Frame, topic: &str, partition: Option<i64>) -> Option<i64> {
    let n = f
        .messages
        .iter()
        .filter(|m| m.topic.as_deref() == Some(topic) && m.partition.map(i64::from) == partition)
        .count();
    (n > 0).then_some(n as i64)
}

fn row(f: &Frame, topic: &str, p: &Fields) -> TopicPartition {
    let partition = int(p.get("partition"));
    let mut code = int(p.get("error_code"));
    if code.is_none() {
        if let Some(v) = p.get("error_or_flags") {
            code = if p.get("error").is_some() {
                int(Some(v))
            } else {
                Some(0)
            };
        }
    }
    let offset = wide(p.get("base_seqnum")).or_else(|| wide(p.get("seqnum")));
    TopicPartition {
        topic: Some(topic.to_owned()),
        partition,
        error_code: code,
        error: text(p.get("error")).filter(|_| code.is_some_and(|c| c != 0)),
        offset,
        high_watermark: wide(p.get("high_watermark")),
        log_start_offset: wide(p.get("first_available_seqnum")),
        records: count(f, topic, partition),
    }
}

/// Every topic/partition the frame names, in wire order; None when it names none.
pub fn of_frame(f: &Frame) -> Option<Vec<TopicPartition>> {
    let fields = &f.fields;
    let mut out = Vec::new();
    if let Some(Value::List(topics)) = fields.get("topics") {
        for t in topics {
            let Value::Map(t) = t else { continue };
            let Some(Value::Str(name)) = t.get("name") else {
                continue;
            };
            let n = out.len();
            if let Some(Value::List(parts)) = t.get("partitions") {
                for p in parts {
                    if let Value::Map(p) = p {
                        out.push(row(f, name, p));
                    }
                }
            }
            if out.len() == n {
                out.push(TopicPartition::topic(name.clone()));
            }
        }
    } else if let Some(Value::Str(topic)) = fields.get("topic") {
        match fields.get("partitions") {
            Some(Value::List(parts)) if !parts.is_empty() => {
                for p in parts {
                    if let Value::Map(p) = p {
                        out.push(row(f, topic, p));
                    }
                }
            }
            _ => {
                let code = int(fields.get("error_code"));
                let error = text(fields.get("error")).filter(|_| code.is_some_and(|c| c != 0));
                out.push(TopicPartition {
                    topic: Some(topic.clone()),
                    error_code: code,
                    error,
                    ..TopicPartition::default()
                });
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Message;

    #[test]
    fn consume_rows_count_their_messages_and_name_errors_only_when_set() {
        let mut served = Fields::new();
        served
            .set("partition", Value::Int(0))
            .set("error_or_flags", Value::Int(0))
            .set("base_seqnum", Value::Int(10))
            .set("high_watermark", Value::Int(12));
        let mut failed = Fields::new();
        failed
            .set("partition", Value::Int(1))
            .set("error_or_flags", Value::Int(0xff))
            .set("error", Value::Str("unknown partition".into()));
        let mut topic = Fields::new();
        topic.set("name", Value::Str("t".into())).set(
            "partitions",
            Value::List(vec![Value::Map(served), Value::Map(failed)]),
        );
        let mut f = Frame::new("tank", "Consume", 2);
        f.fields.set("topics", Value::List(vec![Value::Map(topic)]));
        for _ in 0..2 {
            f.messages.push(Message {
                topic: Some("t".into()),
                partition: Some(0),
                ..Message::default()
            });
        }
        let rows = of_frame(&f).expect("rows");
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (
                rows[0].error_code,
                rows[0].offset,
                rows[0].high_watermark,
                rows[0].records
            ),
            (Some(0), Some(10), Some(12), Some(2))
        );
        assert_eq!(rows[1].error_code, Some(0xff));
        assert_eq!(rows[1].error.as_deref(), Some("unknown partition"));
        assert_eq!(rows[1].records, None);
    }

    #[test]
    fn a_consume_from_the_tail_keeps_its_u64_seqnum() {
        let mut p = Fields::new();
        p.set("partition", Value::Int(0))
            .set("seqnum", Value::UInt(u64::MAX));
        let mut topic = Fields::new();
        topic
            .set("name", Value::Str("tail".into()))
            .set("partitions", Value::List(vec![Value::Map(p)]));
        let mut f = Frame::new("tank", "Consume", 2);
        f.fields.set("topics", Value::List(vec![Value::Map(topic)]));
        let rows = of_frame(&f).expect("rows");
        assert_eq!(rows[0].offset, Some(i128::from(u64::MAX)));
        assert_eq!(rows[0].error_code, None);
    }
}
