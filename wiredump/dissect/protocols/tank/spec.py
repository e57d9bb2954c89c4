"""Registration of TANK with the dissector: name, port, frame bound, sniffing."""

from __future__ import annotations

from wiredump.dissect.model import CLIENT
from wiredump.dissect.protocols.base import ConnContext, ProtocolSpec, Session
from wiredump.dissect.protocols.tank import constants as C
from wiredump.dissect.protocols.tank.session import TankSession, plausible_header

PING_FRAME = bytes([C.PING, 0, 0, 0, 0])


class TankSpec(ProtocolSpec):
    name = "tank"
    ports = (11011,)
    max_frame = C.MAX_FRAME
    """The broker's own 256 MiB payload cap plus the header (see constants.MAX_FRAME)."""

    def sniff(self, data: bytes, role: str) -> bool:
        """The broker greets every connection with a 5-byte empty Ping; clients open with a request."""
        if role != CLIENT:
            return data[:5] == PING_FRAME
        return plausible_header(data, 0, CLIENT, strict=True) and data[0] != C.PING

    def new_session(self, ctx: ConnContext) -> Session:
        return TankSession(ctx)


SPEC = TankSpec()
