//! `Dissector`: one capture dissected wholly by the native engine (reading, reassembly,
//! detection, framing, decoding, correlation, release order), iterated from Python as the same
//! `wiredump.dissect.pipeline.Event` objects `dissect_capture` yields, carrying real
//! `wiredump.dissect.model` objects, so that every sink works on it unchanged.
//!
//! It also has the face of an opened capture where the commands look (`name`, `truncated`,
//! `skipped_unknown_link`, `bytes_read`, `compression`, `format`, `on_record`, `native`).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::Cursor;
use std::rc::Rc;

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use super::arrow::ArrowStream;
use super::convert::{self, Classes};
use super::model;
use super::parquet::ParquetTables;
use super::{capture_error, PyReader};
use crate::arrow_out::{Table, TableOptions, TableSet, BATCH_BYTES, BATCH_ROWS};
use crate::capture::{CaptureReader, Input, OwnedRecord, RecordSource};
use crate::codecs::Limits;
use crate::pipeline::{Dissection, EngineLimits, Options, Record};
use crate::registry;

/// The run options read from a Python `pipeline.Options`.
fn read_options(py_opts: &Bound<'_, PyAny>) -> PyResult<(Options, Option<Vec<String>>)> {
    let mut o = Options::default();
    let decode_as = py_opts.getattr("decode_as")?;
    let decode_as = decode_as.cast::<PyDict>()?;
    for (k, v) in decode_as.iter() {
        o.decode_as.push((k.extract()?, v.extract()?));
    }
    o.keep_bytes = py_opts.getattr("keep_bytes")?.extract()?;
    o.show_secrets = py_opts.getattr("show_secrets")?.extract()?;
    o.messages = py_opts.getattr("messages")?.extract()?;
    o.detail = match py_opts.getattr("detail") {
        Ok(v) => v.extract()?,
        Err(_) => true,
    };
    o.values = match py_opts.getattr("values") {
        Ok(v) => v.extract()?,
        Err(_) => true, // Options pickled before the flag existed
    };
    o.hold_frames = py_opts.getattr("hold_frames")?.extract()?;
    o.hold_bytes = py_opts.getattr("hold_bytes")?.extract()?;
    o.hold_us = py_opts.getattr("hold_us")?.extract()?;
    o.shard = py_opts.getattr("shard")?.extract()?;
    o.observe_others = match py_opts.getattr("observe_others") {
        Ok(v) => v.extract()?,
        Err(_) => true, // Options pickled before the flag existed
    };
    o.live = match py_opts.getattr("live") {
        Ok(v) => v.extract()?,
        Err(_) => false, // Options pickled before the flag existed
    };
    let l = py_opts.call_method0("new_limits")?;
    let get = |name: &str| -> PyResult<u64> { l.getattr(name)?.extract() };
    o.limits = EngineLimits {
        codec: Limits {
            max_decompressed: get("max_decompressed")?,
            max_decompressed_total: get("max_decompressed_total")?,
            max_ratio: get("max_ratio")?,
            ratio_floor: get("ratio_floor")?,
            decompressed_total: 0,
            max_messages: get("max_messages")?,
            max_batches: get("max_batches")?,
            max_elements: get("max_elements")?,
            max_command_bytes: get("max_command_bytes")?,
        },
        max_stream_buffer: get("max_stream_buffer")?,
        max_connections: get("max_connections")? as usize,
        max_interfaces: get("max_interfaces")? as usize,
        half_open_us: l.getattr("half_open_us")?.extract()?,
        closed_linger_us: l.getattr("closed_linger_us")?.extract()?,
        max_out_of_order: get("max_out_of_order")? as usize,
        max_pending_requests: get("max_pending_requests")? as usize,
        max_pending_total: get("max_pending_total")? as usize,
    };
    let protocols: Option<Vec<String>> = match py_opts.getattr("protocols") {
        Ok(p) => p.extract()?,
        Err(_) => None,
    };
    Ok((o, protocols))
}

/// Records of one capture from a Python iterable of `capture.Record` (a Spark task's shuffled
/// records); an exception the iterable raises ends the records and is raised by the Dissector.
struct PyRecords {
    iter: Py<PyAny>,
    end: Option<Py<PyAny>>,
    error: Rc<RefCell<Option<PyErr>>>,
}

