//! The Python pipeline's records (`wiredump.dissect.pipeline.Event` holding `model.py` objects)
//! turned into the engine's model records.
//!
//! Why: the Rust table builders ([`crate::arrow_out`]) can be checked against the Python
//! reference today, on every capture, before the Rust framer and sessions produce their own
//! records: the same events go through Python's `TableBuilder` and, converted here, through the
//! Rust one, and the tables must be equal. Decoded values (`Frame.fields`, `Message.detail`)
//! become [`Value`]s the way the reference's JSON writer sees them: bytes-likes as bytes, tuples
//! as lists, sets as lists sorted by `repr`, non-string keys as orjson names them, other objects
//! as their `str()`. What the model cannot hold (an integer beyond 64 bits, a dataclass or a
//! datetime inside a decode — no decoder makes them) is refused with a `TypeError` rather than
//! converted into something else. A frame's own anomalies are not copied into it: the pipeline
//! emits them as anomaly events of their own, and the tables take them from there.

use std::borrow::Cow;
use std::rc::Rc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PyMemoryView, PySet,
    PyString, PyTuple,
};

use crate::detail_json::orjson_float;
use crate::model::{
    Anomaly, ConnectionSummary, Direction, Exchange, ExchangeStatus, Field, Fields, Frame, Kind,
    Message, Role, Status, TopicPartition, Value,
};

/// One pipeline record, converted. The frame is boxed: it is several times the size of the
/// other records, which would otherwise all take its size.
pub enum Record {
    Frame(Box<Frame>),
    Anomaly(Anomaly),
    Exchange(Exchange),
    Connection(ConnectionSummary),
}

/// The converter of one call: Python helpers looked up once, and the names interned so far.
pub struct Converter<'py> {
    py: Python<'py>,
    sorted: Bound<'py, PyAny>,
    repr: Bound<'py, PyAny>,
    enum_type: Bound<'py, PyAny>,
    refused: Bound<'py, PyTuple>,
    /// Protocol names and connection states as the model's `&'static str`.
    ///
    /// The model names a protocol with a `&'static str` (the registry's constant); a name that
    /// comes from Python is the registry's when it has it; any other (a test's made-up name) has to
    /// be made static, which leaks it, once per conversion (a handful of bytes). This path serves
    /// tests and benchmarks only; the engine's own records never come through here.
    names: Vec<&'static str>,
    last_capture: Option<(String, Rc<str>)>,
}

const STATES: [&str; 4] = ["open", "closed", "reset", "midstream"];

impl<'py> Converter<'py> {
    pub fn new(py: Python<'py>) -> PyResult<Converter<'py>> {
        let builtins = py.import("builtins")?;
        let datetime = py.import("datetime")?;
        let uuid = py.import("uuid")?;
        let refused = PyTuple::new(
            py,
            [
                datetime.getattr("date")?,
                datetime.getattr("time")?,
                datetime.getattr("timedelta")?,
                uuid.getattr("UUID")?,
            ],
        )?;
        Ok(Converter {
            py,
            sorted: builtins.getattr("sorted")?,
            repr: builtins.getattr("repr")?,
            enum_type: py.import("enum")?.getattr("Enum")?,
            refused,
            names: Vec::new(),
            last_capture: None,
        })
    }

    fn intern(&mut self, s: &str) -> &'static str {
        if let Some(n) = STATES.iter().chain(self.names.iter()).find(|n| **n == s) {
            return n;
        }
        // The registry's names are static already: only a name it lacks is leaked.
        if let Some(n) = crate::registry::protocols()
            .iter()
            .map(|p| p.name())
            .find(|n| *n == s)
        {
            self.names.push(n);
            return n;
        }
        let leaked: &'static str = Box::leak(s.to_owned().into_boxed_str());
        self.names.push(leaked);
        leaked
    }

    fn capture(&mut self, name: String) -> Rc<str> {
        match &self.last_capture {
            Some((n, rc)) if *n == name => rc.clone(),
            _ => {
                let rc: Rc<str> = Rc::from(name.as_str());
                self.last_capture = Some((name, rc.clone()));
                rc
            }
        }
    }

    /// One pipeline event: `None` for the events that make no row (`capture_end`).
    pub fn event(&mut self, ev: &Bound<'py, PyAny>) -> PyResult<Option<(Rc<str>, Record)>> {
        let kind: String = ev.getattr("kind")?.extract()?;
        let obj = ev.getattr("obj")?;
        let record = match kind.as_str() {
            "frame" => Record::Frame(Box::new(self.frame(&obj)?)),
            "anomaly" => Record::Anomaly(self.anomaly(&obj)?),
            "exchange" => Record::Exchange(self.exchange(&obj)?),
            "connection" => Record::Connection(self.connection(&obj)?),
            _ => return Ok(None),
        };
        let capture = self.capture(ev.getattr("capture")?.extract()?);
        Ok(Some((capture, record)))
    }

