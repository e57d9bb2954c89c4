"""Kafka's registration: name, default port, largest frame, sniffing, sessions."""

from __future__ import annotations

from wiredump.dissect.protocols.base import ConnContext, ProtocolSpec, Session
from wiredump.dissect.protocols.kafka.session import MAX_FRAME, KafkaSession, plausible_request


class KafkaSpec(ProtocolSpec):
    name = "kafka"
    ports = (9092,)
    max_frame = MAX_FRAME
    """socket.request.max.bytes (100 MiB) plus the 4-byte size prefix."""

    def sniff(self, data: bytes, role: str) -> bool:
        """A client's first bytes form a plausible request header (known key, valid version, text client id)."""
        if role != "client":
            return False
        return plausible_request(data, 0, strict=True)

    def new_session(self, ctx: ConnContext) -> Session:
        return KafkaSession(ctx)


SPEC = KafkaSpec()
