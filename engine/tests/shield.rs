//! The quiet panic hook (its own test binary: a panic hook is per process).

use std::panic::{catch_unwind, set_hook};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use wiredump_engine::shield::{is_shielded, quiet_shielded_panics, shielded};

#[test]
fn shielded_panics_are_silent_and_others_reach_the_previous_hook() {
    // Stands for Rust's default hook (which would print): counts the panics it is handed.
    let printed = Arc::new(AtomicUsize::new(0));
    let seen = printed.clone();
    set_hook(Box::new(move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
    }));
    quiet_shielded_panics();
    quiet_shielded_panics(); // a second install must not stack a second hook

    assert!(!is_shielded());
    let got = shielded(|| -> u32 { panic!("planted in a decoder") });
    assert!(got.is_err());
    assert_eq!(
        printed.load(Ordering::SeqCst),
        0,
        "a shielded panic was printed"
    );
    assert!(!is_shielded(), "the depth must unwind with the panic");

    // Nested shields, the inner one panicking, the outer one returning normally.
    let outer = shielded(|| shielded(|| -> u32 { panic!("inner") }).is_err());
    assert_eq!(outer.ok(), Some(true));
    assert_eq!(printed.load(Ordering::SeqCst), 0);

    // A panic outside any shield still reaches the previous hook, once.
    let plain = catch_unwind(|| -> u32 { panic!("engine bug outside protocol code") });
    assert!(plain.is_err());
    assert_eq!(printed.load(Ordering::SeqCst), 1);

    assert_eq!(shielded(|| 7).ok(), Some(7));
}
