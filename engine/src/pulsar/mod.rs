//! Apache Pulsar's binary protocol (ports 6650, and 6651 for TLS, reported as undecodable): the
//! Rust port of `wiredump/dissect/protocols/pulsar/`.
pub mod proto;
