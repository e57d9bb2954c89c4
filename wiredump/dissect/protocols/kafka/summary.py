"""One-line summaries of Kafka frames for the timeline.

What a Kafka engineer looks for first: which topics and partitions, how many records
and bytes, acks, fetch positions, lookup targets, group ids, and error names. APIs
without a dedicated line get a generic one built from the fields most APIs share.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from wiredump.dissect import internal
from wiredump.dissect.model import Frame
from wiredump.dissect.protocols.kafka.topics import TopicNames

MAX_ITEMS = 4
_NAMES: ContextVar[TopicNames | None] = ContextVar("kafka_topic_names", default=None)
"""The run's topic names during one `summarize` call (set and reset by it; never kept)."""


def human_bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    for unit in ("KB", "MB", "GB"):
        n /= 1024  # type: ignore[assignment]
        if n < 1024:
            return f"{n:.1f} {unit}"
    return f"{n:.1f} TB"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _join(items: list[str]) -> str:
    if len(items) > MAX_ITEMS:
        return ", ".join(items[:MAX_ITEMS]) + f" +{len(items) - MAX_ITEMS} more"
    return ", ".join(items)


def _topic_name(t: dict[str, Any]) -> str:
    for k in ("name", "topic"):
        v = t.get(k)
        if isinstance(v, str):
            return v
    v = t.get("topic_id")
    if isinstance(v, str):
        names = _NAMES.get()
        return (names.name_of(v) if names is not None else None) or v[:8]
    return "?"


def _list(body: dict[str, Any], key: str) -> list[dict[str, Any]]:
    v = body.get(key)
    if not isinstance(v, list):
        return []
    for x in v:
        if not isinstance(x, dict):
            return [x for x in v if isinstance(x, dict)]
    return v  # all dicts (the usual case): no copy


def _partition(p: dict[str, Any]) -> Any:
    """The partition index under whichever name the API uses, or "?"."""
    v = p.get("index")
    if isinstance(v, int):
        return v
    v = p.get("partition_index")
    if isinstance(v, int):
        return v
    v = p.get("partition")
    return v if isinstance(v, int) else "?"


def _records_line(body: dict[str, Any], topics_key: str, parts_key: str) -> tuple[list[str], int, int]:
    items: list[str] = []
    total = size = 0
    for t in _list(body, topics_key):
        name = _topic_name(t)
        for p in _list(t, parts_key):
            idx = _partition(p)
            rec = p.get("records")
            if isinstance(rec, dict):
                n = rec.get("record_count", 0)
                size += rec.get("size", 0)
            else:
                n = 0
            if n:
                total += n
                items.append(f"{name}[{idx}] {n} record" if n == 1 else f"{name}[{idx}] {n} records")
            else:
                items.append(f"{name}[{idx}]")
    return items, total, size


def _produce(f: Frame, body: dict[str, Any], is_req: bool) -> str:
    if is_req:
        items, total, size = _records_line(body, "topic_data", "partition_data")
        line = _join(items) if len(items) <= 1 else f"{_join(items)}; {_n(total, 'record')}"
        return f"{line} {human_bytes(size)} acks={body.get('acks')}".strip()
    parts = []
    for t in _list(body, "responses"):
        name = _topic_name(t)
        for p in _list(t, "partition_responses"):
            parts.append(f"{name}[{p.get('index')}]@{p.get('base_offset')}")
    return _join(parts)


def _fetch(f: Frame, body: dict[str, Any], is_req: bool) -> str:
    if is_req:
        parts = []
        for t in _list(body, "topics"):
            for p in _list(t, "partitions"):
                parts.append(f"{_topic_name(t)}[{p.get('partition')}]@{p.get('fetch_offset')}")
        return _join(parts) or f"session {body.get('session_id')}"
    items, total, size = _records_line(body, "responses", "partitions")
    return f"{_n(len(items), 'partition')}, {_n(total, 'record')} {human_bytes(size)}" + (
        f": {_join(items)}" if items and len(items) <= MAX_ITEMS else ""
    )


def _metadata(f: Frame, body: dict[str, Any], is_req: bool) -> str:
    topics = body.get("topics")
    if is_req:
        if topics is None or topics == []:
            return "all topics" if topics is None or f.version == 0 else "no topics"
        return _join([_topic_name(t) for t in _list(body, "topics")])
    names = [_topic_name(t) for t in _list(body, "topics")]
    return f"{_n(len(_list(body, 'brokers')), 'broker')}, topics: {_join(names) or '-'}"


def _api_versions(f: Frame, body: dict[str, Any], is_req: bool) -> str:
    if is_req:
        name, ver = body.get("client_software_name"), body.get("client_software_version")
        return f"client {name} {ver}" if name else ""
    return f"{len(_list(body, 'api_keys'))} APIs"


def _find_coordinator(f: Frame, body: dict[str, Any], is_req: bool) -> str:
    if is_req:
        keys = body.get("coordinator_keys") or ([body["key"]] if body.get("key") is not None else [])
        kt = body.get("key_type", 0)
        return f"{'transaction' if kt == 1 else 'group'} {_join([str(k) for k in keys])}"
    coords = _list(body, "coordinators")
    if coords:
        return _join([f"{c.get('key')} -> {c.get('host')}:{c.get('port')}" for c in coords])
    return f"node {body.get('node_id')} {body.get('host')}:{body.get('port')}"


