"""Structures Kafka carries as opaque bytes inside other messages, decoded where known.

A consumer group's JoinGroup/SyncGroup exchange carries the consumer protocol's
subscription and assignment (`ConsumerProtocolSubscription`/`Assignment`, version
prefixed) in BYTES fields; a Kafka engineer wants to see the topics and partitions
in them. They are decoded with the same tables and walker as API bodies; anything
that does not fit (the walker's `Short`/`Bad`) stays raw. Any other exception is a bug
and is left to the caller, which reports it as an `internal_error` on the frame.
"""

from __future__ import annotations

import struct
from typing import Any

from wiredump.dissect.protocols.kafka import schema
from wiredump.dissect.protocols.kafka.body import Bad, decode_body
from wiredump.dissect.wire import Short

_I16 = struct.Struct(">h")


def decode_data(name: str, data: Any) -> dict[str, Any] | None:
    """Decode a version-prefixed data structure; None when it does not fit."""
    if not isinstance(data, bytes) or len(data) < 2:
        return None
    (version,) = _I16.unpack_from(data, 0)
    known = schema.schema()["data"].get(name, {}).get("versions", [])
    if not known or version < 0:
        return None
    # Newer versions only append fields: read them with the newest layout we know.
    use = version if version in known else max(known)
    plan = schema.data_plan(name, use)
    if plan is None:
        return None
    try:
        out, _, end = decode_body(data, 2, plan, None)
    except (Short, Bad):  # not this structure (a bug in the walker is not caught here: see `annotate`)
        return None
    if end != len(data) and use == version:
        return None
    return {"version": version, **out}


def annotate(api_key: int, kind: str, body: dict[str, Any], protocol_type: str | None) -> None:
    """Add `*_decoded` siblings to the consumer-protocol BYTES of JoinGroup (11) and SyncGroup (14)."""
    ptype = body.get("protocol_type", protocol_type)
    if ptype != "consumer":
        return
    if api_key == 11:
        items = body.get("protocols") if kind == "request" else body.get("members")
        for item in items or []:
            if isinstance(item, dict):
                dec = decode_data("ConsumerProtocolSubscription", item.get("metadata"))
                if dec is not None:
                    item["metadata_decoded"] = dec
    elif api_key == 14:
        if kind == "request":
            for item in body.get("assignments") or []:
                if isinstance(item, dict):
                    dec = decode_data("ConsumerProtocolAssignment", item.get("assignment"))
                    if dec is not None:
                        item["assignment_decoded"] = dec
        else:
            dec = decode_data("ConsumerProtocolAssignment", body.get("assignment"))
            if dec is not None:
                body["assignment_decoded"] = dec


CONTROL_VALUES = {
    2: "LeaderChangeMessage",
    3: "SnapshotHeaderRecord",
    4: "SnapshotFooterRecord",
    5: "KRaftVersionRecord",
    6: "VotersRecord",
}


def decode_control_value(control_type: int, value: bytes) -> dict[str, Any] | None:
    """A KRaft control record's value: the data structure for its type, which begins with its own Version field.

    The structure's schema version is not on the wire, so the known versions are tried newest first.
    """
    name = CONTROL_VALUES.get(control_type)
    if name is None:
        return None
    known = schema.schema()["data"].get(name, {}).get("versions", [])
    for v in sorted(known, reverse=True):
        plan = schema.data_plan(name, v)
        if plan is None:
            continue
        try:
            out, _, end = decode_body(value, 0, plan, None)
        except (Short, Bad):  # not this version's layout; a bug in the walker is the caller's to report
            continue
        if end == len(value):
            return out
    return None
