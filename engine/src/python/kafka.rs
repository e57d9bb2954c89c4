//! Python bindings of the Kafka decoder: the body walker's tree as the same dict the Python
//! reference (`body.walk_body`) returns, for differential tests now and the Rust framing
//! engine later.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList, PyString, PyTuple};

use crate::kafka::body::{self, Decoded, Field, Node, Value};
use crate::kafka::codecs::Limits;
use crate::kafka::records::{self, control_type_name, Control, Entry};
use crate::kafka::schema::{self, Plan};
use crate::kafka::{embedded, header, summary};

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
        None,
    )
}

fn opt_bytes<'py>(py: Python<'py>, b: &Option<std::borrow::Cow<'_, [u8]>>) -> Bound<'py, PyAny> {
    match b {
        Some(b) => PyBytes::new(py, b).into_any(),
        None => py.None().into_bound(py),
    }
}

fn entry<'py>(py: Python<'py>, e: &Entry<'_>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match e {
        Entry::V2(b) => {
            d.set_item("base_offset", b.base_offset)?;
            d.set_item("batch_length", b.batch_length)?;
            d.set_item("partition_leader_epoch", b.partition_leader_epoch)?;
            d.set_item("magic", b.magic)?;
            d.set_item("crc", b.crc)?;
            d.set_item("crc_ok", b.crc_ok)?;
            d.set_item("attributes", b.attributes)?;
            d.set_item("compression", b.compression())?;
            let log_append = b.attributes & 8 != 0;
            d.set_item(
                "timestamp_type",
                if log_append {
                    "LogAppendTime"
                } else {
                    "CreateTime"
                },
            )?;
            d.set_item("is_transactional", b.attributes & 16 != 0)?;
            d.set_item("is_control", b.attributes & 32 != 0)?;
            d.set_item("has_delete_horizon", b.attributes & 64 != 0)?;
            d.set_item("last_offset_delta", b.last_offset_delta)?;
            d.set_item("base_timestamp", b.base_timestamp)?;
            d.set_item("max_timestamp", b.max_timestamp)?;
            d.set_item("producer_id", b.producer_id)?;
            d.set_item("producer_epoch", b.producer_epoch)?;
            d.set_item("base_sequence", b.base_sequence)?;
            d.set_item("records_count", b.records_count)?;
            d.set_item("record_count", b.record_count)?;
            if let Some(cs) = &b.control_records {
                let l = PyList::empty(py);
                for c in cs {
                    let cd = PyDict::new(py);
                    match c {
                        Control::Key(k) => cd.set_item("key", opt_bytes(py, k))?,
                        Control::Typed {
                            version,
                            ctype,
                            marker,
                            decoded,
                            value,
                        } => {
                            cd.set_item("version", version)?;
                            cd.set_item("type", control_type_name(*ctype))?;
                            if let Some((mv, epoch)) = marker {
                                cd.set_item("marker_version", mv)?;
                                cd.set_item("coordinator_epoch", epoch)?;
                            } else if let Some(fields) = decoded {
                                cd.set_item("value_decoded", dict(py, fields)?)?;
                            } else if value.is_some() {
                                cd.set_item("value", opt_bytes(py, value))?;
                            }
                        }
                    }
                    l.append(cd)?;
                }
                d.set_item("control_records", l)?;
            }
        }
        Entry::Legacy(m) => {
            d.set_item("offset", m.offset)?;
            d.set_item("message_size", m.message_size)?;
            d.set_item("crc", m.crc)?;
            d.set_item("crc_ok", m.crc_ok)?;
            d.set_item("magic", m.magic)?;
            d.set_item("attributes", m.attributes)?;
            d.set_item("compression", m.compression())?;
            d.set_item("record_count", m.record_count)?;
            if let Some((ts, log_append)) = m.timestamp {
                d.set_item("timestamp", ts)?;
                d.set_item(
                    "timestamp_type",
                    if log_append {
                        "LogAppendTime"
                    } else {
                        "CreateTime"
                    },
                )?;
            }
            if let Some((n, ok)) = m.inner {
                d.set_item("inner_messages", n)?;
                d.set_item("inner_crc_ok", ok)?;
            }
        }
    }
    Ok(d)
}

