"""The names Pravega frames carry, for rules and baselines to be checked against (`ProtocolSpec.type_names`).

From the command table (`commands.COMMANDS`, one row per WireCommandType): every command name
is a frame type, and the failure replies (`WrongHost`, `NoSuchSegment`, `SegmentIsSealed`, …)
are also the frames' error names (Pravega reports an error as a reply of its own type).
"""

from __future__ import annotations

from wiredump.dissect.protocols.pravega.commands import COMMANDS

STYLE = "bold green"
"""How the CLI colours the protocol's name (a rich style; `ProtocolSpec.style`)."""

KEEPALIVE_TYPES = ("KeepAlive",)
"""Sent both ways while a connection idles: how many depends on timing (`check`'s baselines skip them)."""


def type_names() -> frozenset[str]:
    return frozenset(c.name for c in COMMANDS.values())


def error_names() -> frozenset[str]:
    return frozenset(c.name for c in COMMANDS.values() if c.failure)
