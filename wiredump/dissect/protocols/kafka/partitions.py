"""Kafka's per-topic/partition results, found from the API specs, for the `partitions` table.

Why: every Kafka API that touches topics nests them the same way — an array of topic
structs (named by `name`, `topic` or `topic_name`, or by `topic_id` alone in newer
versions), each holding an array of partition structs (`index`, `partition_index`,
`partition` or `partition_id`) or a list of partition numbers — but the names differ
from API to API, so a query over the JSON `detail` needs one regex per API. Here the
paths are read once per (API, direction) from `wiredump/proto/kafka_schema.json` (the
generated specs), so every API and version is covered and nothing is listed by hand.

Which arrays hold topics: an array of structs whose element type names a topic
(`[]TopicProduceData`, `[]FetchableTopicResponse`…) and that has a topic key field,
or whose element has a `topic` field (ElectLeaders' `[]ReplicaElectionResult`). This
matches Kafka's own `entityType: topicName` marks (checked against the specs in
tests/test_partitions.py).

Topic ids are shown as the name the run learnt for them (`topics.TopicNames`, taught by
Metadata-like responses on any connection of the capture before this frame), else as the
id itself, as the summaries and `messages.topic` show them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from wiredump.dissect.model import TopicPartition
from wiredump.dissect.protocols.kafka import schema, topics

TOPIC_KEYS = ("name", "topic", "topic_name")
"""String fields that name a topic inside a topic struct (which one depends on the API)."""
TOPIC_ID = "topic_id"
PARTITION_KEYS = ("partition_index", "index", "partition", "partition_id")
"""Int32 fields that number a partition inside a partition struct."""
PARTITION_LISTS = ("partition_indexes", "partitions", "partition_ids")
"""Arrays of int32 that list partitions of a topic without a struct per partition."""
OFFSET_KEYS = ("base_offset", "fetch_offset", "committed_offset", "offset")
"""The offset a partition entry names, first present wins (Produce response, Fetch request,
OffsetCommit/OffsetFetch, ListOffsets/DeleteRecords)."""


@dataclass(frozen=True, slots=True)
class PartitionArray:
    """An array of partition structs (`struct` True) or of partition numbers inside a topic struct."""

    field: str
    struct: bool
    index: tuple[str, ...] = ()
    """The partition-number fields the struct has (in any version), tried in this order."""
    offsets: tuple[str, ...] = ()
    """The `OFFSET_KEYS` the struct has, in their order of preference."""
    records: bool = False
    """The struct carries a record set."""


@dataclass(frozen=True, slots=True)
class Walk:
    """Where topics are in one struct of an API's body: topic arrays here, structs/arrays to descend."""

    topics: tuple[tuple[str, tuple[PartitionArray, ...]], ...]
    """(array field, its partition arrays) for every topic array directly in this struct."""
    descend: tuple[tuple[str, Walk], ...]
    """(field, walk) for arrays or structs below this one that hold topic arrays deeper down."""


def _is_topic_struct(f: dict[str, Any]) -> bool:
    ftype = f.get("type", "")
    sub = f.get("fields")
    if not ftype.startswith("[]") or not sub:
        return False
    names = {g["name"]: g["type"] for g in sub}
    if names.get(TOPIC_ID) == "uuid" or names.get("topic") == "string" or names.get("topic_name") == "string":
        return True  # names only topics use
    return names.get("name") == "string" and "Topic" in ftype  # `name` names many things: a topic here


def _partition_arrays(fields: list[dict[str, Any]]) -> tuple[PartitionArray, ...]:
    out: list[PartitionArray] = []
    for g in fields:
        gtype = g.get("type", "")
        if not gtype.startswith("[]"):
            continue
        sub = g.get("fields")
        if sub:
            have = {h["name"]: h["type"] for h in sub}
            index = tuple(k for k in PARTITION_KEYS if have.get(k) == "int32")
            if index:
                offsets = tuple(k for k in OFFSET_KEYS if have.get(k) == "int64")
                out.append(PartitionArray(g["name"], True, index, offsets, have.get("records") == "records"))
        elif gtype == "[]int32" and g["name"] in PARTITION_LISTS:
            out.append(PartitionArray(g["name"], False))
    return tuple(out)


def _walk(fields: list[dict[str, Any]]) -> Walk | None:
    found: dict[str, tuple[PartitionArray, ...]] = {}
    below: dict[str, Walk] = {}
    for f in fields:
        sub = f.get("fields")
        if not sub:
            continue
        if _is_topic_struct(f):
            found.setdefault(f["name"], _partition_arrays(sub))
            continue
        w = _walk(sub)
        if w is not None and f["name"] not in below:
            below[f["name"]] = w
    if not found and not below:
        return None
    return Walk(tuple(found.items()), tuple(below.items()))


