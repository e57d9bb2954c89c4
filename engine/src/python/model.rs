//! Rust model records as the Python reference's objects (`wiredump.dissect.model`): the same
//! dataclasses every sink reads, so that Rust-made frames go through the timeline, export, stats
//! and check unchanged, and the differential tests compare like with like.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList, PyString, PyTuple};

use crate::model::{Anomaly, Exchange, Fields, Frame, Message, TopicPartition, Value};

/// The Python classes, looked up once per conversion run (not per record).
pub struct Classes<'py> {
    frame: Bound<'py, PyAny>,
    message: Bound<'py, PyAny>,
    anomaly: Bound<'py, PyAny>,
    exchange: Bound<'py, PyAny>,
    topic_partition: Bound<'py, PyAny>,
    /// Convert each frame's `fields` and `partitions` (see [`Handles::bind`]).
    detail: bool,
}

/// The classes as handles a `Dissector` keeps for its run: looked up once, not per record (an
/// import and five attribute lookups per record were a measurable part of the timeline).
pub struct Handles {
    frame: Py<PyAny>,
    message: Py<PyAny>,
    anomaly: Py<PyAny>,
    exchange: Py<PyAny>,
    topic_partition: Py<PyAny>,
}

impl Handles {
    pub fn load(py: Python<'_>) -> PyResult<Handles> {
        let c = Classes::new(py)?;
        Ok(Handles {
            frame: c.frame.unbind(),
            message: c.message.unbind(),
            anomaly: c.anomaly.unbind(),
            exchange: c.exchange.unbind(),
            topic_partition: c.topic_partition.unbind(),
        })
    }

    /// The classes bound for one conversion. `detail` false leaves every frame's `fields` empty
    /// and its `partitions` None: sinks that read neither (the plain timeline, see
    /// `pipeline.Options.detail`) then pay no Python object per decoded field.
    pub fn bind<'py>(&self, py: Python<'py>, detail: bool) -> Classes<'py> {
        Classes {
            frame: self.frame.bind(py).clone(),
            message: self.message.bind(py).clone(),
            anomaly: self.anomaly.bind(py).clone(),
            exchange: self.exchange.bind(py).clone(),
            topic_partition: self.topic_partition.bind(py).clone(),
            detail,
        }
    }
}

impl<'py> Classes<'py> {
    pub fn new(py: Python<'py>) -> PyResult<Classes<'py>> {
        let m = py.import("wiredump.dissect.model")?;
        Ok(Classes {
            frame: m.getattr("Frame")?,
            message: m.getattr("Message")?,
            anomaly: m.getattr("Anomaly")?,
            exchange: m.getattr("Exchange")?,
            topic_partition: m.getattr("TopicPartition")?,
            detail: true,
        })
    }

    pub fn frame(&self, f: &Frame) -> PyResult<Bound<'py, PyAny>> {
        let py = self.frame.py();
        let kw = PyDict::new(py);
        kw.set_item("protocol", f.protocol)?;
        kw.set_item("type", f.type_.as_ref())?;
        kw.set_item("type_code", f.type_code)?;
        kw.set_item("kind", f.kind.as_str())?;
        kw.set_item("version", f.version)?;
        kw.set_item("correlation_id", f.correlation_id)?;
        kw.set_item("status", f.status.as_str())?;
        kw.set_item("error_code", f.error_code)?;
        kw.set_item("error", f.error.as_deref())?;
        kw.set_item("summary", &f.summary)?;
        if self.detail {
            kw.set_item("fields", fields(py, &f.fields)?)?;
        }
        let msgs = PyList::empty(py);
        for m in &f.messages {
            msgs.append(self.message(m)?)?;
        }
        kw.set_item("messages", msgs)?;
        let anomalies = PyList::empty(py);
        for a in &f.anomalies {
            anomalies.append(self.anomaly(a)?)?;
        }
        kw.set_item("anomalies", anomalies)?;
        match &f.partitions {
            None => kw.set_item("partitions", py.None())?,
            Some(_) if !self.detail => kw.set_item("partitions", py.None())?,
            Some(ps) => {
                let l = PyList::empty(py);
                for p in ps {
                    l.append(self.topic_partition(p)?)?;
                }
                kw.set_item("partitions", l)?;
            }
        }
        kw.set_item("role", f.role.as_str())?;
        kw.set_item("packet", f.packet)?;
        kw.set_item("first_packet", f.first_packet)?;
        kw.set_item("ts_us", f.ts_us)?;
        kw.set_item("stream", f.stream)?;
        kw.set_item("src", f.src.as_ref())?;
        kw.set_item("src_port", f.src_port)?;
        kw.set_item("dst", f.dst.as_ref())?;
        kw.set_item("dst_port", f.dst_port)?;
        kw.set_item("length", f.length)?;
        kw.set_item("data", f.data.as_deref().map(|d| PyBytes::new(py, d)))?;
        kw.set_item("peer_packet", f.peer_packet)?;
        kw.set_item("latency_us", f.latency_us)?;
        kw.set_item("awaiting", f.awaiting)?;
        kw.set_item("exchange_done", f.exchange_done)?;
        kw.set_item("released", f.released)?;
        kw.set_item("messages_counted", f.messages_counted)?;
        self.frame.call((), Some(&kw))
    }