/// Decodes a Kafka record set as `records.decode_record_set` does (messages wanted, anomalies
/// emitted): `(fields, messages, anomalies, status, stats)`.
///
/// `fields` is the record set's dict, `messages` one tuple per record (value_size, offset, key,
/// value, timestamp_ms, headers, compression, checksum_ok, detail), `anomalies` (kind, detail,
/// offset) with the reference's `topic[partition]: ` prefix and offsets from `base`, `status`
/// the first non-ok status ("ok" when none), `stats` the counters. `max_messages` is the
/// frame's message cap, `prior_records` the records its earlier record sets counted and
/// `prior_controls` their control records.
#[pyfunction]
#[pyo3(signature = (data, partial_ok=false, topic=None, partition=None, base=0, max_messages=25_000, prior_records=0, prior_controls=0))]
#[allow(clippy::too_many_arguments)]
fn kafka_records<'py>(
    py: Python<'py>,
    data: &[u8],
    partial_ok: bool,
    topic: Option<&str>,
    partition: Option<i64>,
    base: i64,
    max_messages: u64,
    prior_records: u64,
    prior_controls: u64,
) -> PyResult<Bound<'py, PyTuple>> {
    let mut limits = Limits {
        max_messages,
        ..Limits::default()
    };
    let rs = records::decode_record_set_after(
        data,
        partial_ok,
        &mut limits,
        prior_records,
        prior_controls,
    );
    let out = PyDict::new(py);
    out.set_item("size", rs.size)?;
    let batches = PyList::empty(py);
    for e in &rs.entries {
        batches.append(entry(py, e)?)?;
    }
    out.set_item("batches", batches)?;
    if let Some(n) = rs.partial_trailing_bytes {
        out.set_item("partial_trailing_bytes", n)?;
    }
    if let Some(n) = rs.undecoded_bytes {
        out.set_item("undecoded_bytes", n)?;
    }
    out.set_item("record_count", rs.record_count)?;
    let msgs = PyList::empty(py);
    for m in &rs.messages {
        let headers = match &m.headers {
            None => py.None().into_bound(py),
            Some(hs) => {
                let l = PyList::empty(py);
                for (k, v) in hs {
                    l.append((k, opt_bytes(py, v)))?;
                }
                l.into_any()
            }
        };
        let detail = match &m.detail {
            None => py.None().into_bound(py),
            Some(d) => {
                let dd = PyDict::new(py);
                dd.set_item("batch_base_offset", d.batch_base_offset)?;
                dd.set_item("producer_id", d.producer_id)?;
                dd.set_item("producer_epoch", d.producer_epoch)?;
                dd.set_item("base_sequence", d.base_sequence)?;
                dd.set_item("transactional", d.transactional)?;
                dd.set_item("magic", 2)?;
                dd.into_any()
            }
        };
        let t = PyTuple::new(
            py,
            [
                m.value_size.into_pyobject(py)?.into_any(),
                m.offset.into_pyobject(py)?.into_any(),
                opt_bytes(py, &m.key),
                opt_bytes(py, &m.value),
                m.timestamp_ms.into_pyobject(py)?.into_any(),
                headers,
                m.compression.into_pyobject(py)?.into_any(),
                PyBool::new(py, m.checksum_ok).to_owned().into_any(),
                detail,
            ],
        )?;
        msgs.append(t)?;
    }
    let place = match topic {
        Some(t) => format!(
            "{t}[{}]",
            partition.map_or("None".into(), |p| p.to_string())
        ),
        None => format!(
            "partition {}",
            partition.map_or("None".into(), |p| p.to_string())
        ),
    };
    let anomalies = PyList::empty(py);
    let mut status = "ok";
    for p in &rs.problems {
        if let (Some(s), "ok") = (p.status, status) {
            status = s;
        }
        let at = p.offset.map(|o| o + i128::from(base));
        anomalies.append((p.kind, format!("{place}: {}", p.detail), at))?;
    }
    let stats = PyDict::new(py);
    for (k, v) in &rs.stats.counts {
        stats.set_item(k, v)?;
    }
    PyTuple::new(
        py,
        [
            out.into_any(),
            msgs.into_any(),
            anomalies.into_any(),
            status.into_pyobject(py)?.into_any(),
            stats.into_any(),
        ],
    )
}

