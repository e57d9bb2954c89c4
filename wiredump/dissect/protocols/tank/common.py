"""Small readers and the decode state shared by TANK's request and response decoders."""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wiredump.dissect.limits import Limits
from wiredump.dissect.model import DELIVER, Frame, Message, PendingAnomalies
from wiredump.dissect.protocols.tank.bundles import Bundle
from wiredump.dissect.wire import Cursor

SUMMARY_ITEMS = 4

I64_END = 1 << 63
"""Message offsets and timestamps are int64 columns: a u64 value from the wire at or above 2**63
(only hostile bytes carry one) is left out (None), as the tables would null it, so the model
holds what the rows show."""
"""How many (topic, partition) items a summary line names before "+N more"."""


@dataclass(slots=True)
class DecodeState:
    """What a decoder needs beyond the bytes: limits and the way to find a response's request."""

    limits: Limits
    pair: Callable[[Frame, Any], Frame | None]
    """Pair a response with its request under a key; returns the request frame (or None)."""
    problems: PendingAnomalies = field(default_factory=PendingAnomalies)
    """The frame's problems, put on it after the decoder's own anomaly (bounded per kind)."""
    batches: int = 0
    """Bundles of the frame read so far; the first `limits.max_batches` are listed in its fields."""
    kept: int = 0
    """Messages of the frame kept as rows so far (at most `limits.max_messages`)."""
    read: int = 0
    """Messages of the frame read so far, kept or not."""

    @property
    def keep(self) -> int:
        """How many more messages the frame may keep."""
        return max(0, self.limits.max_messages - self.kept)

    @property
    def batch_room(self) -> int:
        """How many more bundles the frame may list in its fields (`Limits.max_batches`)."""
        return max(0, self.limits.max_batches - self.batches)

    def count(self, bundle: Bundle) -> None:
        """Account for a decoded bundle's messages (see `Limits.max_messages`)."""
        self.kept += len(bundle.messages)
        self.read += bundle.parsed


@dataclass(slots=True)
class ProduceContext:
    """Kept on a Produce/ProduceWithSeqnum request: its response lists errors in this order."""

    msg_id: int
    topics: list[tuple[str, list[int]]]


@dataclass(slots=True)
class ConsumeContext:
    """Kept on a Consume request: what was asked, to tell delivered messages from skipped ones."""

    requested: dict[tuple[str, int], int]


def str8(c: Cursor, what: str) -> str:
    n = c.u8(f"{what} length")
    return c.take(n, what).decode("utf-8", "replace")


def endpoint(c: Cursor, what: str = "endpoint") -> dict[str, Any]:
    """addr4 (network order, so the four bytes read as a.b.c.d) + port u16 LE."""
    addr = socket.inet_ntoa(c.take(4, f"{what} address"))
    port = c.u16le(f"{what} port")
    return {"address": addr, "port": port}


def bundle_messages(
    frame: Frame,
    bundle: Bundle,
    direction: str,
    topic: str,
    partition: int,
    index: int,
    min_seq: int | None = None,
) -> None:
    """Turn a decoded bundle's messages into `Message` rows of the frame."""
    compression = None if bundle.codec == "none" else bundle.codec
    for m in bundle.messages:
        detail: dict[str, Any] = {"bundle": index, "flags": m.flags}
        if direction == DELIVER and min_seq is not None and m.seq is not None and m.seq < min_seq:
            # TANK's client drops these: the bundle started before the requested seq.
            detail["before_requested"] = True
        frame.messages.append(
            Message(
                direction=direction,
                value_size=len(m.value),
                topic=topic,
                partition=partition,
                offset=m.seq if m.seq is not None and m.seq < I64_END else None,
                key=m.key,
                value=m.value,
                timestamp_ms=m.timestamp_ms
                if m.timestamp_ms is not None and m.timestamp_ms < I64_END
                else None,
                compression=compression,
                detail=detail,
            )
        )


def bundle_fields(bundle: Bundle) -> dict[str, Any]:
    """The bundle's header fields plus one entry per message (values stay in `messages`)."""
    out = dict(bundle.fields)
    out["messages"] = [
        {
            "seqnum": m.seq,
            "flags": m.flags,
            "timestamp_ms": m.timestamp_ms,
            "key": m.key,
            "value_size": len(m.value),
        }
        for m in bundle.messages
    ]
    return out


def add_problems(state: DecodeState, bundle: Bundle) -> None:
    state.problems.extend(bundle.problems)


def join_items(items: list[str]) -> str:
    if len(items) <= SUMMARY_ITEMS:
        return ", ".join(items)
    return ", ".join(items[:SUMMARY_ITEMS]) + f", +{len(items) - SUMMARY_ITEMS} more"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")
