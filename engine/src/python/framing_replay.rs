//! `replay_framing` and `replay_detection`: a protocol's Rust session asked the framing
//! questions (`frame_length`, `resync`) the Python framer asked its Python session, in the same
//! order, so a differential test can compare the answers one by one (the decode side is
//! `replay`); and its detection (`score`, `sniff`) given the same trial. Protocol-agnostic: the
//! protocol is looked up in the registry by name.

use std::collections::HashMap;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::model::Role;
use crate::protocol::{ConnCtx, FrameLen, Session, Trial, TrialSide};
use crate::registry;

/// `calls`: `(stream, "frame_length" | "resync", role, bytes)` in the order the Python framer
/// made them, the bytes being the buffer from the position it asked about. Returns one answer
/// per call in the Python session's terms: for `frame_length` the length, or 0 (need more), -1
/// (not a frame), -2 (undecodable); for `resync` the offset in the bytes given, or None.
#[pyfunction]
fn replay_framing(protocol: &str, calls: &Bound<'_, PyList>) -> PyResult<Vec<Option<i64>>> {
    let proto = registry::by_name(protocol).ok_or_else(|| {
        PyValueError::new_err(format!("the Rust engine has no protocol {protocol:?}"))
    })?;
    let mut sessions: HashMap<u64, (Box<dyn Session>, ConnCtx)> = HashMap::new();
    let mut out = Vec::with_capacity(calls.len());
    for call in calls.iter() {
        let call = call.cast::<PyTuple>()?;
        let stream: u64 = call.get_item(0)?.extract()?;
        let op: String = call.get_item(1)?.extract()?;
        let role = match call.get_item(2)?.extract::<String>()?.as_str() {
            "client" => Role::Client,
            "server" => Role::Server,
            r => return Err(PyValueError::new_err(format!("role {r:?}"))),
        };
        let data: Vec<u8> = call.get_item(3)?.extract()?;
        let (session, ctx) = sessions.entry(stream).or_insert_with(|| {
            let ctx = ConnCtx::standalone(proto.name(), stream);
            (proto.new_session(&ctx), ctx)
        });
        let answer = match op.as_str() {
            "frame_length" => Some(match session.frame_length(ctx, &data, role) {
                FrameLen::NeedMore => 0,
                FrameLen::NotAFrame => -1,
                FrameLen::Undecodable => -2,
                FrameLen::Len(n) => i64::try_from(n).unwrap_or(i64::MAX),
            }),
            "resync" => session.resync(ctx, &data, role).map(|at| at as i64),
            _ => return Err(PyValueError::new_err(format!("call {op:?}"))),
        };
        out.push(answer);
    }
    Ok(out)
}

/// One side of a Python `trial.Trial`: `(frames, skipped, broken, partial, misplaced)`.
type SideTuple = (Vec<String>, usize, bool, bool, u32);

fn side((frames, skipped, broken, partial, misplaced): SideTuple) -> TrialSide {
    TrialSide {
        frames,
        skipped,
        broken,
        partial,
        misplaced,
    }
}

/// `protocol`'s Rust `score` given the trial the Python detection made (`(client side, server
/// side, answered, points)`) and the first bytes each side sent, to compare with the Python
/// `ProtocolSpec.score`; and its `sniff` of `client` as the client and of `server` as the server.
#[pyfunction]
fn replay_detection(
    protocol: &str,
    trial: (SideTuple, SideTuple, u32, i32),
    client: &[u8],
    server: &[u8],
    opened: bool,
) -> PyResult<(i32, bool, bool)> {
    let proto = registry::by_name(protocol).ok_or_else(|| {
        PyValueError::new_err(format!("the Rust engine has no protocol {protocol:?}"))
    })?;
    let t = Trial {
        client: side(trial.0),
        server: side(trial.1),
        answered: trial.2,
        points: trial.3,
    };
    Ok((
        proto.score(&t, client, server, opened),
        proto.sniff(client, Role::Client),
        proto.sniff(server, Role::Server),
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(replay_framing, m)?)?;
    m.add_function(wrap_pyfunction!(replay_detection, m)?)?;
    Ok(())
}
