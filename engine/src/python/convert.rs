//! Rust records → the Python model objects every sink reads (`wiredump.dissect.model`).
//!
//! Each record is converted once, when it leaves the engine: the sinks (timeline, export, stats,
//! check) then see exactly the objects the Python engine makes. The classes are looked up once
//! per run ([`Classes`]) and kept by the run's `Dissector`, never in a process global.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use pyo3::BoundObject;

use crate::model::{Anomaly, ConnectionSummary, Exchange, Fields, Frame, Message, Value};
use crate::pipeline::CaptureEnd;

/// The Python classes a run makes objects of.
pub struct Classes {
    pub frame: Py<PyAny>,
    pub anomaly: Py<PyAny>,
    pub message: Py<PyAny>,
    pub exchange: Py<PyAny>,
    pub connection: Py<PyAny>,
    pub event: Py<PyAny>,
    pub capture_end: Py<PyAny>,
}

impl Classes {
    pub fn load(py: Python<'_>) -> PyResult<Classes> {
        let model = py.import("wiredump.dissect.model")?;
        let pipeline = py.import("wiredump.dissect.pipeline")?;
        Ok(Classes {
            frame: model.getattr("Frame")?.unbind(),
            anomaly: model.getattr("Anomaly")?.unbind(),
            message: model.getattr("Message")?.unbind(),
            exchange: model.getattr("Exchange")?.unbind(),
            connection: model.getattr("ConnectionSummary")?.unbind(),
            event: pipeline.getattr("Event")?.unbind(),
            capture_end: pipeline.getattr("CaptureEnd")?.unbind(),
        })
    }
}

fn obj<'py, T>(py: Python<'py>, v: T) -> PyResult<Bound<'py, PyAny>>
where
    T: IntoPyObject<'py>,
    PyErr: From<T::Error>,
{
    Ok(v.into_pyobject(py)?.into_any().into_bound())
}

/// A decoded value as Python's JSON-able `Frame.fields` holds it.
pub fn value<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => obj(py, *b)?,
        Value::Int(i) => obj(py, *i)?,
        Value::UInt(u) => obj(py, *u)?,
        Value::Float(f) => obj(py, *f)?,
        Value::Str(s) => obj(py, s.as_str())?,
        Value::Bytes(b) => PyBytes::new(py, b).into_any(),
        Value::List(items) => {
            let l = PyList::empty(py);
            for it in items {
                l.append(value(py, it)?)?;
            }
            l.into_any()
        }
        Value::Map(f) => fields(py, f)?.into_any(),
    })
}

/// Fields in order, as a dict.
pub fn fields<'py>(py: Python<'py>, f: &Fields) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for field in &f.0 {
        d.set_item(field.name.as_ref(), value(py, &field.value)?)?;
    }
    Ok(d)
}

pub fn anomaly<'py>(py: Python<'py>, c: &Classes, a: &Anomaly) -> PyResult<Bound<'py, PyAny>> {
    let args = PyTuple::new(
        py,
        [
            obj(py, a.kind.as_ref())?,
            obj(py, a.detail.as_str())?,
            obj(py, a.offset)?,
            obj(py, a.packet)?,
            obj(py, a.stream)?,
            obj(py, a.protocol)?,
        ],
    )?;
    c.anomaly.bind(py).call1(args)
}

fn message<'py>(py: Python<'py>, c: &Classes, m: &Message) -> PyResult<Bound<'py, PyAny>> {
    let headers = match &m.headers {
        None => py.None().into_bound(py),
        Some(hs) => {
            let l = PyList::empty(py);
            for (k, v) in hs {
                let v = match v {
                    Some(b) => PyBytes::new(py, b).into_any(),
                    None => py.None().into_bound(py),
                };
                l.append(PyTuple::new(py, [obj(py, k.as_str())?, v])?)?;
            }
            l.into_any()
        }
    };
    let bytes = |b: &Option<Vec<u8>>| match b {
        Some(b) => PyBytes::new(py, b).into_any(),
        None => py.None().into_bound(py),
    };
    let detail = match &m.detail {
        Some(d) => fields(py, d)?.into_any(),
        None => py.None().into_bound(py),
    };
    let args = PyTuple::new(
        py,
        [
            obj(py, m.direction.map(|d| d.as_str()))?,
            obj(py, m.value_size)?,
            obj(py, m.topic.as_deref())?,
            obj(py, m.partition)?,
            obj(py, m.offset)?,
            obj(py, m.message_id.as_deref())?,
            bytes(&m.key),
            bytes(&m.value),
            obj(py, m.timestamp_ms)?,
            headers,
            obj(py, m.compression.as_deref())?,
            obj(py, m.checksum_ok)?,
            detail,
            obj(py, m.offset_delta)?,
        ],
    )?;
    c.message.bind(py).call1(args)
}

