"""Detection of Kafka on a port that is not Kafka's (see `ProtocolSpec.score`).

Kafka has no greeting: the evidence is the session's own framing and decoding of the
first bytes (a request that decodes exactly with its API key and version, the next one,
and a response that carries a pending request's correlation id). A response whose
request was not captured is decoded with a guessed layout; responses alone are therefore
weak evidence and never enough to call a connection Kafka.
"""

from __future__ import annotations

from wiredump.dissect.model import CLIENT
from wiredump.dissect.protocols.base import MIN_CONFIDENCE, ProtocolSpec
from wiredump.dissect.protocols.kafka.session import plausible_request
from wiredump.dissect.protocols.trial import trial

UNPAIRED_RESPONSES = MIN_CONFIDENCE - 10
"""The most that responses without any captured request can score."""


def opener(data: bytes, role: str) -> bool:
    """A client's first bytes form a plausible request header (known key, valid version, text client id)."""
    return role == CLIENT and plausible_request(data, 0, strict=True)


def score(spec: ProtocolSpec, client: bytes, server: bytes, opened: bool) -> int:
    t = trial(spec, client, server, opened)
    points = t.points()
    if not t.client.frames and not t.answered:
        points = min(points, UNPAIRED_RESPONSES)
    return points
