//! PyO3 bindings: the `wiredump._engine` extension module.
//!
//! `StreamReader` reads one capture and hands Python its stream events in batches (one list of
//! tuples per step of a few thousand records), so that the crossing between the languages costs a
//! list per step rather than a call per packet. The tuples, first element a kind code:
//!
//! | code | tuple |
//! |---|---|
//! | `RECORD` 0 | `(0, number, ts_us)` — a record was read |
//! | `TRUNCATED` 1 | `(1, number, captured, on_wire)` — the snap length cut the record |
//! | `OPEN` 2 | `(2, stream, client, client_port, server, server_port, first_ts_us)` |
//! | `DATA` 3 | `(3, stream, role, bytes, packet, ts_us)` |
//! | `GAP` 4 | `(4, stream, role, size, packet, ts_us)` |
//! | `CLOSE` 5 | `(5, stream, last_ts_us)` |
//! | `ANOMALY` 6 | `(6, kind, detail, packet, stream)` |
//! | `END` 7 | `(7,)` — the last record was read; the flush of open connections follows |
//! | `BAD_TIMESTAMP` 8 | `(8, number, note)` — the record's time was unusable (it has the last good one) |
//! | `TOUCH` 9 | `(9, stream, ts_us)` — a packet of a connection whose reassembly ended |
//! | `SAW_SYN` 10 | `(10, stream)` — the connection's first SYN |
//! | `RELEASE` 11 | `(11, stream, (packets, bytes_client, bytes_server, gaps, retransmissions, first_ts_us, last_ts_us), state, last_packet)` — the row is final |
//!
//! A released connection's state is dropped: its `RELEASE` tuple is the only place its counters
//! are found, taken with the roles the reassembler had then (a `swap_roles` later in the same
//! batch does not turn them; the consumer does, as it turns the batch's `DATA` roles).

use std::io::{self, Read};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::capture::{CaptureReader, Input};
use crate::stream::{Event, StreamEngine};
use crate::tcp::{role_name, Retention, TcpEvent};

/// A Python binary file object read through its `read1` (or `read`) method.
pub(crate) struct PyReader {
    pub(crate) obj: Py<PyAny>,
    pub(crate) method: &'static str,
}

impl Read for PyReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Python::attach(|py| {
            let got = self
                .obj
                .bind(py)
                .call_method1(self.method, (buf.len(),))
                .map_err(|e| io::Error::other(e.to_string()))?;
            let bytes = got
                .cast::<PyBytes>()
                .map_err(|_| io::Error::other("read() did not return bytes"))?;
            let b = bytes.as_bytes();
            let n = b.len().min(buf.len());
            buf[..n].copy_from_slice(&b[..n]);
            Ok(n)
        })
    }
}

pub(crate) fn capture_error(py: Python<'_>, msg: String) -> PyErr {
    match py
        .import("wiredump.dissect.capture")
        .and_then(|m| m.getattr("CaptureError"))
        .and_then(|cls| cls.call1((msg.clone(),)))
    {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}

/// One capture, read and reassembled natively; iterate it for lists of event tuples.
#[pyclass(unsendable, module = "wiredump._engine")]
struct StreamReader {
    engine: StreamEngine,
    batch_records: usize,
}

#[pymethods]
impl StreamReader {
    /// `source`: a path ("-" for stdin) or a binary file object; `name`: how messages call a
    /// file object (default "stdin"); `server_ports`: ports that say which side is the
    /// server of a connection seen without its SYN; `max_out_of_order`: bytes held per direction.
    #[new]
    #[pyo3(signature = (source, server_ports, max_out_of_order, name=None, batch_records=4096))]
    fn new(
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        server_ports: Vec<u16>,
        max_out_of_order: usize,
        name: Option<String>,
        batch_records: usize,
    ) -> PyResult<Self> {
        let input = if let Ok(path) = source.extract::<String>() {
            Input::Path(path)
        } else if source.hasattr("read")? {
            let method = if source.hasattr("read1")? {
                "read1"
            } else {
                "read"
            };
            let reader = PyReader {
                obj: source.clone().unbind(),
                method,
            };
            Input::Reader(
                name.unwrap_or_else(|| "stdin".to_string()),
                Box::new(reader),
            )
        } else {
            return Err(PyTypeError::new_err(
                "source must be a path or a binary file object",
            ));
        };
        let reader = CaptureReader::open(input).map_err(|e| capture_error(py, e.0))?;
        Ok(StreamReader {
            engine: StreamEngine::new(reader, max_out_of_order, server_ports),
            batch_records: batch_records.max(1),
        })
    }

    /// Sets the server ports and the out-of-order bound; only before the first batch.
    #[pyo3(signature = (server_ports, max_out_of_order, max_connections=65_536, half_open_us=60_000_000, closed_linger_us=10_000_000, max_interfaces=crate::capture::MAX_INTERFACES))]
    fn configure(
        &mut self,
        server_ports: Vec<u16>,
        max_out_of_order: usize,
        max_connections: usize,
        half_open_us: i64,
        closed_linger_us: i64,
        max_interfaces: usize,
    ) -> PyResult<()> {
        if self.engine.packets != 0 || self.engine.finished() {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "configure() after reading began",
            ));
        }
        let retention = Retention {
            max_connections,
            half_open_us,
            closed_linger_us,
        };
        self.engine
            .configure(max_out_of_order, server_ports, retention);
        self.engine.reader.max_interfaces = max_interfaces;
        Ok(())
    }

    /// Swap a connection's client and server from now on (detection's decision).
    fn swap_roles(&mut self, stream: u64) {
        self.engine.tcp.swap_roles(stream);
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next batch of event tuples; StopIteration once the capture is read and flushed.
    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        if self.engine.finished() {
            return Ok(None);
        }
        let mut events = Vec::new();
        self.engine
            .step(self.batch_records, self.batch_records * 4, &mut events);
        let list = PyList::empty(py);
        for ev in events {
            list.append(self.to_tuple(py, ev)?)?;
        }
        Ok(Some(list))
    }

    /// The capture's name in messages.
    #[getter]
    fn name(&self) -> String {
        self.engine.reader.name.clone()
    }

    /// Why the capture ended early (None when it did not), once read.
    #[getter]
    fn truncated(&self) -> Option<String> {
        self.engine.reader.truncated.clone()
    }

    /// pcapng records skipped for an unsupported link type.
    #[getter]
    fn skipped_unknown_link(&self) -> u64 {
        self.engine.reader.skipped_unknown_link
    }

    /// Connections released after `half_open_us` without a byte of payload.
    #[getter]
    fn half_open_released(&self) -> u64 {
        self.engine.tcp.half_open_released
    }

    /// pcapng interface blocks past `max_interfaces` in their section (counted, not kept).
    #[getter]
    fn interfaces_not_kept(&self) -> u64 {
        self.engine.reader.interfaces_not_kept
    }

    /// Connections released early because `max_connections` were tracked at once.
    #[getter]
    fn evicted(&self) -> u64 {
        self.engine.tcp.evicted
    }

    /// Number of the last record read.
    #[getter]
    fn packets(&self) -> u64 {
        self.engine.packets
    }

    #[getter]
    fn compression(&self) -> Option<&'static str> {
        self.engine.reader.compression
    }

    #[getter]
    fn format(&self) -> &'static str {
        self.engine.reader.format_name()
    }

    /// Raw bytes taken from the input so far, for progress bars.
    #[getter]
    fn bytes_read(&self) -> u64 {
        self.engine.reader.bytes_read()
    }
}

