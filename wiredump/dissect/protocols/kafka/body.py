"""The one table-walking decoder for every Kafka request and response body.

It follows a compiled `Plan` (see `schema.py`): classic and compact strings, bytes,
arrays and records, nullable structs, tagged-field sections (known tags by name,
unknown ones kept raw). Every count and length is checked against the bytes left
before anything is read or allocated. Error codes are collected on the way so the
frame can carry the first non-zero one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from wiredump.dissect.protocols.kafka.schema import (
    ARRAY,
    BOOL,
    BYTES,
    FIXED,
    FIXED_RUN,
    RECORDS,
    STRING,
    STRUCT,
    UUID,
    Op,
    Plan,
)
from wiredump.dissect.wire import Cursor, Short

MAX_DEPTH = 24

MAX_ELEMENTS = 100_000
"""`Limits.max_elements`: the budget of a body decoded without the run's limits at hand."""

RecordsHook = Callable[[bytes, int, list[dict[str, Any]]], Any]
"""(record set bytes, offset in the frame, stack of enclosing structs) -> decode to store."""


class Bad(Exception):
    """The bytes contradict the layout (a negative length, a count beyond the frame…)."""

    def __init__(self, msg: str, offset: int) -> None:
        super().__init__(msg)
        self.offset = offset


class Elements:
    """The budget of array elements one body keeps in its decoded tree (`Limits.max_elements`).

    Why: a Metadata response of a million empty 8-byte topics is 8 MB on the wire and a
    million dicts (and partition rows) once decoded. Elements are counted in the order they
    are read, whatever array holds them; the first `limit` are kept, the rest are still read
    (the body's framing, checks and later fields stay right) but not attached to the tree, so
    the record sets inside them are not decoded and their error codes are collected only while
    the body has none yet (the frame's first error code stays the first one read)."""

    __slots__ = ("limit", "left", "dropped", "first")

    def __init__(self, limit: int = MAX_ELEMENTS) -> None:
        self.limit = limit
        self.left = limit
        """Elements the tree may still keep."""
        self.dropped = 0
        """Elements read past the budget, not kept."""
        self.first: tuple[str, int] | None = None
        """(path, byte offset) of the first element not kept."""

    @property
    def kept(self) -> int:
        """Elements kept in the tree."""
        return self.limit - self.left


