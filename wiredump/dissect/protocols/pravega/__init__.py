"""Pravega segment store's metadata for the Python face: the wire-command table (`commands`, one row
per WireCommandType) from which its fields (`fields`) and names (`names`) derive, and its own
anomaly kinds (`anomalies`). The engine's Pravega decoder is engine/src/pravega. Facts:
shared/reference/pravega/WIRE.md."""

from __future__ import annotations

from wiredump.dissect.protocols.base import ProtocolSpec


class PravegaSpec(ProtocolSpec):
    name = "pravega"
    ports = (12345,)


SPEC = PravegaSpec()

__all__ = ["SPEC", "PravegaSpec"]
