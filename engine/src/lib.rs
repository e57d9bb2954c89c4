//! wiredump's native engine.
//!
//! The hot path of the dissector, from capture bytes to table rows, lives here; Python keeps the
//! command line, rendering, filters, stats, checks and Spark. The crate is plain Rust with its
//! own tests; the PyO3 bindings (feature `python`) are a thin layer in [`python`].
//!
//! So far: capture reading ([`capture`]), link/IP/TCP parsing ([`packet`]), TCP reassembly
//! ([`tcp`]) and the loop joining them ([`stream`]), each a port of the Python reference module of
//! the same name that gives the same events; then protocol detection ([`detection`], [`trial`]),
//! the framing engine ([`framing`]) and the per-capture pipeline ([`pipeline`]: ordering, holds,
//! connection rows), which run a whole capture natively (`--engine native`).

pub mod capture;
pub mod packet;
pub mod printable;
pub mod stream;
pub mod tcp;

// The framing side: records, the protocol interface, pairing and decompression every protocol
// shares (twins of `model.py`, `protocols/base.py`, `correlation.py`, `codecs.py`).
pub mod codecs;
pub mod correlation;
pub mod model;
pub mod protocol;
pub mod registry;
pub mod replay;
pub mod shield;

// The engine proper: framing, detection and the per-capture pipeline
// (twins of `framing.py`, `protocols/trial.py`, `detection.py`, `pipeline.py`).
pub mod detection;
pub mod framing;
pub mod pipeline;
pub mod trial;
// The plain text timeline rendered from the records (the default command's fast path).
pub mod timeline;
// The tables' `detail` text: decoded fields as the JSON the Python reference writes.
pub mod detail_json;
// The output tables as Arrow record batches, columns from `wiredump/tables.json` (the twin of
// `tables.py`'s `TableBuilder`).
#[cfg(feature = "arrow")]
pub mod arrow_out;
#[cfg(feature = "parquet")]
pub mod parquet_out;

// The protocols, one module each (named nowhere else but the registry).
pub mod kafka;
pub mod pravega;
pub mod pulsar;
#[cfg(feature = "python")]
mod python;
pub mod tank;

/// The engine's version, as built (also reported by `wiredump --version`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
