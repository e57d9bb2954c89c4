"""Pravega segment-store wire protocol (client ↔ segment store, TCP port 12345).

`commands.py` holds every WireCommandType as a row (name, code, fields in wire
order); `codec.py` walks a row; `events.py` turns append blocks and segment reads
back into events; `session.py` frames, decodes and pairs; `summary.py` writes the
timeline line. Facts: shared/reference/pravega/WIRE.md.
"""

from __future__ import annotations

from wiredump.dissect.protocols.base import ConnContext, ProtocolSpec, Session
from wiredump.dissect.protocols.pravega import sniff as detection
from wiredump.dissect.protocols.pravega.commands import HEADER_SIZE, MAX_WIRECOMMAND_SIZE
from wiredump.dissect.protocols.pravega.session import PravegaSession


class PravegaSpec(ProtocolSpec):
    name = "pravega"
    ports = (12345,)
    max_frame = MAX_WIRECOMMAND_SIZE + HEADER_SIZE

    def sniff(self, data: bytes, role: str) -> bool:
        return detection.opener(data, role)

    def score(self, client: bytes, server: bytes, opened: bool) -> int:
        return detection.score(self, client, server, opened)

    def new_session(self, ctx: ConnContext) -> Session:
        return PravegaSession(ctx)


SPEC = PravegaSpec()

__all__ = ["SPEC", "PravegaSession", "PravegaSpec"]
