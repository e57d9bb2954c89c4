//! Evidence for detection: a protocol's own session tried on a connection's first bytes (the
//! port of `wiredump/dissect/protocols/trial.py`, same walk and same points).
//!
//! Detection must not trust a few magic bytes: TANK requests start like Kafka size prefixes,
//! small integers look like type codes. The surest test of "is this protocol P?" is P's own
//! framer and decoder: a scratch session (its own correlator and limits, nothing shared with the
//! run) frames what each side sent from its first byte, decodes every whole frame, and pairs the
//! answers with the requests. What it finds is a [`Trial`]; its points are the common part of a
//! score, and a protocol adds what only it knows in [`Protocol::score`].
//!
//! Bounded: a trial looks at what detection holds, decodes at most [`MAX_FRAMES`] frames per
//! direction and, for a capture begun mid-connection, searches for the first frame start in the
//! first [`SCAN`] bytes only. A panic in the session is not caught here: detection catches it
//! around the whole score and reports it as `internal_error` (the protocol scores 0).

use std::cell::RefCell;
use std::rc::Rc;

use crate::codecs::Limits;
use crate::correlation::Correlator;
use crate::model::{ExchangeStatus, Kind, Role, Status};
use crate::protocol::{ConnCtx, FrameLen, Protocol, RunState, SessionOptions, Trial, TrialSide};

/// Whole frames decoded per direction: the first, the next, and a few more to pair answers.
pub const MAX_FRAMES: usize = 6;
/// Bytes searched for a first frame start when the capture began mid-connection.
pub const SCAN: usize = 4096;

/// Points for a whole frame that frames and decodes cleanly from a direction's first byte.
pub const FIRST_FRAME: i32 = 30;
/// The same, found after skipping the tail of a frame the capture cut (mid-connection).
pub const FIRST_FRAME_LATER: i32 = 20;
/// The next frame starts where the first ends and decodes cleanly too.
pub const NEXT_FRAME: i32 = 15;
/// A third clean frame in a row.
pub const MORE_FRAMES: i32 = 10;
/// A frame of one side answers a request of the other (paired by the protocol's own ids).
pub const ANSWER: i32 = 40;
/// Taken off when a frame after a clean one fails to frame or decode.
pub const BROKEN: i32 = 25;
/// Taken off for each frame of a kind the other side sends.
pub const MISPLACED: i32 = 15;

/// Points of one side (Python's `Side.points`).
pub fn side_points(side: &TrialSide) -> i32 {
    let n = side.frames.len();
    if n == 0 {
        return 0;
    }
    let mut p = if side.skipped == 0 {
        FIRST_FRAME
    } else {
        FIRST_FRAME_LATER
    };
    if n >= 2 {
        p += NEXT_FRAME;
    }
    if n >= 3 {
        p += MORE_FRAMES;
    }
    if side.broken {
        p -= BROKEN;
    }
    p -= MISPLACED * side.misplaced as i32;
    p.max(0)
}

/// The protocol-independent part of a score, 0–100 (Python's `Trial.points`).
pub fn trial_points(t: &Trial) -> i32 {
    let mut p = side_points(&t.client) + side_points(&t.server);
    let clean = [&t.client, &t.server]
        .iter()
        .all(|s| !s.broken && s.misplaced == 0);
    if t.answered > 0 && clean {
        p += ANSWER;
    }
    p.min(100)
}

/// A context of its own for a trial: nothing it does reaches the run's output or state.
fn scratch_context(protocol: &'static str) -> ConnCtx {
    let limits = Limits {
        max_decompressed: 1 << 20,
        max_decompressed_total: 4 << 20,
        ..Limits::default()
    };
    ConnCtx {
        capture: Rc::from(""),
        stream: u64::MAX,
        client: Rc::from(""),
        client_port: 0,
        server: Rc::from(""),
        server_port: 0,
        correlator: Correlator::new(u64::MAX, protocol, 65536),
        limits: Rc::new(RefCell::new(limits)),
        options: Rc::new(SessionOptions {
            show_secrets: false,
            messages: false,
            detail: true,
            values: true,
            observe: false,
            detail_text: false,
        }),
        run_state: Rc::new(RefCell::new(RunState::default())),
        reports: Vec::new(),
    }
}

/// Frames and decodes `client` then `server` (each a direction's first bytes) with `proto`'s
/// session; `opened`: the bytes start where the connection did, so the first frame must start at
/// the first byte (otherwise a first frame start is searched for). Requests are decoded before
/// answers so that answers pair. The returned trial carries its points.
pub fn trial(proto: &dyn Protocol, client: &[u8], server: &[u8], opened: bool) -> Trial {
    let mut ctx = scratch_context(proto.name());
    let mut session = proto.new_session(&ctx);
    let mut answered = 0u32;
    let (c, n) = walk(
        proto,
        session.as_mut(),
        &mut ctx,
        client,
        Role::Client,
        opened,
    );
    answered += n;
    let (s, n) = walk(
        proto,
        session.as_mut(),
        &mut ctx,
        server,
        Role::Server,
        opened,
    );
    answered += n;
    let mut t = Trial {
        client: c,
        server: s,
        answered,
        points: 0,
    };
    t.points = trial_points(&t);
    t
}

fn walk(
    proto: &dyn Protocol,
    session: &mut dyn crate::protocol::Session,
    ctx: &mut ConnCtx,
    data: &[u8],
    role: Role,
    opened: bool,
) -> (TrialSide, u32) {
    let mut side = TrialSide::default();
    // Python's `skipped = -1`: the first frame did not decode, no evidence at all.
    let mut no_evidence = false;
    let mut answered = 0u32;
    let (mut pos, end) = (0usize, data.len());
    let max_frame = proto.max_frame();
    while pos < end && side.frames.len() < MAX_FRAMES {
        let n = match session.frame_length(ctx, &data[pos..], role) {
            FrameLen::NeedMore | FrameLen::Len(0) => {
                side.partial = true;
                break;
            }
            FrameLen::Len(n) if max_frame == 0 || n <= max_frame => n as usize,
            _ => {
                if !side.frames.is_empty() || side.skipped > 0 || opened {
                    side.broken = !side.frames.is_empty();
                    break;
                }
                let scan = &data[..data.len().min(SCAN)];
                match session.resync(ctx, scan, role) {
                    Some(at) if at > 0 && at < end => {
                        side.skipped = at;
                        pos = at;
                        continue;
                    }
                    _ => break,
                }
            }
        };
        if pos + n > end {
            side.partial = true;
            break;
        }
        let frames = session.decode(ctx, &data[pos..pos + n], role, true);
        let done = ctx.correlator.drain();
        ctx.reports.clear();
        if frames.is_empty() || frames.iter().any(|f| f.borrow().status != Status::Ok) {
            side.broken = !side.frames.is_empty();
            if side.frames.is_empty() {
                no_evidence = true;
            }
            break;
        }
        let wrong = if role == Role::Client {
            Kind::Response
        } else {
            Kind::Request
        };
        for f in &frames {
            let f = f.borrow();
            side.frames.push(f.type_.to_string());
            if f.kind == wrong {
                side.misplaced += 1;
            }
        }
        answered += done
            .iter()
            .filter(|ex| ex.status == ExchangeStatus::Answered)
            .count() as u32;
        pos += n;
    }
    if no_evidence {
        side.frames.clear();
        side.skipped = 0;
    }
    (side, answered)
}
