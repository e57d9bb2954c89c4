"""Protocol registry: one module (or package) per protocol, each exposing `SPEC`.

Adding a protocol means adding its module and its name below; the reassembler and
the sinks never change.
"""

from __future__ import annotations

import importlib
from functools import cache

from wiredump.dissect.protocols.base import ProtocolSpec

PROTOCOL_MODULES: tuple[str, ...] = ("kafka", "pulsar", "pravega", "tank")


@cache
def all_protocols() -> dict[str, ProtocolSpec]:
    """Every available protocol by name, in registry order."""
    found: dict[str, ProtocolSpec] = {}
    for name in PROTOCOL_MODULES:
        try:
            module = importlib.import_module(f"wiredump.dissect.protocols.{name}")
        except ModuleNotFoundError as e:
            if e.name and e.name.startswith(f"wiredump.dissect.protocols.{name}"):
                continue  # not written yet
            raise
        spec: ProtocolSpec | None = getattr(module, "SPEC", None)
        if spec is not None:
            found[spec.name] = spec
    return found


def by_port(port: int) -> ProtocolSpec | None:
    for spec in all_protocols().values():
        if port in spec.ports:
            return spec
    return None
