"""Kafka body plans compiled to Python functions: the fast twin of `body.BodyDecoder`.

Why: walking a plan costs a method call, a dispatch on the op code and a cursor update
per field, and most Kafka traffic is the same few layouts (Produce, Fetch) repeated
hundreds of thousands of times. Kafka itself generates message classes from its JSON
specs; this module does the same at run time: the first time a plan is used, it writes
the source of one straight-line function for the whole body (nested arrays become
nested loops, fixed-width runs one `unpack_from`, one-byte compact lengths inline)
and `exec`s it once.

The generated code must behave exactly like the walker, which stays the reference:
the same fields in the same order, the same `Short`/`Bad` errors with the same
messages and offsets, the same partial decode when the bytes run out (arrays of
structs are attached before their elements are read, elements before their fields,
single structs only once complete), the same error-code paths, secrets masking and
records hook calls (with the stack of enclosing structs as it is at that point).
Rare paths (a non-empty tagged-field section, a varint length longer than one byte)
call back into the walker or a shared helper with the same state.
`tests/test_kafka_compiled.py` checks both give identical results on every captured
body, on random bodies of every (api, version) and on cut and mutated ones.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from wiredump.dissect.protocols.kafka.body import MAX_DEPTH, Bad, BodyDecoder, Elements, RecordsHook
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

MAX_LOOPS = 12
"""Array nesting beyond this is left to the walker (CPython allows 20 nested loop blocks)."""

Compiled = Callable[
    [bytes, int, int, dict[str, Any], list[tuple[str, int]], frozenset[str], RecordsHook | None, Elements],
    int,
]
"""(buf, start, end, out, errors, secrets, hook, elements) -> end position; fills `out` and `errors`,
counts kept and dropped array elements in `elements` (the body's budget)."""

_I16 = struct.Struct(">h").unpack_from
_I32 = struct.Struct(">i").unpack_from


def _uvar(buf: bytes, pos: int, end: int, what: str, max_bytes: int = 5) -> tuple[int, int]:
    """`Cursor.uvarint(what, 5)` on (buf, pos, end): (value, next position), same errors."""
    value = shift = 0
    start = pos
    for _ in range(max_bytes):
        if pos >= end:
            raise Short(what, start, pos - start + 1, end - start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
    raise Short(f"{what} (longer than {max_bytes} bytes)", start, max_bytes + 1, end - start)


def _where(path: tuple[tuple[Any, Any], ...], name: str) -> str:
    """`BodyDecoder._where` from a static path with run-time indices."""
    s = "".join(f".{n}" if i is None else f".{n}[{i}]" for n, i in path)
    return (s + "." + name).lstrip(".")


def _tagged(
    buf: bytes,
    pos: int,
    end: int,
    tags: dict[int, Op],
    out: dict[str, Any],
    stack: list[dict[str, Any]],
    errors: list[tuple[str, int]],
    secrets: frozenset[str],
    hook: RecordsHook | None,
    path: tuple[tuple[Any, Any], ...],
    el: Elements,
) -> int:
    """A non-empty (or cut) tagged-field section: the walker reads it with the same state."""
    cur = Cursor(buf, pos, end)
    dec = BodyDecoder(cur, hook, secrets, el)
    dec.errors = errors
    dec._path = [[n, i] for n, i in path]
    dec.tagged(tags, out, stack)
    return cur.pos


def _rest(
    buf: bytes,
    pos: int,
    end: int,
    op: Op,
    i: int,
    n: int,
    stack: list[dict[str, Any]],
    errors: list[tuple[str, int]],
    secrets: frozenset[str],
    path: tuple[tuple[Any, Any], ...],
    el: Elements,
) -> int:
    """Elements i..n-1 of array `op` past the body's budget: the walker reads them, keeping none
    (`BodyDecoder.rest_structs` / `rest_values`); `path` ends with the array's own entry for an
    array of structs (as the walker's `_path` then)."""
    cur = Cursor(buf, pos, end)
    dec = BodyDecoder(cur, None, secrets, el)
    dec.errors = errors
    dec._path = [[n_, i_] for n_, i_ in path]
    elem = op.elem
    assert elem is not None
    if elem.code == STRUCT:
        assert elem.struct is not None
        dec.rest_structs(elem.struct, stack, dec._path[-1], i, n)
    else:
        dec.rest_values(elem, stack, op.name, i, n)
    return cur.pos


class _Gen:
    """Writes the source of one body function; constants are passed in as globals."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.consts: dict[str, Any] = {}
        self.n = 0
        self.ok = True

    def var(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, obj: Any, prefix: str) -> str:
        name = f"_{prefix}{len(self.consts)}"
        self.consts[name] = obj
        return name

    def emit(self, ind: int, line: str) -> None:
        self.lines.append("    " * ind + line)

    def short(self, ind: int, what: str, size: str) -> None:
        self.emit(ind, f"if pos + {size} > end:")
        self.emit(ind + 1, f"raise Short({what!r}, pos, {size}, end - pos)")

    # -- lengths ---------------------------------------------------------------------------
    def length(self, ind: int, var: str, compact: bool, wide: bool, what: str) -> None:
        """`BodyDecoder._length`: -1 = null; a length below -1 is `Bad`."""
        bad = f"raise Bad(f{what + ': length '!r}f'{{{var}}}', pos)"
        if compact:
            self.emit(ind, "if pos < end and buf[pos] < 128:")
            self.emit(ind + 1, f"{var} = buf[pos] - 1")
            self.emit(ind + 1, "pos += 1")
            self.emit(ind, "else:")
            self.emit(ind + 1, f"{var}, pos = _uvar(buf, pos, end, {what!r})")
            self.emit(ind + 1, f"{var} -= 1")
            self.emit(ind + 1, f"if {var} < -1:")
            self.emit(ind + 2, bad)
            return
        size = 4 if wide else 2
        self.short(ind, what, str(size))
        self.emit(ind, f"({var},) = {'_I32' if wide else '_I16'}(buf, pos)")
        self.emit(ind, f"pos += {size}")
        self.emit(ind, f"if {var} < -1:")
        self.emit(ind + 1, bad)

    # -- structs ---------------------------------------------------------------------------
    def struct(
        self, ind: int, plan: Plan, d: str, dicts: list[str], path: list[tuple[str, str]], loops: int
    ) -> None:
        """Fill dict `d` (already created and attached where the walker attaches it)."""
        if len(dicts) - 1 > MAX_DEPTH or loops > MAX_LOOPS:
            self.ok = False
            return
        for op in plan.ops:
            if op.code == FIXED_RUN:
                vs = [self.var("v") for _ in op.names]
                self.short(ind, op.names[0], str(op.size))
                fmt = self.const(op.fmt.unpack_from, "U")  # type: ignore[union-attr]
                self.emit(ind, f"{', '.join(vs)}, = {fmt}(buf, pos)")
                self.emit(ind, f"pos += {op.size}")
                for name, v in zip(op.names, vs, strict=True):
                    self.emit(ind, f"{d}[{name!r}] = {v}")
                for i in op.errors:
                    self.error(ind, vs[i], op.names[i], path)
            else:
                v = self.var("v")
                self.value(ind, op, v, d, dicts, path, loops)
                self.emit(ind, f"{d}[{op.name!r}] = {v}")
        if plan.flexible:
            tags = self.const(plan.tags, "T")
            self.emit(ind, "if pos < end and buf[pos] == 0:")
            self.emit(ind + 1, "pos += 1")
            self.emit(ind, "else:")
            self.emit(
                ind + 1,
                f"pos = _tagged(buf, pos, end, {tags}, {d}, [{', '.join(dicts)}], errors, secrets, hook, "
                f"{self.path(path)}, el)",
            )

    def path(self, path: list[tuple[str, str]]) -> str:
        items = "".join(f"({n!r}, {i}), " for n, i in path)
        return f"({items})"

    def error(self, ind: int, v: str, name: str, path: list[tuple[str, str]]) -> None:
        self.emit(ind, f"if {v}:")
        self.emit(ind + 1, f"errors.append((_where({self.path(path)}, {name!r}), {v}))")

    # -- values ----------------------------------------------------------------------------
    def value(
        self, ind: int, op: Op, v: str, d: str, dicts: list[str], path: list[tuple[str, str]], loops: int
    ) -> None:
        """Code that leaves the value of `op` in local `v` (d: the struct being filled)."""
        code = op.code
        name = op.name
        if code == FIXED:
            self.short(ind, name or "value", str(op.size))
            fmt = self.const(op.fmt.unpack_from, "U")  # type: ignore[union-attr]
            self.emit(ind, f"({v},) = {fmt}(buf, pos)")
            self.emit(ind, f"pos += {op.size}")
            if name is not None and name.endswith("error_code"):
                self.error(ind, v, name, path)
        elif code == STRING:
            what = name or "string"
            self.length(ind, v, op.compact, False, what)
            self.emit(ind, f"if {v} < 0:")
            if not op.nullable:
                self.emit(ind + 1, f"raise Bad({f'{name}: null in a non-nullable string'!r}, pos)")
            else:
                self.emit(ind + 1, f"{v} = None")
            self.emit(ind, "else:")
            self.short(ind + 1, what, v)
            self.emit(ind + 1, f"pos += {v}")
            self.emit(ind + 1, f"{v} = buf[pos - {v} : pos].decode('utf-8', 'replace')")
        elif code == ARRAY:
            self.array(ind, op, v, d, dicts, path, loops)
        elif code == STRUCT:
            sub = op.struct
            assert sub is not None
            inner = ind
            if op.nullable:
                self.short(ind, name or "struct", "1")
                self.emit(ind, "pos += 1")
                self.emit(ind, "if buf[pos - 1] >= 128:")
                self.emit(ind + 1, f"{v} = None")
                self.emit(ind, "else:")
                inner = ind + 1
            self.emit(inner, f"{v} = {{}}")
            self.struct(inner, sub, v, [*dicts, v], [*path, (name, "None")], loops)  # type: ignore[list-item]
        elif code == BOOL:
            self.short(ind, name or "bool", "1")
            self.emit(ind, f"{v} = buf[pos] != 0")
            self.emit(ind, "pos += 1")
        elif code == UUID:
            self.short(ind, name or "uuid", "16")
            self.emit(ind, f"{v} = str(_UUID(bytes=buf[pos : pos + 16]))")
            self.emit(ind, "pos += 16")
        elif code == BYTES:
            what = name or "bytes"
            self.length(ind, v, op.compact, True, what)
            self.emit(ind, f"if {v} < 0:")
            self.emit(ind + 1, f"{v} = None")
            self.emit(ind, "else:")
            self.short(ind + 1, what, v)
            if name is not None:
                self.emit(ind + 1, f"if {name!r} in secrets:")
                self.emit(ind + 2, f"pos += {v}")
                self.emit(ind + 2, f"{v} = f'<{{{v}}} bytes masked>'")
                self.emit(ind + 1, "else:")
                self.emit(ind + 2, f"pos += {v}")
                self.emit(ind + 2, f"{v} = buf[pos - {v} : pos]")
            else:
                self.emit(ind + 1, f"pos += {v}")
                self.emit(ind + 1, f"{v} = buf[pos - {v} : pos]")
        elif code == RECORDS:
            what = name or "records"
            self.length(ind, v, op.compact, True, what)
            self.emit(ind, f"if {v} < 0:")
            self.emit(ind + 1, f"{v} = None")
            self.emit(ind, "else:")
            self.short(ind + 1, what, v)
            self.emit(ind + 1, "if hook is None:")
            self.emit(ind + 2, f"pos += {v}")
            self.emit(ind + 2, f"{v} = {{'size': {v}}}")
            self.emit(ind + 1, "else:")
            self.emit(ind + 2, f"pos += {v}")
            self.emit(ind + 2, f"{v} = hook(buf[pos - {v} : pos], pos - {v}, [{', '.join(dicts)}])")
        else:
            self.ok = False

    def array(
        self, ind: int, op: Op, v: str, d: str, dicts: list[str], path: list[tuple[str, str]], loops: int
    ) -> None:
        elem = op.elem
        assert elem is not None
        self.length(ind, v, op.compact, True, op.name or "array")
        self.emit(ind, f"if {v} < 0:")
        self.emit(ind + 1, f"{v} = None")
        self.emit(ind, "else:")
        ind += 1
        self.emit(ind, f"if {v} * {elem.min_size} > end - pos:")
        msg = f"{op.name}: "
        self.emit(ind + 1, f"raise Bad(f{msg!r}f'{{{v}}} elements cannot fit in {{end - pos}} bytes', pos)")
        items = self.var("l")
        i = self.var("i")
        self.emit(ind, f"{items} = []")
        if elem.code == STRUCT:
            sub = elem.struct
            assert sub is not None
            if op.name:
                self.emit(ind, f"{d}[{op.name!r}] = {items}")  # visible in the partial decode
            e = self.var("d")
            self.emit(ind, f"for {i} in range({v}):")
            self.rest(ind + 1, op, i, v, dicts, [*path, (op.name, i)])  # type: ignore[list-item]
            self.emit(ind + 1, f"{e} = {{}}")
            self.emit(ind + 1, f"{items}.append({e})")
            self.struct(ind + 1, sub, e, [*dicts, e], [*path, (op.name, i)], loops + 1)  # type: ignore[list-item]
        else:
            e = self.var("e")
            self.emit(ind, f"for {i} in range({v}):")
            self.rest(ind + 1, op, i, v, dicts, path)
            self.value(ind + 1, elem, e, d, dicts, path, loops + 1)
            self.emit(ind + 1, f"{items}.append({e})")
        self.emit(ind, f"{v} = {items}")

    def rest(self, ind: int, op: Op, i: str, n: str, dicts: list[str], path: list[tuple[str, str]]) -> None:
        """At the top of an array's loop: past the body's budget (`body.Elements`) the walker
        reads elements i..n-1 without keeping them and the loop ends; else one more is kept."""
        arr = self.const(op, "A")
        self.emit(ind, "if not el.left:")
        self.emit(
            ind + 1,
            f"pos = _rest(buf, pos, end, {arr}, {i}, {n}, [{', '.join(dicts)}], errors, secrets, "
            f"{self.path(path)}, el)",
        )
        self.emit(ind + 1, "break")
        self.emit(ind, "el.left -= 1")


COMPILE_AFTER = 16
"""Uses of a plan before it is compiled: generating and compiling costs ~3 ms, a waste for the
layouts only tried once (guessing the API of a response whose request was not captured)."""

_CACHE: dict[int, list[Any]] = {}
"""id(plan) -> [plan (kept alive so its id is not reused), compiled function or None, uses]."""


def source(plan: Plan) -> tuple[str, dict[str, Any]] | None:
    """The source of the compiled function for `plan` and its constants (None: leave it to the walker)."""
    g = _Gen()
    g.emit(0, "def decode(buf, pos, end, d0, errors, secrets, hook, el):")
    g.struct(1, plan, "d0", ["d0"], [], 0)
    g.emit(1, "return pos")
    if not g.ok:
        return None
    return "\n".join(g.lines) + "\n", g.consts


def compiled(plan: Plan) -> Compiled | None:
    """The compiled decoder of `plan` once it has been used `COMPILE_AFTER` times, else None (walk it)."""
    hit = _CACHE.get(id(plan))
    if hit is None or hit[0] is not plan:
        _CACHE[id(plan)] = [plan, None, 1]
        return None
    fn = hit[1]
    if fn is not None:
        return fn
    hit[2] += 1
    if hit[2] == COMPILE_AFTER:
        hit[1] = fn = build(plan)
    return fn


def build(plan: Plan) -> Compiled | None:
    """Generate and compile the decoder of `plan` (None when the walker must do it)."""
    made = source(plan)
    if made is None:
        return None
    src, consts = made
    ns: dict[str, Any] = {
        "Short": Short,
        "Bad": Bad,
        "_uvar": _uvar,
        "_where": _where,
        "_tagged": _tagged,
        "_rest": _rest,
        "_I16": _I16,
        "_I32": _I32,
        "_UUID": uuid.UUID,
        **consts,
    }
    exec(compile(src, f"<kafka plan {id(plan):x}>", "exec"), ns)  # noqa: S102  (our own generated code)
    return ns["decode"]