@cache
def walk_of(api_key: int, direction: str) -> Walk | None:
    """The topic paths of an API's `direction` ("request"/"response") body, over all its versions
    (field names do not change between versions; a field a version lacks is simply absent)."""
    api = schema.schema()["apis"].get(str(api_key))
    if api is None:
        return None
    fields: list[dict[str, Any]] = []
    for entry in api[direction]:
        fields.extend(entry["fields"])
    return _walk(fields)


def topic_fields(api_key: int, direction: str) -> set[tuple[str, str]]:
    """(topic array, topic key) pairs the walk finds for an API, for checking against the specs."""
    out: set[tuple[str, str]] = set()
    api = schema.schema()["apis"].get(str(api_key))
    if api is None:
        return out

    def visit(fields: list[dict[str, Any]]) -> None:
        for f in fields:
            sub = f.get("fields")
            if not sub:
                continue
            if _is_topic_struct(f):
                for g in sub:
                    if g["name"] in (*TOPIC_KEYS, TOPIC_ID):
                        out.add((f["name"], g["name"]))
            else:
                visit(sub)

    for entry in api[direction]:
        visit(entry["fields"])
    return out


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _error(code: int | None) -> str | None:
    return schema.error_name(code) if code else None


def _topic_name(t: dict[str, Any], names: topics.TopicNames) -> str | None:
    for k in TOPIC_KEYS:
        v = t.get(k)
        if isinstance(v, str):
            return v
    tid = t.get(TOPIC_ID)
    if isinstance(tid, str):
        return names.name_of(tid) or tid
    return None


def _records(p: dict[str, Any]) -> tuple[int | None, int | None]:
    """(records carried, first offset among them) of a partition's record set, if it has one."""
    rs = p.get("records")
    if not isinstance(rs, dict):
        return None, None
    count = _int(rs.get("record_count"))
    first: int | None = None
    batches = rs.get("batches")
    if isinstance(batches, list) and batches and isinstance(batches[0], dict):
        b = batches[0]
        first = _int(b.get("base_offset"))
        if first is None:
            first = _int(b.get("offset"))
    return count, first


def _partition_row(
    topic: str | None, t_error: int | None, p: dict[str, Any], pa: PartitionArray, response: bool
) -> TopicPartition:
    """One partition struct's row; only the fields its schema has are looked up (this runs for every
    partition of every frame, so the lookups are planned once per API in `PartitionArray`)."""
    partition = None
    for k in pa.index:
        partition = p.get(k)
        if type(partition) is int:
            break
        partition = None
    code = p.get("error_code")
    if type(code) is not int:
        code = t_error
    offset = None
    for k in pa.offsets:
        offset = p.get(k)
        if type(offset) is int:
            break
        offset = None
    count = None
    if pa.records:
        count, first = _records(p)
        if offset is None and response:  # a request's batches carry client-side offsets (0), not the log's
            offset = first
    hw = p.get("high_watermark")
    lso = p.get("log_start_offset")
    return TopicPartition(
        topic,
        partition,
        code,
        schema.error_name(code) if code else None,
        offset,
        hw if type(hw) is int else None,
        lso if type(lso) is int else None,
        count,
    )


def _collect(
    body: dict[str, Any], w: Walk, names: topics.TopicNames, response: bool, out: list[TopicPartition]
) -> None:
    for field, parrays in w.topics:
        arr = body.get(field)
        if not isinstance(arr, list):
            continue
        for t in arr:
            if not isinstance(t, dict):
                continue
            topic = _topic_name(t, names)
            t_error = _int(t.get("error_code"))
            n = len(out)
            for pa in parrays:
                parts = t.get(pa.field)
                if not isinstance(parts, list):
                    continue
                for p in parts:
                    if pa.struct and isinstance(p, dict):
                        out.append(_partition_row(topic, t_error, p, pa, response))
                    elif not pa.struct and _int(p) is not None:
                        out.append(TopicPartition(topic, p, t_error, _error(t_error)))
            if len(out) == n:  # no partitions listed: the topic's own result
                out.append(TopicPartition(topic, None, t_error, _error(t_error)))
    for field, sub in w.descend:
        v = body.get(field)
        if isinstance(v, dict):
            _collect(v, sub, names, response, out)
        elif isinstance(v, list):
            for item in v:
                if isinstance(item, dict):
                    _collect(item, sub, names, response, out)


def of_body(api_key: int, direction: str, body: Any, names: topics.TopicNames) -> list[TopicPartition]:
    """Every topic/partition a decoded (or partly decoded) body names, in wire order."""
    if not isinstance(body, dict):
        return []
    w = walk_of(api_key, direction)
    if w is None:
        return []
    out: list[TopicPartition] = []
    _collect(body, w, names, direction == "response", out)
    return out
