"""Pravega segment-store wire protocol (client ↔ segment store, TCP port 12345).

`commands.py` holds every WireCommandType as a row (name, code, fields in wire
order); `codec.py` walks a row; `events.py` turns append blocks and segment reads
back into events; `session.py` frames, decodes and pairs; `summary.py` writes the
timeline line. Facts: shared/reference/pravega/WIRE.md.
"""

from __future__ import annotations

import struct

from wiredump.dissect.protocols.base import ConnContext, ProtocolSpec, Session
from wiredump.dissect.protocols.pravega.commands import HEADER_SIZE, MAX_WIRECOMMAND_SIZE
from wiredump.dissect.protocols.pravega.session import PravegaSession

_HELLO_HEADER = struct.pack(">ii", -127, 8)


class PravegaSpec(ProtocolSpec):
    name = "pravega"
    ports = (12345,)
    max_frame = MAX_WIRECOMMAND_SIZE + HEADER_SIZE

    def sniff(self, data: bytes, role: str) -> bool:
        """The first command either side sends is HELLO: `ff ff ff 81 00 00 00 08` + two sane versions."""
        if len(data) < HEADER_SIZE or data[:HEADER_SIZE] != _HELLO_HEADER:
            return False
        if len(data) < 16:
            return True
        high, low = struct.unpack_from(">ii", data, HEADER_SIZE)
        return 0 < low <= high < 1000

    def new_session(self, ctx: ConnContext) -> Session:
        return PravegaSession(ctx)


SPEC = PravegaSpec()

__all__ = ["SPEC", "PravegaSession", "PravegaSpec"]