impl PyRecords {
    fn next(&self, py: Python<'_>) -> PyResult<Option<OwnedRecord>> {
        let it = self.iter.bind(py);
        let Some(r) = it.cast::<pyo3::types::PyIterator>()?.clone().next() else {
            return Ok(None);
        };
        let r = r?;
        let data = r.getattr("data")?;
        let data: Vec<u8> = match data.cast::<PyBytes>() {
            Ok(b) => b.as_bytes().to_vec(),
            Err(_) => data.extract()?,
        };
        Ok(Some(OwnedRecord {
            number: r.getattr("number")?.extract()?,
            ts_us: r.getattr("ts_us")?.extract()?,
            linktype: r.getattr("linktype")?.extract()?,
            data,
            orig_len: r.getattr("orig_len")?.extract()?,
            ts_note: r.getattr("ts_note")?.extract()?,
        }))
    }

    fn fail(&self, e: PyErr) {
        let mut slot = self.error.borrow_mut();
        if slot.is_none() {
            *slot = Some(e);
        }
    }
}

impl RecordSource for PyRecords {
    fn next_record(&mut self) -> Option<OwnedRecord> {
        Python::attach(|py| match self.next(py) {
            Ok(r) => r,
            Err(e) => {
                self.fail(e);
                None
            }
        })
    }

    fn end(&mut self) -> (Option<String>, u64) {
        Python::attach(|py| {
            let Some(end) = &self.end else {
                return (None, 0);
            };
            let end = end.bind(py);
            let facts = (|| -> PyResult<(Option<String>, u64)> {
                Ok((
                    end.getattr("truncated")?.extract()?,
                    end.getattr("skipped_unknown_link")?.extract()?,
                ))
            })();
            facts.unwrap_or_else(|e| {
                self.fail(e);
                (None, 0)
            })
        })
    }
}

/// One capture dissected natively; iterate it for `pipeline.Event` objects.
#[pyclass(unsendable, module = "wiredump._engine")]
pub struct Dissector {
    run: Dissection,
    classes: Classes,
    pending: VecDeque<Py<PyAny>>,
    capture: Py<PyAny>,
    /// Optional callable(number, ts_us) called for every record read (the CLI's packet times).
    #[pyo3(get, set)]
    on_record: Option<Py<PyAny>>,
    /// What the records' iterable raised (`from_records`), raised by `__next__`.
    error: Rc<RefCell<Option<PyErr>>>,
    /// The model classes, looked up once.
    model: model::Handles,
    /// Frames carry their `fields` and `partitions` (`pipeline.Options.detail`).
    detail: bool,
    /// Frames carry their fields' byte spans (`pipeline.Options.spans`).
    spans: bool,
}

#[pymethods]
impl Dissector {
    /// `source`: a path ("-" for stdin), the capture's bytes, or a binary file object;
    /// `options`: a `wiredump.dissect.pipeline.Options`; `name`: how messages call a capture
    /// that is not a file.
    #[new]
    #[pyo3(signature = (source, options, name=None))]
    fn new(
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        options: &Bound<'_, PyAny>,
        name: Option<String>,
    ) -> PyResult<Self> {
        let input = if let Ok(path) = source.extract::<String>() {
            Input::Path(path)
        } else if let Ok(b) = source.cast::<PyBytes>() {
            Input::Reader(
                name.unwrap_or_else(|| "bytes".to_string()),
                Box::new(Cursor::new(b.as_bytes().to_vec())),
            )
        } else if source.hasattr("read")? {
            let method = if source.hasattr("read1")? {
                "read1"
            } else {
                "read"
            };
            Input::Reader(
                name.unwrap_or_else(|| "stdin".to_string()),
                Box::new(PyReader {
                    obj: source.clone().unbind(),
                    method,
                }),
            )
        } else {
            return Err(PyTypeError::new_err(
                "source must be a path, bytes or a binary file object",
            ));
        };
        let reader = CaptureReader::open(input).map_err(|e| capture_error(py, e.0))?;
        Self::with_reader(py, reader, options, Rc::default())
    }

