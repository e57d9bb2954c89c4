"""Apache Pulsar binary protocol (ports 6650, and 6651 for TLS, reported as undecodable).

Every BaseCommand of the schema by its enum name; the payload of SEND/MESSAGE with
broker-entry metadata, verified CRC32C, MessageMetadata, batches, the four codecs as
Pulsar clients encode them and chunked messages joined; requests paired by request id
and a response type that fits, sends by (producer_id, sequence_id).
"""

from __future__ import annotations

from wiredump.dissect.protocols.base import ConnContext, ProtocolSpec, Session
from wiredump.dissect.protocols.pulsar import sniff as detection
from wiredump.dissect.protocols.pulsar.session import (
    DEFAULT_MAX_FRAME,
    HARD_MAX_FRAME,
    PulsarSession,
)

__all__ = ["SPEC", "PulsarSpec", "PulsarSession", "DEFAULT_MAX_FRAME"]


class PulsarSpec(ProtocolSpec):
    name = "pulsar"
    ports = (6650, 6651)
    max_frame = HARD_MAX_FRAME
    """The engine's ceiling; the per-connection maximum (5 MiB + 10 KiB by default, or what the
    broker's CONNECTED advertised) is enforced by the session and reported as `oversize_frame`."""
    default_max_frame = DEFAULT_MAX_FRAME

    def sniff(self, data: bytes, role: str) -> bool:
        return detection.opener(data, role)

    def score(self, client: bytes, server: bytes, opened: bool) -> int:
        return detection.score(self, client, server, opened)

    def new_session(self, ctx: ConnContext) -> Session:
        return PulsarSession(ctx)


SPEC = PulsarSpec()
