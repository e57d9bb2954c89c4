"""TANK (phaistos-networks) broker's metadata for the Python face: message ids, error codes and
flags (`constants`), from which its frame type and error names (`names`) derive, and its fields
(`fields`). The engine's TANK decoder is engine/src/tank."""

from __future__ import annotations

from wiredump.dissect.protocols.base import ProtocolSpec


class TankSpec(ProtocolSpec):
    name = "tank"
    title = "TANK"
    ports = (11011,)


SPEC = TankSpec()

__all__ = ["SPEC", "TankSpec"]