    /// The records of one capture read elsewhere (`capture.Record` objects in packet order with
    /// the file's numbers: `records.dissect_records`), dissected as the local reader's would be;
    /// `end` (read once the records are exhausted) has the reader's `truncated` and
    /// `skipped_unknown_link`.
    #[staticmethod]
    #[pyo3(signature = (name, records, options, end=None))]
    fn from_records(
        py: Python<'_>,
        name: String,
        records: &Bound<'_, PyAny>,
        options: &Bound<'_, PyAny>,
        end: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let error: Rc<RefCell<Option<PyErr>>> = Rc::default();
        let source = PyRecords {
            iter: records.try_iter()?.into_any().unbind(),
            end,
            error: error.clone(),
        };
        let reader = CaptureReader::from_records(name, Box::new(source));
        Self::with_reader(py, reader, options, error)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(slf: &Bound<'_, Self>) -> PyResult<Option<Py<PyAny>>> {
        let py = slf.py();
        loop {
            // The run is borrowed only while it steps: `on_record` is called without the borrow
            // (it may read `bytes_read`), before the records of those packets are yielded.
            let (times, callback, ended) = {
                let mut me = slf.borrow_mut();
                if let Some(ev) = me.pending.pop_front() {
                    return Ok(Some(ev));
                }
                let rec = me.run.next_record();
                let times = me.run.take_record_times();
                let callback = me.on_record.as_ref().map(|c| c.clone_ref(py));
                let ended = match rec {
                    Some(rec) => {
                        me.convert(py, rec)?;
                        false
                    }
                    None => true,
                };
                (times, callback, ended)
            };
            if let Some(cb) = callback {
                for (number, ts) in times {
                    cb.call1(py, (number, ts))?;
                }
            }
            if let Some(e) = slf.borrow().error.borrow_mut().take() {
                return Err(e); // what the records' iterable raised (`from_records`)
            }
            if ended {
                return Ok(None);
            }
        }
    }

    /// Tells the native engine apart from the stream-only Rust reader (`pipeline.dissect_capture`).
    #[getter]
    fn native(&self) -> bool {
        true
    }

    #[getter]
    fn dissects(&self) -> bool {
        true
    }

    #[getter]
    fn name(&self) -> String {
        self.run.cap.name.to_string()
    }

    #[getter]
    fn truncated(&self) -> Option<String> {
        self.run.engine.reader.truncated.clone()
    }

    #[getter]
    fn skipped_unknown_link(&self) -> u64 {
        self.run.engine.reader.skipped_unknown_link
    }

    /// Did decoding read run state another connection could have taught (a Kafka topic id
    /// looked up)? A share run without observing the others (`Options.observe_others` off)
    /// equals the whole capture's rows for its connections only while this is false.
    #[getter]
    fn run_state_consulted(&self) -> bool {
        self.run.cap.run_state_consulted()
    }

    #[getter]
    fn bytes_read(&self) -> u64 {
        self.run.engine.reader.bytes_read()
    }

    #[getter]
    fn compression(&self) -> Option<&'static str> {
        self.run.engine.reader.compression
    }

    #[getter]
    fn format(&self) -> &'static str {
        self.run.engine.reader.format_name()
    }

    /// Nothing to release before iteration ends (the file closes with the reader).
    fn close(&self) {}
}

impl Dissector {
    fn with_reader(
        py: Python<'_>,
        reader: CaptureReader,
        options: &Bound<'_, PyAny>,
        error: Rc<RefCell<Option<PyErr>>>,
    ) -> PyResult<Self> {
        let (opts, names) = read_options(options)?;
        // Options made before the flag existed (pickled by a Spark driver) mean true.
        let detail = match options.getattr("detail") {
            Ok(d) => d.extract()?,
            Err(_) => true,
        };
        let spans = match options.getattr("spans") {
            Ok(d) => d.extract()?,
            Err(_) => false,
        };
        let protocols = registry::select(names.as_deref());
        let run = Dissection::new(reader, opts, protocols).map_err(PyValueError::new_err)?;
        let capture = run
            .cap
            .name
            .to_string()
            .into_pyobject(py)?
            .into_any()
            .unbind();
        Ok(Dissector {
            run,
            classes: Classes::load(py)?,
            pending: VecDeque::new(),
            capture,
            on_record: None,
            error,
            model: model::Handles::load(py)?,
            detail,
            spans,
        })
    }

    /// What the records' iterable raised (`from_records`), once.
    pub(super) fn take_error(&self) -> Option<PyErr> {
        self.error.borrow_mut().take()
    }

