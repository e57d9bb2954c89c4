"""Detection of TANK on a port that is not TANK's (see `ProtocolSpec.score`).

Besides what TANK's own session makes of the first bytes (requests that decode, the
broker's answers paired by request id), the broker greets every connection with a
5-byte empty Ping before anything else: seen as the server's first bytes of a
connection whose opening was captured, it is TANK's signature.
"""

from __future__ import annotations

from wiredump.dissect.model import CLIENT
from wiredump.dissect.protocols.base import ProtocolSpec
from wiredump.dissect.protocols.tank import constants as C
from wiredump.dissect.protocols.tank.session import plausible_header
from wiredump.dissect.protocols.trial import trial

PING_FRAME = bytes([C.PING, 0, 0, 0, 0])
GREETING = 25
"""Points for the broker's greeting Ping as the first bytes of a captured connection opening."""


def opener(data: bytes, role: str) -> bool:
    """The broker greets every connection with a 5-byte empty Ping; clients open with a request."""
    if role != CLIENT:
        return data[:5] == PING_FRAME
    return plausible_header(data, 0, CLIENT, strict=True) and data[0] != C.PING


def score(spec: ProtocolSpec, client: bytes, server: bytes, opened: bool) -> int:
    t = trial(spec, client, server, opened)
    points = t.points()
    if opened and t.server.frames and server.startswith(PING_FRAME) and not t.server.broken:
        points += GREETING
    return min(points, 100)
