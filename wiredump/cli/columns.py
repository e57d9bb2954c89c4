"""`-T fields -e FIELD … -E OPTION=VALUE`: one line of chosen values per frame, as tshark's.

`-e` takes a frame column (`type`, `latency_us`, `stream`… as in filters) or any
declared field (`frame.number`, `kafka.topic`, `pulsar.producer_name`; `wiredump
fields` lists them). `-E` takes tshark's options:

    header=y|n        a first line with the field names (default n)
    separator=/t|/s|C the separator between fields (default tab)
    occurrence=f|l|a  first, last or all values of a repeated field (default a)
    aggregator=,|/s|C the separator between the values of one field (default ,)
    quote=d|s|n       quote each value with " or ' or not at all (default n)

Values print as tshark prints them: numbers as digits, booleans as 1/0, times in
seconds with 9 decimals, bytes as hex. Strings from the wire are escaped (`cli.escape`)
so that no control character reaches the terminal or breaks the line (`\\t`, `\\n`,
ESC as `\\x1b`…).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wiredump.cli.escape import escape
from wiredump.dissect.fields import TIME_FIELDS, FieldContext, closest, registry
from wiredump.dissect.filter import COLUMNS
from wiredump.dissect.model import Frame

_NAMED_SEPARATORS = {"/t": "\t", "/s": " ", "/n": "\n"}


class ColumnsError(ValueError):
    """A bad -e or -E; the CLI prints it and exits 2."""


@dataclass
class FieldOptions:
    header: bool = False
    separator: str = "\t"
    occurrence: str = "a"
    aggregator: str = ","
    quote: str = ""


def parse_options(items: list[str] | None) -> FieldOptions:
    """-E items (repeatable, each `key=value`, or several joined with commas: header=y,separator=,)."""
    opts = FieldOptions()
    for item in items or []:
        for part in _split_options(item):
            key, sep, value = part.partition("=")
            key = key.strip().lower()
            if not sep:
                raise ColumnsError(f"-E takes KEY=VALUE (header=y, separator=/t…), not {part!r}")
            if key == "header":
                if value not in ("y", "n"):
                    raise ColumnsError(f"-E header takes y or n, not {value!r}")
                opts.header = value == "y"
            elif key == "separator":
                opts.separator = _NAMED_SEPARATORS.get(value, value)
                if not opts.separator:
                    raise ColumnsError("-E separator needs a character (or /t, /s)")
            elif key == "aggregator":
                opts.aggregator = _NAMED_SEPARATORS.get(value, value)
                if not opts.aggregator:
                    raise ColumnsError("-E aggregator needs a character (or /s)")
            elif key == "occurrence":
                if value not in ("f", "l", "a"):
                    raise ColumnsError(f"-E occurrence takes f, l or a, not {value!r}")
                opts.occurrence = value
            elif key == "quote":
                if value not in ("d", "s", "n"):
                    raise ColumnsError(f"-E quote takes d, s or n, not {value!r}")
                opts.quote = {"d": '"', "s": "'", "n": ""}[value]
            else:
                raise ColumnsError(
                    f"unknown -E option {key!r} (header, separator, occurrence, aggregator, quote)"
                )
    return opts


def _split_options(item: str) -> list[str]:
    """`header=y,separator=,` → ['header=y', 'separator=,']: a comma right after '=' is a value."""
    parts: list[str] = []
    cur = ""
    i = 0
    while i < len(item):
        c = item[i]
        if c == "," and cur and not cur.endswith("="):
            parts.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    if cur:
        parts.append(cur)
    return parts


def _format(value: Any, seconds: bool) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, float):
        return f"{value:.9f}" if seconds else repr(value)
    if isinstance(value, int):
        return str(value)
    return escape(str(value))


class FieldColumns:
    """The compiled -e list: `row(frame, capture)` is the line for a frame."""

    def __init__(self, names: list[str], opts: FieldOptions, ctx: FieldContext) -> None:
        if not names:
            raise ColumnsError("-T fields needs at least one -e FIELD (e.g. -e frame.number -e kafka.topic)")
        self.names = names
        self.opts = opts
        self.ctx = ctx
        self.getters: list[tuple[Callable[[Frame, str], list[Any]], bool]] = []
        self.needs_messages = False
        for name in names:
            self.getters.append(self._getter(name, ctx))

    def _getter(self, name: str, ctx: FieldContext) -> tuple[Callable[[Frame, str], list[Any]], bool]:
        col = COLUMNS.get(name)
        if col is not None:
            if name in ("topic", "messages"):
                self.needs_messages = True
            get = col.get
            if col.multi:
                return (lambda f, c, get=get: list(get(f, c))), False
            return (lambda f, c, get=get: [] if (v := get(f, c)) is None else [v]), False
        decl = registry().get(name)
        if decl is None:
            near = closest(name) if "." in name else None
            hint = f"; did you mean {near!r}?" if near else " (wiredump fields lists them)"
            raise ColumnsError(f"-e: unknown field {name!r}{hint}")
        if decl.message is not None:
            self.needs_messages = True
        ext = ctx.extractor(decl)
        return (lambda f, c, ext=ext: ext(f)), decl.name in TIME_FIELDS

    def header(self) -> str:
        return self.opts.separator.join(self.names)

    def row(self, f: Frame, capture: str) -> str:
        o = self.opts
        cells = []
        for get, seconds in self.getters:
            values = get(f, capture)
            if values and o.occurrence == "f":
                values = values[:1]
            elif values and o.occurrence == "l":
                values = values[-1:]
            text = o.aggregator.join(_format(v, seconds) for v in values)
            cells.append(f"{o.quote}{text}{o.quote}" if o.quote and text else text)  # tshark leaves "" out
        return o.separator.join(cells)