    fn event(&self, py: Python<'_>, kind: &str, obj: Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.classes
            .event
            .call1(py, (kind, obj, self.capture.clone_ref(py)))
    }

    fn convert(&mut self, py: Python<'_>, rec: Record) -> PyResult<()> {
        let c = &self.classes;
        let m = self.model.bind(py, self.detail, self.spans);
        let ev = match rec {
            Record::Frame(f) => {
                let pf = m.frame(&f.borrow())?;
                let ev = self.event(py, "frame", pf.clone())?;
                self.pending.push_back(ev);
                // Its anomalies follow it, the same objects as in its list (as Python's release).
                for a in pf.getattr("anomalies")?.try_iter()? {
                    let ev = self
                        .classes
                        .event
                        .call1(py, ("anomaly", a?, self.capture.clone_ref(py), pf.clone()))?;
                    self.pending.push_back(ev);
                }
                return Ok(());
            }
            Record::Anomaly(a) => self.event(py, "anomaly", m.anomaly(&a)?)?,
            Record::Exchange(e) => self.event(py, "exchange", m.exchange(&e)?)?,
            Record::Connection(s) => {
                self.event(py, "connection", convert::connection(py, c, &s)?)?
            }
            Record::CaptureEnd(e) => {
                self.event(py, "capture_end", convert::capture_end(py, c, &e)?)?
            }
        };
        self.pending.push_back(ev);
        Ok(())
    }
}

/// Ready batches as the feed hands them to Python: `(table, ArrowStream of one batch)`.
type Batches = Vec<(&'static str, Py<ArrowStream>)>;

/// Records read between two calls of the capture's `on_record` hook while the tables are fed
/// (the progress bar needs no more; the packet times wait in the engine meanwhile).
const HOOK_EVERY: usize = 1024;

/// The export's fast path: the native engine's records go straight into the Rust table
/// builders (`arrow_out::TableSet`), no Python object is made per frame, and Python receives
/// bounded record batches through the Arrow C stream interface to write.
///
/// One feed serves every capture of a run (a batch may hold rows of several captures, as
/// Python's `TableBuilder` cuts them): `pump(dissector)` until it returns `None`, for each
/// capture in turn, then `finish()`. Every table `arrow_out` builds is handed out under its
/// name, so a table added there (`partitions`) reaches the writers with no change here.
#[pyclass(unsendable, module = "wiredump._engine")]
pub struct TableFeed {
    set: TableSet,
    /// The end of the capture pumped last (its packets and truncation, for the command's report).
    end: Option<crate::pipeline::CaptureEnd>,
}

fn table_error(e: arrow_schema::ArrowError) -> PyErr {
    PyRuntimeError::new_err(format!("building the tables: {e}"))
}

/// Why a [`Stretch`] stopped.
pub(super) enum StretchEnd {
    /// The capture is wholly read.
    CaptureRead,
    /// The sink has something to hand out.
    Ready,
    /// [`HOOK_EVERY`] records were read: time to call the capture's `on_record` hook.
    Hook,
}

/// What consumes a capture's records on the native side, with the GIL released: the export's
/// table builders ([`TableFeed`]) and the plain timeline (`python::timeline`).
///
/// # Safety
///
/// An implementor holds no Python object and no GIL-bound reference (plain Rust data only, `Rc`s
/// of the run included): a [`Stretch`] moves a `&mut` of it into `Python::detach`, whose `Send`
/// bound is there to keep such references out of code that runs without the GIL.
pub(super) unsafe trait Sink {
    type Error: Send;
    /// One record of the capture called `capture`; `run` is the engine that made it (a sink may
    /// take the packet times it read: `Dissection::take_record_times`).
    fn record(
        &mut self,
        run: &mut Dissection,
        capture: &str,
        rec: Record,
    ) -> Result<(), Self::Error>;
    /// Something is ready to hand to Python: the stretch ends.
    fn ready(&self) -> bool;
}

/// Records of one capture fed to a [`Sink`] without the GIL (`TableFeed::pump`,
/// `TimelineFeed::pump`).
struct Stretch<'a, S> {
    run: &'a mut Dissection,
    sink: &'a mut S,
    capture: &'a str,
}