    fn frame(&mut self, o: &Bound<'py, PyAny>) -> PyResult<Frame> {
        let protocol: String = o.getattr("protocol")?.extract()?;
        let type_: String = o.getattr("type")?.extract()?;
        let mut f = Frame::new(
            self.intern(&protocol),
            type_,
            o.getattr("type_code")?.extract()?,
        );
        f.kind = match str_attr(o, "kind")?.as_str() {
            "request" => Kind::Request,
            "response" => Kind::Response,
            "event" => Kind::Event,
            k => return Err(PyValueError::new_err(format!("frame kind {k:?}"))),
        };
        f.version = opt_fit(o, "version")?;
        f.correlation_id = opt_fit(o, "correlation_id")?;
        f.status = status(&str_attr(o, "status")?)?;
        f.error_code = opt_fit(o, "error_code")?;
        f.error = o
            .getattr("error")?
            .extract::<Option<String>>()?
            .map(Cow::Owned);
        f.summary = o.getattr("summary")?.extract()?;
        f.fields = self.fields(&o.getattr("fields")?, 1)?;
        for m in o.getattr("messages")?.try_iter()? {
            let m = self.message(&m?)?;
            f.messages.push(m);
        }
        f.role = match str_attr(o, "role")?.as_str() {
            "client" => Role::Client,
            "server" => Role::Server,
            r => return Err(PyValueError::new_err(format!("frame role {r:?}"))),
        };
        f.packet = o.getattr("packet")?.extract()?;
        f.first_packet = o.getattr("first_packet")?.extract()?;
        f.ts_us = o.getattr("ts_us")?.extract()?;
        f.stream = o.getattr("stream")?.extract()?;
        f.src = Rc::from(str_attr(o, "src")?.as_str());
        f.src_port = o.getattr("src_port")?.extract()?;
        f.dst = Rc::from(str_attr(o, "dst")?.as_str());
        f.dst_port = o.getattr("dst_port")?.extract()?;
        f.length = o.getattr("length")?.extract()?;
        f.peer_packet = o.getattr("peer_packet")?.extract()?;
        f.latency_us = opt_fit(o, "latency_us")?;
        let parts = o.getattr("partitions")?;
        if !parts.is_none() {
            let mut out = Vec::new();
            for p in parts.try_iter()? {
                out.push(topic_partition(&p?)?);
            }
            f.partitions = Some(out);
        }
        Ok(f)
    }

    fn message(&mut self, o: &Bound<'py, PyAny>) -> PyResult<Message> {
        let direction = match str_attr(o, "direction")?.as_str() {
            "produce" => Direction::Produce,
            "deliver" => Direction::Deliver,
            d => return Err(PyValueError::new_err(format!("message direction {d:?}"))),
        };
        let headers = o.getattr("headers")?;
        let headers = if headers.is_none() {
            None
        } else {
            let mut out = Vec::new();
            for pair in headers.try_iter()? {
                let (k, v): (Bound<'py, PyAny>, Bound<'py, PyAny>) = pair?.extract()?;
                // A bytes key is decoded as the reference's column() decodes it.
                let key = match bytes_like(&k)? {
                    Some(b) => String::from_utf8_lossy(&b).into_owned(),
                    None => k.str()?.to_string(),
                };
                out.push((
                    key,
                    if v.is_none() {
                        None
                    } else {
                        Some(bytes_of(&v)?)
                    },
                ));
            }
            Some(out)
        };
        let detail = o.getattr("detail")?;
        Ok(Message {
            direction: Some(direction),
            value_size: o.getattr("value_size")?.extract()?,
            topic: o.getattr("topic")?.extract()?,
            partition: opt_fit(o, "partition")?,
            offset: opt_fit(o, "offset")?,
            message_id: o.getattr("message_id")?.extract()?,
            key: opt_bytes(&o.getattr("key")?)?,
            value: opt_bytes(&o.getattr("value")?)?,
            timestamp_ms: opt_fit(o, "timestamp_ms")?,
            headers,
            compression: o
                .getattr("compression")?
                .extract::<Option<String>>()?
                .map(Cow::Owned),
            checksum_ok: o.getattr("checksum_ok")?.extract()?,
            detail: if detail.is_none() {
                None
            } else {
                Some(std::rc::Rc::new(self.fields(&detail, 1)?))
            },
            offset_delta: opt_fit(o, "offset_delta")?,
        })
    }

    fn anomaly(&mut self, o: &Bound<'py, PyAny>) -> PyResult<Anomaly> {
        let protocol: Option<String> = o.getattr("protocol")?.extract()?;
        let mut a = Anomaly::new(str_attr(o, "kind")?, str_attr(o, "detail")?);
        a.offset = o.getattr("offset")?.extract()?;
        a.packet = o.getattr("packet")?.extract()?;
        a.stream = o.getattr("stream")?.extract()?;
        a.protocol = protocol.map(|p| self.intern(&p));
        Ok(a)
    }

