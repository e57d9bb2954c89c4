"""Kafka: framing, headers, pairing and table-driven body decoding for every API key and version."""

from wiredump.dissect.protocols.kafka.spec import SPEC

__all__ = ["SPEC"]
