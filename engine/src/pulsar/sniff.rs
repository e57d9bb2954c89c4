//! Detection of Pulsar on a port that is not Pulsar's (the twin of `sniff.py`).
//!
//! Besides what Pulsar's own session makes of the first bytes (frames whose sizes agree and
//! whose BaseCommand parses, answers paired by request id), a connection opens with CONNECT from
//! the client and CONNECTED (or ERROR, AUTH_CHALLENGE) from the broker.

use crate::model::Role;
use crate::protocol::Trial;

use super::proto::{self, msg};
use super::schema::{code, command_field, raw_type, type_name};
use super::session::DEFAULT_MAX_FRAME;

/// Points for each side that opens the way Pulsar connections open (CONNECT / CONNECTED).
pub const HANDSHAKE: i32 = 20;

fn first_types(role: Role) -> &'static [&'static str] {
    match role {
        Role::Client => &["CONNECT"],
        Role::Server => &["CONNECTED", "ERROR", "AUTH_CHALLENGE"],
    }
}

/// A first frame whose sizes agree and whose BaseCommand parses completely.
///
/// A connection opener (CONNECT, or CONNECTED/ERROR/AUTH_CHALLENGE from the broker) is enough;
/// any other command (a capture begun mid-connection) must also carry every required field and,
/// without a payload, fill its frame exactly.
pub fn opener(data: &[u8], role: Role) -> bool {
    first_type(data, role, true).is_some()
}

fn be32(d: &[u8], at: usize) -> u64 {
    u64::from(u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]]))
}

fn first_type(data: &[u8], role: Role, any_command: bool) -> Option<u128> {
    if data.len() < 10 {
        return None;
    }
    let total = be32(data, 0);
    let cmd = be32(data, 4);
    if !(6..=DEFAULT_MAX_FRAME - 4).contains(&total)
        || !(2..=total - 4).contains(&cmd)
        || data[8] != 0x08
    {
        return None;
    }
    let cmd = cmd as usize;
    if data.len() < 8 + cmd {
        return None;
    }
    let raw = &data[8..8 + cmd];
    let base = proto::parse(msg::BaseCommand, raw, 8)?;
    let t = raw_type(raw)?;
    type_name(t)?;
    let field = command_field(t)?;
    let sub = base.msg(field)?;
    if first_types(role).iter().any(|n| code(n) == t) {
        return Some(t);
    }
    if !any_command || !sub.missing_required().is_empty() {
        return None;
    }
    if t == code("SEND") || t == code("MESSAGE") {
        let magic = data.get(8 + cmd..10 + cmd);
        let ok = matches!(magic, Some(b"\x0e\x01") | Some(b"\x0e\x02")) || data.len() < 12 + cmd;
        return ok.then_some(t);
    }
    (total == 4 + cmd as u64).then_some(t)
}

/// The trial's common points plus the handshake bonus for each side that opened as Pulsar does.
pub fn score(trial: &Trial, client: &[u8], server: &[u8]) -> i32 {
    let mut points = trial.points();
    for (side, data, role) in [
        (&trial.client, client, Role::Client),
        (&trial.server, server, Role::Server),
    ] {
        if !side.frames.is_empty() && side.skipped == 0 && first_type(data, role, false).is_some() {
            points += HANDSHAKE;
        }
    }
    points.min(100)
}
