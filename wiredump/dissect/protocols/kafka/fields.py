"""Kafka's filter fields, derived from Kafka's own JSON message specs (`proto/kafka_schema.json`).

Every field of every API's request and response (and of the embedded consumer-protocol
structures) is `kafka.<field name>` — the snake_case name the spec gives it and the
key the decoder writes into the frame's tree, so `kafka.group_id`, `kafka.acks`,
`kafka.high_watermark` need no list kept by hand. A name used by several APIs is one
field: it matches wherever it occurs (tshark's semantics for repeated fields).

On top of the spec's names, a few that cut across APIs:
- `kafka.topic`: every topic name a frame carries (`topic`, `topic_name`, `topics`
  lists, and `name` inside a topic structure);
- `kafka.partition`: every partition index (`partition`, `partition_index`,
  `partition_indexes`, `index` inside a partition structure);
- `kafka.error`: every error code, comparable by number or by Kafka's error name;
- `kafka.record.*`: each record's key, value, offset, headers (needs record decoding), and
  `kafka.record.offset_delta` on produced records;
- `kafka.body_length`, `kafka.raw_body`: the body of an answer to an unknown API or version,
  which is kept undecoded;
and tshark's own Kafka names where one of ours means the same (`kafka.topic_name`,
`kafka.partition_id`, `kafka.consumer_group`, `kafka.required_acks`, …; see `ALIASES`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from wiredump.dissect.fielddecl import BOOL, BYTES, FLOAT, INT, NONE, STR, FieldDecl, message_fields
from wiredump.dissect.protocols.kafka.schema import error_names, schema

_PRIMITIVE = {
    "int8": INT,
    "int16": INT,
    "uint16": INT,
    "int32": INT,
    "uint32": INT,
    "int64": INT,
    "float64": FLOAT,
    "string": STR,
    "uuid": STR,
    "bool": BOOL,
    "bytes": BYTES,
    "records": NONE,
}

FRAME = (
    (
        "api_key",
        INT,
        "API key of the request or of the request a response answers (0 Produce, 1 Fetch…)",
        "type_code",
    ),
    ("api_version", INT, "API version of the request or of the request a response answers", "version"),
    ("correlation_id", INT, "Correlation id pairing a response with its request", "correlation_id"),
)
"""Header values a response does not repeat: read from the frame, which has them for both directions
(as tshark shows kafka.api_key on responses). Each is also the key `header/<name>` of the decoded
tree where the decoder read it (a request's header, a response's correlation id): its byte span,
which `--mark <name>` highlights."""

ALIASES: dict[str, tuple[str, str]] = {
    # tshark name: (our name, why)
    "kafka.topic_name": ("kafka.topic", "tshark's name for any topic name"),
    "kafka.partition_id": ("kafka.partition", "tshark's name for any partition index"),
    "kafka.consumer_group": ("kafka.group_id", "tshark's name for the group id"),
    "kafka.required_acks": ("kafka.acks", "tshark's name for Produce acks"),
    "kafka.timeout": ("kafka.timeout_ms", "tshark's name for the request timeout"),
    "kafka.throttle_time": ("kafka.throttle_time_ms", "tshark's name for the throttle time"),
    "kafka.max_wait_time": ("kafka.max_wait_ms", "tshark's name for Fetch max wait"),
    "kafka.session_timeout": ("kafka.session_timeout_ms", "tshark's name for the session timeout"),
    "kafka.rebalance_timeout": ("kafka.rebalance_timeout_ms", "tshark's name for the rebalance timeout"),
    "kafka.fetch_session_id": ("kafka.session_id", "tshark's name for the fetch session id"),
    "kafka.fetch_session_epoch": ("kafka.session_epoch", "tshark's name for the fetch session epoch"),
    "kafka.message_key": ("kafka.record.key", "tshark's name for a record key"),
    "kafka.message_value": ("kafka.record.value", "tshark's name for a record value"),
    "kafka.message_timestamp": ("kafka.record.timestamp_ms", "tshark's name for a record timestamp"),
    "kafka.header_key": ("kafka.record.header_key", "tshark's name for a record header key"),
    "kafka.header_value": ("kafka.record.header_value", "tshark's name for a record header value"),
}


def _spec_fields() -> Iterator[tuple[str, str, str, str | None]]:
    """(field name, spec type, where it is used, parent field name) for every field of every spec."""

    def walk(fields: list[dict[str, Any]], where: str, parent: str | None) -> Iterator[Any]:
        for f in fields:
            yield f["name"], f["type"], where, parent
            if f.get("fields"):
                yield from walk(f["fields"], where, f["name"])

    s = schema()
    for api in s["apis"].values():
        for side in ("request", "response"):
            for block in api[side]:
                yield from walk(block["fields"], f"{api['name']} {side}", None)
    for name, struct in s["data"].items():
        yield from walk(struct["fields"], name, None)


def _type_of(types: set[str]) -> str:
    """One filter type for a name the specs use with one or more wire types."""
    found = set()
    for t in types:
        elem = t[2:] if t.startswith("[]") else t
        found.add(_PRIMITIVE.get(elem, NONE))
    if len(found) > 1:
        found.discard(NONE)  # `partitions` is []int32 in some APIs, a structure list in others
    if len(found) > 1:
        return STR  # e.g. `port` int32 here, string there: compared as text
    return found.pop()


def declare() -> list[FieldDecl]:
    types: dict[str, set[str]] = {}
    uses: dict[str, list[str]] = {}
    topic_parents: set[str] = set()
    partition_parents: set[str] = set()
    struct_types: dict[str, str] = {}
    other_names: set[str] = set()  # structures whose `name` is not a topic
    for name, typ, where, parent in _spec_fields():
        types.setdefault(name, set()).add(typ)
        u = uses.setdefault(name, [])
        if where not in u:
            u.append(where)
        if typ.startswith("[]") or typ[:1].isupper():
            struct_types[name] = typ
        if parent is not None and name == "name":
            ptype = struct_types.get(parent, "")
            if "Topic" in ptype and "Config" not in ptype:
                topic_parents.add(parent)
            else:
                other_names.add(parent)
        if parent is not None and name == "index" and "Partition" in struct_types.get(parent, ""):
            partition_parents.add(parent)

    out: list[FieldDecl] = [
        FieldDecl(f"kafka.{n}", t, d, keys=(f"header/{n}",), frame=attr) for n, t, d, attr in FRAME
    ]
    out.append(
        FieldDecl("kafka.client_id", STR, "Client id in the request header", keys=("header/client_id",))
    )
    out += [
        FieldDecl(
            "kafka.topic",
            STR,
            "Every topic name in the frame (topic, topic_name, topics, name of a topic structure)",
            keys=(
                "topic",
                "topic_name",
                "topics",
                *(f"{p}/name" for p in sorted(topic_parents - other_names)),
            ),
        ),
        FieldDecl(
            "kafka.partition",
            INT,
            "Every partition index in the frame (partition, partition_index, index of a partition structure)",
            keys=(
                "partition",
                "partition_index",
                "partition_indexes",
                "partitions",  # where it is a list of indexes (structures are not values)
                "partition_id",
                *(f"{p}/index" for p in sorted(partition_parents)),
            ),
        ),
        FieldDecl(
            "kafka.error",
            INT,
            "Every error code in the frame; compare with a number or an error name (NOT_LEADER_OR_FOLLOWER)",
            keys=("error_code",),
            value_names=error_names(),
        ),
        FieldDecl("kafka.len", INT, "Frame length in bytes, size prefix included", frame="length"),
        FieldDecl(
            "kafka.request_frame", INT, "Packet of the request this response answers", frame="peer_packet"
        ),
        FieldDecl("kafka.response_frame", INT, "Packet of the response to this request", frame="peer_packet"),
    ]
    taken = {d.name for d in out} | set(ALIASES)
    for name in sorted(types):
        full = f"kafka.{name}"
        if full in taken:
            continue
        where = uses[name]
        more = f" … ({len(where)} in all)" if len(where) > 3 else ""
        typ = _type_of(types[name])
        out.append(
            FieldDecl(
                full,
                typ,
                f"{name} in {', '.join(where[:3])}{more}",
                keys=(name,),
                value_names=error_names() if name == "error_code" else None,
            )
        )
    out += [
        FieldDecl(
            "kafka.body_length",
            INT,
            "Body bytes of a response to an unknown API key or unsupported version (not decoded)",
            keys=("body_length",),
        ),
        FieldDecl(
            "kafka.raw_body",
            BYTES,
            "First 256 body bytes of a response to an unknown API key or unsupported version",
            keys=("raw_body",),
        ),
    ]
    out += message_fields("kafka", "record", "Kafka record")
    out.append(
        FieldDecl(
            "kafka.record.offset_delta",
            INT,
            "Place of each record among those a Produce request carries for its partition (0 for the "
            "first); its offset is the response's base offset plus this",
            message="offset_delta",
        )
    )
    by_name = {d.name: d for d in out}
    for alias, (target, why) in ALIASES.items():
        t = by_name.get(target)
        if t is not None:
            out.append(
                FieldDecl(
                    alias,
                    t.type,
                    f"{why} (= {target})",
                    keys=t.keys,
                    message=t.message,
                    frame=t.frame,
                    value_names=t.value_names,
                    alias_of=target,
                )
            )
    return out
