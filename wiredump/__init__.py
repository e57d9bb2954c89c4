"""wiredump: dissector and capture analysis for Kafka, Pulsar, Pravega and TANK."""

__version__ = "0.1.0"