impl StreamReader {
    fn to_tuple<'py>(&self, py: Python<'py>, ev: Event) -> PyResult<Bound<'py, PyTuple>> {
        Ok(match ev {
            Event::Record { number, ts_us } => (0u8, number, ts_us).into_pyobject(py)?,
            Event::TruncatedPacket {
                number,
                caplen,
                orig_len,
            } => (1u8, number, caplen, orig_len).into_pyobject(py)?,
            Event::Tcp(TcpEvent::Open {
                stream,
                client,
                client_port,
                server,
                server_port,
                first_ts_us,
            }) => (
                2u8,
                stream,
                client.to_string(),
                client_port,
                server.to_string(),
                server_port,
                first_ts_us,
            )
                .into_pyobject(py)?,
            Event::Tcp(TcpEvent::Data {
                stream,
                role,
                data,
                packet,
                ts_us,
            }) => (
                3u8,
                stream,
                role_name(role),
                PyBytes::new(py, &data),
                packet,
                ts_us,
            )
                .into_pyobject(py)?,
            Event::Tcp(TcpEvent::Gap {
                stream,
                role,
                size,
                packet,
                ts_us,
            }) => (4u8, stream, role_name(role), size, packet, ts_us).into_pyobject(py)?,
            Event::Tcp(TcpEvent::Close { stream, last_ts_us }) => {
                (5u8, stream, last_ts_us).into_pyobject(py)?
            }
            Event::Tcp(TcpEvent::Touch { stream, ts_us }) => {
                (9u8, stream, ts_us).into_pyobject(py)?
            }
            Event::Tcp(TcpEvent::SawSyn { stream }) => PyTuple::new(py, [10u64, stream])?,
            Event::Tcp(TcpEvent::Release { stream, row: c }) => {
                let counts = (
                    c.packets,
                    c.bytes_client,
                    c.bytes_server,
                    c.gaps,
                    c.retransmissions,
                    c.first_ts_us,
                    c.last_ts_us,
                );
                (11u8, stream, counts, c.state, c.last_packet).into_pyobject(py)?
            }
            Event::End => PyTuple::new(py, [7u8])?,
            Event::BadTimestamp { number, note } => (8u8, number, note).into_pyobject(py)?,
            Event::Tcp(TcpEvent::Anomaly {
                kind,
                detail,
                packet,
                stream,
            }) => (6u8, kind, detail, packet, stream).into_pyobject(py)?,
        })
    }
}

mod arrow;
mod convert;
mod dissector;
mod from_py;
mod heap;
mod kafka;
pub(crate) mod model;
mod parquet;
mod timeline;

/// The native engine's version.
#[pyfunction]
fn version() -> &'static str {
    crate::VERSION
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // A panic in protocol code is reported as an `internal_error` anomaly; it is not printed too.
    crate::shield::quiet_shielded_panics();
    heap::keep_freed_memory();
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_class::<StreamReader>()?;
    kafka::register(m)?;
    dissector::register(m)?;
    arrow::register(m)?;
    parquet::register(m)?;
    timeline::register(m)?;
    Ok(())
}
