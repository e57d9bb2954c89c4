//! Topic ids (Fetch v13+, DescribeTopicPartitions…) mapped back to names, per run (the twin of
//! `wiredump/dissect/protocols/kafka/topics.py`).
//!
//! Newer Kafka APIs name topics by UUID only. Metadata-like responses carry both, so the names
//! they list resolve later frames of the same capture, on any of its connections. The map lives
//! in the run's state ([`crate::protocol::RunState`], one per capture), never in the process,
//! so a capture decodes the same whatever was decoded before it.

use std::collections::{HashMap, VecDeque};

use super::body::{uuid_string, Field, Value};

/// Ids remembered at most (the oldest are forgotten first).
pub const MAX_IDS: usize = 100_000;
/// The key of the map in the run state.
pub const RUN_KEY: &str = "kafka.topic_names";

/// A bounded topic id -> name map, in first-learnt order (as the reference's OrderedDict:
/// learning a known id again changes its name, not its age).
#[derive(Default)]
pub struct TopicNames {
    names: HashMap<String, String>,
    order: VecDeque<String>,
}

impl TopicNames {
    /// The name learnt for a topic id (its text form).
    pub fn name_of(&self, topic_id: &str) -> Option<&str> {
        self.names.get(topic_id).map(String::as_str)
    }

    /// Remembers every (topic_id, name) pair a response body lists under `topics`.
    pub fn learn(&mut self, body: &[Field<'_>]) {
        let Some(Value::Array(topics)) = get(body, "topics") else {
            return;
        };
        for t in topics {
            let Value::Struct(t) = &t.value else { continue };
            let (Some(Value::Uuid(id)), Some(Value::Str(name))) =
                (get(t, "topic_id"), get(t, "name"))
            else {
                continue;
            };
            if id.iter().all(|b| *b == 0) {
                continue; // the null id names nothing
            }
            let id = uuid_string(id);
            if let Some(old) = self.names.get_mut(&id) {
                name.as_ref().clone_into(old);
                continue;
            }
            self.order.push_back(id.clone());
            self.names.insert(id, name.to_string());
            if self.names.len() > MAX_IDS {
                if let Some(oldest) = self.order.pop_front() {
                    self.names.remove(&oldest);
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// A struct's field by name (the last one wins, as a dict assignment does).
pub(crate) fn get<'x, 'a>(d: &'x [Field<'a>], key: &str) -> Option<&'x Value<'a>> {
    d.iter()
        .rev()
        .find(|f| key == f.name)
        .map(|f| &f.node.value)
}

#[cfg(test)]
mod tests {
    use super::super::body::{Name, Node};
    use super::*;

    fn node(value: Value<'static>) -> Node<'static> {
        Node {
            value,
            start: 0,
            end: 0,
        }
    }

    fn topic(id: u8, name: &'static str) -> Node<'static> {
        let mut u = [0u8; 16];
        u[15] = id;
        node(Value::Struct(vec![
            Field {
                name: Name::Field("name"),
                node: node(Value::Str(name.into())),
            },
            Field {
                name: Name::Field("topic_id"),
                node: node(Value::Uuid(u)),
            },
        ]))
    }

    #[test]
    fn learns_ids_but_not_the_null_one() {
        let body = vec![Field {
            name: Name::Field("topics"),
            node: node(Value::Array(vec![topic(1, "orders"), topic(0, "zero")])),
        }];
        let mut names = TopicNames::default();
        names.learn(&body);
        assert_eq!(
            names.name_of("00000000-0000-0000-0000-000000000001"),
            Some("orders")
        );
        assert_eq!(names.len(), 1);
    }
}
