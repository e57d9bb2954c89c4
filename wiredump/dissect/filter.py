"""The display-filter language of `-Y/--filter`: a tokenizer, a recursive-descent parser
and a tiny interpreter over frames — never `eval`.

A filter names the columns of the frames table (plus a few conveniences such as
`topic`) and compares them with literals, in the spirit of Wireshark's filters:

    protocol == "kafka" && type == "Produce" && latency_us > 10000
    status != "ok"
    topic ~ "orders"                     # regular-expression search
    error                                # present, non-null and non-zero
    type in {Produce Fetch} or kind == event
    !(stream in {1..3}) and latency_us >= 2ms

Semantics, chosen to match Wireshark's: a comparison with a column that has no
value (null) is false, whichever the operator (so `error_code != 0` keeps only frames
that carry an error code other than 0); a multi-valued column (`topic`, `anomaly`)
matches when any of its values does, except `!=`, which (as in Wireshark 3.6+) is
`!(… == …)` on a frame that has the field: none of its values is equal. A bare word
on the right of an operator is a string (`type == Produce`). Numbers may carry a time
unit (`us`, `ms`, `s`) that turns them into microseconds.

Beyond the columns, a filter may name any declared field (`wiredump fields` lists
them): `frame.*`/`tcp.stream` by tshark's names and each protocol's own fields, e.g.
`kafka.topic == "orders" && kafka.partition == 3`, `pulsar.producer_name`,
`kafka.error == NOT_LEADER_OR_FOLLOWER`, `frame.time_relative > 1.5`. A field with
several values in a frame matches when any value does (tshark's semantics); a bare
field is true when the frame has it. `matches` (or `~`) runs a linear-time regular
expression engine (`saferegex`): no pattern can hang the run.

Compiling checks everything it can (unknown columns, a string compared with a number
column, a bad regular expression) and raises `FilterError` with the position of the
mistake; `FilterError.render()` draws the filter with a caret under it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from wiredump.dissect import fielddecl
from wiredump.dissect.fields import TIME_FIELDS, FieldContext, closest, registry
from wiredump.dissect.model import Frame
from wiredump.dissect.saferegex import SafeRegex, UnsupportedPattern

MAX_DEPTH = 64
"""Nesting bound for parentheses and `not`, so a hostile filter cannot exhaust the stack."""


class FilterError(ValueError):
    """A mistake in a filter, with the 0-based character position where it was found."""

    def __init__(self, message: str, text: str, pos: int) -> None:
        super().__init__(message)
        self.message = message
        self.text = text
        self.pos = max(0, min(pos, len(text)))

    def render(self) -> str:
        """Three lines: the message with the column, the filter, a caret under the mistake."""
        return f"bad filter: {self.message} (column {self.pos + 1})\n  {self.text}\n  {' ' * self.pos}^"


# -- columns -------------------------------------------------------------------------------------
INT, FLOAT, STR = "int", "float", "str"
BOOL, BYTES, NONE = fielddecl.BOOL, fielddecl.BYTES, fielddecl.NONE

Getter = Callable[[Frame, str], Any]


def _attr(name: str) -> Getter:
    def get(f: Frame, capture: str) -> Any:
        return getattr(f, name)

    return get


_TOPIC_KEYS = frozenset({"topic", "topic_name", "topicname", "segment", "segment_name"})
_TOPIC_LISTS = frozenset({"topics", "topic_names", "responses", "partitions", "topic_data"})


def _walk_topics(value: Any, out: set[str], depth: int, in_topics: bool) -> None:
    if depth > 12:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            key = str(k).lower()
            if key in _TOPIC_KEYS and isinstance(v, str):
                out.add(v)
            elif key == "name" and in_topics and isinstance(v, str):
                out.add(v)
            elif isinstance(v, (dict, list)):
                _walk_topics(v, out, depth + 1, key in _TOPIC_LISTS)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, str) and in_topics:
                out.add(item)
            elif isinstance(item, (dict, list)):
                _walk_topics(item, out, depth + 1, in_topics)


def frame_topics(f: Frame) -> list[str]:
    """Every topic a frame names: those of its messages and those in its decoded fields."""
    out: set[str] = {m.topic for m in f.messages if m.topic}
    _walk_topics(f.fields, out, 0, False)
    return sorted(out)


def _detail(f: Frame, capture: str) -> str:
    from wiredump.dissect.tables import to_json

    return to_json(f.fields)


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    get: Getter
    multi: bool = False
    help: str = ""
    value_names: dict[str, int] | None = None
    """Declared fields only: names a literal may use for a number (upper-cased name → value)."""
    seconds: bool = False
    """A time in seconds: a literal with a unit (2ms) is converted to seconds."""
    messages: bool = False
    """Reading it needs per-message decoding."""


def declared_column(name: str, ctx: FieldContext) -> Column | None:
    """A column for a declared field (`kafka.topic`), its extractor compiled in `ctx`; None if unknown."""
    decl = registry().get(name)
    if decl is None:
        return None
    get = ctx.extractor(decl)
    if decl.type == BYTES:
        raw = get

        def get(f: Frame) -> list[Any]:  # bytes compare as text (UTF-8, undecodable bytes kept as escapes)
            return [v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else v for v in raw(f)]

    names = {v.upper(): k for k, v in decl.value_names.items()} if decl.value_names else None
    return Column(
        decl.name,
        decl.type,
        lambda f, c, get=get: get(f),
        multi=True,
        help=decl.description,
        value_names=names,
        seconds=decl.name in TIME_FIELDS,
        messages=decl.message is not None,
    )


def _columns() -> dict[str, Column]:
    ints = [
        "packet",
        "first_packet",
        "stream",
        "src_port",
        "dst_port",
        "type_code",
        "version",
        "correlation_id",
        "length",
        "error_code",
        "peer_packet",
        "latency_us",
    ]
    strs = ["src", "dst", "protocol", "role", "kind", "type", "status", "error", "summary"]
    cols = {n: Column(n, INT, _attr(n)) for n in ints}
    cols.update({n: Column(n, STR, _attr(n)) for n in strs})
    cols["ts"] = Column("ts", INT, _attr("ts_us"), help="microseconds since the epoch")
    cols["capture"] = Column("capture", STR, lambda f, c: c)
    cols["detail"] = Column("detail", STR, _detail, help="JSON of every decoded field")
    cols["topic"] = Column("topic", STR, lambda f, c: frame_topics(f), multi=True)
    cols["messages"] = Column("messages", INT, lambda f, c: len(f.messages), help="messages carried")
    cols["anomaly"] = Column("anomaly", STR, lambda f, c: [a.kind for a in f.anomalies], multi=True)
    cols["latency_ms"] = Column(
        "latency_ms", FLOAT, lambda f, c: None if f.latency_us is None else f.latency_us / 1000
    )
    return cols


COLUMNS: dict[str, Column] = _columns()
"""Every name a filter may use."""


# -- tokens ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # op, lparen, rparen, lbrace, rbrace, comma, range, string, number, word, end
    text: str
    pos: int
    value: Any = None


_OPS = ("==", "!=", "<=", ">=", "&&", "||", "<", ">", "~", "!", "=")
_WORD_OPS = {
    "and": "&&",
    "or": "||",
    "not": "!",
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
    "matches": "~",
    "contains": "contains",
    "in": "in",
}
_UNITS = {"us": 1, "µs": 1, "ms": 1000, "s": 1_000_000}
_NUMBER = re.compile(r"(0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(us|µs|ms|s)?(?![\w:/]|\.(?!\.))")
_WORD = re.compile(r"[A-Za-z0-9_.:/*@\-µ]+")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}


def tokenize(text: str) -> list[Token]:
    """Split a filter into tokens; raise FilterError at the first character that fits none."""
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c in "\"'":
            j = i + 1
            buf: list[str] = []
            while j < n and text[j] != c:
                if text[j] == "\\":
                    if j + 1 >= n:
                        break
                    buf.append(_ESCAPES.get(text[j + 1], "\\" + text[j + 1]))
                    j += 2
                    continue
                buf.append(text[j])
                j += 1
            if j >= n:
                raise FilterError("string not closed (missing quote)", text, i)
            out.append(Token("string", text[i : j + 1], i, "".join(buf)))
            i = j + 1
            continue
        if text.startswith("..", i):
            out.append(Token("range", "..", i))
            i += 2
            continue
        single = {"(": "lparen", ")": "rparen", "{": "lbrace", "}": "rbrace", ",": "comma"}
        if c in single:
            out.append(Token(single[c], c, i))
            i += 1
            continue
        for op in _OPS:
            if text.startswith(op, i):
                out.append(Token("op", "==" if op == "=" else op, i))
                i += len(op)
                break
        else:
            m = _NUMBER.match(text, i)
            if m and (c.isdigit()):
                num_text, unit = m.group(1), m.group(2)
                value: float | int
                if num_text.lower().startswith("0x"):
                    value = int(num_text, 16)
                elif "." in num_text or "e" in num_text.lower():
                    value = float(num_text)
                else:
                    value = int(num_text)
                if unit:
                    value = value * _UNITS[unit]
                    if isinstance(value, float) and value.is_integer():
                        value = int(value)
                out.append(Token("number", m.group(0), i, value))
                i = m.end()
                continue
            m = _WORD.match(text, i)
            if m:
                word = m.group(0)
                # `a..b` inside a set: stop a word at the range operator.
                if ".." in word:
                    word = word[: word.index("..")]
                lower = word.lower()
                if lower in _WORD_OPS:
                    kind = "op"
                    out.append(Token(kind, _WORD_OPS[lower], i))
                elif word.startswith("-") and _NUMBER.fullmatch(word[1:]):
                    sub = tokenize(word[1:])[0]
                    out.append(Token("number", word, i, -sub.value))
                else:
                    out.append(Token("word", word, i, word))
                i += len(word)
                continue
            raise FilterError(f"unexpected character {c!r}", text, i)
    out.append(Token("end", "", n))
    return out


# -- AST -------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Field:
    column: Column
    pos: int


@dataclass(frozen=True, slots=True)
class Literal:
    value: Any  # int, float or str
    text: str
    pos: int


@dataclass(frozen=True, slots=True)
class Range:
    low: Literal
    high: Literal


@dataclass(frozen=True, slots=True)
class Compare:
    field: Field
    op: str  # == != < <= > >= ~ contains in
    values: tuple[Literal | Range, ...]


@dataclass(frozen=True, slots=True)
class Present:
    field: Field


@dataclass(frozen=True, slots=True)
class Not:
    operand: Node


@dataclass(frozen=True, slots=True)
class BoolOp:
    op: str  # && ||
    operands: tuple[Node, ...]


Node = Compare | Present | Not | BoolOp


class _Parser:
    def __init__(self, text: str, ctx: FieldContext | None = None) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.depth = 0
        self.ctx = ctx if ctx is not None else FieldContext()
        self.used: list[Column] = []

    def peek(self) -> Token:
        return self.tokens[self.i]

    def next(self) -> Token:
        t = self.tokens[self.i]
        if t.kind != "end":
            self.i += 1
        return t

    def error(self, message: str, tok: Token | None = None) -> FilterError:
        tok = tok or self.peek()
        return FilterError(message, self.text, tok.pos)

    def describe(self, tok: Token) -> str:
        return "the end of the filter" if tok.kind == "end" else repr(tok.text)

    def parse(self) -> Node:
        if self.peek().kind == "end":
            raise self.error("empty filter")
        node = self.parse_or()
        tok = self.peek()
        if tok.kind != "end":
            if tok.kind == "rparen":
                raise self.error("unbalanced ')'", tok)
            raise self.error(f"expected '&&', '||' or the end of the filter, found {self.describe(tok)}", tok)
        return node

    def parse_or(self) -> Node:
        parts = [self.parse_and()]
        while self.peek().kind == "op" and self.peek().text == "||":
            self.next()
            parts.append(self.parse_and())
        return parts[0] if len(parts) == 1 else BoolOp("||", tuple(parts))

    def parse_and(self) -> Node:
        parts = [self.parse_not()]
        while self.peek().kind == "op" and self.peek().text == "&&":
            self.next()
            parts.append(self.parse_not())
        return parts[0] if len(parts) == 1 else BoolOp("&&", tuple(parts))

    def parse_not(self) -> Node:
        tok = self.peek()
        if tok.kind == "op" and tok.text == "!":
            self.next()
            self.enter(tok)
            try:
                return Not(self.parse_not())
            finally:
                self.depth -= 1
        return self.parse_primary()

    def enter(self, tok: Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"nested more than {MAX_DEPTH} deep", tok)

    def parse_primary(self) -> Node:
        tok = self.next()
        if tok.kind == "lparen":
            self.enter(tok)
            node = self.parse_or()
            self.depth -= 1
            close = self.next()
            if close.kind != "rparen":
                raise self.error(f"expected ')' to close the '(' at column {tok.pos + 1}", close)
            return node
        if tok.kind == "word":
            return self.parse_comparison(self.field(tok))
        if tok.kind == "end":
            raise self.error("expected a column name, found the end of the filter", tok)
        raise self.error(f"expected a column name, found {self.describe(tok)}", tok)

    def field(self, tok: Token) -> Field:
        col = COLUMNS.get(tok.text) or COLUMNS.get(tok.text.lower()) or declared_column(tok.text, self.ctx)
        if col is None:
            if "." in tok.text:
                near = closest(tok.text)
                hint = f"; did you mean {near!r}?" if near else " (wiredump fields lists them)"
                raise self.error(f"unknown field {tok.text!r}{hint}", tok)
            close = difflib.get_close_matches(tok.text.lower(), list(COLUMNS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(sorted(COLUMNS))})"
            raise self.error(f"unknown column {tok.text!r}{hint}", tok)
        self.used.append(col)
        return Field(col, tok.pos)

    def parse_comparison(self, fld: Field) -> Node:
        tok = self.peek()
        if tok.kind in ("word", "string", "number"):
            raise self.error(
                f"expected an operator (==, !=, <, <=, >, >=, ~, contains, in) after {fld.column.name!r}, "
                f"found {self.describe(tok)}",
                tok,
            )
        if tok.kind != "op" or tok.text in ("&&", "||", "!"):
            return Present(fld)
        self.next()
        op = tok.text
        if fld.column.type == NONE:
            raise self.error(
                f"{fld.column.name} is a structure, not a value: test it alone (-Y {fld.column.name}) "
                "or compare a field inside it",
                tok,
            )
        if op == "in":
            return Compare(fld, "in", self.parse_set(fld))
        value = self.literal(fld, op, tok)
        return Compare(fld, op, (value,))

    def parse_set(self, fld: Field) -> tuple[Literal | Range, ...]:
        open_ = self.next()
        if open_.kind != "lbrace":
            raise self.error("expected '{' after 'in', e.g. type in {Produce, Fetch}", open_)
        items: list[Literal | Range] = []
        while True:
            tok = self.peek()
            if tok.kind == "rbrace":
                self.next()
                break
            if tok.kind == "comma" and items:
                self.next()
                continue
            low = self.literal(fld, "in", open_)
            if self.peek().kind == "range":
                self.next()
                high = self.literal(fld, "in", open_)
                if fld.column.type == STR or isinstance(low.value, str) or isinstance(high.value, str):
                    raise FilterError("a range a..b needs numbers", self.text, low.pos)
                items.append(Range(low, high))
            else:
                items.append(low)
        if not items:
            raise FilterError("empty set", self.text, open_.pos)
        return tuple(items)

    def literal(self, fld: Field, op: str, op_tok: Token) -> Literal:
        tok = self.next()
        if tok.kind not in ("string", "number", "word"):
            raise self.error(f"expected a value after {op_tok.text!r}, found {self.describe(tok)}", tok)
        col = fld.column
        value = tok.value
        if col.type == BOOL and op not in ("~", "contains"):
            word = str(tok.value).lower()
            if word in ("true", "1"):
                value = True
            elif word in ("false", "0"):
                value = False
            else:
                raise self.error(f"{col.name} is true or false (1 or 0), {tok.text} is not", tok)
        elif col.type in (INT, FLOAT) and op not in ("~", "contains"):
            if tok.kind != "number":
                named = col.value_names.get(str(value).upper()) if col.value_names else None
                if named is not None:
                    value = named
                elif col.value_names:
                    near = difflib.get_close_matches(str(value).upper(), list(col.value_names), n=1)
                    hint = f"; did you mean {near[0]}?" if near else ""
                    raise self.error(f"{tok.text} is not a known value of {col.name}{hint}", tok)
                else:
                    raise self.error(f"{col.name} is a number, {tok.text} is not", tok)
            elif col.seconds:
                if tok.text.rstrip("0123456789.eE+-").lower().endswith("s"):
                    value = value / 1_000_000  # the tokenizer turned the unit into microseconds
        elif col.type in (STR, BYTES) and tok.kind == "number":
            value = tok.text  # compare text columns with the number as written
        if op == "~":
            try:
                value = SafeRegex(str(value))
            except re.error as e:
                raise self.error(f"bad regular expression: {e}", tok) from None
            except UnsupportedPattern as e:
                raise self.error(f"regular expression: {e}", tok) from None
        elif op == "contains":
            value = str(value)
        return Literal(value, tok.text, tok.pos)


def parse(text: str, ctx: FieldContext | None = None) -> Node:
    """The AST of a filter, or FilterError."""
    return _Parser(text, ctx).parse()


# -- interpreter -----------------------------------------------------------------------------------
Predicate = Callable[[Frame, str], bool]


def _compare_one(op: str, values: tuple[Literal | Range, ...]) -> Callable[[Any], bool]:
    lit = values[0]
    if op == "in":
        singles = frozenset(v.value for v in values if isinstance(v, Literal))
        ranges = [(r.low.value, r.high.value) for r in values if isinstance(r, Range)]
        if not ranges:
            return singles.__contains__
        return lambda x: x in singles or any(lo <= x <= hi for lo, hi in ranges)
    assert isinstance(lit, Literal)
    v = lit.value
    if op == "~":
        search = v.search
        return lambda x: bool(search(x if isinstance(x, str) else str(x)))
    if op == "contains":
        return lambda x: v in (x if isinstance(x, str) else str(x))
    if op == "==":
        return lambda x: x == v
    if op == "!=":
        return lambda x: x != v
    if op == "<":
        return lambda x: x < v
    if op == "<=":
        return lambda x: x <= v
    if op == ">":
        return lambda x: x > v
    if op == ">=":
        return lambda x: x >= v
    raise AssertionError(op)


def _build(node: Node) -> Predicate:
    if isinstance(node, BoolOp):
        parts = [_build(p) for p in node.operands]
        if node.op == "&&":
            return lambda f, c: all(p(f, c) for p in parts)
        return lambda f, c: any(p(f, c) for p in parts)
    if isinstance(node, Not):
        inner = _build(node.operand)
        return lambda f, c: not inner(f, c)
    if isinstance(node, Present):
        get = node.field.column.get
        return lambda f, c: bool(get(f, c))
    assert isinstance(node, Compare)
    col = node.field.column
    get = col.get
    test = _compare_one(node.op, node.values)

    def safe(x: Any) -> bool:
        try:
            return bool(test(x))
        except TypeError:
            return False

    if col.multi:
        if node.op == "!=":
            # tshark (3.6+): `a != b` is `!(a == b)` on a frame that has the field: no value equals b
            equal = _compare_one("==", node.values)

            def none_equal(f: Frame, c: str) -> bool:
                values = get(f, c)
                return bool(values) and not any(equal(x) for x in values)

            return none_equal
        return lambda f, c: any(safe(x) for x in get(f, c))

    def pred(f: Frame, c: str) -> bool:
        x = get(f, c)
        return x is not None and safe(x)

    return pred


class DisplayFilter:
    """A compiled filter: `matches(frame, capture)` is True for the frames to show.

    `ctx` is the run's field context, shared with `-e` columns; `start_capture` must be
    called when each capture starts for `frame.time_relative` (else the first frame's
    time is the origin).
    """

    def __init__(self, text: str, ctx: FieldContext | None = None) -> None:
        self.text = text
        self.ctx = ctx if ctx is not None else FieldContext()
        parser = _Parser(text, self.ctx)
        self.ast = parser.parse()
        self.needs_messages = any(c.messages or c.name in ("topic", "messages") for c in parser.used)
        """True when the filter reads per-message values: the run must decode messages."""
        self.uses_time = any(c.seconds for c in parser.used)
        """True when the filter reads frame times relative to the capture or the previous frame."""
        self._pred = _build(self.ast)

    def start_capture(self, first_ts_us: int | None) -> None:
        self.ctx.start_capture(first_ts_us)

    def matches(self, frame: Frame, capture: str = "") -> bool:
        self.ctx.observe(frame)
        return self._pred(frame, capture)

    def __repr__(self) -> str:
        return f"DisplayFilter({self.text!r})"


def compile_filter(text: str | None, ctx: FieldContext | None = None) -> DisplayFilter | None:
    """None for no filter, else the compiled filter (FilterError on a mistake)."""
    if text is None:
        return None
    return DisplayFilter(text, ctx)


def column_help() -> Iterator[str]:
    """One line per column, for `--help`."""
    for name in sorted(COLUMNS):
        col = COLUMNS[name]
        extra = f" — {col.help}" if col.help else ""
        yield f"{name} ({col.type}{', any of several' if col.multi else ''}){extra}"