/// Measurement helper for `benchmarks/kafka_decode.py`: decodes every (is_response, api_key,
/// version, body, start) `repeat` times into the Rust tree only (no Python objects) and returns
/// the nanoseconds taken, so the decoder's own cost is seen apart from the dict conversion.
#[pyfunction]
fn kafka_bench_bodies(items: Vec<(bool, i16, i16, Vec<u8>, usize)>, repeat: usize) -> u128 {
    let plans: Vec<_> = items
        .iter()
        .map(|(r, k, v, _, _)| schema::plan(*k, *v, *r))
        .collect();
    let t = std::time::Instant::now();
    let mut fields = 0usize;
    for _ in 0..repeat {
        for ((_, _, _, body, start), plan) in items.iter().zip(&plans) {
            if let Some(plan) = plan {
                fields += body::decode_body(body, *start, plan, &[]).fields.len();
            }
        }
    }
    std::hint::black_box(fields);
    t.elapsed().as_nanos()
}

/// Measurement helper: decodes every (record set, partial_ok) `repeat` times in Rust only and
/// returns the nanoseconds taken.
#[pyfunction]
fn kafka_bench_records(sets: Vec<(Vec<u8>, bool)>, repeat: usize) -> u128 {
    let t = std::time::Instant::now();
    let mut n = 0usize;
    for _ in 0..repeat {
        for (data, partial_ok) in &sets {
            let mut limits = Limits::default();
            n += records::decode_record_set(data, *partial_ok, &mut limits)
                .messages
                .len();
        }
    }
    std::hint::black_box(n);
    t.elapsed().as_nanos()
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

/// The timeline summary of a body (`summary.summarize` without the error suffix), with the
/// consumer protocol of JoinGroup/SyncGroup decoded and record counts from the record sets;
/// `topic_names` maps topic ids to names (the run's). `None` for an unknown api/version or a
/// body that does not decode.
#[pyfunction]
#[pyo3(signature = (is_response, api_key, version, body, start=0, protocol_type=None, topic_names=None))]
#[allow(clippy::too_many_arguments)]
fn kafka_summary(
    is_response: bool,
    api_key: i16,
    version: i16,
    body: &[u8],
    start: usize,
    protocol_type: Option<&str>,
    topic_names: Option<std::collections::HashMap<String, String>>,
) -> Option<String> {
    let plan = schema::plan(api_key, version, is_response)?;
    let mut d = body::decode_body(body, start, plan, &[]);
    if d.error.is_some() {
        return None;
    }
    embedded::annotate(api_key, is_response, &mut d.fields, protocol_type);
    let names = topic_names.unwrap_or_default();
    let count = |s: usize, e: usize| {
        records::decode_record_set(&body[s..e], false, &mut Limits::default()).record_count
    };
    let name_of = |id: &str| names.get(id).cloned();
    let cx = summary::Context {
        version,
        record_count: &count,
        topic_name: &name_of,
    };
    Some(summary::summarize(api_key, !is_response, &d.fields, &cx))
}

/// Adds the Kafka functions to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(kafka_decode, m)?)?;
    m.add_function(wrap_pyfunction!(kafka_decode_data, m)?)?;
    m.add_function(wrap_pyfunction!(kafka_records, m)?)?;
    m.add_function(wrap_pyfunction!(kafka_summary, m)?)?;
    m.add_function(wrap_pyfunction!(kafka_record_sets, m)?)?;
    m.add_function(wrap_pyfunction!(kafka_request_header, m)?)?;
    m.add_function(wrap_pyfunction!(kafka_response_header, m)?)?;
    m.add_function(wrap_pyfunction!(kafka_bench_bodies, m)?)?;
    m.add_function(wrap_pyfunction!(kafka_bench_records, m)?)?;
    Ok(())
}
