//! Rust model records as the Python reference's objects (`wiredump.dissect.model`): the same
//! dataclasses every sink reads, so that Rust-made frames go through the timeline, export, stats
//! and check unchanged, and the differential tests compare like with like.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;

use crate::model::{Anomaly, Exchange, Fields, Frame, Message, TopicPartition, Value};

/// A `Frame` attribute the conversion fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FrameAttr {
    Anomalies,
    Awaiting,
    Context,
    CorrelationId,
    Data,
    Dst,
    DstPort,
    Error,
    ErrorCode,
    ExchangeDone,
    Fields,
    FirstPacket,
    Kind,
    LatencyUs,
    Length,
    Messages,
    MessagesCounted,
    Packet,
    Partitions,
    PeerPacket,
    Protocol,
    Released,
    Role,
    Spans,
    Src,
    SrcPort,
    Status,
    Stream,
    Summary,
    TsUs,
    Type,
    TypeCode,
    Version,
}

/// Every attribute the conversion fills, by its Python name (alphabetical: the order a frame is
/// built in is not declared here but read from the dataclass, see [`FrameOrder`]).
const FRAME_ATTRS: [(&str, FrameAttr); 33] = [
    ("anomalies", FrameAttr::Anomalies),
    ("awaiting", FrameAttr::Awaiting),
    ("context", FrameAttr::Context),
    ("correlation_id", FrameAttr::CorrelationId),
    ("data", FrameAttr::Data),
    ("dst", FrameAttr::Dst),
    ("dst_port", FrameAttr::DstPort),
    ("error", FrameAttr::Error),
    ("error_code", FrameAttr::ErrorCode),
    ("exchange_done", FrameAttr::ExchangeDone),
    ("fields", FrameAttr::Fields),
    ("first_packet", FrameAttr::FirstPacket),
    ("kind", FrameAttr::Kind),
    ("latency_us", FrameAttr::LatencyUs),
    ("length", FrameAttr::Length),
    ("messages", FrameAttr::Messages),
    ("messages_counted", FrameAttr::MessagesCounted),
    ("packet", FrameAttr::Packet),
    ("partitions", FrameAttr::Partitions),
    ("peer_packet", FrameAttr::PeerPacket),
    ("protocol", FrameAttr::Protocol),
    ("released", FrameAttr::Released),
    ("role", FrameAttr::Role),
    ("spans", FrameAttr::Spans),
    ("src", FrameAttr::Src),
    ("src_port", FrameAttr::SrcPort),
    ("status", FrameAttr::Status),
    ("stream", FrameAttr::Stream),
    ("summary", FrameAttr::Summary),
    ("ts_us", FrameAttr::TsUs),
    ("type", FrameAttr::Type),
    ("type_code", FrameAttr::TypeCode),
    ("version", FrameAttr::Version),
];

/// How a `Frame` is made, read from the dataclass (`wiredump.dissect.model.Frame`, the one
/// declaration of its attributes and their order) when the classes are loaded.
///
/// When every declared field is one the conversion fills, a frame is made with positional
/// arguments in the declared order, which binds faster than 33 keywords (a frame per line is
/// the timeline's hot path); a field the engine does not know (it must have a default) makes
/// the conversion use keywords instead.
#[derive(Clone, Debug)]
struct FrameOrder {
    /// The attributes to fill, with their names: in the dataclass's order when positional.
    attrs: Vec<(&'static str, FrameAttr)>,
    positional: bool,
}

impl FrameOrder {
    fn read(frame: &Bound<'_, PyAny>) -> PyResult<FrameOrder> {
        let py = frame.py();
        let dc = py.import("dataclasses")?;
        let missing = dc.getattr("MISSING")?;
        let mut attrs = Vec::with_capacity(FRAME_ATTRS.len());
        let mut positional = true;
        for f in dc.call_method1("fields", (frame,))?.try_iter()? {
            let f = f?;
            let name: String = f.getattr("name")?.extract()?;
            match FRAME_ATTRS.iter().find(|(n, _)| *n == name) {
                Some(&(n, a)) => attrs.push((n, a)),
                None => {
                    let no_default = f.getattr("default")?.is(&missing)
                        && f.getattr("default_factory")?.is(&missing);
                    if no_default {
                        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                            "Frame declares {name}, which the engine does not fill, without a default"
                        )));
                    }
                    positional = false;
                }
            }
        }
        // An attribute the dataclass lacks would be lost silently: the engine fills each one.
        for (n, _) in FRAME_ATTRS {
            if !attrs.iter().any(|(m, _)| *m == n) {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "Frame does not declare {n}, which the engine fills"
                )));
            }
        }
        Ok(FrameOrder { attrs, positional })
    }
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
    /// How a `Frame` is made.
    order: std::sync::Arc<FrameOrder>,
}

