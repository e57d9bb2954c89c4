//! Python bindings of the Kafka decoder: the body walker's tree as the same dict the Python
//! reference (`body.walk_body`) returns, for differential tests now and the Rust framing
//! engine later.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList, PyString, PyTuple};

use crate::kafka::body::{self, Decoded, Field, Node, Value};
use crate::kafka::records;
use crate::kafka::schema::{self, Plan};
use crate::kafka::{embedded, header};

fn value<'py>(py: Python<'py>, v: &Value<'_>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => PyFloat::new(py, *f).into_any(),
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::Bytes(b) => PyBytes::new(py, b).into_any(),
        Value::Masked(n) => PyString::new(py, &format!("<{n} bytes masked>")).into_any(),
        Value::Uuid(u) => PyString::new(py, &body::uuid_string(u)).into_any(),
        Value::Array(items) => {
            let l = PyList::empty(py);
            for n in items {
                l.append(value(py, &n.value)?)?;
            }
            l.into_any()
        }
        Value::Struct(fields) => dict(py, fields)?.into_any(),
        Value::Records { size } => {
            let d = PyDict::new(py);
            d.set_item("size", size)?;
            d.into_any()
        }
    })
}

/// Fields in order; a repeated name keeps its first place and takes the last value (dict rules).
fn dict<'py>(py: Python<'py>, fields: &[Field<'_>]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for f in fields {
        d.set_item(f.name.as_str(), value(py, &f.node.value)?)?;
    }
    Ok(d)
}

fn spans(path: &str, n: &Node<'_>, out: &mut Vec<(String, usize, usize)>) {
    out.push((path.to_owned(), n.start, n.end));
    match &n.value {
        Value::Struct(fields) => {
            for f in fields {
                let p = if path.is_empty() {
                    f.name.as_str().into_owned()
                } else {
                    format!("{path}.{}", f.name.as_str())
                };
                spans(&p, &f.node, out);
            }
        }
        Value::Array(items) => {
            for (i, it) in items.iter().enumerate() {
                spans(&format!("{path}[{i}]"), it, out);
            }
        }
        _ => {}
    }
}

fn result<'py>(
    py: Python<'py>,
    d: &Decoded<'_>,
    with_spans: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let fields = dict(py, &d.fields)?;
    let errors = PyList::empty(py);
    for (p, c) in &d.errors {
        errors.append((p, c))?;
    }
    let error = match &d.error {
        None => py.None().into_bound(py),
        Some(e) => (e.kind(), e.to_string(), e.offset())
            .into_pyobject(py)?
            .into_any(),
    };
    let mut items = vec![
        fields.into_any(),
        errors.into_any(),
        error,
        d.end.into_pyobject(py)?.into_any(),
    ];
    if with_spans {
        let mut out = Vec::new();
        for f in &d.fields {
            spans(&f.name.as_str(), &f.node, &mut out);
        }
        items.push(out.into_pyobject(py)?.into_any());
    }
    PyTuple::new(py, items)
}

/// The consumer-protocol annotation to apply to a decoded body: (api key, response?, protocol type).
type Annotate<'s> = Option<(i16, bool, Option<&'s str>)>;

fn run<'py>(
    py: Python<'py>,
    plan: Option<&'static Plan>,
    data: &[u8],
    start: usize,
    secrets: Option<Vec<String>>,
    with_spans: bool,
    annotate: Annotate<'_>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let Some(plan) = plan else { return Ok(None) };
    let secrets = secrets.unwrap_or_default();
    let names: Vec<&str> = secrets.iter().map(String::as_str).collect();
    let mut d = body::decode_body(data, start, plan, &names);
    if let (Some((key, response, ptype)), None) = (annotate, &d.error) {
        embedded::annotate(key, response, &mut d.fields, ptype);
    }
    result(py, &d, with_spans).map(Some)
}

/// Decodes a Kafka body: `(fields, errors, error, end)` or `None` for an unknown api/version.
///
/// `fields` is the dict `walk_body` returns (the partial one when `error` is set), `errors` the
/// (path, code) of every non-zero error code, `error` None or (`"Short"`/`"Bad"`, message,
/// offset), `end` where the body ended. With `spans=True` a fifth item lists (path, start, end)
/// of every decoded value. With `embedded=True` the consumer protocol inside JoinGroup and
/// SyncGroup is decoded as `embedded.annotate` does (`protocol_type`: the request's).
#[pyfunction]
#[pyo3(signature = (is_response, api_key, version, body, start=0, secrets=None, spans=false, embedded=false, protocol_type=None))]
#[allow(clippy::too_many_arguments)]
fn kafka_decode<'py>(
    py: Python<'py>,
    is_response: bool,
    api_key: i16,
    version: i16,
    body: &[u8],
    start: usize,
    secrets: Option<Vec<String>>,
    spans: bool,
    embedded: bool,
    protocol_type: Option<&str>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let plan = schema::plan(api_key, version, is_response);
    let annotate = embedded.then_some((api_key, is_response, protocol_type));
    run(py, plan, body, start, secrets, spans, annotate)
}

