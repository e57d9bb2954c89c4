//! `replay`: a protocol's Rust session driven with the calls the Python framer made (recorded by
//! `tests/replay_support.py`), for the differential tests of each protocol port.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use super::model::{spans, Classes};
use crate::codecs::Limits;
use crate::correlation::Correlator;
use crate::model::{FrameRef, Role};
use crate::protocol::{ConnCtx, RunState, SessionOptions};
use crate::registry;
use crate::replay::{Replay, Stamp};

fn role(s: &str) -> PyResult<Role> {
    match s {
        "client" => Ok(Role::Client),
        "server" => Ok(Role::Server),
        _ => Err(PyValueError::new_err(format!("role {s:?}"))),
    }
}

/// Replays `calls` into `protocol`'s Rust sessions, one per connection, sharing one run state and
/// one set of limits (as one capture does).
///
/// `conns`: `(stream, client, client_port, server, server_port)` for each connection;
/// `calls`, in the order the Python framer made them: `(stream, "decode", role, data, complete,
/// packet, first_packet, ts_us)` or `(stream, "close", packet, ts_us)`;
/// `options`: `(show_secrets, messages, observe)`.
/// Returns `(frames, exchanges, reports, spans)`: for each call the list of Python `Frame`s it
/// made (converted after the last call, so pairing is final), every exchange in the order the
/// correlators gave them, the anomalies sessions reported outside frames, and for each call
/// the list of each frame's field spans `(path, start, end)`.
#[pyfunction]
#[pyo3(signature = (protocol, conns, calls, options=(false, true, false)))]
#[allow(clippy::type_complexity)]
fn replay<'py>(
    py: Python<'py>,
    protocol: &str,
    conns: Vec<(u64, String, u16, String, u16)>,
    calls: &Bound<'py, PyList>,
    options: (bool, bool, bool),
) -> PyResult<Bound<'py, PyTuple>> {
    let proto = registry::by_name(protocol).ok_or_else(|| {
        PyValueError::new_err(format!("the Rust engine has no protocol {protocol:?}"))
    })?;
    let limits = Rc::new(RefCell::new(Limits::default()));
    let run_state = Rc::new(RefCell::new(RunState::default()));
    let opts = Rc::new(SessionOptions {
        show_secrets: options.0,
        messages: options.1,
        observe: options.2,
    });
    let mut replays: HashMap<u64, Replay> = HashMap::new();
    for (stream, client, cport, server, sport) in conns {
        let ctx = ConnCtx {
            capture: Rc::from(""),
            stream,
            client: Rc::from(client.as_str()),
            client_port: cport,
            server: Rc::from(server.as_str()),
            server_port: sport,
            correlator: Correlator::new(stream, proto.name(), 65536),
            limits: Rc::clone(&limits),
            options: Rc::clone(&opts),
            run_state: Rc::clone(&run_state),
            reports: Vec::new(),
        };
        replays.insert(stream, Replay::new(proto.as_ref(), ctx));
    }
    let mut made: Vec<Vec<FrameRef>> = Vec::with_capacity(calls.len());
    let mut exchanges = Vec::new();
    let mut reports = Vec::new();
    for call in calls.iter() {
        let call = call.cast::<PyTuple>()?;
        let stream: u64 = call.get_item(0)?.extract()?;
        let op: String = call.get_item(1)?.extract()?;
        let r = replays
            .get_mut(&stream)
            .ok_or_else(|| PyValueError::new_err(format!("no connection {stream}")))?;
        let frames = match op.as_str() {
            "decode" => {
                let role = role(&call.get_item(2)?.extract::<String>()?)?;
                let data: Vec<u8> = call.get_item(3)?.extract()?;
                let complete: bool = call.get_item(4)?.extract()?;
                let at = Stamp {
                    packet: call.get_item(5)?.extract()?,
                    first_packet: call.get_item(6)?.extract()?,
                    ts_us: call.get_item(7)?.extract()?,
                };
                r.decode(&data, role, complete, at)
            }
            "close" => {
                let at = Stamp {
                    packet: call.get_item(2)?.extract()?,
                    first_packet: call.get_item(2)?.extract()?,
                    ts_us: call.get_item(3)?.extract()?,
                };
                r.close(at)
            }
            _ => return Err(PyValueError::new_err(format!("call {op:?}"))),
        };
        exchanges.append(&mut r.exchanges);
        reports.append(&mut r.reports);
        made.push(frames);
    }
    let classes = Classes::new(py)?;
    let out_frames = PyList::empty(py);
    let out_spans = PyList::empty(py);
    for frames in &made {
        let l = PyList::empty(py);
        let s = PyList::empty(py);
        for f in frames {
            let f = f.borrow();
            l.append(classes.frame(&f)?)?;
            s.append(spans(&f.fields))?;
        }
        out_frames.append(l)?;
        out_spans.append(s)?;
    }
    let out_ex = PyList::empty(py);
    for e in &exchanges {
        out_ex.append(classes.exchange(e)?)?;
    }
    let out_rep = PyList::empty(py);
    for a in &reports {
        out_rep.append(classes.anomaly(a)?)?;
    }
    PyTuple::new(
        py,
        [
            out_frames.into_any(),
            out_ex.into_any(),
            out_rep.into_any(),
            out_spans.into_any(),
        ],
    )
}

/// The protocols the Rust engine has, in registry order.
#[pyfunction]
fn rust_protocols() -> Vec<&'static str> {
    registry::protocols().iter().map(|p| p.name()).collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(rust_protocols, m)?)?;
    Ok(())
}
