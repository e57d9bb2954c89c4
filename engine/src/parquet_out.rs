//! The tables written as Parquet files by the engine, on a thread of its own.
//!
//! Why here and not in pyarrow: a Parquet writer keeps each row group's metadata (one entry per
//! column chunk, ~20 KB per frames row group in Arrow C++) until the file closes, and pyarrow
//! writes one row group per call, so an export of bounded batches grew with the capture (the
//! benchmark capture's tables made 460 row groups; ten times the capture, ten times the
//! metadata). The Rust writer buffers a row group's pages *compressed* and cuts it at a byte
//! bound apart from the batches, so the batches stay small (the engine's memory) and the files keep a few
//! large row groups (the footer's memory). And the export no longer loads Arrow C++ at all
//! (~50 MB of the process's memory, ~0.15 s of its start).
//!
//! What is written is set by the caller ([`WriteSettings`], declared in Python as
//! `wiredump/dissect/parquet_settings.py`, the one declaration pyarrow's writer uses too):
//! zstd and its level, the columns dictionary-encoded, the columns without min/max statistics.
//! The values read back are those of the pyarrow writer's files (the suite compares them).

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::schema::types::ColumnPath;

use crate::arrow_out::Table;

/// How the files are written.
#[derive(Clone, Debug)]
pub struct WriteSettings {
    /// The zstd level of every column chunk.
    pub zstd_level: i32,
    /// The columns (of any table) dictionary-encoded; every other column is plain.
    pub dictionary: Vec<String>,
    /// The columns (of any table) written without min/max statistics; the others have them per
    /// column chunk.
    pub no_statistics: Vec<String>,
    /// A row group is closed once it holds this many rows…
    pub row_group_rows: usize,
    /// …or once its size by the Arrow writer's estimate reaches this many bytes (its pages
    /// compressed so far and each column's values not yet compressed: about what it holds in
    /// memory until it is written).
    pub row_group_bytes: usize,
    /// A column's page is compressed once its values take this many bytes: what each open
    /// column holds uncompressed (every table's columns are open at once).
    pub page_bytes: usize,
}

/// Why writing a file failed: its path, and the error (an I/O error keeps its kind and errno).
#[derive(Debug)]
pub struct WriteError {
    pub path: PathBuf,
    pub error: io::Error,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.error)
    }
}

impl std::error::Error for WriteError {}

impl WriteError {
    /// The same error once more (same file, same errno or kind and text).
    fn again(&self) -> WriteError {
        let error = match self.error.raw_os_error() {
            Some(errno) => io::Error::from_raw_os_error(errno),
            None => io::Error::new(self.error.kind(), self.error.to_string()),
        };
        WriteError {
            path: self.path.clone(),
            error,
        }
    }

    fn of(path: &Path, e: ParquetError) -> WriteError {
        WriteError {
            path: path.to_path_buf(),
            error: io_error(e),
        }
    }
}

/// The I/O error under a Parquet error (a full disk: `ENOSPC`, as `BufWriter` reported it), or
/// the Parquet error itself as an `Other` I/O error.
fn io_error(e: ParquetError) -> io::Error {
    match e {
        ParquetError::External(inner) => match inner.downcast::<io::Error>() {
            Ok(io) => *io,
            Err(other) => io::Error::other(other.to_string()),
        },
        other => io::Error::other(other.to_string()),
    }
}

/// The bytes gathered before each write to a file (pages reach the file when a row group
/// closes, a few MiB at once; this only gathers the headers and the footer's pieces).
const FILE_BUFFER: usize = 64 << 10;

/// One table's file.
struct TableFile {
    path: PathBuf,
    writer: ArrowWriter<BufWriter<File>>,
}

impl TableFile {
    fn create(path: PathBuf, schema: SchemaRef, s: &WriteSettings) -> Result<Self, WriteError> {
        let file = File::create(&path).map_err(|error| WriteError {
            path: path.clone(),
            error,
        })?;
        let props = properties(&schema, s).map_err(|e| WriteError::of(&path, e))?;
        let writer = ArrowWriter::try_new(
            BufWriter::with_capacity(FILE_BUFFER, file),
            schema,
            Some(props),
        )
        .map_err(|e| WriteError::of(&path, e))?;
        Ok(TableFile { path, writer })
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<(), WriteError> {
        self.writer
            .write(batch)
            .map_err(|e| WriteError::of(&self.path, e))
    }

    fn close(self) -> Result<(), WriteError> {
        let TableFile { path, writer } = self;
        let mut out = writer.into_inner().map_err(|e| WriteError::of(&path, e))?;
        // `into_inner` wrote the footer into the buffer; the last of it reaches the file here,
        // where a full disk is still reported.
        io::Write::flush(&mut out).map_err(|error| WriteError {
            path: path.clone(),
            error,
        })?;
        Ok(())
    }
}

/// The writer properties of one table's file.
fn properties(schema: &SchemaRef, s: &WriteSettings) -> Result<WriterProperties, ParquetError> {
    let level = ZstdLevel::try_new(s.zstd_level)?;
    let mut b = WriterProperties::builder()
        // Version 1 data pages, as pyarrow's (readers of every age read them); the logical
        // types (UTC timestamps, strings, the map) are written either way.
        .set_writer_version(WriterVersion::PARQUET_1_0)
        .set_compression(Compression::ZSTD(level))
        .set_dictionary_enabled(false)
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_max_row_group_row_count(Some(s.row_group_rows.max(1)))
        .set_max_row_group_bytes(Some(s.row_group_bytes.max(1)))
        .set_data_page_size_limit(s.page_bytes.max(1))
        .set_dictionary_page_size_limit(s.page_bytes.max(1))
        // The map's groups named as the Parquet format names them (`key_value`), as pyarrow
        // writes them; the Arrow schema kept in the file still gives readers the declared one.
        .set_coerce_types(true)
        // No page index (pyarrow writes none either): it is held in memory until the file
        // closes, one entry per page, so it would grow with the capture.
        .set_offset_index_disabled(true)
        .set_created_by(concat!("wiredump ", env!("CARGO_PKG_VERSION")).to_string());
    for field in schema.fields() {
        let name = field.name();
        let path = ColumnPath::from(name.as_str());
        if s.dictionary.iter().any(|d| d == name) {
            b = b.set_column_dictionary_enabled(path.clone(), true);
        }
        if s.no_statistics.iter().any(|d| d == name) {
            // A map's leaves are its columns: under the names `set_coerce_types` gives them.
            b = b.set_column_statistics_enabled(path, EnabledStatistics::None);
            if let arrow_schema::DataType::Map(..) = field.data_type() {
                for leaf in ["key", "value"] {
                    let p = ColumnPath::new(vec![name.clone(), "key_value".into(), leaf.into()]);
                    b = b.set_column_statistics_enabled(p, EnabledStatistics::None);
                }
            }
        }
    }
    Ok(b.build())
}

/// Every table's file, written in the caller's thread.
pub struct TableFiles {
    files: Vec<(Table, TableFile)>,
}

impl TableFiles {
    /// Creates `DIR/<table>.parquet` for every table (an empty table's file holds its schema
    /// and no row group, as pyarrow's).
    pub fn create(
        dir: &Path,
        schema: impl Fn(Table) -> SchemaRef,
        s: &WriteSettings,
    ) -> Result<TableFiles, WriteError> {
        let mut files = Vec::with_capacity(Table::ALL.len());
        for t in Table::ALL {
            let path = dir.join(format!("{}.parquet", t.name()));
            files.push((t, TableFile::create(path, schema(t), s)?));
        }
        Ok(TableFiles { files })
    }

