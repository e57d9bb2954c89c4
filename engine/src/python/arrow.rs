//! The tables handed to Python as Arrow C streams.
//!
//! `ArrowStream` is one table's record batches behind the Arrow PyCapsule interface
//! (`__arrow_c_stream__`): `pyarrow.RecordBatchReader.from_stream(s)`, `pyarrow.table(s)`,
//! `polars.DataFrame(s)` and DuckDB (`duckdb.sql("select … from s")`) import the batches through
//! the C stream interface without copying their buffers. It can be read more than once (each
//! read exports the same shared buffers again).
//!
//! `TableRecords` holds pipeline events converted to the engine's records (see [`from_py`]);
//! its `tables()` runs the Rust builders over them. `tables_from_events(events)` does both.
//! Together they let the tests compare the Rust tables with Python's on every capture, and the
//! benchmark time the builders alone.

use std::ffi::CStr;
use std::rc::Rc;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

use super::from_py::{Converter, Record};
use crate::arrow_out::{Table, TableOptions, TableSet, BATCH_BYTES, BATCH_ROWS, ROW_OVERHEAD};

/// The capsule name the Arrow PyCapsule interface gives a stream.
const STREAM_CAPSULE: &CStr = c"arrow_array_stream";

fn arrow_error(e: ArrowError) -> PyErr {
    PyRuntimeError::new_err(format!("building the tables: {e}"))
}

/// One table's record batches, readable through the Arrow C stream interface.
#[pyclass(frozen, module = "wiredump._engine")]
pub struct ArrowStream {
    table: &'static str,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

#[pymethods]
impl ArrowStream {
    /// The Arrow PyCapsule protocol: a capsule holding an `ArrowArrayStream` of the batches.
    ///
    /// `requested_schema` is accepted and ignored, as the protocol allows: the schema is the
    /// declared one, and consumers check what they receive.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = RecordBatchIterator::new(
            self.batches.clone().into_iter().map(Ok),
            self.schema.clone(),
        );
        // The capsule owns the stream. A consumer moves the struct out and marks it released;
        // otherwise dropping the capsule drops the stream, whose Drop calls its release.
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, STREAM_CAPSULE)
    }

    /// The table's name (`frames`, `messages`, …).
    #[getter]
    fn table(&self) -> &'static str {
        self.table
    }

    #[getter]
    fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// Rows of each batch, in order (where the batches were cut).
    #[getter]
    fn batch_rows(&self) -> Vec<usize> {
        self.batches.iter().map(RecordBatch::num_rows).collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "<ArrowStream {}: {} rows in {} batches>",
            self.table,
            self.num_rows(),
            self.batches.len()
        )
    }
}

impl ArrowStream {
    /// One table's batches (the export's fast path hands them out one at a time, see
    /// `dissector::TableFeed`).
    pub(super) fn new(table: &'static str, schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        ArrowStream {
            table,
            schema,
            batches,
        }
    }
}

/// The batches in the order they filled up: (table, rows).
type BatchOrder = Vec<(&'static str, usize)>;

/// Pipeline events converted to the engine's records, ready for the table builders.
#[pyclass(unsendable, module = "wiredump._engine")]
pub struct TableRecords {
    records: Vec<(Rc<str>, Record)>,
}

#[pymethods]
impl TableRecords {
    /// `events`: an iterable of `wiredump.dissect.pipeline.Event` (frames, anomalies, exchanges
    /// and connections; other kinds are skipped).
    #[new]
    fn new(py: Python<'_>, events: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut conv = Converter::new(py)?;
        let mut records = Vec::new();
        for ev in events.try_iter()? {
            if let Some(r) = conv.event(&ev?)? {
                records.push(r);
            }
        }
        Ok(TableRecords { records })
    }

    fn __len__(&self) -> usize {
        self.records.len()
    }

    /// The tables built from the records: `{table: ArrowStream}` in declaration order,
    /// and the order the batches filled up in (`[(table, rows)]`, as Python's `TableBuilder`
    /// hands them out).
    #[pyo3(signature = (values=false, batch_rows=BATCH_ROWS, batch_bytes=BATCH_BYTES))]
    fn tables<'py>(
        &self,
        py: Python<'py>,
        values: bool,
        batch_rows: usize,
        batch_bytes: usize,
    ) -> PyResult<(Bound<'py, PyDict>, BatchOrder)> {
        let options = TableOptions {
            values,
            batch_rows,
            batch_bytes,
            cut_anywhere: false,
        };
        let mut set = TableSet::new(options);
        let mut per_table: Vec<Vec<RecordBatch>> = vec![Vec::new(); Table::ALL.len()];
        let mut order = Vec::new();
        let mut drain = |set: &mut TableSet, order: &mut BatchOrder| {
            while let Some((t, b)) = set.pop() {
                order.push((t.name(), b.num_rows()));
                per_table[t as usize].push(b);
            }
        };
        for (capture, r) in &self.records {
            match r {
                Record::Frame(f) => set.frame(capture, f),
                Record::Anomaly(a) => set.anomaly(capture, a),
                Record::Exchange(e) => set.exchange(capture, e),
                Record::Connection(c) => set.connection(capture, c),
            }
            .map_err(arrow_error)?;
            drain(&mut set, &mut order);
        }
        set.finish().map_err(arrow_error)?;
        drain(&mut set, &mut order);
        let out = PyDict::new(py);
        for (t, batches) in Table::ALL.into_iter().zip(per_table) {
            let stream = ArrowStream {
                table: t.name(),
                schema: set.schema(t),
                batches,
            };
            out.set_item(t.name(), Bound::new(py, stream)?)?;
        }
        Ok((out, order))
    }
}

/// `{table: ArrowStream}` for the events, built by the Rust builders.
#[pyfunction]
#[pyo3(signature = (events, values=false, batch_rows=BATCH_ROWS, batch_bytes=BATCH_BYTES))]
fn tables_from_events<'py>(
    py: Python<'py>,
    events: &Bound<'py, PyAny>,
    values: bool,
    batch_rows: usize,
    batch_bytes: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let records = TableRecords::new(py, events)?;
    Ok(records.tables(py, values, batch_rows, batch_bytes)?.0)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ArrowStream>()?;
    m.add_class::<TableRecords>()?;
    m.add_function(wrap_pyfunction!(tables_from_events, m)?)?;
    m.add("TABLE_BATCH_ROWS", BATCH_ROWS)?;
    m.add("TABLE_BATCH_BYTES", BATCH_BYTES)?;
    m.add("TABLE_ROW_OVERHEAD", ROW_OVERHEAD)?;
    Ok(())
}