// SAFETY: a `Stretch` is made by [`stretch`] and moved into `Python::detach`, which runs its
// closure on the calling thread and returns before `stretch` goes on; the `Stretch` never
// reaches another thread, so the run's `Rc`s (frames, capture name) and the sink's are only ever
// touched by the thread that owns them. `detach` asks for `Send` to keep GIL-bound references
// out of code that runs without the GIL: the run holds none (its Python objects are `Py<…>`
// handles, and the record sources that call Python, `PyReader` and `PyRecords`, take the GIL
// themselves with `Python::attach`), and a [`Sink`] holds none (its safety contract). The
// `Dissector` (unsendable) cannot be reached from another Python thread meanwhile: pyo3 refuses
// an unsendable object on any thread but its own, and it stays mutably borrowed for the stretch.
unsafe impl<S: Sink> Send for Stretch<'_, S> {}

impl<S: Sink> Stretch<'_, S> {
    /// Feeds records until the sink is ready, [`HOOK_EVERY`] records are read, or the capture
    /// ends.
    fn run(self) -> Result<StretchEnd, S::Error> {
        let Stretch { run, sink, capture } = self;
        for _ in 0..HOOK_EVERY {
            let Some(rec) = run.next_record() else {
                return Ok(StretchEnd::CaptureRead);
            };
            sink.record(run, capture, rec)?;
            if sink.ready() {
                return Ok(StretchEnd::Ready);
            }
        }
        Ok(StretchEnd::Hook)
    }
}

/// One stretch of `dissector`'s records into `sink` with the GIL released, so that a Python
/// thread can write what was handed out before (pyarrow releases the GIL while it encodes and
/// compresses): the engine and the writer then run on two cores. The dissector is borrowed only
/// during the stretch: the hook may read it (`bytes_read`).
pub(super) fn stretch<S: Sink>(
    py: Python<'_>,
    dissector: &Bound<'_, Dissector>,
    sink: &mut S,
) -> Result<StretchEnd, S::Error> {
    let name = dissector.borrow().run.cap.name.clone();
    let mut d = dissector.borrow_mut();
    let stretch = Stretch {
        run: &mut d.run,
        sink,
        capture: &name,
    };
    py.detach(move || stretch.run())
}

/// The export's sink: every record into the table builders.
struct Tables<'a> {
    set: &'a mut TableSet,
    end: &'a mut Option<crate::pipeline::CaptureEnd>,
}

// SAFETY: `TableSet` and `CaptureEnd` are plain Rust data (Arrow builders, strings): no Python
// object.
unsafe impl Sink for Tables<'_> {
    type Error = arrow_schema::ArrowError;

    fn record(
        &mut self,
        _run: &mut Dissection,
        capture: &str,
        rec: Record,
    ) -> Result<(), Self::Error> {
        let set = &mut *self.set;
        match rec {
            Record::Frame(f) => {
                let f = f.borrow();
                set.frame(capture, &f)?;
                for a in &f.anomalies {
                    set.anomaly(capture, a)?;
                }
            }
            Record::Anomaly(a) => set.anomaly(capture, &a)?,
            Record::Exchange(e) => set.exchange(capture, &e)?,
            Record::Connection(c) => set.connection(capture, &c)?,
            Record::CaptureEnd(e) => *self.end = Some(*e),
        }
        Ok(())
    }

    fn ready(&self) -> bool {
        self.set.has_ready()
    }
}

#[pymethods]
impl TableFeed {
    /// `cut_anywhere`: batches may end inside a frame's messages (for the engine's own writer,
    /// see [`TableOptions::cut_anywhere`]).
    #[new]
    #[pyo3(signature = (values=false, batch_rows=BATCH_ROWS, batch_bytes=BATCH_BYTES, cut_anywhere=false))]
    fn new(values: bool, batch_rows: usize, batch_bytes: usize, cut_anywhere: bool) -> Self {
        TableFeed {
            set: TableSet::new(TableOptions {
                values,
                batch_rows,
                batch_bytes,
                cut_anywhere,
            }),
            end: None,
        }
    }

    /// Dissects `dissector`'s capture until at least one batch is ready, and returns the ready
    /// batches in the order they filled up; `None` once the capture is wholly read (its last
    /// partial batches stay until `finish`). The dissector must not be iterated as well.
    fn pump(
        &mut self,
        py: Python<'_>,
        dissector: &Bound<'_, Dissector>,
    ) -> PyResult<Option<Batches>> {
        loop {
            match self.step(py, dissector)? {
                StretchEnd::CaptureRead => return Ok(None),
                StretchEnd::Ready => return Ok(Some(self.ready(py)?)),
                StretchEnd::Hook => {}
            }
        }
    }

