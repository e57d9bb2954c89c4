"""Registration of TANK with the dissector: name, port, frame bound, detection (`sniff.py`)."""

from __future__ import annotations

from wiredump.dissect.protocols.base import ConnContext, ProtocolSpec, Session
from wiredump.dissect.protocols.tank import constants as C
from wiredump.dissect.protocols.tank import sniff as detection
from wiredump.dissect.protocols.tank.session import TankSession


class TankSpec(ProtocolSpec):
    name = "tank"
    title = "TANK"
    ports = (11011,)
    max_frame = C.MAX_FRAME
    """The broker's own 256 MiB payload cap plus the header (see constants.MAX_FRAME)."""

    def sniff(self, data: bytes, role: str) -> bool:
        return detection.opener(data, role)

    def score(self, client: bytes, server: bytes, opened: bool) -> int:
        return detection.score(self, client, server, opened)

    def new_session(self, ctx: ConnContext) -> Session:
        return TankSession(ctx)


SPEC = TankSpec()
