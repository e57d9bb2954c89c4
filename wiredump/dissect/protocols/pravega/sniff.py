"""Detection of Pravega on a port that is not the segment store's (see `ProtocolSpec.score`).

Both sides open with HELLO (type -127, length 8, two sane protocol versions); with what
Pravega's own session makes of the first bytes (commands that decode exactly, answers
paired by request id) that is the evidence.
"""

from __future__ import annotations

import struct

from wiredump.dissect.protocols.base import ProtocolSpec
from wiredump.dissect.protocols.pravega.commands import HEADER_SIZE
from wiredump.dissect.protocols.trial import trial

_HELLO_HEADER = struct.pack(">ii", -127, 8)
HELLO = 20
"""Points for each side whose first command is a HELLO that decodes."""


def opener(data: bytes, role: str) -> bool:
    """The first command either side sends is HELLO: `ff ff ff 81 00 00 00 08` + two sane versions."""
    if len(data) < HEADER_SIZE or data[:HEADER_SIZE] != _HELLO_HEADER:
        return False
    if len(data) < 16:
        return True
    high, low = struct.unpack_from(">ii", data, HEADER_SIZE)
    return 0 < low <= high < 1000


def score(spec: ProtocolSpec, client: bytes, server: bytes, opened: bool) -> int:
    t = trial(spec, client, server, opened)
    points = t.points()
    for side, data, role in ((t.client, client, "client"), (t.server, server, "server")):
        if side.frames and not side.skipped and len(data) >= 16 and opener(data, role):
            points += HELLO
    return min(points, 100)
