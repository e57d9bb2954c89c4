"""Detection of Pulsar on a port that is not Pulsar's (see `ProtocolSpec.score`).

Besides what Pulsar's own session makes of the first bytes (frames whose sizes agree and
whose BaseCommand parses, answers paired by request id), a connection opens with CONNECT
from the client and CONNECTED (or ERROR, AUTH_CHALLENGE) from the broker.
"""

from __future__ import annotations

from wiredump.dissect.protocols.base import ProtocolSpec
from wiredump.dissect.protocols.pulsar import schema
from wiredump.dissect.protocols.pulsar.session import DEFAULT_MAX_FRAME
from wiredump.dissect.protocols.trial import trial

_FIRST_TYPES = {
    "client": frozenset(schema.TYPE_CODES[n] for n in ("CONNECT",)),
    "server": frozenset(schema.TYPE_CODES[n] for n in ("CONNECTED", "ERROR", "AUTH_CHALLENGE")),
}
HANDSHAKE = 20
"""Points for each side that opens the way Pulsar connections open (CONNECT / CONNECTED)."""


def opener(data: bytes, role: str) -> bool:
    """A first frame whose sizes agree and whose BaseCommand parses completely.

    A connection opener (CONNECT, or CONNECTED/ERROR/AUTH_CHALLENGE from the broker)
    is enough; any other command (a capture begun mid-connection) must also carry
    every required field and, without a payload, fill its frame exactly.
    """
    return _first_type(data, role, any_command=True) is not None


def _first_type(data: bytes, role: str, any_command: bool) -> int | None:
    if len(data) < 10:
        return None
    total = int.from_bytes(data[0:4], "big")
    cmd = int.from_bytes(data[4:8], "big")
    if not (6 <= total <= DEFAULT_MAX_FRAME - 4) or not (2 <= cmd <= total - 4) or data[8] != 0x08:
        return None
    if len(data) < 8 + cmd:
        return None
    raw = data[8 : 8 + cmd]
    base, _ = schema.parse(schema.BaseCommand, raw)
    t = schema.raw_type(raw)
    if base is None or t not in schema.TYPE_NAMES:
        return None
    field = schema.COMMAND_FIELD.get(t)
    if field is None or not base.HasField(field):
        return None
    if t in _FIRST_TYPES.get(role, ()):
        return t
    if not any_command or schema.missing_required(getattr(base, field)):
        return None
    if t in schema.PAYLOAD_TYPES:
        magic = data[8 + cmd : 10 + cmd]
        return t if magic in (b"\x0e\x01", b"\x0e\x02") or len(data) < 12 + cmd else None
    return t if total == 4 + cmd else None


def score(spec: ProtocolSpec, client: bytes, server: bytes, opened: bool) -> int:
    t = trial(spec, client, server, opened)
    points = t.points()
    for side, data, role in ((t.client, client, "client"), (t.server, server, "server")):
        if side.frames and not side.skipped and _first_type(data, role, any_command=False) is not None:
            points += HANDSHAKE
    return min(points, 100)
