//! The protocols the Rust engine knows, in registry order (the order detection breaks ties in
//! and reports them): the one place that names them. Adding a protocol is one line here and its
//! own module; nothing else changes.

use crate::protocol::Protocol;

/// Every protocol, in registry order (as Python's `PROTOCOL_MODULES`).
// One `push` line per protocol (merges of the ports touch one line each), not one `vec![]`.
#[allow(clippy::vec_init_then_push)]
pub fn protocols() -> Vec<Box<dyn Protocol>> {
    #[allow(unused_mut)]
    let mut all: Vec<Box<dyn Protocol>> = Vec::new();
    // One line per protocol, in Python's order: kafka, pulsar, pravega, tank.
    all.push(Box::new(crate::kafka::Kafka));
    all
}

/// The protocol called `name`, if the engine has it.
pub fn by_name(name: &str) -> Option<Box<dyn Protocol>> {
    protocols().into_iter().find(|p| p.name() == name)
}
