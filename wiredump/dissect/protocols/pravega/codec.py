"""The one walker that reads any row of the command table, and Pravega's encodings.

Everything is big-endian (Java `DataOutput`). Strings are `writeUTF`: a u16 byte
length then *modified* UTF-8 (U+0000 as `C0 80`, characters beyond the BMP as two
3-byte surrogates), so they are decoded as CESU-8 rather than plain UTF-8. Counts
read from the wire are checked against the bytes left before anything is built,
so a hostile count costs nothing.
"""

from __future__ import annotations

from typing import Any

from wiredump.dissect.protocols.pravega.commands import (
    ATTRIBUTE_UPDATE_TYPES,
    LONG_MIN,
    F,
)
from wiredump.dissect.wire import Cursor, Short

MAX_LIST_ITEMS = 1000
"""List items kept in `fields` (all are read and checked; the total is recorded)."""


class Shown(list):  # type: ignore[type-arg]
    """A decoded list cut to MAX_LIST_ITEMS items; `total` is how many the wire held."""

    total: int = 0


def _collect(n: int, read: Any) -> list[Any]:
    """Call `read()` n times (every item is read, so the frame is fully checked); keep the first items."""
    out: Shown = Shown()
    out.total = n
    for i in range(n):
        item = read()
        if i < MAX_LIST_ITEMS:
            out.append(item)
    return out


class BadField(Exception):
    """A field holds a value its encoding forbids (not a short read)."""

    def __init__(self, what: str, offset: int) -> None:
        super().__init__(f"{what} at byte {offset}")
        self.offset = offset


def java_utf(raw: bytes) -> tuple[str, bool]:
    """Decode Java modified UTF-8; returns (text, ok). Never raises."""
    try:
        return raw.decode("utf-8"), True
    except UnicodeDecodeError:
        pass
    try:
        text = raw.replace(b"\xc0\x80", b"\x00").decode("utf-8", "surrogatepass")
        # Join surrogate pairs (CESU-8) into real characters.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le"), True
    except UnicodeError:
        return raw.decode("utf-8", "backslashreplace"), False


def read_str(c: Cursor, what: str) -> str:
    n = c.u16(what + " length")
    text, ok = java_utf(c.take(n, what))
    if not ok:
        raise BadField(f"{what}: not modified UTF-8", c.pos - n)
    return text


def read_blob(c: Cursor, what: str) -> bytes:
    start = c.pos
    n = c.i32(what + " length")
    if n < 0:
        raise BadField(f"{what}: negative length {n}", start)
    return c.take(n, what)


def _count(c: Cursor, what: str, min_item: int) -> int:
    start = c.pos
    n = c.i32(what + " count")
    if n < 0 or n * min_item > c.left:
        raise BadField(f"{what}: count {n} does not fit the {c.left} bytes left", start)
    return n


