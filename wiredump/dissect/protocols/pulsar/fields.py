"""Pulsar's filter fields, derived from Pulsar's own schema (`proto/PulsarApi.proto`).

Every field of every message in PulsarApi.proto (the commands, MessageMetadata,
SingleMessageMetadata, BrokerEntryMetadata…) is `pulsar.<field name>`, the name the
proto gives it and the key the decoder writes — `pulsar.topic`, `pulsar.producer_name`,
`pulsar.request_id`, `pulsar.sequence_id`, `pulsar.partition_key` — matched wherever it
occurs in the frame. Enums compare by their proto name (`pulsar.response == "Success"`).
Plus what the decoder adds beside the schema (checksum verdict, payload size, the topic a
response is about) and each message's key, value, properties (`pulsar.message.*`).
"""

from __future__ import annotations

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from wiredump.dissect.fielddecl import BOOL, BYTES, FLOAT, INT, NONE, STR, FieldDecl, message_fields
from wiredump.proto import PulsarApi_pb2

_TYPES = {
    FieldDescriptor.TYPE_STRING: STR,
    FieldDescriptor.TYPE_BYTES: BYTES,
    FieldDescriptor.TYPE_BOOL: BOOL,
    FieldDescriptor.TYPE_ENUM: STR,
    FieldDescriptor.TYPE_MESSAGE: NONE,
    FieldDescriptor.TYPE_GROUP: NONE,
    FieldDescriptor.TYPE_DOUBLE: FLOAT,
    FieldDescriptor.TYPE_FLOAT: FLOAT,
}

DECODER = (
    ("pulsar.checksum_ok", BOOL, "The payload's CRC32C checksum verified", ("checksum_ok",)),
    ("pulsar.payload_size", INT, "Payload bytes after the metadata (SEND, MESSAGE)", ("payload_size",)),
    ("pulsar.total_size", INT, "Frame size after the 4-byte total size", ("total_size",)),
    ("pulsar.command_size", INT, "Size of the BaseCommand", ("command_size",)),
)


def _messages() -> list[Descriptor]:
    out: list[Descriptor] = []

    def add(d: Descriptor) -> None:
        out.append(d)
        for nested in d.nested_types:
            add(nested)

    for d in PulsarApi_pb2.DESCRIPTOR.message_types_by_name.values():
        add(d)
    return out


def declare() -> list[FieldDecl]:
    types: dict[str, set[str]] = {}
    uses: dict[str, list[str]] = {}
    for msg in _messages():
        if msg.name == "BaseCommand":
            continue  # its fields are the commands themselves, named by the frame type
        for f in msg.fields:
            types.setdefault(f.name, set()).add(_TYPES.get(f.type, INT))
            uses.setdefault(f.name, []).append(msg.name)
    out = [FieldDecl(n, t, d, keys=k) for n, t, d, k in DECODER]
    taken = {d.name for d in out}
    for name in sorted(types):
        full = f"pulsar.{name}"
        if full in taken:
            continue
        found = types[name]
        if len(found) > 1:
            found = found - {NONE} or found
        typ = found.pop() if len(found) == 1 else STR
        where = uses[name]
        more = f" … ({len(where)} in all)" if len(where) > 3 else ""
        out.append(FieldDecl(full, typ, f"{name} in {', '.join(where[:3])}{more}", keys=(name,)))
    out += message_fields("pulsar", "message", "Pulsar message")
    return out
