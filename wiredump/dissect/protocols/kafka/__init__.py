"""Kafka's metadata for the Python face: fields (`fields`), frame type and error names (`names`),
its own anomaly kinds (`anomalies`), all read from the generated schema (`schema`). The engine's
Kafka decoder is engine/src/kafka (generated from the same JSON specs)."""

from __future__ import annotations

from wiredump.dissect.protocols.base import ProtocolSpec


class KafkaSpec(ProtocolSpec):
    name = "kafka"
    ports = (9092,)


SPEC = KafkaSpec()

__all__ = ["SPEC", "KafkaSpec"]
