//! The shield around every call into protocol code: a panic there becomes an `internal_error`
//! anomaly (the caller's business), and is not also printed to stderr as Rust's default hook
//! would (`thread '<unnamed>' panicked at …` in the middle of a timeline reads as a crash, and
//! the anomaly already says what failed and where).
//!
//! Whether a panic is shielded is known only on the panicking thread, so it is kept in a
//! thread-local depth counter, not in run state: it carries no result, only whether to print.
//! The quiet hook is installed once, by the Python module (`quiet_shielded_panics`), never by
//! the engine itself: cargo tests and the fuzz targets keep their own hooks (libFuzzer's aborts
//! on every panic, shielded or not, which is how the fuzzers find them).

use std::cell::Cell;
use std::panic::{catch_unwind, set_hook, take_hook, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// How many `shielded` calls the current thread is inside.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f`, catching a panic as `catch_unwind` does; while it runs, a panic is "shielded".
pub fn shielded<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    DEPTH.with(|d| d.set(d.get() + 1));
    let got = catch_unwind(AssertUnwindSafe(f));
    DEPTH.with(|d| d.set(d.get() - 1));
    got
}

/// Whether the current thread is inside a `shielded` call.
pub fn is_shielded() -> bool {
    DEPTH.with(|d| d.get() > 0)
}

/// Installs, once per process, a panic hook that stays silent for shielded panics and hands
/// every other panic to the hook that was there before (Rust's default, or an embedder's).
pub fn quiet_shielded_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = take_hook();
        set_hook(Box::new(move |info| {
            if !is_shielded() {
                previous(info);
            }
        }));
    });
}
