//! The protocols the native engine knows, in the order detection asks them (the order of
//! Python's `PROTOCOL_MODULES`: kafka, pulsar, pravega, tank — ties and "first best" follow it).
//!
//! The only place outside a protocol's own module that names it: adding a protocol is one line
//! here (`Box::new(crate::kafka::Kafka),` …), in that order.

use crate::protocol::Protocol;

/// Every protocol of the registry, fresh for one run (a run owns its registry).
pub fn all() -> Vec<Box<dyn Protocol>> {
    #[allow(unused_mut)]
    let mut protocols: Vec<Box<dyn Protocol>> = Vec::new();
    // One line per protocol, in this order, as each lands:
    // protocols.push(Box::new(crate::kafka::KafkaProtocol));
    // protocols.push(Box::new(crate::pulsar::PulsarProtocol));
    // protocols.push(Box::new(crate::pravega::PravegaProtocol));
    // protocols.push(Box::new(crate::tank::TankProtocol));
    protocols
}

/// The registry restricted to `names` (None: all of it), in registry order; a run that asks for
/// protocols the registry lacks simply does not have them (their connections stay undecoded).
pub fn select(names: Option<&[String]>) -> Vec<Box<dyn Protocol>> {
    let mut protocols = all();
    if let Some(names) = names {
        protocols.retain(|p| names.iter().any(|n| n == p.name()));
    }
    protocols
}

/// The names of the registry's protocols, in order.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|p| p.name()).collect()
}
