//! Pravega segment-store wire protocol (client ↔ segment store, TCP port 12345): the Rust twin
//! of `wiredump/dissect/protocols/pravega`.
//!
//! `commands` holds every WireCommandType as a row (name, code, fields in wire order); `codec`
//! walks a row; `events` turns append blocks and segment reads back into events; `pairing`
//! pairs replies with requests; `session` frames and decodes; `summary` writes the timeline
//! line; `sniff` recognises the protocol off its port. Facts: shared/reference/pravega/WIRE.md.

pub mod codec;
pub mod commands;
pub mod events;
mod ordered;
pub mod pairing;
pub mod partitions;
pub mod session;
pub mod sniff;
pub mod summary;

use crate::model::Role;
use crate::protocol::{ConnCtx, Protocol, Session, Trial};

/// The protocol's name in tables.
pub const PROTOCOL: &str = "pravega";

/// Registration data: name, port, detection, sessions.
pub struct Pravega;

impl Protocol for Pravega {
    fn name(&self) -> &'static str {
        PROTOCOL
    }

    fn ports(&self) -> &'static [u16] {
        &[12345]
    }

    fn max_frame(&self) -> u64 {
        commands::MAX_WIRECOMMAND_SIZE as u64 + commands::HEADER_SIZE as u64
    }

    fn sniff(&self, data: &[u8], _role: Role) -> bool {
        sniff::opener(data)
    }

    fn score(&self, trial: &Trial, client: &[u8], server: &[u8], _opened: bool) -> i32 {
        sniff::score(trial, client, server)
    }

    fn new_session(&self, ctx: &ConnCtx) -> Box<dyn Session> {
        Box::new(session::PravegaSession::new(ctx))
    }
}
