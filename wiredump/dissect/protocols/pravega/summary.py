"""One short timeline line per Pravega command.

What a reader of the timeline looks for: the segment, the writer, event numbers,
offsets, byte and event counts, and for errors the error and what it names. The
type name is shown by the timeline itself, so it is not repeated here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wiredump.dissect import internal
from wiredump.dissect.model import Frame
from wiredump.dissect.protocols.pravega.commands import (
    AUTH_ERROR_CODES,
    ERROR_MESSAGE_CODES,
    LONG_MIN,
    SCALE_TYPES,
)

_SKIP = {
    "delegation_token",
    "server_stack_trace",
    "request_id",
    "absent_optional_fields",
    "flow",
    "data_shown",
}


def _w(fields: dict[str, Any]) -> str:
    w = fields.get("writer_id")
    return f"writer {w[:8]}" if isinstance(w, str) else ""


def _en(n: Any) -> str:
    return "none" if n == LONG_MIN else str(n)


def _data(fields: dict[str, Any]) -> str:
    kind = fields.get("data_kind")
    size = fields.get("appended_length", fields.get("data_length"))
    if kind == "events":
        n = fields.get("events", 0)
        return f"{n} event{'' if n == 1 else 's'}, {size} B"
    if kind == "raw":
        return f"{size} B raw (byte stream)"
    if kind == "empty":
        return "no data"
    return ""


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def _hello(f: Frame, d: dict[str, Any]) -> str:
    s = f"wire version {d.get('high_version')} (oldest {d.get('low_version')})"
    peer = d.get("peer_versions")
    if peer:
        s += f"; peer {peer['high_version']} (oldest {peer['low_version']}), versions {d.get('versions')}"
    return s


def _block_end(f: Frame, d: dict[str, Any]) -> str:
    num, last = d.get("num_events"), d.get("last_event_number")
    first = last - num + 1 if isinstance(num, int) and isinstance(last, int) else None
    rng = f"events {first}..{last}" if first is not None and first != last else f"event {last}"
    trailer = d.get("block_trailer")
    data = _data(d)
    return _join(
        _w(d),
        rng,
        f"({data})" if data else "",
        f"[block {d['block_data_length']} B + {trailer}]" if trailer else "",
    )


def _data_appended(f: Frame, d: dict[str, Any]) -> str:
    s = _join(
        _w(d),
        f"acked up to event {d.get('event_number')}",
        f"(previous {_en(d.get('previous_event_number'))})",
    )
    off = d.get("current_segment_write_offset")
    if isinstance(off, int) and off >= 0:
        s += f", segment write offset {off}"
    return s


def _segment_read(f: Frame, d: dict[str, Any]) -> str:
    flags = [n for n, k in (("at tail", "at_tail"), ("end of segment", "end_of_segment")) if d.get(k)]
    return _join(f"{d.get('segment')} @{d.get('offset')}", _data(d) or f"{d.get('data_length', 0)} B", *flags)


def _n(d: dict[str, Any], key: str) -> int:
    """Items of a decoded list, counting those cut from `fields`."""
    return d.get(key + "_total", len(d[key]))


def _table(d: dict[str, Any]) -> str:
    for key in ("entries", "keys"):
        if isinstance(d.get(key), list):
            return f"{_n(d, key)} {key}"
    return ""


def _generic(f: Frame, d: dict[str, Any]) -> str:
    parts: list[str] = []
    absent = d.get("absent_optional_fields") or ()
    for k, v in d.items():
        if (
            k in _SKIP
            or k in absent
            or k.endswith("_total")
            or k in ("entries", "keys", "data", "padding")
            or isinstance(v, (bytes, dict, list))
        ):
            continue
        if k == "writer_id":
            parts.append(_w(d))
        elif k == "segment":
            parts.append(str(v))
        elif k == "scale_type":
            parts.append(f"scale {SCALE_TYPES.get(v, v)}")
        elif k == "error_code" and f.type == "AuthTokenCheckFailed":
            parts.append(f"error {AUTH_ERROR_CODES.get(v, v)}")
        elif k == "error_code" and f.type == "ErrorMessage":
            parts.append(f"error {ERROR_MESSAGE_CODES.get(v, v)}")
        elif v == -1 and k.endswith("offset"):
            continue  # -1 = no offset given
        elif k in ("last_event_number", "event_number"):
            parts.append(f"{k.replace('_', ' ')} {_en(v)}")
        else:
            parts.append(f"{k}={v}")
    table = _table(d)
    if table:
        parts.insert(1, table)
    if isinstance(d.get("sources"), list):
        parts.append(f"{_n(d, 'sources')} sources")
    if isinstance(d.get("merged"), list):
        parts.append(f"{_n(d, 'merged')} merged")
    if isinstance(d.get("updated_versions"), list):
        parts.append(f"{_n(d, 'updated_versions')} versions")
    if isinstance(d.get("chunks"), list):
        parts.append(f"{_n(d, 'chunks')} chunks")
    if f.error:
        parts.insert(0, f"error {f.error}:")
    return _join(*parts)


_BY_TYPE: dict[str, Callable[[Frame, dict[str, Any]], str]] = {
    "Hello": _hello,
    "AppendBlockEnd": _block_end,
    "DataAppended": _data_appended,
    "SegmentRead": _segment_read,
    "AppendBlock": lambda f, d: _join(
        _w(d),
        f"{d.get('data_length', 0)} B",
        f"{d.get('whole_events', 0)} whole events",
        f"+ {d['trailer']}" if d.get("trailer") else "",
    ),
    "ConditionalAppend": lambda f, d: _join(
        _w(d),
        f"event {d.get('event_number')} at expected offset {d.get('expected_offset')}",
        f"({d.get('data_length', 0)} B)",
    ),
    "ConditionalBlockEnd": lambda f, d: _join(
        _w(d),
        f"event {d.get('event_number')} at expected offset {d.get('expected_offset')}",
        f"({_data(d)})" if _data(d) else "",
    ),
    "ReadSegment": lambda f, d: f"{d.get('segment')} @{d.get('offset')} up to {d.get('suggested_length')} B",
    "KeepAlive": lambda f, d: "keep-alive",
}


def summarize(f: Frame, fields: dict[str, Any]) -> str:
    try:
        fn = _BY_TYPE.get(f.type, _generic)
        s = fn(f, fields)
    except Exception as e:  # a summary must never cost the frame, but a bug in it is reported
        f.add(internal.internal_error(e, "summarize", "pravega", f"a {f.type} frame"))
        s = _generic(f, fields) if f.type in _BY_TYPE else ""
    return s[:300]
