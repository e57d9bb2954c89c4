//! Rust model records as the Python reference's objects (`wiredump.dissect.model`): the same
//! dataclasses every sink reads, so that Rust-made frames go through the timeline, export, stats
//! and check unchanged, and the differential tests compare like with like.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;

use crate::model::{Anomaly, Exchange, Fields, Frame, Message, TopicPartition, Value};

/// The `Frame` fields the conversion fills, in the order `wiredump.dissect.model.Frame` declares
/// them: when the class declares exactly these first (any fields after them keep their
/// defaults), a frame is made with positional arguments, which binds faster than 32 keywords
/// (a frame per line is the timeline's hot path); otherwise with keywords.
const FRAME_ORDER: [&str; 33] = [
    "protocol",
    "type",
    "type_code",
    "kind",
    "version",
    "correlation_id",
    "status",
    "error_code",
    "error",
    "summary",
    "fields",
    "messages",
    "anomalies",
    "context",
    "partitions",
    "role",
    "packet",
    "first_packet",
    "ts_us",
    "stream",
    "src",
    "src_port",
    "dst",
    "dst_port",
    "length",
    "data",
    "peer_packet",
    "latency_us",
    "awaiting",
    "exchange_done",
    "released",
    "messages_counted",
    "spans",
];

/// Whether `Frame`'s dataclass fields start with [`FRAME_ORDER`] and those after it have
/// defaults (so positional arguments bind each value to its own field).
fn frame_is_positional(frame: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = frame.py();
    let dc = py.import("dataclasses")?;
    let missing = dc.getattr("MISSING")?;
    let declared = dc.call_method1("fields", (frame,))?;
    let mut n = 0;
    for (i, f) in declared.try_iter()?.enumerate() {
        let f = f?;
        let name: String = f.getattr("name")?.extract()?;
        match FRAME_ORDER.get(i) {
            Some(want) if *want != name => return Ok(false),
            Some(_) => {}
            None => {
                let no_default = f.getattr("default")?.is(&missing)
                    && f.getattr("default_factory")?.is(&missing);
                if no_default {
                    return Ok(false);
                }
            }
        }
        n += 1;
    }
    Ok(n >= FRAME_ORDER.len())
}

/// The Python classes, looked up once per conversion run (not per record).
pub struct Classes<'py> {
    frame: Bound<'py, PyAny>,
    message: Bound<'py, PyAny>,
    anomaly: Bound<'py, PyAny>,
    exchange: Bound<'py, PyAny>,
    topic_partition: Bound<'py, PyAny>,
    /// Convert each frame's `fields` and `partitions` (see [`Handles::bind`]).
    detail: bool,
    /// Convert each frame's field spans (`Frame.spans`, `pipeline.Options.spans`).
    spans: bool,
    /// `Frame` takes [`FRAME_ORDER`] positionally.
    positional: bool,
}

/// The classes as handles a `Dissector` keeps for its run: looked up once, not per record (an
/// import and five attribute lookups per record were a measurable part of the timeline).
pub struct Handles {
    frame: Py<PyAny>,
    message: Py<PyAny>,
    anomaly: Py<PyAny>,
    exchange: Py<PyAny>,
    topic_partition: Py<PyAny>,
    positional: bool,
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
            positional: c.positional,
        })
    }

    /// The classes bound for one conversion. `detail` false leaves every frame's `fields` empty
    /// and its `partitions` None: sinks that read neither (the plain timeline, see
    /// `pipeline.Options.detail`) then pay no Python object per decoded field.
    pub fn bind<'py>(&self, py: Python<'py>, detail: bool, spans: bool) -> Classes<'py> {
        Classes {
            frame: self.frame.bind(py).clone(),
            message: self.message.bind(py).clone(),
            anomaly: self.anomaly.bind(py).clone(),
            exchange: self.exchange.bind(py).clone(),
            topic_partition: self.topic_partition.bind(py).clone(),
            detail,
            spans,
            positional: self.positional,
        }
    }
}

