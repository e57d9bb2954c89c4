//! The protocols the Rust engine knows, in registry order (the order detection breaks ties in
//! and reports them): the one place that names them. Adding a protocol is one line here and its
//! own module; nothing else changes.

use crate::protocol::Protocol;

/// Every protocol, in registry order (as Python's `PROTOCOL_MODULES`).
pub fn protocols() -> Vec<Box<dyn Protocol>> {
    vec![
        Box::new(crate::kafka::Kafka),
        Box::new(crate::pulsar::Pulsar),
        Box::new(crate::pravega::Pravega),
        Box::new(crate::tank::Tank),
    ]
}

/// The protocol called `name`, if the engine has it.
pub fn by_name(name: &str) -> Option<Box<dyn Protocol>> {
    protocols().into_iter().find(|p| p.name() == name)
}

/// The registry restricted to `names` (None: all of it), in registry order, for one run (a run
/// owns its protocols). A name the registry lacks is simply not there: its connections stay
/// undecoded (`Options.protocols` of the Python pipeline, for the differential tests).
pub fn select(names: Option<&[String]>) -> Vec<Box<dyn Protocol>> {
    let mut all = protocols();
    if let Some(names) = names {
        all.retain(|p| names.iter().any(|n| n == p.name()));
    }
    all
}
