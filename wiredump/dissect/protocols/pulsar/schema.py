"""Pulsar's protobuf schema as the decoder uses it: type names, command fields, dicts.

Every command is parsed by protobuf's runtime from the classes generated out of the
project's copy of `PulsarApi.proto` (`wiredump/proto`). This module adds what a
dissector needs around them: the BaseCommand type table, the sub-message that goes
with each type, the raw type number when protobuf cannot tell it (unknown types are
kept as unknown fields in proto2), and a walk that turns a message into a JSON-able
dict with enum names, bytes kept as bytes and secrets masked.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from wiredump.dissect.wire import Cursor, Short
from wiredump.proto import PulsarApi_pb2 as pb

BaseCommand = pb.BaseCommand
MessageMetadata = pb.MessageMetadata
SingleMessageMetadata = pb.SingleMessageMetadata
BrokerEntryMetadata = pb.BrokerEntryMetadata

_TYPE_ENUM = pb.BaseCommand.Type.DESCRIPTOR
TYPE_NAMES: dict[int, str] = {v.number: v.name for v in _TYPE_ENUM.values}
"""BaseCommand type number → enum name (CONNECT, SEND, …)."""
TYPE_CODES: dict[str, int] = {name: code for code, name in TYPE_NAMES.items()}

COMMAND_FIELD: dict[int, str] = {
    f.number: f.name for f in pb.BaseCommand.DESCRIPTOR.fields if f.type == FieldDescriptor.TYPE_MESSAGE
}
"""Type number → name of the BaseCommand field holding that command (same number by design)."""

SERVER_ERRORS: dict[int, str] = {v.number: v.name for v in pb.ServerError.DESCRIPTOR.values}
COMPRESSION_NAMES: dict[int, str] = {v.number: v.name for v in pb.CompressionType.DESCRIPTOR.values}

SEND = TYPE_CODES["SEND"]
MESSAGE = TYPE_CODES["MESSAGE"]
PAYLOAD_TYPES = frozenset((SEND, MESSAGE))

SECRET_FIELDS = frozenset(("auth_data", "original_auth_data"))
"""Fields holding credentials: masked unless the user asks for secrets."""

U64 = 1 << 64


def signed64(v: int) -> int:
    """A uint64 id as the int64 the tables hold (-1 written as 2^64-1 reads back as -1)."""
    return v - U64 if v >= 1 << 63 else v


def raw_type(data: bytes) -> int | None:
    """BaseCommand field 1 (type) read straight from the wire, whatever protobuf makes of it."""
    if len(data) >= 2 and data[0] == 0x08 and data[1] < 0x80:
        return data[1]  # every known encoder writes the type first, in one byte
    c = Cursor(data)
    try:
        while c.left:
            tag = c.uvarint("tag")
            field, wt = tag >> 3, tag & 7
            if wt == 0:
                v = c.uvarint("varint")
                if field == 1:
                    return v
            elif wt == 1:
                c.skip(8)
            elif wt == 2:
                c.skip(c.uvarint("length"))
            elif wt == 5:
                c.skip(4)
            else:
                return None
    except Short:
        return None
    return None


def parse(cls: type[Message], data: bytes) -> tuple[Message | None, str | None]:
    """Parse `data` as `cls`; (message, None) or (None, why). Never raises."""
    msg = cls()
    try:
        msg.ParseFromString(data)
    except (DecodeError, RecursionError, ValueError) as e:
        return None, f"{cls.DESCRIPTOR.name}: {e}"
    except Exception as e:  # the runtime's own errors differ between implementations
        return None, f"{cls.DESCRIPTOR.name}: {type(e).__name__}: {e}"
    return msg, None


def missing_required(msg: Message) -> list[str]:
    """Required fields the sender left out (proto2 parsing accepts that silently).

    Not shielded: an exception here is a bug, reported by the framing engine as `internal_error`.
    """
    return [] if msg.IsInitialized() else list(msg.FindInitializationErrors())


def to_dict(msg: Message, show_secrets: bool = False, depth: int = 0, max_depth: int = 16) -> dict[str, Any]:
    """Every set field of `msg`: enums by name, bytes as bytes, nested messages as dicts."""
    out: dict[str, Any] = {}
    if depth > max_depth:
        return {"_truncated": "nesting too deep"}
    for fd, value in msg.ListFields():
        if fd.name in SECRET_FIELDS and not show_secrets:
            out[fd.name] = f"<masked {len(value)} bytes>"
            continue
        if fd.is_repeated:
            out[fd.name] = [_value(fd, v, show_secrets, depth, max_depth) for v in value]
        else:
            out[fd.name] = _value(fd, value, show_secrets, depth, max_depth)
    return out


def text(v: str | bytes) -> str:
    """A proto2 string field as str: the runtime hands back bytes when they are not UTF-8."""
    return v.decode("utf-8", "replace") if isinstance(v, (bytes, bytearray)) else v


def _value(fd: FieldDescriptor, v: Any, show_secrets: bool, depth: int, max_depth: int) -> Any:
    if fd.type == FieldDescriptor.TYPE_STRING:
        return text(v)
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        return to_dict(v, show_secrets, depth + 1, max_depth)
    if fd.type == FieldDescriptor.TYPE_ENUM:
        ev = fd.enum_type.values_by_number.get(v)
        return ev.name if ev is not None else v
    return v


def message_id_str(mid: Any, batch_index: int | None = None, partition: int | None = None) -> str:
    """A MessageIdData as ledger:entry:partition:batch_index (Pulsar's own string form).

    Brokers leave `partition` at -1; clients fill in the partition of the topic they
    produce to or consume from, which `partition` gives when known.
    """
    bi = mid.batch_index if batch_index is None else batch_index
    part = mid.partition if mid.partition >= 0 or partition is None else partition
    return f"{signed64(mid.ledgerId)}:{signed64(mid.entryId)}:{part}:{bi}"