impl<'py> Classes<'py> {
    pub fn new(py: Python<'py>) -> PyResult<Classes<'py>> {
        let m = py.import("wiredump.dissect.model")?;
        let frame = m.getattr("Frame")?;
        Ok(Classes {
            positional: frame_is_positional(&frame)?,
            frame,
            message: m.getattr("Message")?,
            anomaly: m.getattr("Anomaly")?,
            exchange: m.getattr("Exchange")?,
            topic_partition: m.getattr("TopicPartition")?,
            detail: true,
            spans: false,
        })
    }

    pub fn frame(&self, f: &Frame) -> PyResult<Bound<'py, PyAny>> {
        let py = self.frame.py();
        let fields = if self.detail {
            fields(py, &f.fields)?.into_any()
        } else {
            PyDict::new(py).into_any()
        };
        let msgs = PyList::empty(py);
        for m in &f.messages {
            msgs.append(self.message(m)?)?;
        }
        let anomalies = PyList::empty(py);
        for a in &f.anomalies {
            anomalies.append(self.anomaly(a)?)?;
        }
        let partitions = match &f.partitions {
            Some(ps) if self.detail => {
                let l = PyList::empty(py);
                for p in ps {
                    l.append(self.topic_partition(p)?)?;
                }
                l.into_any()
            }
            _ => py.None().into_bound(py),
        };
        // In `FRAME_ORDER`, the Python dataclass's order.
        let values: [Bound<'py, PyAny>; FRAME_ORDER.len()] = [
            f.protocol.into_bound_py_any(py)?,
            f.type_.as_ref().into_bound_py_any(py)?,
            f.type_code.into_bound_py_any(py)?,
            f.kind.as_str().into_bound_py_any(py)?,
            f.version.into_bound_py_any(py)?,
            f.correlation_id.into_bound_py_any(py)?,
            f.status.as_str().into_bound_py_any(py)?,
            f.error_code.into_bound_py_any(py)?,
            f.error.as_deref().into_bound_py_any(py)?,
            f.summary.as_str().into_bound_py_any(py)?,
            fields,
            msgs.into_any(),
            anomalies.into_any(),
            py.None().into_bound(py), // context: private to the protocol's session
            partitions,
            f.role.as_str().into_bound_py_any(py)?,
            f.packet.into_bound_py_any(py)?,
            f.first_packet.into_bound_py_any(py)?,
            f.ts_us.into_bound_py_any(py)?,
            f.stream.into_bound_py_any(py)?,
            f.src.as_ref().into_bound_py_any(py)?,
            f.src_port.into_bound_py_any(py)?,
            f.dst.as_ref().into_bound_py_any(py)?,
            f.dst_port.into_bound_py_any(py)?,
            f.length.into_bound_py_any(py)?,
            f.data
                .as_deref()
                .map(|d| PyBytes::new(py, d))
                .into_bound_py_any(py)?,
            f.peer_packet.into_bound_py_any(py)?,
            f.latency_us.into_bound_py_any(py)?,
            f.awaiting.into_bound_py_any(py)?,
            f.exchange_done.into_bound_py_any(py)?,
            f.released.into_bound_py_any(py)?,
            f.messages_counted.into_bound_py_any(py)?,
            if self.spans {
                span_dict(py, &f.fields)?.into_any()
            } else {
                py.None().into_bound(py)
            },
        ];
        if self.positional {
            return self.frame.call1(PyTuple::new(py, values)?);
        }
        let kw = PyDict::new(py);
        for (name, v) in FRAME_ORDER.iter().zip(values) {
            if *name != "context" {
                kw.set_item(name, v)?;
            }
        }
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

/// `Frame.spans`: dotted path -> `(start, end)` for every field with a span.
fn span_dict<'py>(py: Python<'py>, f: &Fields) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (path, start, end) in spans(f) {
        d.set_item(path, (start, end))?;
    }
    Ok(d)
}

/// Every field's span as `(dotted path, start, end)`, list items by index (`topics.0.name`), for
/// `-x --mark`.
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
