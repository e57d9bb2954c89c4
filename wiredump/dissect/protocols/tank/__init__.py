"""TANK (phaistos-networks) broker protocol: framing, every message type, bundles.

The package exposes `SPEC`, the registry entry. Modules: `constants` (ids, error
codes, flags, bounds), `bundles` (bundle and chunk decoding), `requests` and
`responses` (one decoder per message type), `session` (framing, resync,
dispatch, pairing), `spec` (registration and sniffing).
"""

from __future__ import annotations

from wiredump.dissect.protocols.tank.spec import SPEC, TankSpec

__all__ = ["SPEC", "TankSpec"]
