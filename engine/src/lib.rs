//! wiredump's native engine.
//!
//! The hot path of the dissector, from capture bytes to table rows, lives here; Python keeps the
//! command line, rendering, filters, stats, checks and Spark. The crate is plain Rust with its
//! own tests; the PyO3 bindings (feature `python`) are a thin layer in [`python`].

pub mod kafka;
#[cfg(feature = "python")]
mod python;

/// The engine's version, as built (also reported by `wiredump --version`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
