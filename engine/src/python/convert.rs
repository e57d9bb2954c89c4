//! The records of the native pipeline the shared model conversion (`python::model`) does not
//! cover, as the Python objects `dissect_capture` yields: connection rows, the capture end and
//! the `pipeline.Event` wrapper. The classes are looked up once per `Dissector` (kept by it, never
//! in a process global).

use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::BoundObject;

use crate::model::ConnectionSummary;
use crate::pipeline::CaptureEnd;

/// The Python classes of the records only the pipeline makes.
pub struct Classes {
    pub connection: Py<PyAny>,
    pub event: Py<PyAny>,
    pub capture_end: Py<PyAny>,
}

impl Classes {
    pub fn load(py: Python<'_>) -> PyResult<Classes> {
        let model = py.import("wiredump.dissect.model")?;
        let pipeline = py.import("wiredump.dissect.pipeline")?;
        Ok(Classes {
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
