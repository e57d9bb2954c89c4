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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::TrialSide;

    fn frame(cmd: &[u8]) -> Vec<u8> {
        let mut f = ((4 + cmd.len()) as u32).to_be_bytes().to_vec();
        f.extend((cmd.len() as u32).to_be_bytes());
        f.extend(cmd);
        f
    }

    // BaseCommand{type: CONNECT(2), connect{client_version: "a", protocol_version: 20}}
    const CONNECT: &[u8] = &[0x08, 0x02, 0x12, 0x05, 0x0a, 0x01, b'a', 0x20, 0x14];
    // BaseCommand{type: PING(18), ping{}}
    const PING: &[u8] = &[0x08, 0x12, 0x92, 0x01, 0x00];
    // BaseCommand{type: FLOW(11), flow{consumer_id: 1}} without its required messagePermits.
    const FLOW_MISSING: &[u8] = &[0x08, 0x0b, 0x5a, 0x02, 0x08, 0x01];

    #[test]
    fn openers_and_the_handshake_bonus() {
        assert!(opener(&frame(CONNECT), Role::Client));
        assert!(opener(&frame(PING), Role::Client)); // complete and filling its frame
        assert!(!opener(&frame(FLOW_MISSING), Role::Client)); // lacks a required field
        let mut padded = frame(PING);
        padded[3] += 1;
        padded.push(0);
        assert!(!opener(&padded, Role::Client)); // a command that does not fill its frame
        assert!(!opener(&frame(CONNECT)[..9], Role::Client));
        let side = TrialSide {
            frames: vec!["CONNECT".into()],
            ..TrialSide::default()
        };
        let trial = Trial {
            client: side,
            points: 30,
            ..Trial::default()
        };
        // The client opened with CONNECT: +20; the server said nothing.
        assert_eq!(score(&trial, &frame(CONNECT), b""), 50);
        // PING is no opener: no bonus (any_command is off for the bonus).
        assert_eq!(score(&trial, &frame(PING), b""), 30);
    }
}
