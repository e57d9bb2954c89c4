//! Kafka: the decode tables generated from Kafka's JSON specs, the body walker (every field with
//! its byte span), request/response headers, and record sets (v2 batches and legacy message sets).

pub mod body;
pub use crate::codecs;
pub mod embedded;
pub mod header;
pub mod records;
pub mod schema;
pub mod summary;
