//! Topic ids (Fetch v13+, DescribeTopicPartitions…) mapped back to names, per run (the twin of
//! `wiredump/dissect/protocols/kafka/topics.py`).
//!
//! Newer Kafka APIs name topics by UUID only. Metadata-like responses carry both, so the names
//! they list resolve later frames of the same capture, on any of its connections. The map lives
//! in the run's state ([`crate::protocol::RunState`], one per capture), never in the process,
//! so a capture decodes the same whatever was decoded before it.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};

use super::body::{field, uuid_string, Field, Value};
use super::schema::{Kind, Op, Plan};

/// Ids remembered at most (the oldest are forgotten first).
pub const MAX_IDS: usize = 100_000;
/// The key of the map in the run state.
pub const RUN_KEY: &str = "kafka.topic_names";

/// The run's map as the run state holds it: shared, so that each session keeps a handle to it
/// instead of looking it up by name for every frame.
pub type Topics = std::rc::Rc<std::cell::RefCell<TopicNames>>;

/// A bounded topic id -> name map, in first-learnt order (as the reference's OrderedDict:
/// learning a known id again changes its name, not its age).
#[derive(Default)]
pub struct TopicNames {
    names: HashMap<String, String>,
    order: VecDeque<String>,
    looked_up: Cell<bool>,
}

impl TopicNames {
    /// The name learnt for a topic id (its text form). Every lookup is remembered, found or
    /// not (see [`TopicNames::looked_up`]).
    pub fn name_of(&self, topic_id: &str) -> Option<&str> {
        self.looked_up.set(true);
        self.names.get(topic_id).map(String::as_str)
    }

    /// Was a topic id looked up in this map? Then what another connection taught it could have
    /// named a frame (`Protocol::run_state_consulted`): a share that did not observe the other
    /// connections must not be trusted.
    pub fn looked_up(&self) -> bool {
        self.looked_up.get()
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

/// Can a response body laid out by `plan` teach topic names? [`TopicNames::learn`] reads only
/// a top-level `topics` array whose elements hold a `topic_id` (uuid) and a `name` (string):
/// Metadata v10+, CreateTopics v7+, DescribeTopicPartitions. A session that
/// observes a connection for another worker (`SessionOptions::observe`) walks only the response
/// bodies for which this is true: every other body can change nothing the run shares, so
/// skipping it keeps every share's topic names those of the whole capture.
pub fn can_teach(plan: &Plan) -> bool {
    ops(plan).any(|op| {
        op.name == Some("topics")
            && matches!(op.kind, Kind::Array(elem)
                if matches!(elem.kind, Kind::Struct(p)
                    if has(p, "topic_id", |k| matches!(k, Kind::Uuid))
                        && has(p, "name", |k| matches!(k, Kind::String))))
    })
}

/// A struct's fields, tagged ones included.
fn ops(plan: &Plan) -> impl Iterator<Item = &Op> {
    plan.ops.iter().chain(plan.tags.iter().map(|(_, op)| op))
}

fn has(plan: &Plan, name: &str, kind: impl Fn(&Kind) -> bool) -> bool {
    ops(plan).any(|op| op.name == Some(name) && kind(&op.kind))
}

/// A struct's field by name (the last one wins, as a dict assignment does).
pub(crate) fn get<'x, 'a>(d: &'x [Field<'a>], key: &str) -> Option<&'x Value<'a>> {
    field(d, key).map(|n| &n.value)
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

    /// Which responses can name topic ids, from Kafka's own message specs (the `*Response.json`
    /// of `wiredump/proto/kafka_schema.json`): a top-level `topics` array whose elements have
    /// both `topic_id` and `name` only in MetadataResponse v10-13, CreateTopicsResponse v7 and
    /// DescribeTopicPartitionsResponse v0. FetchResponse v13+ names topics by id only,
    /// DeleteTopicsResponse v6 lists them under `responses`, older Metadata has no ids.
    #[test]
    fn the_responses_that_can_teach_names() {
        use super::super::schema::{api_versions, plan};
        let teaches = |k: i16, v: i16| plan(k, v, true).is_some_and(can_teach);
        let all: Vec<(i16, i16)> = api_versions().filter(|(k, v)| teaches(*k, *v)).collect();
        assert_eq!(all, [(3, 10), (3, 11), (3, 12), (3, 13), (19, 7), (75, 0)]);
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
