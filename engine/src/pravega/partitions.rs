//! Pravega's per-segment results of a frame, for the `partitions` table (the twin of
//! `wiredump/dissect/protocols/pravega/partitions.py`).
//!
//! Why here: Pravega has no topics or partitions on the wire; a stream's data lives in segments
//! (`scope/stream/N.#epoch.M`), so the segment is the `topic` and `partition` stays null. Appends
//! name their segment only in SetupAppend/AppendSetup, later frames by writer id, so the
//! session's writer → segment map names them. `offset` is the segment offset a frame names (a
//! read's offset, the write offset a DataAppended reports, a conditional append's expected
//! offset); `records` counts the events the frame carries.

use super::ordered::OrderedMap;
use crate::model::{Frame, TopicPartition, Value};

const OFFSET_KEYS: [&str; 3] = ["offset", "current_segment_write_offset", "expected_offset"];

/// Python's `type(v) is int` (a bool is not one).
fn int(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Int(i) => Some(*i),
        Value::UInt(u) => i64::try_from(*u).ok(),
        _ => None,
    }
}

/// The frame's one row (its segment, error, offset, events); None when it names no segment.
pub fn of_frame(
    f: &Frame,
    writer_segment: &OrderedMap<String, String>,
) -> Option<Vec<TopicPartition>> {
    let fields = &f.fields;
    let segment = match fields.get("segment") {
        Some(Value::Str(s)) => Some(s.clone()),
        _ => match fields.get("writer_id") {
            Some(Value::Str(w)) => writer_segment.get(w).cloned(),
            _ => None,
        },
    };
    let segment = segment.or_else(|| {
        f.messages
            .iter()
            .find_map(|m| m.topic.as_ref().filter(|t| !t.is_empty()).cloned())
    })?;
    let offset = OFFSET_KEYS
        .iter()
        .find_map(|k| int(fields.get(k)))
        .map(i128::from);
    let records = (!f.messages.is_empty()).then_some(f.messages.len() as i64);
    Some(vec![TopicPartition {
        topic: Some(segment),
        error_code: f.error_code.map(i64::from),
        error: f.error.as_deref().map(str::to_owned),
        offset,
        records,
        ..TopicPartition::default()
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writer_names_its_segment() {
        let mut map = OrderedMap::default();
        map.insert_last("w1".to_owned(), "sc/st/0.#epoch.0".to_owned());
        let mut f = Frame::new("pravega", "DATA_APPENDED", 7);
        f.fields
            .set("writer_id", Value::Str("w1".into()))
            .set("current_segment_write_offset", Value::Int(120));
        let rows = of_frame(&f, &map).expect("a row");
        assert_eq!(rows[0].topic.as_deref(), Some("sc/st/0.#epoch.0"));
        assert_eq!(
            (rows[0].offset, rows[0].partition, rows[0].records),
            (Some(120), None, None)
        );
        f.fields.set("writer_id", Value::Str("w2".into()));
        assert!(of_frame(&f, &map).is_none());
    }
}
