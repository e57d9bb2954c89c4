"""The anomaly kinds only Pulsar reports (the shared ones are the engine's: `wiredump.dissect.anomalies`)."""

from __future__ import annotations

from wiredump.dissect.anomalies import WARNING, AnomalyKind


def declare() -> list[AnomalyKind]:
    return [
        AnomalyKind(
            "chunk_incomplete",
            WARNING,
            "a chunked Pulsar message whose chunks did not all arrive (or were evicted) before the "
            "connection or capture ended",
        ),
        AnomalyKind(
            "command_limit",
            WARNING,
            "a Pulsar command larger than wiredump parses (`Limits.max_command_bytes`): the frame is "
            "named and sized, its command not decoded",
        ),
    ]