    /// Dissects `dissector`'s whole capture, sending each batch to `files` as it is cut (the
    /// engine-written export: no batch crosses into Python). The last partial batches stay
    /// until `finish_into`. Signals (Ctrl-C) are checked between batches.
    fn pump_into(
        &mut self,
        py: Python<'_>,
        dissector: &Bound<'_, Dissector>,
        files: &Bound<'_, ParquetTables>,
    ) -> PyResult<()> {
        loop {
            let outcome = self.step(py, dissector)?;
            files.borrow_mut().send_ready(py, &mut self.set)?;
            match outcome {
                StretchEnd::CaptureRead => return Ok(()),
                StretchEnd::Ready | StretchEnd::Hook => py.check_signals()?,
            }
        }
    }

    /// The last, partial batch of every table sent to `files` (call once, at the end, then
    /// `files.close()`).
    fn finish_into(&mut self, py: Python<'_>, files: &Bound<'_, ParquetTables>) -> PyResult<()> {
        self.set.finish().map_err(table_error)?;
        files.borrow_mut().send_ready(py, &mut self.set)
    }

    /// The end of the capture last pumped to its end: `(name, packets, truncated,
    /// skipped_unknown_link)`, as `pipeline.CaptureEnd` holds them; `None` before.
    #[getter]
    fn capture_end(&self) -> Option<(String, u64, Option<String>, u64)> {
        self.end.as_ref().map(|e| {
            (
                e.name.clone(),
                e.packets,
                e.truncated.clone(),
                e.skipped_unknown_link,
            )
        })
    }

    /// The last, partial batch of every table, in declaration order (call once, at the end).
    fn finish(&mut self, py: Python<'_>) -> PyResult<Batches> {
        self.set.finish().map_err(table_error)?;
        self.ready(py)
    }

    /// Rows handed out so far: `{table: rows}` for every table the builders make.
    fn counts(&self) -> Vec<(&'static str, u64)> {
        self.set
            .counts()
            .into_iter()
            .map(|(t, n)| (t.name(), n))
            .collect()
    }

    /// The tables the builders make, in declaration order.
    #[staticmethod]
    fn tables() -> Vec<&'static str> {
        Table::ALL.iter().map(|t| t.name()).collect()
    }
}

impl TableFeed {
    /// One stretch of `dissector`'s capture into the builders (until a batch is ready, the
    /// hook is due or the capture is read), then the hook: what `pump` and `pump_into` repeat.
    fn step(&mut self, py: Python<'_>, dissector: &Bound<'_, Dissector>) -> PyResult<StretchEnd> {
        // Only the builders read this dissector's frames: bodies may come as their text
        // (a no-op once a connection has its session, so the first call decides).
        dissector.borrow_mut().run.text_detail();
        let mut sink = Tables {
            set: &mut self.set,
            end: &mut self.end,
        };
        let outcome = stretch(py, dissector, &mut sink).map_err(table_error)?;
        Self::hook(py, dissector)?;
        Ok(outcome)
    }

    /// Calls the dissector's `on_record` for the records read since the last call, with the
    /// dissector not borrowed (the CLI's progress hook reads its `bytes_read`).
    pub(super) fn hook(py: Python<'_>, dissector: &Bound<'_, Dissector>) -> PyResult<()> {
        let (times, callback) = {
            let mut me = dissector.borrow_mut();
            let times = me.run.take_record_times();
            (times, me.on_record.as_ref().map(|c| c.clone_ref(py)))
        };
        if let Some(cb) = callback {
            for (number, ts) in times {
                cb.call1(py, (number, ts))?;
            }
        }
        Ok(())
    }

    fn ready(&mut self, py: Python<'_>) -> PyResult<Batches> {
        let mut out = Vec::new();
        while let Some((t, b)) = self.set.pop() {
            let stream = ArrowStream::new(t.name(), self.set.schema(t), vec![b]);
            out.push((t.name(), Py::new(py, stream)?));
        }
        Ok(out)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Dissector>()?;
    m.add_class::<TableFeed>()?;
    Ok(())
}
