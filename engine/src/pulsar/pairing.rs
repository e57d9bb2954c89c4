//! Which Pulsar responses answer which requests (the twin of `pairing.py`).
//!
//! Request ids are not unique on a connection (the C++ client keeps one counter for lookups and
//! another for producer/consumer commands), so a response is paired with the oldest pending
//! request that has its request id *and* a type it can answer. The generic ERROR answers any
//! request that carries a request id.

use super::schema::code;

/// Request type name → the response type names that answer it (besides ERROR).
const ANSWERS: &[(&str, &[&str])] = &[
    ("SUBSCRIBE", &["SUCCESS"]),
    ("UNSUBSCRIBE", &["SUCCESS"]),
    ("CLOSE_PRODUCER", &["SUCCESS"]),
    ("CLOSE_CONSUMER", &["SUCCESS"]),
    ("SEEK", &["SUCCESS"]),
    ("PRODUCER", &["PRODUCER_SUCCESS"]),
    ("PARTITIONED_METADATA", &["PARTITIONED_METADATA_RESPONSE"]),
    ("LOOKUP", &["LOOKUP_RESPONSE"]),
    ("CONSUMER_STATS", &["CONSUMER_STATS_RESPONSE"]),
    ("GET_LAST_MESSAGE_ID", &["GET_LAST_MESSAGE_ID_RESPONSE"]),
    (
        "GET_TOPICS_OF_NAMESPACE",
        &["GET_TOPICS_OF_NAMESPACE_RESPONSE"],
    ),
    ("GET_SCHEMA", &["GET_SCHEMA_RESPONSE"]),
    ("GET_OR_CREATE_SCHEMA", &["GET_OR_CREATE_SCHEMA_RESPONSE"]),
    ("NEW_TXN", &["NEW_TXN_RESPONSE"]),
    ("ADD_PARTITION_TO_TXN", &["ADD_PARTITION_TO_TXN_RESPONSE"]),
    (
        "ADD_SUBSCRIPTION_TO_TXN",
        &["ADD_SUBSCRIPTION_TO_TXN_RESPONSE"],
    ),
    ("END_TXN", &["END_TXN_RESPONSE"]),
    ("END_TXN_ON_PARTITION", &["END_TXN_ON_PARTITION_RESPONSE"]),
    (
        "END_TXN_ON_SUBSCRIPTION",
        &["END_TXN_ON_SUBSCRIPTION_RESPONSE"],
    ),
    ("TC_CLIENT_CONNECT_REQUEST", &["TC_CLIENT_CONNECT_RESPONSE"]),
    ("WATCH_TOPIC_LIST", &["WATCH_TOPIC_LIST_SUCCESS"]),
    // Current brokers answer the close with SUCCESS, earlier ones with WATCH_TOPIC_LIST_SUCCESS.
    (
        "WATCH_TOPIC_LIST_CLOSE",
        &["SUCCESS", "WATCH_TOPIC_LIST_SUCCESS"],
    ),
    ("ACK", &["ACK_RESPONSE"]),
    (
        "SCALABLE_TOPIC_SUBSCRIBE",
        &["SCALABLE_TOPIC_SUBSCRIBE_RESPONSE"],
    ),
];

/// Requests keyed by another id than request_id: (request, id field, response).
const SESSION: &[(&str, &str, &str)] = &[
    (
        "SCALABLE_TOPIC_LOOKUP",
        "session_id",
        "SCALABLE_TOPIC_UPDATE",
    ),
    (
        "WATCH_SCALABLE_TOPICS",
        "watch_id",
        "WATCH_SCALABLE_TOPICS_UPDATE",
    ),
    (
        "WATCH_TC_ASSIGNMENTS",
        "watch_id",
        "WATCH_TC_ASSIGNMENTS_UPDATE",
    ),
];

/// The pairing tables by type number, made once per protocol instance.
#[derive(Debug)]
pub struct Pairing {
    answers: Vec<(u128, Vec<u128>)>,
    error: u128,
    session: Vec<(u128, &'static str, u128)>,
}

impl Default for Pairing {
    fn default() -> Self {
        Pairing {
            answers: ANSWERS
                .iter()
                .map(|(req, resps)| (code(req), resps.iter().map(|r| code(r)).collect()))
                .collect(),
            error: code("ERROR"),
            session: SESSION
                .iter()
                .map(|(req, f, resp)| (code(req), *f, code(resp)))
                .collect(),
        }
    }
}

impl Pairing {
    pub fn is_request(&self, t: u128) -> bool {
        self.answers.iter().any(|(r, _)| *r == t)
    }

    pub fn is_response(&self, t: u128) -> bool {
        t == self.error || self.answers.iter().any(|(_, rs)| rs.contains(&t))
    }

    /// True if a response of `response` type can answer a request of `request` type.
    pub fn fits(&self, response: u128, request: Option<u128>) -> bool {
        let Some(request) = request else {
            return false;
        };
        let answers = self.answers.iter().find(|(r, _)| *r == request);
        if response == self.error {
            return answers.is_some();
        }
        answers.is_some_and(|(_, rs)| rs.contains(&response))
    }

    /// (id field, its response type) for a session request.
    pub fn session_request(&self, t: u128) -> Option<&'static str> {
        self.session.iter().find(|s| s.0 == t).map(|s| s.1)
    }

    /// (id field, its request type) for a session response.
    pub fn session_response(&self, t: u128) -> Option<(&'static str, u128)> {
        self.session.iter().find(|s| s.2 == t).map(|s| (s.1, s.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_in_the_schema() {
        for (req, resps) in ANSWERS {
            assert_ne!(code(req), u128::MAX, "{req}");
            for r in *resps {
                assert_ne!(code(r), u128::MAX, "{r}");
            }
        }
        for (a, _, b) in SESSION {
            assert_ne!(code(a), u128::MAX);
            assert_ne!(code(b), u128::MAX);
        }
        let p = Pairing::default();
        assert!(p.fits(code("ERROR"), Some(code("LOOKUP"))));
        assert!(!p.fits(code("SUCCESS"), Some(code("LOOKUP"))));
        assert!(p.fits(code("SUCCESS"), Some(code("WATCH_TOPIC_LIST_CLOSE"))));
    }
}
