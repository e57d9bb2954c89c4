"""Kafka's registration: name, default port, largest frame, detection (`sniff.py`), sessions."""

from __future__ import annotations

from wiredump.dissect.protocols.base import ConnContext, ProtocolSpec, Session
from wiredump.dissect.protocols.kafka import sniff as detection
from wiredump.dissect.protocols.kafka.session import MAX_FRAME, KafkaSession


class KafkaSpec(ProtocolSpec):
    name = "kafka"
    ports = (9092,)
    max_frame = MAX_FRAME
    """socket.request.max.bytes (100 MiB) plus the 4-byte size prefix."""
    shares_run_state = True
    """Topic ids resolve to names learnt on any connection of the capture (`topics.py`)."""

    def sniff(self, data: bytes, role: str) -> bool:
        return detection.opener(data, role)

    def score(self, client: bytes, server: bytes, opened: bool) -> int:
        return detection.score(self, client, server, opened)

    def new_session(self, ctx: ConnContext) -> Session:
        return KafkaSession(ctx)


SPEC = KafkaSpec()
