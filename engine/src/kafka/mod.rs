//! Kafka: the decode tables generated from Kafka's JSON specs, the body walker (every field with
//! its byte span), request/response headers, record sets (v2 batches and legacy message sets),
//! and the session that frames, pairs and decodes a connection.

pub mod body;
pub use crate::codecs;
pub mod embedded;
pub mod fields;
pub mod framing;
pub mod header;
pub mod partitions;
pub mod records;
pub mod recordsets;
pub mod schema;
pub mod session;
pub mod spec;
pub mod summary;
pub mod topics;

pub use spec::Kafka;
