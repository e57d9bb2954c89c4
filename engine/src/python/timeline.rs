//! `TimelineFeed`: the plain text timeline made on the native side (`crate::timeline`) from a
//! `Dissector`'s records, handed to Python as big chunks of UTF-8 text to write.
//!
//! The default command into a pipe or file (`wiredump X > file`) spent most of its time making
//! a Python frame, its anomalies and their events per record only to format one line from them.
//! The feed runs the engine and the renderer together with the GIL released (the stretch of
//! `dissector.rs`, shared with the export's `TableFeed`) and returns the text when a chunk is
//! full, when `-c` is reached, when the capture ends, or — `-l` — as soon as a line is made.
//! `wiredump/cli/timeline.py` chooses it for the plain timeline and keeps the Python renderer for
//! every other (colour, -V, -x, -Y, JSON, fields).

use std::collections::HashSet;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::dissector::{stretch, Dissector, Sink, StretchEnd};
use crate::pipeline::{Dissection, Record};
use crate::timeline::text::TimeMode;
use crate::timeline::{Declared, Settings, Timeline};

/// Text handed to Python at once, at least (a few hundred lines): big enough that writing costs
/// little per line, small enough to keep memory flat.
const CHUNK_BYTES: usize = 1 << 18;

/// The timeline's side of a stretch: records in, lines out; ready when a chunk is full, `-c` is
/// reached, a line is made under `-l`, or a progress mark passed.
struct Lines<'a> {
    tl: &'a mut Timeline,
    /// `-l`: hand every line out as soon as it is made.
    line_buffered: bool,
    /// Packet numbers at which the progress bar is updated (every 1024th, as the Python hook
    /// does); None: no bar.
    marks: Option<&'a mut Vec<u64>>,
}

// SAFETY: a `Timeline` is plain Rust data (strings, maps, the engine's `Rc` frames); the marks
// are numbers: no Python object.
unsafe impl Sink for Lines<'_> {
    type Error = std::convert::Infallible;

    fn record(
        &mut self,
        run: &mut Dissection,
        capture: &str,
        rec: Record,
    ) -> Result<(), Self::Error> {
        let times = run.record_times();
        if let Some(marks) = self.marks.as_deref_mut() {
            marks.extend(times.iter().map(|t| t.0).filter(|n| n & 1023 == 0));
        }
        self.tl.capture(capture);
        self.tl.packets(times);
        run.clear_record_times();
        self.tl.record(rec);
        Ok(())
    }

    fn ready(&self) -> bool {
        let text = self.tl.text();
        self.tl.stopped()
            || text.len() >= CHUNK_BYTES
            || (self.line_buffered && !text.is_empty())
            || self.marks.as_ref().is_some_and(|m| !m.is_empty())
    }
}

/// The plain timeline of one run: `pump(dissector)` for each capture in turn until it says the
/// capture is done, writing the text it returns; then `finish()`, `said` and `truncated`.
#[pyclass(unsendable, module = "wiredump._engine")]
pub struct TimelineFeed {
    tl: Timeline,
    line_buffered: bool,
    progress: bool,
}

#[pymethods]
impl TimelineFeed {
    /// `time`: `-t`; `all_anomalies`: `-A`; `count`: `-c`; `window`: the reorder window (0 with
    /// `-l`); `several`: the run reads more than one capture; `line_buffered`: `-l`;
    /// `progress`: hand out the progress marks. The rest is what Python declares (see
    /// `crate::timeline::Declared`).
    #[new]
    #[pyo3(signature = (
        *, time, all_anomalies, count, window, several, line_buffered, progress,
        shown, stream_breaks, snap, titles, unanswered, no_reply_yet, max_wait, max_ports,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        time: &str,
        all_anomalies: bool,
        count: Option<u64>,
        window: usize,
        several: bool,
        line_buffered: bool,
        progress: bool,
        shown: HashSet<String>,
        stream_breaks: HashSet<String>,
        snap: String,
        titles: String,
        unanswered: String,
        no_reply_yet: String,
        max_wait: usize,
        max_ports: usize,
    ) -> PyResult<Self> {
        let time = TimeMode::parse(time)
            .ok_or_else(|| PyValueError::new_err(format!("unknown time format {time:?}")))?;
        let decl = Declared {
            shown,
            stream_breaks,
            snap,
            titles,
            unanswered,
            no_reply_yet,
            max_wait,
            max_ports,
        };
        let settings = Settings {
            time,
            all_anomalies,
            count,
            window,
            several,
        };
        Ok(TimelineFeed {
            tl: Timeline::new(decl, settings),
            line_buffered,
            progress,
        })
    }

    /// Dissects `dissector`'s capture until text is ready and returns `(text, marks, more)`:
    /// the UTF-8 lines made, the packet numbers to update the progress bar at, and whether to
    /// call again (false once the capture is wholly read or `-c` is reached). The dissector
    /// must not be iterated as well.
    fn pump<'py>(
        &mut self,
        py: Python<'py>,
        dissector: &Bound<'py, Dissector>,
    ) -> PyResult<(Bound<'py, PyBytes>, Vec<u64>, bool)> {
        let mut marks = Vec::new();
        loop {
            let mut sink = Lines {
                tl: &mut self.tl,
                line_buffered: self.line_buffered,
                marks: self.progress.then_some(&mut marks),
            };
            let outcome = match stretch(py, dissector, &mut sink) {
                Ok(o) => o,
                Err(never) => match never {},
            };
            if let Some(e) = dissector.borrow().take_error() {
                return Err(e); // what the records' iterable raised (`Dissector.from_records`)
            }
            let more = match outcome {
                StretchEnd::CaptureRead => false,
                StretchEnd::Ready => !self.tl.stopped(),
                StretchEnd::Hook => continue,
            };
            let text = PyBytes::new(py, self.tl.text().as_bytes());
            self.tl.clear_text();
            return Ok((text, marks, more));
        }
    }

    /// The text still held at the end of the run (nothing is held past a capture's end, so
    /// this is empty unless the run stopped early).
    fn finish<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
        self.tl.finish();
        let text = PyBytes::new(py, self.tl.text().as_bytes());
        self.tl.clear_text();
        text
    }

    /// `-c` was reached: read no further capture.
    #[getter]
    fn stopped(&self) -> bool {
        self.tl.stopped()
    }

    /// The end-of-capture notes for stderr, in order (without the `wiredump: ` prefix).
    #[getter]
    fn said(&self) -> Vec<String> {
        self.tl.said.clone()
    }

    /// `name: capture is truncated: …` for each truncated capture read to its end.
    #[getter]
    fn truncated(&self) -> Vec<String> {
        self.tl.truncated.clone()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TimelineFeed>()
}
