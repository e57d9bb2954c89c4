"""Apache Pulsar binary protocol (ports 6650, and 6651 for TLS, reported as undecodable).

Every BaseCommand of the schema by its enum name; the payload of SEND/MESSAGE with
broker-entry metadata, verified CRC32C, MessageMetadata, batches, the four codecs as
Pulsar clients encode them and chunked messages joined; requests paired by request id
and a response type that fits, sends by (producer_id, sequence_id).
"""

from __future__ import annotations

from wiredump.dissect.protocols.base import ConnContext, ProtocolSpec, Session
from wiredump.dissect.protocols.pulsar import schema
from wiredump.dissect.protocols.pulsar.session import (
    DEFAULT_MAX_FRAME,
    HARD_MAX_FRAME,
    PulsarSession,
)

__all__ = ["SPEC", "PulsarSpec", "PulsarSession", "DEFAULT_MAX_FRAME"]

_FIRST_TYPES = {
    "client": frozenset(schema.TYPE_CODES[n] for n in ("CONNECT",)),
    "server": frozenset(schema.TYPE_CODES[n] for n in ("CONNECTED", "ERROR", "AUTH_CHALLENGE")),
}


class PulsarSpec(ProtocolSpec):
    name = "pulsar"
    ports = (6650, 6651)
    max_frame = HARD_MAX_FRAME
    """The engine's ceiling; the per-connection maximum (5 MiB + 10 KiB by default, or what the
    broker's CONNECTED advertised) is enforced by the session and reported as `oversize_frame`."""
    default_max_frame = DEFAULT_MAX_FRAME

    def sniff(self, data: bytes, role: str) -> bool:
        """A first frame whose sizes agree and whose BaseCommand parses completely.

        A connection opener (CONNECT, or CONNECTED/ERROR/AUTH_CHALLENGE from the broker)
        is enough; any other command (a capture begun mid-connection) must also carry
        every required field and, without a payload, fill its frame exactly.
        """
        if len(data) < 10:
            return False
        total = int.from_bytes(data[0:4], "big")
        cmd = int.from_bytes(data[4:8], "big")
        if not (6 <= total <= DEFAULT_MAX_FRAME - 4) or not (2 <= cmd <= total - 4) or data[8] != 0x08:
            return False
        if len(data) < 8 + cmd:
            return False
        raw = data[8 : 8 + cmd]
        base, _ = schema.parse(schema.BaseCommand, raw)
        t = schema.raw_type(raw)
        if base is None or t not in schema.TYPE_NAMES:
            return False
        field = schema.COMMAND_FIELD.get(t)
        if field is None or not base.HasField(field):
            return False
        if t in _FIRST_TYPES.get(role, ()):
            return True
        if schema.missing_required(getattr(base, field)):
            return False
        if t in schema.PAYLOAD_TYPES:
            magic = data[8 + cmd : 10 + cmd]
            return magic in (b"\x0e\x01", b"\x0e\x02") or len(data) < 12 + cmd
        return total == 4 + cmd

    def new_session(self, ctx: ConnContext) -> Session:
        return PulsarSession(ctx)


SPEC = PulsarSpec()
