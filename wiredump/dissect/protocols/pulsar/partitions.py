"""Pulsar's per-topic results of a frame, for the `partitions` table.

Why here: Pulsar names a topic once per producer (PRODUCER) or consumer (SUBSCRIBE) and
then only by producer/consumer id (SEND, SEND_RECEIPT, MESSAGE, ACK, FLOW…), so only the
session's registry of ids knows the topic of most frames. A partition of a partitioned
topic is a topic of its own, named `<topic>-partition-<n>`: `partition` is that n (or the
message id's partition), null for a non-partitioned topic. Pulsar has no log offsets in
Kafka's sense, so `offset` and the watermarks stay null; `records` counts the messages a
SEND or MESSAGE carries (batch entries, a chunked message once).
"""

from __future__ import annotations

from typing import Any

from wiredump.dissect.model import Frame, TopicPartition


def of_frame(f: Frame, topic: str | None, partition: int | None) -> list[TopicPartition] | None:
    """The frame's one row: its topic (from the command, a response's request, or the
    producer/consumer it names), its error, and the messages it carries; None without a topic."""
    if not topic:
        return None
    if partition is None:
        for m in f.messages:
            if m.partition is not None:
                partition = m.partition
                break
    records = len(f.messages) if f.messages else None
    return [TopicPartition(topic, partition, f.error_code, f.error, records=records)]


def topic_in(f: Frame, extra: dict[str, Any]) -> str | None:
    """The topic the decode already found for the frame (set while pairing or from the registry)."""
    for v in (extra.get("topic"), f.fields.get("topic")):
        if isinstance(v, str) and v:
            return v
    cmd = f.fields.get("command")
    v = cmd.get("topic") if isinstance(cmd, dict) else None
    return v if isinstance(v, str) and v else None