def _printable(raw: bytes) -> str | None:
    """The key as text when it is printable UTF-8 (table keys usually are: names, paths)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if text.isprintable() else None


def read_table_key(c: Cursor) -> dict[str, Any]:
    """TableKey: payloadSize int, dataLength int, then (only if dataLength > 0) data and keyVersion."""
    payload_size = c.i32("table key payload size")
    start = c.pos
    n = c.i32("table key length")
    if n < 0:
        raise BadField(f"table key: negative length {n}", start)
    key: dict[str, Any] = {"payload_size": payload_size, "key": b""}
    if n > 0:
        key["key"] = c.take(n, "table key")
        text = _printable(key["key"])
        if text is not None:
            key["key_text"] = text
        version = c.i64("table key version")
        key["key_version"] = version
        if version == LONG_MIN:
            key["key_version_meaning"] = "NO_VERSION"
        elif version == -1:
            key["key_version_meaning"] = "NOT_EXISTS"
    return key


def read_table_value(c: Cursor) -> dict[str, Any]:
    """TableValue: payloadSize int, dataLength int, data (absent when 0)."""
    payload_size = c.i32("table value payload size")
    start = c.pos
    n = c.i32("table value length")
    if n < 0:
        raise BadField(f"table value: negative length {n}", start)
    return {"payload_size": payload_size, "value": c.take(n, "table value") if n else b""}


def read_table_entries(c: Cursor) -> list[dict[str, Any]]:
    n = _count(c, "table entries", 16)
    return _collect(n, lambda: {"key": read_table_key(c), "value": read_table_value(c)})


def read_table_keys(c: Cursor) -> list[dict[str, Any]]:
    n = _count(c, "table keys", 8)
    return _collect(n, lambda: read_table_key(c))


def read_iterator_args(c: Cursor) -> dict[str, bytes]:
    """Four blobs; the reader treats a missing trailing blob as empty."""
    out: dict[str, bytes] = {}
    for name in ("continuation_token", "prefix_filter", "from_key", "to_key"):
        out[name] = read_blob(c, name) if c.left >= 4 else b""
    return out


def read_event(c: Cursor) -> dict[str, Any]:
    """An embedded event record: `[int type, must be 0][int length][bytes]`."""
    start = c.pos
    kind = c.i32("event type")
    if kind != 0:
        raise BadField(f"embedded event has type {kind}, not 0 (EVENT)", start)
    return {"data": read_blob(c, "event data")}


def _chunk_info(c: Cursor) -> dict[str, Any]:
    return {
        "length_in_metadata": c.i64("lengthInMetadata"),
        "length_in_storage": c.i64("lengthInStorage"),
        "start_offset": c.i64("startOffset"),
        "chunk_name": read_str(c, "chunkName"),
        "exists_in_storage": c.u8("existsInStorage") != 0,
    }


def _attribute_update(c: Cursor) -> dict[str, Any]:
    item: dict[str, Any] = {"attribute_id": c.uuid("attributeId")}
    t = c.i8("attributeUpdateType")
    item["update_type"] = ATTRIBUTE_UPDATE_TYPES.get(t, t)
    item["new_value"] = c.i64("newValue")
    item["old_value"] = c.i64("oldValue")
    return item


def _read(c: Cursor, f: F) -> Any:
    k = f.kind
    if k == "long":
        return c.i64(f.name)
    if k == "int":
        return c.i32(f.name)
    if k == "str":
        return read_str(c, f.name)
    if k == "uuid":
        h = c.take(16, f.name).hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    if k == "bool":
        return c.u8(f.name) != 0
    if k == "byte":
        return c.i8(f.name)
    if k == "blob":
        return read_blob(c, f.name)
    if k == "rest":
        return c.rest()
    if k == "zeros":
        start = c.pos
        data = c.rest()
        if data.count(0) != len(data):
            raise BadField("padding holds non-zero bytes", start)
        return len(data)
    if k == "event":
        return read_event(c)
    if k == "table_entries":
        return read_table_entries(c)
    if k == "table_keys":
        return read_table_keys(c)
    if k == "table_iterator_args":
        return read_iterator_args(c)
    if k == "longs":
        return _collect(_count(c, f.name, 8), lambda: c.i64(f.name))
    if k == "strs":
        return _collect(_count(c, f.name, 2), lambda: read_str(c, f.name))
    if k == "merged_sources":
        return _collect(
            _count(c, f.name, 10),
            lambda: {"source": read_str(c, "source"), "new_target_write_offset": c.i64("offset")},
        )
    if k == "chunk_infos":
        return _collect(_count(c, f.name, 27), lambda: _chunk_info(c))
    if k == "attribute_updates":
        return _collect(_count(c, f.name, 33), lambda: _attribute_update(c))
    raise BadField(f"no reader for field kind {k!r}", c.pos)


def decode_fields(c: Cursor, fields: tuple[F, ...], out: dict[str, Any]) -> list[str]:
    """Read `fields` in wire order into `out`; returns the names of optional fields that were absent.

    Raises `Short` (field cut off) or `BadField` (value impossible); what was read
    before stays in `out`.
    """
    absent: list[str] = []
    for f in fields:
        if f.optional and c.left == 0:
            out[f.name] = [] if isinstance(f.default, list) else f.default
            absent.append(f.name)
            continue
        value = _read(c, f)
        if isinstance(value, Shown):
            if value.total > len(value):
                out[f.name + "_total"] = value.total
            value = list(value)
        out[f.name] = value
    return absent


__all__ = ["BadField", "Short", "decode_fields", "java_utf", "read_blob", "read_str"]