    /// One batch of `table`, appended to its open row group.
    pub fn write(&mut self, table: Table, batch: &RecordBatch) -> Result<(), WriteError> {
        match self.files.iter_mut().find(|(t, _)| *t == table) {
            Some((_, f)) => f.write(batch),
            None => unreachable!("every table has its file"),
        }
    }

    /// Closes every file (its last row group and footer), in declaration order; the first
    /// error is returned, and the other files are still closed.
    pub fn close(self) -> Result<(), WriteError> {
        let mut first = Ok(());
        for (_, f) in self.files {
            let r = f.close();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

/// [`TableFiles`] written on a thread of their own: the engine sends each batch as it is cut
/// and goes on building the next while this thread encodes and compresses (the two take about
/// as long; on two cores the export takes the longer of them, not their sum).
///
/// The channel is bounded ([`BackgroundFiles::DEPTH`] batches), so a slow disk makes the engine
/// wait rather than queue batches without end. Order is kept (one thread, first in first out).
/// When writing fails the thread stops reading: the next `send` sees the channel closed and
/// returns the thread's error, as does `close`.
pub struct BackgroundFiles {
    tx: Option<SyncSender<(Table, RecordBatch)>>,
    thread: Option<JoinHandle<Result<(), WriteError>>>,
    /// The error already returned once (a later `send` or `close` says the same).
    failed: Option<WriteError>,
}

impl BackgroundFiles {
    /// Batches waiting for the writer at most (each about a batch's byte bound: 4 MiB in all
    /// with the export's 512 KiB, room for the burst of batches a big frame makes).
    pub const DEPTH: usize = 8;

    pub fn start(files: TableFiles) -> io::Result<BackgroundFiles> {
        let (tx, rx) = sync_channel(Self::DEPTH);
        let thread = std::thread::Builder::new()
            .name("wiredump-parquet".into())
            .spawn(move || write_all(files, rx))?;
        Ok(BackgroundFiles {
            tx: Some(tx),
            thread: Some(thread),
            failed: None,
        })
    }

    /// Hands one batch to the writer (waits while `DEPTH` batches wait).
    pub fn send(&mut self, table: Table, batch: RecordBatch) -> Result<(), WriteError> {
        if let Some(tx) = &self.tx {
            if tx.send((table, batch)).is_ok() {
                return Ok(());
            }
        }
        // The writer stopped: its error says why.
        self.join()
    }

    /// Waits for every batch sent to be written and the files closed.
    pub fn close(&mut self) -> Result<(), WriteError> {
        self.join()
    }

    fn join(&mut self) -> Result<(), WriteError> {
        self.tx = None;
        if let Some(thread) = self.thread.take() {
            let outcome = match thread.join() {
                Ok(r) => r,
                Err(panic) => Err(WriteError {
                    path: PathBuf::new(),
                    error: io::Error::other(format!(
                        "internal error in the Parquet writer: {}",
                        crate::framing::panic_message(&*panic)
                    )),
                }),
            };
            if let Err(e) = outcome {
                self.failed = Some(e.again());
                return Err(e);
            }
        }
        match &self.failed {
            Some(e) => Err(e.again()),
            None => Ok(()),
        }
    }
}

impl Drop for BackgroundFiles {
    fn drop(&mut self) {
        // Never left running: what was sent is written and the files closed.
        let _ = self.join();
    }
}

fn write_all(mut files: TableFiles, rx: Receiver<(Table, RecordBatch)>) -> Result<(), WriteError> {
    while let Ok((table, batch)) = rx.recv() {
        if let Err(e) = files.write(table, &batch) {
            // Dropping `rx` (on return) tells the sender; the other files are closed as they
            // are (a partial export is what a failed export leaves).
            let _ = files.close();
            return Err(e);
        }
    }
    files.close()
}

#[cfg(test)]
mod tests;
