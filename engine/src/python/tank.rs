//! Python bindings of TANK's framing answers (frame length, resync, sniffing), for the
//! differential tests: the replay harness compares decodes, these compare how the Rust session
//! finds frames in a byte stream with how the Python one does.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::model::Role;
use crate::protocol::{ConnCtx, FrameLen, Protocol, Session};
use crate::tank::{Tank, TankSession, PROTOCOL};

fn role(s: &str) -> PyResult<Role> {
    match s {
        "client" => Ok(Role::Client),
        "server" => Ok(Role::Server),
        _ => Err(PyValueError::new_err(format!("role {s:?}"))),
    }
}

/// `frame_length` of a session that has (`synced`) or has not yet framed a frame of `role`, in
/// the reference's encoding: a length, 0 (need more) or -1 (not a frame).
#[pyfunction]
fn tank_frame_length(buf: &[u8], who: &str, synced: bool) -> PyResult<i64> {
    let r = role(who)?;
    let mut s = if synced {
        TankSession::synced(r)
    } else {
        TankSession::new()
    };
    let mut ctx = ConnCtx::standalone(PROTOCOL, 0);
    Ok(match s.frame_length(&mut ctx, buf, r) {
        FrameLen::NeedMore => 0,
        FrameLen::NotAFrame => -1,
        FrameLen::Undecodable => -2,
        FrameLen::Len(n) => n as i64,
    })
}

/// `resync` from the start of `buf`.
#[pyfunction]
fn tank_resync(buf: &[u8], who: &str) -> PyResult<Option<usize>> {
    let r = role(who)?;
    let mut ctx = ConnCtx::standalone(PROTOCOL, 0);
    Ok(TankSession::new().resync(&mut ctx, buf, r))
}

/// `sniff`: do these first bytes open a TANK connection the way TANK does?
#[pyfunction]
fn tank_sniff(data: &[u8], who: &str) -> PyResult<bool> {
    Ok(Tank.sniff(data, role(who)?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tank_frame_length, m)?)?;
    m.add_function(wrap_pyfunction!(tank_resync, m)?)?;
    m.add_function(wrap_pyfunction!(tank_sniff, m)?)?;
    Ok(())
}
