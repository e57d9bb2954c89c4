//! Pulsar's per-topic results of a frame, for the `partitions` table (the twin of
//! `wiredump/dissect/protocols/pulsar/partitions.py`).
//!
//! Why here: Pulsar names a topic once per producer (PRODUCER) or consumer (SUBSCRIBE) and then
//! only by producer/consumer id (SEND, SEND_RECEIPT, MESSAGE, ACK, FLOW…), so only the session's
//! registry of ids knows the topic of most frames. A partition of a partitioned topic is a topic
//! of its own, named `<topic>-partition-<n>`: `partition` is that n (or the message id's
//! partition), null for a non-partitioned topic. Pulsar has no log offsets in Kafka's sense, so
//! `offset` and the watermarks stay null; `records` counts the messages a SEND or MESSAGE
//! carries.

use super::describe::Extra;
use crate::model::{Frame, TopicPartition, Value};

/// The frame's one row: its topic (from the command, a response's request, or the
/// producer/consumer it names), its error, and the messages it carries; None without a topic.
pub fn of_frame(
    f: &Frame,
    topic: Option<&str>,
    partition: Option<i32>,
) -> Option<Vec<TopicPartition>> {
    let topic = topic.filter(|t| !t.is_empty())?;
    let partition = partition.or_else(|| f.messages.iter().find_map(|m| m.partition));
    let records = (!f.messages.is_empty()).then_some(f.messages.len() as i64);
    Some(vec![TopicPartition {
        topic: Some(topic.to_owned()),
        partition: partition.map(i64::from),
        error_code: f.error_code.map(i64::from),
        error: f.error.as_deref().map(str::to_owned),
        records,
        ..TopicPartition::default()
    }])
}

/// The topic the decode already found for the frame (set while pairing or from the registry).
pub fn topic_in(f: &Frame, extra: &Extra) -> Option<String> {
    if let Some(t) = extra.topic.as_deref().filter(|t| !t.is_empty()) {
        return Some(t.to_owned());
    }
    if let Some(Value::Str(t)) = f.fields.get("topic") {
        if !t.is_empty() {
            return Some(t.clone());
        }
    }
    match f.fields.get("command") {
        Some(Value::Map(cmd)) => match cmd.get("topic") {
            Some(Value::Str(t)) if !t.is_empty() => Some(t.clone()),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Fields, Message};

    #[test]
    fn the_topic_comes_from_the_command_and_the_partition_from_a_message() {
        let mut f = Frame::new("pulsar", "MESSAGE", 9);
        let mut cmd = Fields::new();
        cmd.set("topic", Value::Str("persistent://t/n/x".into()));
        f.fields.set("command", Value::Map(cmd));
        f.messages.push(Message {
            partition: Some(4),
            ..Message::default()
        });
        f.messages.push(Message::default());
        let topic = topic_in(&f, &Extra::default());
        assert_eq!(topic.as_deref(), Some("persistent://t/n/x"));
        let rows = of_frame(&f, topic.as_deref(), None).expect("a row");
        assert_eq!(rows[0].partition, Some(4));
        assert_eq!(rows[0].records, Some(2));
        assert!(of_frame(&f, Some(""), None).is_none());
    }
}
