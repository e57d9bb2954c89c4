"""Schema data owned by wiredump: generated Kafka tables, Pulsar protobuf classes."""
