//! Python bindings of the Kafka decoder: the body walker's tree as the same dict the Python
//! reference (`body.walk_body`) returns, for differential tests now and the Rust framing
//! engine later.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList, PyString, PyTuple};

use crate::kafka::body::{self, Decoded, Field, Node, Value};
use crate::kafka::schema::{self, Plan};

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

fn run<'py>(
    py: Python<'py>,
    plan: Option<&'static Plan>,
    data: &[u8],
    start: usize,
    secrets: Option<Vec<String>>,
    with_spans: bool,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let Some(plan) = plan else { return Ok(None) };
    let secrets = secrets.unwrap_or_default();
    let names: Vec<&str> = secrets.iter().map(String::as_str).collect();
    let d = body::decode_body(data, start, plan, &names);
    result(py, &d, with_spans).map(Some)
}

/// Decodes a Kafka body: `(fields, errors, error, end)` or `None` for an unknown api/version.
///
/// `fields` is the dict `walk_body` returns (the partial one when `error` is set), `errors` the
/// (path, code) of every non-zero error code, `error` None or (`"Short"`/`"Bad"`, message,
/// offset), `end` where the body ended. With `spans=True` a fifth item lists (path, start, end)
/// of every decoded value.
#[pyfunction]
#[pyo3(signature = (is_response, api_key, version, body, start=0, secrets=None, spans=false))]
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
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    run(
        py,
        schema::plan(api_key, version, is_response),
        body,
        start,
        secrets,
        spans,
    )
}

/// Decodes a non-API structure (ConsumerProtocolSubscription…) like `kafka_decode`.
#[pyfunction]
#[pyo3(signature = (name, version, body, start=0, secrets=None))]
fn kafka_decode_data<'py>(
    py: Python<'py>,
    name: &str,
    version: i16,
    body: &[u8],
    start: usize,
    secrets: Option<Vec<String>>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    run(
        py,
        schema::data_plan(name, version),
        body,
        start,
        secrets,
        false,
    )
}

/// Adds the Kafka functions to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(kafka_decode, m)?)?;
    m.add_function(wrap_pyfunction!(kafka_decode_data, m)?)?;
    Ok(())
}
