//! Kafka's registration: name, default port, largest frame, detection, sessions (the twin of
//! `wiredump/dissect/protocols/kafka/spec.py` and `sniff.py`).
//!
//! Kafka has no greeting: the evidence is the session's own framing and decoding of the first
//! bytes (a request that decodes exactly with its API key and version, the next one, and a
//! response that carries a pending request's correlation id). A response whose request was not
//! captured is decoded with a guessed layout; responses alone are therefore weak evidence and
//! never enough to call a connection Kafka.

use super::framing::{plausible_request, MAX_FRAME};
use super::session::{KafkaSession, PROTOCOL};
use super::topics::{Topics, RUN_KEY};
use crate::model::Role;
use crate::protocol::{ConnCtx, Protocol, RunState, Session, Trial, MIN_CONFIDENCE};

/// The most that responses without any captured request can score.
pub const UNPAIRED_RESPONSES: i32 = MIN_CONFIDENCE - 10;

/// Kafka, as the registry knows it.
pub struct Kafka;

impl Protocol for Kafka {
    fn name(&self) -> &'static str {
        PROTOCOL
    }

    fn ports(&self) -> &'static [u16] {
        &[9092]
    }

    /// socket.request.max.bytes (100 MiB) plus the 4-byte size prefix.
    fn max_frame(&self) -> u64 {
        MAX_FRAME as u64
    }

    /// Topic ids resolve to names learnt on any connection of the capture.
    fn shares_run_state(&self) -> bool {
        true
    }

    /// A topic id was looked up (every session makes the map when it starts, so lookups never
    /// go to a stand-in the run state does not see).
    fn run_state_consulted(&self, state: &RunState) -> bool {
        state
            .get::<Topics>(RUN_KEY)
            .is_some_and(|t| t.borrow().looked_up())
    }

    /// A client's first bytes form a plausible request header (known key, valid version, text
    /// client id).
    fn sniff(&self, data: &[u8], role: Role) -> bool {
        role == Role::Client && plausible_request(data, 0, true)
    }

    fn score(&self, trial: &Trial, _client: &[u8], _server: &[u8], _opened: bool) -> i32 {
        let points = trial.points();
        if trial.client.frames.is_empty() && trial.answered == 0 {
            return points.min(UNPAIRED_RESPONSES);
        }
        points
    }

    fn new_session(&self, ctx: &ConnCtx) -> Box<dyn Session> {
        Box::new(KafkaSession::new(ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_alone_never_make_a_connection_kafka() {
        let mut t = Trial {
            points: 80,
            ..Trial::default()
        };
        assert_eq!(Kafka.score(&t, b"", b"", false), UNPAIRED_RESPONSES);
        t.answered = 1;
        assert_eq!(Kafka.score(&t, b"", b"", false), 80);
        t.answered = 0;
        t.client.frames.push("Metadata".into());
        assert_eq!(Kafka.score(&t, b"", b"", false), 80);
    }

    #[test]
    fn a_request_header_opens_kafka() {
        // ApiVersions v3 (flexible, header v2) from client "c", correlation id 1.
        let f = [0, 0, 0, 13, 0, 18, 0, 3, 0, 0, 0, 1, 0, 1, b'c', 0, 0];
        assert!(Kafka.sniff(&f, Role::Client));
        assert!(!Kafka.sniff(&f, Role::Server));
        assert!(!Kafka.sniff(b"GET / HTTP/1.1\r\n", Role::Client));
    }
}
