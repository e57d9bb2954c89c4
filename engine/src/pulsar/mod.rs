//! Apache Pulsar's binary protocol (ports 6650, and 6651 for TLS, reported as undecodable): the
//! Rust port of `wiredump/dissect/protocols/pulsar/`.
//!
//! Every BaseCommand of the schema by its enum name; the payload of SEND/MESSAGE with
//! broker-entry metadata, verified CRC32C, MessageMetadata, batches, the four codecs as Pulsar
//! clients encode them and chunked messages joined; requests paired by request id and a
//! response type that fits, sends by (producer_id, sequence_id).

pub mod chunks;
pub mod describe;
pub mod pairing;
pub mod partitions;
pub mod payload;
pub mod proto;
pub mod schema;
pub mod session;
pub mod sniff;

use crate::model::Role;
use crate::protocol::{ConnCtx, Protocol, Session, Trial};

pub use session::{PulsarSession, DEFAULT_MAX_FRAME, HARD_MAX_FRAME};

/// The protocol's name in tables.
pub const PROTOCOL: &str = "pulsar";

/// Pulsar's registration (Python's `PulsarSpec`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Pulsar;

impl Protocol for Pulsar {
    fn name(&self) -> &'static str {
        PROTOCOL
    }

    fn ports(&self) -> &'static [u16] {
        &[6650, 6651]
    }

    /// The engine's ceiling; the per-connection maximum (5 MiB + 10 KiB by default, or what the
    /// broker's CONNECTED advertised) is enforced by the session as `oversize_frame`.
    fn max_frame(&self) -> u64 {
        HARD_MAX_FRAME
    }

    fn sniff(&self, data: &[u8], role: Role) -> bool {
        sniff::opener(data, role)
    }

    fn score(&self, trial: &Trial, client: &[u8], server: &[u8], _opened: bool) -> i32 {
        sniff::score(trial, client, server)
    }

    fn new_session(&self, ctx: &ConnCtx) -> Box<dyn Session> {
        Box::new(PulsarSession::new(ctx))
    }
}