fn header_result<'py>(
    py: Python<'py>,
    d: Bound<'py, PyDict>,
    tagged: &[Field<'_>],
    body_start: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    for f in tagged {
        d.set_item(f.name.as_str(), value(py, &f.node.value)?)?;
    }
    (d, py.None(), body_start).into_pyobject(py)
}

fn header_error<'py>(py: Python<'py>, e: &body::DecodeError) -> PyResult<Bound<'py, PyTuple>> {
    let err = (e.kind(), e.to_string(), e.offset()).into_pyobject(py)?;
    (py.None(), err, py.None()).into_pyobject(py)
}

/// Decodes a request header from a whole frame (size prefix included) in header version `hv`:
/// `(header dict, None, body start)` or `(None, (kind, message, offset), None)`.
#[pyfunction]
fn kafka_request_header<'py>(
    py: Python<'py>,
    frame: &[u8],
    hv: u8,
) -> PyResult<Bound<'py, PyTuple>> {
    match header::request_header(frame, hv) {
        Ok(h) => {
            let d = PyDict::new(py);
            d.set_item("api_key", h.api_key)?;
            d.set_item("api_version", h.api_version)?;
            d.set_item("correlation_id", h.correlation_id)?;
            if let Some(c) = &h.client_id {
                d.set_item("client_id", value(py, &c.value)?)?;
            }
            header_result(py, d, &h.tagged, h.body_start)
        }
        Err(e) => header_error(py, &e),
    }
}

/// Decodes a response header (version `hv`) like `kafka_request_header`.
#[pyfunction]
fn kafka_response_header<'py>(
    py: Python<'py>,
    frame: &[u8],
    hv: u8,
) -> PyResult<Bound<'py, PyTuple>> {
    match header::response_header(frame, hv) {
        Ok(h) => {
            let d = PyDict::new(py);
            d.set_item("correlation_id", h.correlation_id)?;
            header_result(py, d, &h.tagged, h.body_start)
        }
        Err(e) => header_error(py, &e),
    }
}

/// The record sets of a body with their topic and partition (what the messages table needs):
/// a list of (start, end, topic name or None, topic id or None, partition or None), offsets in
/// `body`; `None` for an unknown api/version.
#[pyfunction]
#[pyo3(signature = (is_response, api_key, version, body, start=0))]
fn kafka_record_sets<'py>(
    py: Python<'py>,
    is_response: bool,
    api_key: i16,
    version: i16,
    body: &[u8],
    start: usize,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let Some(plan) = schema::plan(api_key, version, is_response) else {
        return Ok(None);
    };
    let d = body::decode_body(body, start, plan, &[]);
    let out = PyList::empty(py);
    for l in records::locate_record_sets(&d.fields) {
        let tid = l.topic_id.map(|u| body::uuid_string(&u));
        out.append((l.start, l.end, l.topic.as_deref(), tid, l.partition))?;
    }
    Ok(Some(out))
}

/// Adds the Kafka functions to the extension module.
/// The topic arrays of an API's request (`response` false) or response body, at every depth, as
/// the `partitions` table's walk follows them (`kafka::partitions::walk_of`, generated from the
/// schema at build time): the tests check them against the `entityType: topicName` marks of
/// Kafka's own JSON specs.
#[pyfunction]
fn kafka_topic_arrays(api_key: i64, response: bool) -> Vec<&'static str> {
    fn visit(w: &crate::kafka::partitions::Walk, out: &mut Vec<&'static str>) {
        out.extend(w.topics.iter().map(|(name, _)| *name));
        for (_, sub) in w.descend {
            visit(sub, out);
        }
    }
    let mut out = Vec::new();
    if let Some(w) = crate::kafka::partitions::walk_of(api_key, response) {
        visit(w, &mut out);
    }
    out
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(kafka_topic_arrays, m)?)?;
    m.add_function(wrap_pyfunction!(kafka_decode, m)?)?;
    m.add_function(wrap_pyfunction!(kafka_record_sets, m)?)?;
    m.add_function(wrap_pyfunction!(kafka_request_header, m)?)?;
    m.add_function(wrap_pyfunction!(kafka_response_header, m)?)?;
    Ok(())
}
