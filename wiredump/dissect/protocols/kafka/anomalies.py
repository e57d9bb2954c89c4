"""The anomaly kinds only Kafka reports (the shared ones are the engine's: `wiredump.dissect.anomalies`)."""

from __future__ import annotations

from wiredump.dissect.anomalies import NOTE, WARNING, AnomalyKind


def declare() -> list[AnomalyKind]:
    return [
        AnomalyKind(
            "unexpected_response",
            WARNING,
            "a broker answered a Produce sent with acks=0, which asks for no response (paired with it "
            "by correlation id)",
        ),
        AnomalyKind(
            "header_version",
            NOTE,
            "a response with header v0 (no tagged fields) where Kafka specifies v1 for its API version; "
            "decoded that way",
        ),
    ]
