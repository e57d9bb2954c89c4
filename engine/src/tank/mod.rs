//! TANK (phaistos-networks) broker protocol: framing, every message type, bundles — the port of
//! `wiredump/dissect/protocols/tank/**`, frame for frame the same decode.
//!
//! Modules: [`constants`] (ids, error codes, flags, bounds), [`cursor`] (bounds-checked reads),
//! [`bundles`] (bundle and chunk decoding, snappy through `crate::codecs` with the run's limits),
//! [`requests`] and [`responses`] (one decoder per message type), [`common`] (decode state,
//! request contexts, message rows), [`session`] (framing, resync, dispatch, pairing) and the
//! registration below (name, port, detection).

pub mod bundles;
pub mod common;
pub mod constants;
pub mod cursor;
pub mod partitions;
pub mod requests;
pub mod responses;
pub mod session;

use crate::model::Role;
use crate::protocol::{ConnCtx, Protocol, Session, Trial};

pub use session::{plausible_header, TankSession};

/// The protocol's name in tables.
pub const PROTOCOL: &str = "tank";

/// The broker greets every connection with a 5-byte empty Ping before anything else.
pub const PING_FRAME: [u8; 5] = [constants::PING, 0, 0, 0, 0];
/// Points for the broker's greeting Ping as the first bytes of a captured connection opening.
pub const GREETING: i32 = 25;

/// TANK's registration: port 11011, the broker's 256 MiB frame cap, the greeting as its opener.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tank;

impl Protocol for Tank {
    fn name(&self) -> &'static str {
        PROTOCOL
    }

    fn ports(&self) -> &'static [u16] {
        &[11011]
    }

    /// The broker's own 256 MiB payload cap plus the header (see `constants::MAX_FRAME`).
    fn max_frame(&self) -> u64 {
        constants::MAX_FRAME
    }

    /// The broker greets every connection with a 5-byte empty Ping; clients open with a request.
    fn sniff(&self, data: &[u8], role: Role) -> bool {
        if role != Role::Client {
            return data.starts_with(&PING_FRAME);
        }
        plausible_header(data, 0, Role::Client, true) && data[0] != constants::PING
    }

    /// The common points, plus the greeting Ping seen as the server's first bytes of a captured
    /// opening (TANK's signature), as `sniff.score` does.
    fn score(&self, trial: &Trial, _client: &[u8], server: &[u8], opened: bool) -> i32 {
        let mut points = trial.points();
        if opened
            && !trial.server.frames.is_empty()
            && server.starts_with(&PING_FRAME)
            && !trial.server.broken
        {
            points += GREETING;
        }
        points.min(100)
    }

    fn new_session(&self, _ctx: &ConnCtx) -> Box<dyn Session> {
        Box::new(TankSession::new())
    }
}

#[cfg(test)]
mod tests;
