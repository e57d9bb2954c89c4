"""Apache Pulsar's metadata for the Python face: fields (`fields`, from PulsarApi.proto), frame type
and error names (`names`), its own anomaly kinds (`anomalies`). The engine's Pulsar decoder is
engine/src/pulsar."""

from __future__ import annotations

from wiredump.dissect.protocols.base import ProtocolSpec


class PulsarSpec(ProtocolSpec):
    name = "pulsar"
    ports = (6650, 6651)
    """6651 is TLS, reported as undecodable."""


SPEC = PulsarSpec()

__all__ = ["SPEC", "PulsarSpec"]
