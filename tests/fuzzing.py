"""Helpers shared by the property-based tests and the fuzzing seeds (scripts/fuzz_seeds.py).

Real traffic is the best seed: `seed_streams` pulls the reassembled bytes of each direction of
every connection out of the real captures (the engine's own reassembly, `_engine.StreamReader`),
and `drive` sends (mutated) bytes as one connection of a protocol's port through the whole engine
(tests/conversation.py), collecting what comes out.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from conversation import Out, dissect_sends

from wiredump.dissect.limits import Limits
from wiredump.dissect.model import STATUSES
from wiredump.dissect.protocols import all_protocols

DATA = 3
"""`StreamReader`'s event code of reassembled bytes: (3, stream, role, bytes, packet, ts_us)."""


def drive(protocol: str, chunks: Iterable[tuple[str, bytes]], limits: Limits | None = None) -> Out:
    """Send (role, bytes) chunks as one connection to `protocol`'s port; what the engine made of it."""
    port = all_protocols()[protocol].ports[0]
    out = dissect_sends(chunks, port, limits)
    for f in out.frames:
        assert f.status in STATUSES, f.status
        assert f.protocol == protocol, (f.protocol, protocol)
    return out


def seed_streams(path: Path, cap: int = 65536) -> list[list[tuple[str, bytes]]]:
    """Per connection: the (role, bytes) chunks in arrival order, each direction capped at `cap` bytes."""
    from wiredump._engine import StreamReader

    ports = sorted({p for spec in all_protocols().values() for p in spec.ports})
    sizes: dict[tuple[int, str], int] = {}
    order: dict[int, list[tuple[str, bytes]]] = {}
    for batch in StreamReader(str(path), ports, Limits().max_out_of_order):
        for ev in batch:
            if ev[0] != DATA:
                continue
            _, stream, role, data = ev[:4]
            have = sizes.get((stream, role), 0)
            if have < cap:
                sizes[(stream, role)] = have + len(data)
                order.setdefault(stream, []).append((role, bytes(data[: cap - have])))
    return [order[s] for s in sorted(order)]