class BodyDecoder:
    """Walks one body; `errors` collects (path, code) for every non-zero error code seen."""

    __slots__ = ("cur", "records", "errors", "secrets", "_path", "elements", "dropping")

    def __init__(
        self,
        cur: Cursor,
        records: RecordsHook | None,
        secrets: frozenset[str] = frozenset(),
        elements: Elements | None = None,
    ) -> None:
        self.cur = cur
        self.records = records
        self.errors: list[tuple[str, int]] = []
        self.secrets = secrets
        self._path: list[list[Any]] = []  # [field name, array index or None] per enclosing struct
        self.elements = Elements() if elements is None else elements
        self.dropping = False
        """Reading elements past the budget: nothing read is kept (see `Elements`)."""

    def _error(self, stack: list[dict[str, Any]], name: str, code: int) -> None:
        """Collect a non-zero error code (inside a dropped element only when none is collected yet)."""
        if not (self.dropping and self.errors):
            self.errors.append((self._where(stack, name), code))

    def rest_structs(self, plan: Plan, stack: list[dict[str, Any]], at: list[Any], i: int, n: int) -> None:
        """Read elements i..n-1 of an array of structs past the budget: counted, not kept.

        `at` is the array's [name, index] entry, already on `_path`."""
        at[1] = i
        self._lost("")
        was, hook = self.dropping, self.records
        self.dropping, self.records = True, None
        el = self.elements
        struct_ = self.struct
        for j in range(i, n):
            at[1] = j
            el.dropped += 1
            struct_(plan, stack, {})
        self.dropping, self.records = was, hook

    def rest_values(self, elem: Op, stack: list[dict[str, Any]], name: str | None, i: int, n: int) -> None:
        """Read elements i..n-1 of an array of values past the budget: counted, not kept."""
        self._lost(f".{name}[{i}]")
        was, hook = self.dropping, self.records
        self.dropping, self.records = True, None
        el = self.elements
        value = self.value
        for _ in range(i, n):
            el.dropped += 1
            value(elem, stack)
        self.dropping, self.records = was, hook

    def _lost(self, suffix: str) -> None:
        """Remember where the first element past the budget is: its path (the enclosing
        structs' path and `suffix`) and its offset."""
        el = self.elements
        if el.first is None:
            path = "".join(f".{n}" if j is None else f".{n}[{j}]" for n, j in self._path) + suffix
            el.first = (path.lstrip("."), self.cur.pos)

    # -- lengths ---------------------------------------------------------------------------
    def _length(self, compact: bool, wide: bool, what: str) -> int:
        """Length of a string (int16), bytes/array (int32) or compact (uvarint N+1); -1 = null."""
        c = self.cur
        if compact:
            pos = c.pos
            if pos < c.end and c.buf[pos] < 0x80:
                c.pos = pos + 1
                return c.buf[pos] - 1  # one-byte length (the usual case); -1 = null
            n = c.uvarint(what, 5) - 1
        elif wide:
            n = c.i32(what)
        else:
            n = c.i16(what)
        if n < -1:
            raise Bad(f"{what}: length {n}", c.pos)
        return n

    # -- values ----------------------------------------------------------------------------
    def struct(
        self, plan: Plan, stack: list[dict[str, Any]], out: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        if len(stack) > MAX_DEPTH:
            raise Bad("structs nested too deep", self.cur.pos)
        if out is None:
            out = {}
        stack.append(out)
        # No try/finally: any exception aborts the whole body, stack and path included.
        value = self.value
        c = self.cur
        for op in plan.ops:
            if op.code == FIXED_RUN:
                size = op.size
                if c.pos + size > c.end:
                    raise Short(op.names[0], c.pos, size, c.end - c.pos)
                vals = op.fmt.unpack_from(c.buf, c.pos)  # type: ignore[union-attr]
                c.pos += size
                out.update(zip(op.names, vals, strict=True))
                for i in op.errors:
                    if vals[i]:
                        self._error(stack, op.names[i], vals[i])
            else:
                out[op.name] = value(op, stack)  # type: ignore[index]
        if plan.flexible:
            if c.pos < c.end and c.buf[c.pos] == 0:
                c.pos += 1  # the usual empty tagged-field section
            else:
                self.tagged(plan.tags, out, stack)
        stack.pop()
        return out

    def tagged(self, tags: dict[int, Op], out: dict[str, Any], stack: list[dict[str, Any]]) -> None:
        c = self.cur
        count = c.uvarint("tagged field count", 5)
        if count > c.left:
            raise Bad(f"{count} tagged fields in {c.left} bytes", c.pos)
        unknown: dict[str, Any] | None = None
        for _ in range(count):
            tag = c.uvarint("tag", 5)
            size = c.uvarint("tagged field size", 5)
            c.need(size, f"tagged field {tag}")
            op = tags.get(tag)
            if op is None:
                if unknown is None:
                    unknown = out.setdefault("_unknown_tags", {})
                unknown[str(tag)] = c.take(size)
                continue
            end = c.end
            start = c.pos
            c.end = start + size
            try:
                out[op.name] = self.value(op, stack)  # type: ignore[index]
                if c.pos != c.end:
                    raise Bad(f"tagged field {op.name} leaves {c.end - c.pos} bytes", c.pos)
            finally:
                c.end = end
            c.pos = start + size

    def value(self, op: Op, stack: list[dict[str, Any]]) -> Any:
        c = self.cur
        code = op.code
        if code == FIXED:
            size = op.size
            if c.pos + size > c.end:
                raise Short(op.name or "value", c.pos, size, c.end - c.pos)
            (v,) = op.fmt.unpack_from(c.buf, c.pos)  # type: ignore[union-attr]
            c.pos += size
            if v and op.name is not None and op.name.endswith("error_code"):
                self._error(stack, op.name, v)
            return v
        if code == STRING:
            n = self._length(op.compact, False, op.name or "string")
            if n < 0:
                if not op.nullable:
                    raise Bad(f"{op.name}: null in a non-nullable string", c.pos)
                return None
            return c.take(n, op.name or "string").decode("utf-8", "replace")
        if code == ARRAY:
            n = self._length(op.compact, True, op.name or "array")
            if n < 0:
                return None
            elem = op.elem
            assert elem is not None
            if n * elem.min_size > c.left:
                raise Bad(f"{op.name}: {n} elements cannot fit in {c.left} bytes", c.pos)
            if elem.code == STRUCT:
                plan = elem.struct
                assert plan is not None
                items: list[dict[str, Any]] = []
                if stack and op.name:
                    stack[-1][op.name] = items  # visible in the partial decode if the bytes run out
                at = [op.name, 0]
                self._path.append(at)
                struct_ = self.struct
                el = self.elements
                for i in range(n):
                    if not el.left:  # past the frame's budget (`Elements`): read, not kept
                        self.rest_structs(plan, stack, at, i, n)
                        break
                    el.left -= 1
                    at[1] = i
                    d: dict[str, Any] = {}
                    items.append(d)
                    struct_(plan, stack, d)
                self._path.pop()
                return items
            el = self.elements
            values: list[Any] = []
            for i in range(n):
                if not el.left:
                    self.rest_values(elem, stack, op.name, i, n)
                    break
                el.left -= 1
                values.append(self.value(elem, stack))
            return values
        if code == STRUCT:
            if op.nullable:
                marker = c.i8(op.name or "struct")
                if marker < 0:
                    return None
            plan = op.struct
            assert plan is not None
            self._path.append([op.name, None])
            v = self.struct(plan, stack)
            self._path.pop()
            return v
        if code == BOOL:
            return c.u8(op.name or "bool") != 0
        if code == UUID:
            return str(uuid.UUID(bytes=c.take(16, op.name or "uuid")))
        if code == BYTES:
            n = self._length(op.compact, True, op.name or "bytes")
            if n < 0:
                return None
            v = c.take(n, op.name or "bytes")
            if op.name in self.secrets:
                return f"<{n} bytes masked>"
            return v
        if code == RECORDS:
            n = self._length(op.compact, True, op.name or "records")
            if n < 0:
                return None
            c.need(n, op.name or "records")
            start = c.pos
            data = c.take(n)
            if self.records is None:
                return {"size": n}
            return self.records(data, start, stack)
        raise Bad(f"unknown op {code}", c.pos)

    def _where(self, stack: list[dict[str, Any]], name: str) -> str:
        path = "".join(f".{n}" if i is None else f".{n}[{i}]" for n, i in self._path)
        return (path + "." + name).lstrip(".")


def walk_body(
    data: bytes | memoryview,
    start: int,
    plan: Plan,
    records: RecordsHook | None,
    secrets: frozenset[str] = frozenset(),
    elements: Elements | None = None,
) -> tuple[dict[str, Any], list[tuple[str, int]], int]:
    """Decode data[start:] by walking `plan` (the reference decoder); same contract as `decode_body`."""
    cur = Cursor(data, start)
    dec = BodyDecoder(cur, records, secrets, elements)
    stack: list[dict[str, Any]] = []
    try:
        out = dec.struct(plan, stack)
    except (Short, Bad) as e:
        e.partial = stack[0] if stack else None  # type: ignore[union-attr]  # what was read before the cut
        e.errors = dec.errors  # type: ignore[union-attr]
        raise
    return out, dec.errors, cur.pos


def decode_body(
    data: bytes | memoryview,
    start: int,
    plan: Plan,
    records: RecordsHook | None,
    secrets: frozenset[str] = frozenset(),
    elements: Elements | None = None,
) -> tuple[dict[str, Any], list[tuple[str, int]], int]:
    """Decode data[start:] with `plan`; returns (fields, errors, end position).

    `elements` is the body's budget of kept array elements (default: a fresh `MAX_ELEMENTS`
    one); pass one to learn afterwards how many were read past it and where.

    Raises `Short` or `Bad` (both carry `.offset`, a frame offset) when the bytes do not fit,
    with `.partial` (what was read before) and `.errors`. Uses the plan's compiled function
    (`compiled.py`) when there is one; it gives exactly what `walk_body` gives.
    """
    if elements is None:
        elements = Elements()
    fn = _compiled.compiled(plan) if type(data) is bytes else None
    if fn is None:
        return walk_body(data, start, plan, records, secrets, elements)
    out: dict[str, Any] = {}
    errors: list[tuple[str, int]] = []
    try:
        end = fn(data, start, len(data), out, errors, secrets, records, elements)
    except (Short, Bad) as e:
        e.partial = out  # type: ignore[union-attr]
        e.errors = errors  # type: ignore[union-attr]
        raise
    return out, errors, end


__all__ = ["Bad", "BodyDecoder", "Elements", "Short", "decode_body", "walk_body"]

# At the end: `compiled` imports this module (the walker is its fallback for rare paths).
from wiredump.dissect.protocols.kafka import compiled as _compiled  # noqa: E402
