//! The export's Parquet files, written by the engine ([`crate::parquet_out`]) for Python.
//!
//! `ParquetTables(directory, …)` creates `DIR/<table>.parquet` for every table and starts the
//! writer thread; `TableFeed.pump_into(dissector, files)` builds the tables of a capture and
//! sends each batch to it as it is cut, with no batch crossing into Python;
//! `TableFeed.finish_into(files)` sends the last ones and `files.close()` ends the files. A
//! write that fails (a full disk) raises `OSError` with the file's name and the system's errno.

use std::path::PathBuf;

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;

use super::heap::HeapWatch;
use crate::arrow_out::{Table, TableSet};
use crate::parquet_out::{BackgroundFiles, TableFiles, WriteError, WriteSettings};

/// The tables' Parquet files and the thread writing them.
#[pyclass(module = "wiredump._engine")]
pub struct ParquetTables {
    files: BackgroundFiles,
    /// The export's resident memory, trimmed when freed memory piles up.
    heap: HeapWatch,
}

/// A write error as Python's `OSError(errno, strerror, filename)`: what the command line
/// reports as `FILE: REASON` (errno is None when the failure is not the system's).
pub(super) fn os_error(e: WriteError) -> PyErr {
    // As `str` (`OsString` converts with the file system's encoding), as Python's own are.
    let filename = (!e.path.as_os_str().is_empty()).then(|| e.path.clone().into_os_string());
    match e.error.raw_os_error() {
        Some(errno) => {
            // The system's text without Rust's " (os error N)".
            let text = e.error.to_string();
            let strerror = text.split(" (os error").next().unwrap_or(&text).to_string();
            PyOSError::new_err((errno, strerror, filename))
        }
        None => PyOSError::new_err((None::<i32>, e.error.to_string(), filename)),
    }
}

#[pymethods]
impl ParquetTables {
    /// Creates every table's file in `directory` (which must exist) and starts the writer.
    ///
    /// `zstd_level`, `dictionary` (the columns dictionary-encoded), `no_statistics` (the
    /// columns without min/max), the row-group bounds and the page size are `parquet_settings`'s.
    #[new]
    #[pyo3(signature = (directory, *, zstd_level, dictionary, no_statistics, row_group_rows, row_group_bytes, page_bytes))]
    fn new(
        directory: PathBuf,
        zstd_level: i32,
        dictionary: Vec<String>,
        no_statistics: Vec<String>,
        row_group_rows: usize,
        row_group_bytes: usize,
        page_bytes: usize,
    ) -> PyResult<Self> {
        let settings = WriteSettings {
            zstd_level,
            dictionary,
            no_statistics,
            row_group_rows,
            row_group_bytes,
            page_bytes,
        };
        super::heap::map_big_blocks();
        let files = TableFiles::create(&directory, |t: Table| t.decl().schema(), &settings)
            .map_err(os_error)?;
        let files = BackgroundFiles::start(files).map_err(|error| {
            os_error(WriteError {
                path: PathBuf::new(),
                error,
            })
        })?;
        Ok(ParquetTables {
            files,
            heap: HeapWatch::new(),
        })
    }

    /// Waits until every batch sent is written, then writes each file's footer.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let files = &mut self.files;
        py.detach(|| files.close()).map_err(os_error)
    }
}

impl ParquetTables {
    /// Sends every batch `set` has ready, in order (waits while the writer is behind).
    pub(super) fn send_ready(&mut self, py: Python<'_>, set: &mut TableSet) -> PyResult<()> {
        // The set stays on this thread (it is not `Send`); its batches are.
        let ready: Vec<_> = std::iter::from_fn(|| set.pop()).collect();
        if ready.is_empty() {
            return Ok(());
        }
        self.heap.tick();
        let files = &mut self.files;
        py.detach(|| ready.into_iter().try_for_each(|(t, b)| files.send(t, b)))
            .map_err(os_error)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ParquetTables>()?;
    Ok(())
}