    fn exchange(&mut self, o: &Bound<'py, PyAny>) -> PyResult<Exchange> {
        let protocol = self.intern(&str_attr(o, "protocol")?);
        Ok(Exchange {
            stream: o.getattr("stream")?.extract()?,
            protocol,
            type_: Cow::Owned(str_attr(o, "type")?),
            correlation_id: opt_fit(o, "correlation_id")?,
            status: match str_attr(o, "status")?.as_str() {
                "answered" => ExchangeStatus::Answered,
                "unanswered" => ExchangeStatus::Unanswered,
                "no_request" => ExchangeStatus::NoRequest,
                "no_response_expected" => ExchangeStatus::NoResponseExpected,
                s => return Err(PyValueError::new_err(format!("exchange status {s:?}"))),
            },
            request_packet: o.getattr("request_packet")?.extract()?,
            response_packet: o.getattr("response_packet")?.extract()?,
            request_ts_us: opt_fit(o, "request_ts_us")?,
            response_ts_us: opt_fit(o, "response_ts_us")?,
            latency_us: opt_fit(o, "latency_us")?,
            error_code: opt_fit(o, "error_code")?,
        })
    }

    fn connection(&mut self, o: &Bound<'py, PyAny>) -> PyResult<ConnectionSummary> {
        let protocol: Option<String> = o.getattr("protocol")?.extract()?;
        Ok(ConnectionSummary {
            stream: o.getattr("stream")?.extract()?,
            client: Rc::from(str_attr(o, "client")?.as_str()),
            client_port: o.getattr("client_port")?.extract()?,
            server: Rc::from(str_attr(o, "server")?.as_str()),
            server_port: o.getattr("server_port")?.extract()?,
            protocol: protocol.map(|p| self.intern(&p)),
            packets: o.getattr("packets")?.extract()?,
            bytes_client: o.getattr("bytes_client")?.extract()?,
            bytes_server: o.getattr("bytes_server")?.extract()?,
            frames: o.getattr("frames")?.extract()?,
            gaps: o.getattr("gaps")?.extract()?,
            retransmissions: o.getattr("retransmissions")?.extract()?,
            first_ts_us: o.getattr("first_ts_us")?.extract()?,
            last_ts_us: o.getattr("last_ts_us")?.extract()?,
            state: self.intern(&str_attr(o, "state")?),
        })
    }

    /// A decode (a dict) as [`Fields`], keys in order, repeated keys kept (as orjson writes them).
    fn fields(&mut self, o: &Bound<'py, PyAny>, depth: usize) -> PyResult<Fields> {
        let d = o
            .cast::<PyDict>()
            .map_err(|_| PyTypeError::new_err("a decode is a dict"))?;
        let mut out = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            out.push(Field {
                name: Cow::Owned(self.key(&k)?),
                value: self.value(&v, depth)?,
                span: None,
            });
        }
        Ok(Fields(out))
    }

    /// A dict key as orjson's `OPT_NON_STR_KEYS` names it.
    fn key(&self, k: &Bound<'py, PyAny>) -> PyResult<String> {
        if let Ok(s) = k.cast::<PyString>() {
            return Ok(s.to_str()?.to_owned());
        }
        if k.is_none() {
            return Ok("null".into());
        }
        if let Ok(b) = k.cast::<PyBool>() {
            return Ok(if b.is_true() { "true" } else { "false" }.into());
        }
        if k.is_instance_of::<PyInt>() {
            return Ok(int_value(k)?.to_string());
        }
        if let Ok(x) = k.cast::<PyFloat>() {
            return Ok(orjson_float(x.value()));
        }
        Err(PyTypeError::new_err(format!(
            "a decode key of type {} (no decoder makes one)",
            k.get_type().name()?
        )))
    }

    fn value(&mut self, v: &Bound<'py, PyAny>, depth: usize) -> PyResult<Value> {
        if depth > 1000 {
            return Err(PyValueError::new_err("a decode nested beyond 1000 levels"));
        }
        if v.is_none() {
            return Ok(Value::Null);
        }
        if let Ok(b) = v.cast::<PyBool>() {
            return Ok(Value::Bool(b.is_true()));
        }
        if v.is_instance_of::<PyInt>() {
            return match int_value(v)? {
                IntValue::Signed(i) => Ok(Value::Int(i)),
                IntValue::Unsigned(u) => Ok(Value::UInt(u)),
            };
        }
        if let Ok(x) = v.cast_exact::<PyFloat>() {
            return Ok(Value::Float(x.value()));
        }
        if let Ok(s) = v.cast::<PyString>() {
            return Ok(Value::Str(s.to_str()?.to_owned()));
        }
        if let Some(b) = bytes_like(v)? {
            return Ok(Value::Bytes(b));
        }
        if v.is_instance_of::<PyDict>() {
            return Ok(Value::Map(self.fields(v, depth + 1)?));
        }
        if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
            return self.list(v, depth);
        }
        if v.is_instance_of::<PySet>() || v.is_instance_of::<PyFrozenSet>() {
            // As `_json_default`: sorted by repr, so the same set gives the same text every run.
            let kwargs = PyDict::new(self.py);
            kwargs.set_item("key", &self.repr)?;
            let items = self.sorted.call((v,), Some(&kwargs))?;
            return self.list(&items, depth);
        }
        if v.is_instance(&self.enum_type)? {
            return self.value(&v.getattr("value")?, depth);
        }
        if v.hasattr("__dataclass_fields__")? || v.is_instance(self.refused.as_any())? {
            return Err(PyTypeError::new_err(format!(
                "a {} inside a decode (orjson writes it natively; no decoder makes one)",
                v.get_type().name()?
            )));
        }
        // Anything else: its str(), as `_json_default` gives orjson.
        Ok(Value::Str(v.str()?.to_str()?.to_owned()))
    }

    fn list(&mut self, v: &Bound<'py, PyAny>, depth: usize) -> PyResult<Value> {
        let mut out = Vec::new();
        for item in v.try_iter()? {
            out.push(self.value(&item?, depth + 1)?);
        }
        Ok(Value::List(out))
    }
}

