"""The anomaly kinds only Pravega reports (the shared ones are the engine's: `wiredump.dissect.anomalies`)."""

from __future__ import annotations

from wiredump.dissect.anomalies import ERROR, WARNING, AnomalyKind


def declare() -> list[AnomalyKind]:
    return [
        AnomalyKind(
            "append_block",
            ERROR,
            "an APPEND_BLOCK that does not add up: not followed by its APPEND_BLOCK_END, or whose data and "
            "declared sizes disagree",
        ),
        AnomalyKind(
            "unexpected_command",
            WARNING,
            "a Pravega wire command where it cannot be (a command that only belongs inside an APPEND_BLOCK, "
            "outside one)",
        ),
        AnomalyKind(
            "unexpected_reply",
            WARNING,
            "a Pravega reply whose request id names a request that does not expect that reply type",
        ),
        AnomalyKind(
            "version_mismatch",
            ERROR,
            "the two sides' Hello wire-version ranges do not overlap: they share no Pravega wire version",
        ),
        AnomalyKind(
            "event_count_mismatch",
            ERROR,
            "a Pravega append whose numEvents differs from the number of events its data holds",
        ),
    ]