def _list_offsets(f: Frame, body: dict[str, Any], is_req: bool) -> str:
    parts = []
    for t in _list(body, "topics"):
        for p in _list(t, "partitions"):
            if is_req:
                parts.append(f"{_topic_name(t)}[{p.get('partition_index')}] t={p.get('timestamp')}")
            else:
                off = p.get("offset", p.get("old_style_offsets"))
                parts.append(f"{_topic_name(t)}[{p.get('partition_index')}]={off}")
    return _join(parts)


def _sasl_handshake(f: Frame, body: dict[str, Any], is_req: bool) -> str:
    if is_req:
        return f"mechanism {body.get('mechanism')}"
    return f"mechanisms {_join([str(m) for m in body.get('mechanisms') or []])}"


def _sasl_authenticate(f: Frame, body: dict[str, Any], is_req: bool) -> str:
    if is_req:
        user = f" user {body['username']}" if body.get("username") else ""
        return f"mechanism {body.get('mechanism')}{user}"
    return body.get("error_message") or ""


def _init_producer_id(f: Frame, body: dict[str, Any], is_req: bool) -> str:
    if is_req:
        return f"txn {body.get('transactional_id')}" if body.get("transactional_id") else ""
    return f"producer {body.get('producer_id')} epoch {body.get('producer_epoch')}"


def _generic(f: Frame, body: dict[str, Any], is_req: bool) -> str:
    bits = []
    for k in ("group_id", "transactional_id", "member_id", "key"):
        v = body.get(k)
        if isinstance(v, str) and v:
            bits.append(f"{k.replace('_id', '')} {v}")
    groups = body.get("groups")
    if isinstance(groups, list) and groups:
        names = [
            g if isinstance(g, str) else str(g.get("group_id", "?"))
            for g in groups
            if isinstance(g, str | dict)
        ]
        bits.append(f"groups {_join(names)}")
    topics = (
        _list(body, "topics")
        or _list(body, "resources")
        or _list(body, "results")
        or _list(body, "responses")
    )
    if topics:
        names = [t.get("resource_name") if "resource_name" in t else _topic_name(t) for t in topics]
        names = [str(n) for n in names if n not in (None, "?")]
        if names:
            bits.append(
                f"topics {_join(names)}" if "resource_name" not in topics[0] else f"resources {_join(names)}"
            )
    elif isinstance(body.get("topic_names"), list):
        bits.append(f"topics {_join([str(n) for n in body['topic_names']])}")
    return " ".join(bits)


def _assigned(dec: dict[str, Any]) -> str:
    parts = [f"{a.get('topic')}{a.get('partitions')}" for a in _list(dec, "assigned_partitions")]
    return _join(parts) if parts else "nothing"


def _join_group(f: Frame, body: dict[str, Any], is_req: bool) -> str:
    line = _generic(f, body, is_req)
    if is_req:
        subs = sorted(
            {t for p in _list(body, "protocols") for t in (p.get("metadata_decoded") or {}).get("topics", [])}
        )
        protos = [str(p.get("name")) for p in _list(body, "protocols")]
        return f"{line} protocols {_join(protos)}" + (f" subscribes {_join(subs)}" if subs else "")
    members = _list(body, "members")
    extra = (
        f" generation {body.get('generation_id')} leader {body.get('leader')}" if body.get("leader") else ""
    )
    return f"{line}{extra} {_n(len(members), 'member')}".strip()


def _sync_group(f: Frame, body: dict[str, Any], is_req: bool) -> str:
    line = _generic(f, body, is_req)
    if is_req:
        return f"{line} {_n(len(_list(body, 'assignments')), 'assignment')}".strip()
    dec = body.get("assignment_decoded")
    return f"assigned {_assigned(dec)}" if isinstance(dec, dict) else line


_BY_KEY = {
    11: _join_group,
    14: _sync_group,
    0: _produce,
    1: _fetch,
    2: _list_offsets,
    3: _metadata,
    10: _find_coordinator,
    17: _sasl_handshake,
    36: _sasl_authenticate,
    18: _api_versions,
    22: _init_producer_id,
}


def summarize(
    f: Frame, body: dict[str, Any] | None, req: Frame | None, names: TopicNames | None = None
) -> str:
    """`Produce v9 request orders[0] 3 records 1.2 KB acks=-1` style line (without the type/version prefix).

    `names`: the run's topic names, for topics a frame gives by id only.
    """
    is_req = f.kind == "request"
    text = ""
    if body is not None:
        fn = _BY_KEY.get(f.type_code, _generic)
        token = _NAMES.set(names)
        try:
            text = fn(f, body, is_req)
        except Exception as e:  # a summary must never cost the frame, but a bug in it is reported
            f.add(internal.internal_error(e, "summarize", "kafka", f"the summary of a {f.type} {f.kind}"))
            text = ""
        finally:
            _NAMES.reset(token)
    if f.error:
        errs = f.fields.get("_errors") or []
        names = sorted({e["error"] for e in errs}) if errs else [f.error]
        text = f"{text} error {_join(names)}".strip()
    return text