enum IntValue {
    Signed(i64),
    Unsigned(u64),
}

impl std::fmt::Display for IntValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IntValue::Signed(i) => write!(f, "{i}"),
            IntValue::Unsigned(u) => write!(f, "{u}"),
        }
    }
}

fn int_value(v: &Bound<'_, PyAny>) -> PyResult<IntValue> {
    if let Ok(i) = v.extract::<i64>() {
        return Ok(IntValue::Signed(i));
    }
    if let Ok(u) = v.extract::<u64>() {
        return Ok(IntValue::Unsigned(u));
    }
    Err(PyTypeError::new_err(
        "an integer beyond 64 bits in a decode (the model holds 64-bit values)",
    ))
}

/// A `TopicPartition`; integers that do not fit its Rust fields are null (none of its columns is
/// wider).
fn topic_partition(o: &Bound<'_, PyAny>) -> PyResult<TopicPartition> {
    Ok(TopicPartition {
        topic: o.getattr("topic")?.extract()?,
        partition: opt_fit(o, "partition")?,
        error_code: opt_fit(o, "error_code")?,
        error: o.getattr("error")?.extract()?,
        offset: opt_fit(o, "offset")?,
        high_watermark: opt_fit(o, "high_watermark")?,
        log_start_offset: opt_fit(o, "log_start_offset")?,
        records: opt_fit(o, "records")?,
    })
}

fn str_attr(o: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    o.getattr(name)?.extract()
}

/// An optional integer attribute for a column of type `T`: a value that does not fit is null,
/// as the reference's `column()` makes it.
fn opt_fit<'py, T>(o: &Bound<'py, PyAny>, name: &str) -> PyResult<Option<T>>
where
    T: for<'a> FromPyObject<'a, 'py>,
{
    let v = o.getattr(name)?;
    if v.is_none() {
        return Ok(None);
    }
    if !v.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!("{name} is not an integer")));
    }
    Ok(v.extract::<T>().ok())
}

fn bytes_like(v: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u8>>> {
    if let Ok(b) = v.cast::<PyBytes>() {
        return Ok(Some(b.as_bytes().to_vec()));
    }
    if let Ok(b) = v.cast::<PyByteArray>() {
        return Ok(Some(b.to_vec()));
    }
    if v.is_instance_of::<PyMemoryView>() {
        let b = v.call_method0("tobytes")?;
        return Ok(Some(b.cast::<PyBytes>()?.as_bytes().to_vec()));
    }
    Ok(None)
}

fn bytes_of(v: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    bytes_like(v)?.ok_or_else(|| PyTypeError::new_err("expected bytes"))
}

fn opt_bytes(v: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u8>>> {
    if v.is_none() {
        Ok(None)
    } else {
        bytes_of(v).map(Some)
    }
}

fn status(s: &str) -> PyResult<Status> {
    Ok(match s {
        "ok" => Status::Ok,
        "malformed" => Status::Malformed,
        "bad_checksum" => Status::BadChecksum,
        "truncated" => Status::Truncated,
        "unknown_type" => Status::UnknownType,
        "unsupported_version" => Status::UnsupportedVersion,
        "undecodable" => Status::Undecodable,
        _ => return Err(PyValueError::new_err(format!("frame status {s:?}"))),
    })
}