    pub fn message(&self, m: &Message) -> PyResult<Bound<'py, PyAny>> {
        let py = self.message.py();
        let kw = PyDict::new(py);
        kw.set_item("direction", m.direction.map(|d| d.as_str()))?;
        kw.set_item("value_size", m.value_size)?;
        kw.set_item("topic", m.topic.as_deref())?;
        kw.set_item("partition", m.partition)?;
        kw.set_item("offset", m.offset)?;
        kw.set_item("message_id", m.message_id.as_deref())?;
        kw.set_item("key", m.key.as_deref().map(|b| PyBytes::new(py, b)))?;
        kw.set_item("value", m.value.as_deref().map(|b| PyBytes::new(py, b)))?;
        kw.set_item("timestamp_ms", m.timestamp_ms)?;
        match &m.headers {
            None => kw.set_item("headers", py.None())?,
            Some(hs) => {
                let l = PyList::empty(py);
                for (k, v) in hs {
                    let v = v.as_deref().map(|b| PyBytes::new(py, b));
                    l.append(PyTuple::new(
                        py,
                        [k.into_pyobject(py)?.into_any(), v.into_pyobject(py)?],
                    )?)?;
                }
                kw.set_item("headers", l)?;
            }
        }
        kw.set_item("compression", m.compression.as_deref())?;
        kw.set_item("checksum_ok", m.checksum_ok)?;
        match &m.detail {
            None => kw.set_item("detail", py.None())?,
            Some(d) => kw.set_item("detail", fields(py, d)?)?,
        }
        kw.set_item("offset_delta", m.offset_delta)?;
        self.message.call((), Some(&kw))
    }

    pub fn topic_partition(&self, p: &TopicPartition) -> PyResult<Bound<'py, PyAny>> {
        self.topic_partition.call1((
            p.topic.as_deref(),
            p.partition,
            p.error_code,
            p.error.as_deref(),
            p.offset,
            p.high_watermark,
            p.log_start_offset,
            p.records,
        ))
    }

    pub fn anomaly(&self, a: &Anomaly) -> PyResult<Bound<'py, PyAny>> {
        self.anomaly.call1((
            a.kind.as_ref(),
            &a.detail,
            a.offset,
            a.packet,
            a.stream,
            a.protocol,
        ))
    }

    pub fn exchange(&self, e: &Exchange) -> PyResult<Bound<'py, PyAny>> {
        let py = self.exchange.py();
        let kw = PyDict::new(py);
        kw.set_item("stream", e.stream)?;
        kw.set_item("protocol", e.protocol)?;
        kw.set_item("type", e.type_.as_ref())?;
        kw.set_item("correlation_id", e.correlation_id)?;
        kw.set_item("status", e.status.as_str())?;
        kw.set_item("request_packet", e.request_packet)?;
        kw.set_item("response_packet", e.response_packet)?;
        kw.set_item("request_ts_us", e.request_ts_us)?;
        kw.set_item("response_ts_us", e.response_ts_us)?;
        kw.set_item("latency_us", e.latency_us)?;
        kw.set_item("error_code", e.error_code)?;
        self.exchange.call((), Some(&kw))
    }
}

/// A decoded value as the JSON-able Python value the reference decoders build.
pub fn value<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::UInt(u) => u.into_pyobject(py)?.into_any(),
        Value::Float(f) => PyFloat::new(py, *f).into_any(),
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::Bytes(b) => PyBytes::new(py, b).into_any(),
        Value::List(items) => {
            let l = PyList::empty(py);
            for i in items {
                l.append(value(py, i)?)?;
            }
            l.into_any()
        }
        Value::Map(f) => fields(py, f)?.into_any(),
    })
}

/// Fields as a dict, in order.
pub fn fields<'py>(py: Python<'py>, f: &Fields) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for field in &f.0 {
        d.set_item(field.name.as_ref(), value(py, &field.value)?)?;
    }
    Ok(d)
}

/// Every field's span as `(dotted path, start, end)`, list items by index (`topics.0.name`), for
/// `-x --mark` and the span tests.
pub fn spans(f: &Fields) -> Vec<(String, u32, u32)> {
    fn walk(prefix: &str, f: &Fields, out: &mut Vec<(String, u32, u32)>) {
        for field in &f.0 {
            let path = if prefix.is_empty() {
                field.name.to_string()
            } else {
                format!("{prefix}.{}", field.name)
            };
            if let Some(s) = field.span {
                out.push((path.clone(), s.start, s.end));
            }
            value_spans(&path, &field.value, out);
        }
    }
    fn value_spans(path: &str, v: &Value, out: &mut Vec<(String, u32, u32)>) {
        match v {
            Value::Map(m) => walk(path, m, out),
            Value::List(items) => {
                for (i, item) in items.iter().enumerate() {
                    value_spans(&format!("{path}.{i}"), item, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("", f, &mut out);
    out
}
