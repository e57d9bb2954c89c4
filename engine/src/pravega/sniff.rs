//! Detection of Pravega on a port that is not the segment store's (the twin of
//! `pravega/sniff.py`).
//!
//! Both sides open with HELLO (type -127, length 8, two sane protocol versions); with what
//! Pravega's own session makes of the first bytes (the engine's trial: commands that decode
//! exactly, answers paired by request id) that is the evidence.

use super::commands::HEADER_SIZE;
use crate::protocol::{Trial, TrialSide};

const HELLO_HEADER: [u8; 8] = [0xFF, 0xFF, 0xFF, 0x81, 0, 0, 0, 8];
/// Points for each side whose first command is a HELLO that decodes.
pub const HELLO: i32 = 20;

/// The first command either side sends is HELLO: `ff ff ff 81 00 00 00 08` + two sane versions.
pub fn opener(data: &[u8]) -> bool {
    if data.len() < HEADER_SIZE || data[..HEADER_SIZE] != HELLO_HEADER {
        return false;
    }
    if data.len() < 16 {
        return true;
    }
    let high = i32::from_be_bytes([data[8], data[9], data[10], data[11]]);
    let low = i32::from_be_bytes([data[12], data[13], data[14], data[15]]);
    0 < low && low <= high && high < 1000
}

/// The trial's common points plus HELLO for each side that opened with one.
pub fn score(trial: &Trial, client: &[u8], server: &[u8]) -> i32 {
    let mut points = trial.points();
    let sides: [(&TrialSide, &[u8]); 2] = [(&trial.client, client), (&trial.server, server)];
    for (side, data) in sides {
        if !side.frames.is_empty() && side.skipped == 0 && data.len() >= 16 && opener(data) {
            points += HELLO;
        }
    }
    points.min(100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_opener() {
        // Hello(15, 5), as the Rust client sends it.
        let hello = [0xFF, 0xFF, 0xFF, 0x81, 0, 0, 0, 8, 0, 0, 0, 15, 0, 0, 0, 5];
        assert!(opener(&hello));
        assert!(opener(&hello[..8]));
        let mut bad = hello;
        bad[15] = 16; // low above high
        assert!(!opener(&bad));
        let trial = Trial {
            client: TrialSide {
                frames: vec!["Hello".into()],
                ..TrialSide::default()
            },
            points: 60,
            ..Trial::default()
        };
        assert_eq!(score(&trial, &hello, &[]), 80);
    }
}