/// The classes as handles a `Dissector` keeps for its run: looked up once, not per record (an
/// import and five attribute lookups per record were a measurable part of the timeline).
pub struct Handles {
    frame: Py<PyAny>,
    message: Py<PyAny>,
    anomaly: Py<PyAny>,
    exchange: Py<PyAny>,
    topic_partition: Py<PyAny>,
    order: std::sync::Arc<FrameOrder>,
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
            order: c.order,
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
            order: self.order.clone(),
        }
    }
}

impl<'py> Classes<'py> {
    pub fn new(py: Python<'py>) -> PyResult<Classes<'py>> {
        let m = py.import("wiredump.dissect.model")?;
        let frame = m.getattr("Frame")?;
        Ok(Classes {
            order: std::sync::Arc::new(FrameOrder::read(&frame)?),
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
        // The parts that are Python objects of their own, each taken once.
        let mut fields = Some(fields);
        let mut msgs = Some(msgs.into_any());
        let mut anomalies = Some(anomalies.into_any());
        let mut partitions = Some(partitions);
        let order = &self.order;
        let mut values: Vec<Bound<'py, PyAny>> = Vec::with_capacity(order.attrs.len());
        for &(_, a) in &order.attrs {
            let none = || py.None().into_bound(py);
            values.push(match a {
                FrameAttr::Protocol => f.protocol.into_bound_py_any(py)?,
                FrameAttr::Type => f.type_.as_ref().into_bound_py_any(py)?,
                FrameAttr::TypeCode => f.type_code.into_bound_py_any(py)?,
                FrameAttr::Kind => f.kind.as_str().into_bound_py_any(py)?,
                FrameAttr::Version => f.version.into_bound_py_any(py)?,
                FrameAttr::CorrelationId => f.correlation_id.into_bound_py_any(py)?,
                FrameAttr::Status => f.status.as_str().into_bound_py_any(py)?,
                FrameAttr::ErrorCode => f.error_code.into_bound_py_any(py)?,
                FrameAttr::Error => f.error.as_deref().into_bound_py_any(py)?,
                FrameAttr::Summary => f.summary.as_str().into_bound_py_any(py)?,
                FrameAttr::Fields => fields.take().unwrap_or_else(none),
                FrameAttr::Messages => msgs.take().unwrap_or_else(none),
                FrameAttr::Anomalies => anomalies.take().unwrap_or_else(none),
                FrameAttr::Context => none(), // private to the protocol's session
                FrameAttr::Partitions => partitions.take().unwrap_or_else(none),
                FrameAttr::Role => f.role.as_str().into_bound_py_any(py)?,
                FrameAttr::Packet => f.packet.into_bound_py_any(py)?,
                FrameAttr::FirstPacket => f.first_packet.into_bound_py_any(py)?,
                FrameAttr::TsUs => f.ts_us.into_bound_py_any(py)?,
                FrameAttr::Stream => f.stream.into_bound_py_any(py)?,
                FrameAttr::Src => f.src.as_ref().into_bound_py_any(py)?,
                FrameAttr::SrcPort => f.src_port.into_bound_py_any(py)?,
                FrameAttr::Dst => f.dst.as_ref().into_bound_py_any(py)?,
                FrameAttr::DstPort => f.dst_port.into_bound_py_any(py)?,
                FrameAttr::Length => f.length.into_bound_py_any(py)?,
                FrameAttr::Data => f
                    .data
                    .as_deref()
                    .map(|d| PyBytes::new(py, d))
                    .into_bound_py_any(py)?,
                FrameAttr::PeerPacket => f.peer_packet.into_bound_py_any(py)?,
                FrameAttr::LatencyUs => f.latency_us.into_bound_py_any(py)?,
                FrameAttr::Awaiting => f.awaiting.into_bound_py_any(py)?,
                FrameAttr::ExchangeDone => f.exchange_done.into_bound_py_any(py)?,
                FrameAttr::Released => f.released.into_bound_py_any(py)?,
                FrameAttr::MessagesCounted => f.messages_counted.into_bound_py_any(py)?,
                FrameAttr::Spans => {
                    if self.spans {
                        span_dict(py, &f.fields)?.into_any()
                    } else {
                        none()
                    }
                }
            });
        }
        if order.positional {
            return self.frame.call1(PyTuple::new(py, values)?);
        }
        let kw = PyDict::new(py);
        for (&(name, a), v) in order.attrs.iter().zip(values) {
            if a != FrameAttr::Context {
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