/// A frame and its anomalies (the same objects as in its `anomalies` list, for the events that
/// follow the frame's).
pub fn frame<'py>(
    py: Python<'py>,
    c: &Classes,
    f: &Frame,
) -> PyResult<(Bound<'py, PyAny>, Vec<Bound<'py, PyAny>>)> {
    let messages = PyList::empty(py);
    for m in &f.messages {
        messages.append(message(py, c, m)?)?;
    }
    let mut anomalies = Vec::with_capacity(f.anomalies.len());
    for a in &f.anomalies {
        anomalies.push(anomaly(py, c, a)?);
    }
    let alist = PyList::new(py, &anomalies)?;
    let data = match &f.data {
        Some(d) => PyBytes::new(py, d).into_any(),
        None => py.None().into_bound(py),
    };
    let args = PyTuple::new(
        py,
        [
            obj(py, f.protocol)?,
            obj(py, f.type_.as_ref())?,
            obj(py, f.type_code)?,
            obj(py, f.kind.as_str())?,
            obj(py, f.version)?,
            obj(py, f.correlation_id)?,
            obj(py, f.status.as_str())?,
            obj(py, f.error_code)?,
            obj(py, f.error.as_deref())?,
            obj(py, f.summary.as_str())?,
            fields(py, &f.fields)?.into_any(),
            messages.into_any(),
            alist.into_any(),
            py.None().into_bound(py), // context: private to the protocol, never exported
            obj(py, f.role.as_str())?,
            obj(py, f.packet)?,
            obj(py, f.first_packet)?,
            obj(py, f.ts_us)?,
            obj(py, f.stream)?,
            obj(py, f.src.as_ref())?,
            obj(py, f.src_port)?,
            obj(py, f.dst.as_ref())?,
            obj(py, f.dst_port)?,
            obj(py, f.length)?,
            data,
            obj(py, f.peer_packet)?,
            obj(py, f.latency_us)?,
            obj(py, f.awaiting)?,
            obj(py, f.exchange_done)?,
            obj(py, f.released)?,
        ],
    )?;
    Ok((c.frame.bind(py).call1(args)?, anomalies))
}

pub fn exchange<'py>(py: Python<'py>, c: &Classes, e: &Exchange) -> PyResult<Bound<'py, PyAny>> {
    let args = PyTuple::new(
        py,
        [
            obj(py, e.stream)?,
            obj(py, e.protocol)?,
            obj(py, e.type_.as_ref())?,
            obj(py, e.correlation_id)?,
            obj(py, e.status.as_str())?,
            obj(py, e.request_packet)?,
            obj(py, e.response_packet)?,
            obj(py, e.request_ts_us)?,
            obj(py, e.response_ts_us)?,
            obj(py, e.latency_us)?,
            obj(py, e.error_code)?,
        ],
    )?;
    c.exchange.bind(py).call1(args)
}

pub fn connection<'py>(
    py: Python<'py>,
    c: &Classes,
    s: &ConnectionSummary,
) -> PyResult<Bound<'py, PyAny>> {
    let args = PyTuple::new(
        py,
        [
            obj(py, s.stream)?,
            obj(py, s.client.as_ref())?,
            obj(py, s.client_port)?,
            obj(py, s.server.as_ref())?,
            obj(py, s.server_port)?,
            obj(py, s.protocol)?,
            obj(py, s.packets)?,
            obj(py, s.bytes_client)?,
            obj(py, s.bytes_server)?,
            obj(py, s.frames)?,
            obj(py, s.gaps)?,
            obj(py, s.retransmissions)?,
            obj(py, s.first_ts_us)?,
            obj(py, s.last_ts_us)?,
            obj(py, s.state)?,
        ],
    )?;
    c.connection.bind(py).call1(args)
}

pub fn capture_end<'py>(
    py: Python<'py>,
    c: &Classes,
    e: &CaptureEnd,
) -> PyResult<Bound<'py, PyAny>> {
    let args = PyTuple::new(
        py,
        [
            obj(py, e.name.as_str())?,
            obj(py, e.packets)?,
            obj(py, e.truncated.as_deref())?,
            obj(py, e.skipped_unknown_link)?,
        ],
    )?;
    c.capture_end.bind(py).call1(args)
}
