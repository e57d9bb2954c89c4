"""What a protocol declares about one of its fields: name, type, meaning, and where its value lives.

Each protocol lists its fields once (`ProtocolSpec.fields()`, in the protocol's own
`fields.py`); display filters (`-Y kafka.topic == "orders"`), columns on demand
(`-T fields -e kafka.client_id`) and `wiredump fields` all read that list, so a field
is named and described in exactly one place. This module holds only the record, so
`protocols/base.py` can name it without importing the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

INT, FLOAT, STR, BOOL, BYTES, NONE = "int", "float", "str", "bool", "bytes", "none"
"""Field types. `none` is a structure (a list of topics…): it can be tested for presence only."""

TSHARK_TYPES = {
    INT: "FT_INT64",
    FLOAT: "FT_DOUBLE",
    STR: "FT_STRING",
    BOOL: "FT_BOOLEAN",
    BYTES: "FT_BYTES",
    NONE: "FT_NONE",
}
"""The closest tshark type, for `wiredump fields` (same columns as `tshark -G fields`)."""

MESSAGE_ATTRS = (
    "topic",
    "partition",
    "offset",
    "message_id",
    "key",
    "value",
    "value_size",
    "timestamp_ms",
    "compression",
    "header_key",
    "header_value",
)
"""What `FieldDecl.message` may name: attributes of `model.Message`, plus each header's key and value."""


@dataclass(frozen=True, slots=True)
class FieldDecl:
    """One field a protocol decodes, as filters and `-e` name it.

    One of `keys`, `message` or `frame` says where the value is found:
    `keys` are keys of the frame's decoded tree (`Frame.fields`) matched at any depth
    (`"parent/key"` only inside an element of `parent`); `message` an attribute of each
    carried message (needs per-message decoding); `frame` an attribute of the frame. A field
    read from the frame may have `keys` too: where the decoder read it in the tree (Kafka's
    header fields), which is what `--mark` highlights; its value still comes from the frame.
    Every value found counts: a repeated field matches a filter when any value does,
    as in tshark.
    """

    name: str
    """Full dotted name, starting with the protocol's name: `kafka.client_id`."""
    type: str
    description: str
    keys: tuple[str, ...] = ()
    message: str | None = None
    frame: str | None = None
    value_names: Mapping[int, str] | None = None
    """Names a filter may use instead of numbers (`kafka.error == NOT_LEADER_OR_FOLLOWER`)."""
    alias_of: str | None = None
    """Set when this name is another decoder's name for one of ours (tshark's `kafka.topic_name`)."""

    @property
    def protocol(self) -> str:
        return self.name.split(".", 1)[0]


def message_fields(protocol: str, noun: str, what: str) -> list[FieldDecl]:
    """The per-message fields (`<protocol>.<noun>.key`…) of a protocol whose frames carry messages.

    `what` names the message in descriptions ("Kafka record"). Declared by each protocol
    that calls this, so the field list stays the protocol's own.
    """
    p = f"{protocol}.{noun}"
    return [
        FieldDecl(f"{p}.topic", STR, f"Topic (or stream/segment) of each {what}", message="topic"),
        FieldDecl(f"{p}.partition", INT, f"Partition of each {what}", message="partition"),
        FieldDecl(f"{p}.offset", INT, f"Offset (or event number) of each {what}", message="offset"),
        FieldDecl(f"{p}.id", STR, f"Message id of each {what}", message="message_id"),
        FieldDecl(f"{p}.key", BYTES, f"Key of each {what}", message="key"),
        FieldDecl(f"{p}.value", BYTES, f"Value (payload) of each {what}", message="value"),
        FieldDecl(f"{p}.value_size", INT, f"Value length in bytes of each {what}", message="value_size"),
        FieldDecl(
            f"{p}.timestamp_ms", INT, f"Timestamp (ms since the epoch) of each {what}", message="timestamp_ms"
        ),
        FieldDecl(f"{p}.compression", STR, f"Compression codec of each {what}", message="compression"),
        FieldDecl(f"{p}.header_key", STR, f"Header (property) keys of each {what}", message="header_key"),
        FieldDecl(
            f"{p}.header_value", BYTES, f"Header (property) values of each {what}", message="header_value"
        ),
    ]
