"""Reading YAML/JSON spec files with the line of every value, and validating their shape.

Rules and baselines are written by hand, so a mistake must point at the line: values
are built from yaml's parser events (not `safe_load`), each wrapped in a `Loc` that keeps
its line and column. Duplicate keys, which `safe_load` silently resolves to the last
one, are an error here. JSON is read by the same parser (JSON is valid YAML for these
files), so JSON baselines get line numbers too.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml


class SpecError(Exception):
    """A mistake in a rules or baseline file: where it is and why; exit code 2."""

    def __init__(self, source: str, line: int | None, reason: str, column: int | None = None) -> None:
        self.source = source
        self.line = line
        self.column = column
        self.reason = reason
        where = source if line is None else f"{source}:{line}" + (f":{column}" if column else "")
        super().__init__(f"{where}: {reason}")


@dataclass(slots=True)
class Loc:
    """A value from the file with its 1-based line and column.

    `value` is a plain scalar, a `dict[str, Loc]` or a `list[Loc]`.
    """

    value: Any
    line: int
    column: int
    source: str
    key_lines: dict[str, int] | None = None
    """For a mapping: the line of each key (a value may start on a later line)."""

    def key_line(self, key: str) -> int:
        return (self.key_lines or {}).get(key, self.line)

    def error(self, reason: str) -> SpecError:
        return SpecError(self.source, self.line, reason, self.column)

    def plain(self) -> Any:
        """The value with every `Loc` unwrapped."""
        v = self.value
        if isinstance(v, dict):
            return {k: x.plain() for k, x in v.items()}
        if isinstance(v, list):
            return [x.plain() for x in v]
        return v


MAX_RULES_BYTES = 256 << 10
"""Largest rules file read (256 KiB): hand-written rules are a few hundred bytes."""
MAX_BASELINE_BYTES = 2 << 20
"""Largest baseline file read (2 MiB). Measured: the baseline of all 28 real captures in one file, with
every optional field kept, is 284 KB as YAML and 349 KB as JSON (36,283 values); the baseline of one
capture with the default fields is at most 8 KB (about 1,000 values)."""
MAX_DEPTH = 64
"""Deepest nesting of lists and mappings (a real baseline nests 5 levels)."""
_TOO_DEEP = f"nesting deeper than {MAX_DEPTH} levels"
"""What a file nested past MAX_DEPTH is told, whichever step refused it (the loader's count,
libyaml's own limit, a recursion)."""
MAX_VALUES = 100_000
"""Most values (scalars, lists, mappings) a file may hold, aliases counted expanded: almost three
times the all-captures, all-fields baseline above. The value count, not the byte size, bounds the
cost of loading (about 10 µs and 200 bytes per value), so no file is loaded for more than ~1 s."""
MAX_ALIAS_VALUES = 1_000
"""Most values one alias (`*name`) may stand for, and all aliases of a file together ten times that:
sharing a list of error names is fine, a billion-laughs bomb is refused before anything is expanded."""
_SAFE_TAGS = frozenset(
    "tag:yaml.org,2002:" + t for t in ("str", "int", "float", "bool", "null", "seq", "map", "timestamp")
)
"""The only tags a value may carry: plain YAML data. Anything else (`!!python/object/apply:…`, `!!set`,
local `!tags`) is refused by name; nothing is ever built from a tag."""
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser when PyYAML was built with it (about ten times faster), else the pure-Python one;
both are safe loaders."""


def _short_tag(tag: str) -> str:
    return "!!" + tag[len("tag:yaml.org,2002:") :] if tag.startswith("tag:yaml.org,2002:") else tag


class _Open:
    """A list or mapping being built: its `Loc`, its anchor, how many values it holds (aliases
    counted expanded), and for a mapping the key waiting for its value."""

    __slots__ = ("loc", "anchor", "size", "key", "key_line")

    def __init__(self, loc: Loc, anchor: str | None) -> None:
        self.loc = loc
        self.anchor = anchor
        self.size = 1
        self.key: str | None = None
        self.key_line = 0


def _build(text: str, source: str) -> Loc | None:
    """The document as `Loc` values, built straight from the parser's events in one streaming pass.

    yaml's composer is not used: it recurses once per nesting level and materialises the node
    graph before anything can be checked. Here every limit is checked as the event arrives, so a
    hostile file is refused after reading only the events up to the offence, at its line:
    a tag that is not plain data (`!!python/object/apply:…`: refused by name, nothing is ever
    built from a tag), nesting deeper than MAX_DEPTH, an alias that stands for more than
    MAX_ALIAS_VALUES values (an alias's size is added up from its anchor's size, never by
    expanding it; the alias shares the anchor's `Loc`), an alias to a value that contains it, and
    more than MAX_VALUES values in all. Scalars are resolved by yaml's safe resolver and built by
    the safe constructor's plain-data functions only.
    """
    resolver = yaml.SafeLoader("")
    resolve = resolver.resolve
    constructors = yaml.constructor.SafeConstructor.yaml_constructors
    str_tag, merge_tag = "tag:yaml.org,2002:str", "tag:yaml.org,2002:merge"
    anchors: dict[str, tuple[Loc, int]] = {}
    open_anchors: set[str] = set()
    stack: list[_Open] = []
    root: Loc | None = None
    documents = 0
    total = aliased = 0

    def fail(ev: Any, reason: str) -> SpecError:
        m = ev.start_mark
        return SpecError(source, m.line + 1, reason, m.column + 1)

    def check_tag(ev: Any, tag: str | None) -> None:
        if tag is not None and tag != "!" and tag not in _SAFE_TAGS:
            raise fail(
                ev,
                f"tag {_short_tag(tag)} is not allowed: only plain values (text, numbers, booleans, null, "
                "lists, mappings); nothing is built from tags",
            )

    for ev in yaml.parse(text, Loader=_LOADER):
        cls = type(ev)
        counted = False
        line, col = ev.start_mark.line + 1, ev.start_mark.column + 1
        is_key = bool(stack) and stack[-1].key is None and isinstance(stack[-1].loc.value, dict)
        if cls is yaml.ScalarEvent:
            check_tag(ev, ev.tag)
            tag = ev.tag
            if tag is None or tag == "!":
                tag = resolve(yaml.ScalarNode, ev.value, ev.implicit)
            if tag == str_tag:
                value: Any = ev.value
            elif tag == merge_tag and is_key:
                raise SpecError(source, line, "merge keys (<<) are not supported")
            elif tag in _SAFE_TAGS:
                node = yaml.ScalarNode(tag, ev.value, ev.start_mark, ev.end_mark, ev.style)
                try:
                    value = constructors[tag](yaml.constructor.SafeConstructor(), node)
                except (yaml.YAMLError, ValueError, OverflowError) as e:
                    raise SpecError(source, line, f"bad value: {getattr(e, 'problem', None) or e}") from None
            else:  # an implicit tag of the resolver that is not plain data (`=`)
                raise SpecError(source, line, f"{ev.value!r} is not a plain value ({_short_tag(tag)})")
            loc = Loc(value, line, col, source)
            size = 1
            if ev.anchor is not None:
                anchors[ev.anchor] = (loc, 1)
        elif cls is yaml.MappingStartEvent or cls is yaml.SequenceStartEvent:
            check_tag(ev, ev.tag)
            if is_key:
                raise SpecError(source, line, "a key must be a plain name, not a list or mapping")
            if len(stack) >= MAX_DEPTH:
                raise fail(ev, _TOO_DEEP)
            total += 1
            if total > MAX_VALUES:
                raise fail(ev, f"more than {MAX_VALUES} values in the file (see docs/check.md)")
            if cls is yaml.MappingStartEvent:
                loc = Loc({}, line, col, source, {})
            else:
                loc = Loc([], line, col, source)
            if ev.anchor is not None:
                open_anchors.add(ev.anchor)
            stack.append(_Open(loc, ev.anchor))
            continue
        elif cls is yaml.MappingEndEvent or cls is yaml.SequenceEndEvent:
            done = stack.pop()
            loc, size = done.loc, done.size
            if done.anchor is not None:
                anchors[done.anchor] = (loc, size)
                open_anchors.discard(done.anchor)
            counted = True  # itself at its start, its values as they finished
        elif cls is yaml.AliasEvent:
            name = ev.anchor
            if name in open_anchors:
                raise fail(ev, f"alias *{name} refers to a value that contains it")
            if name not in anchors:
                raise fail(ev, f"alias *{name} names no anchor (&{name}) written before it")
            loc, size = anchors[name]
            if size > MAX_ALIAS_VALUES:
                raise fail(
                    ev,
                    f"alias *{name} stands for {size} values, more than {MAX_ALIAS_VALUES} "
                    "(an alias bomb?): write the values out",
                )
            aliased += size
            if aliased > 10 * MAX_ALIAS_VALUES:
                raise fail(
                    ev,
                    f"aliases stand for more than {10 * MAX_ALIAS_VALUES} values in all "
                    "(an alias bomb?): write the values out",
                )
            if is_key and isinstance(loc.value, (dict, list)):
                raise SpecError(source, line, "a key must be a plain name, not a list or mapping")
        elif cls is yaml.DocumentStartEvent:
            documents += 1
            if documents > 1:
                raise SpecError(source, line, "more than one YAML document (---) in the file")
            continue
        else:
            continue
        # A finished value (scalar, alias or closed collection) of `size` values goes to its parent.
        if not counted:
            total += size
            if total > MAX_VALUES:
                raise fail(ev, f"more than {MAX_VALUES} values in the file (see docs/check.md)")
        if not stack:
            root = loc
            continue
        parent = stack[-1]
        parent.size += size
        container = parent.loc.value
        if isinstance(container, list):
            container.append(loc)
        elif parent.key is None:
            key = str(loc.value)
            if key in container:
                first = parent.loc.key_lines[key]  # type: ignore[index]
                raise SpecError(source, line, f"duplicate key {key!r} (first on line {first})")
            parent.key, parent.key_line = key, line
        else:
            container[parent.key] = loc
            parent.loc.key_lines[parent.key] = parent.key_line  # type: ignore[index]
            parent.key = None
    return root


_NESTING_REFUSED = "exceeded maximum nesting depth"
"""libyaml's own refusal of deep nesting: the libyaml in PyYAML 6.0.4's wheels stops at 1,000
levels in its scanner (measured: 999 nested flow lists pass, 1,000 are refused)."""


def _yaml_error(e: yaml.YAMLError, source: str, text: str) -> SpecError:
    if isinstance(e, yaml.reader.ReaderError):  # a character YAML forbids (NUL, other controls)
        line = text.count("\n", 0, e.position) + 1
        col = e.position - (text.rfind("\n", 0, e.position) + 1) + 1
        code = e.character if isinstance(e.character, int) else ord(e.character)
        return SpecError(source, line, f"not valid YAML: character U+{code:04X} is not allowed", col)
    if isinstance(e, yaml.MarkedYAMLError):
        mark = e.problem_mark or e.context_mark
        reason = " ".join(str(p) for p in (e.context, e.problem) if p) or "not valid YAML"
        if _NESTING_REFUSED in reason:
            # libyaml's scanner refused it before `_build` saw the level past MAX_DEPTH (its
            # scanner reads ahead of the events): the same offence, said the same way.
            reason = _TOO_DEEP
        else:
            reason = f"not valid YAML: {reason}"
        return SpecError(
            source,
            mark.line + 1 if mark else None,
            reason,
            mark.column + 1 if mark else None,
        )
    return SpecError(source, None, f"not valid YAML: {e}")


def load(text: str, source: str) -> Loc | None:
    """Parse YAML (or JSON) text; None for an empty document. Raises `SpecError`."""
    try:
        return _build(text, source)
    except yaml.YAMLError as e:
        raise _yaml_error(e, source, text) from None
    except RecursionError:  # not expected (nothing here recurses per level); never a traceback
        raise SpecError(source, None, _TOO_DEEP) from None


def read(path: str, max_bytes: int) -> tuple[Loc | None, str]:
    """Load a spec file from disk; an unreadable file is a `SpecError` without a line.

    At most `max_bytes` are read: a larger file is refused at the line where it passes the limit,
    without reading the rest (so `/dev/zero` or a million-line file costs a fraction of a second).
    """
    try:
        with open(path, "rb") as fh:
            raw = fh.read(max_bytes + 1)
        if len(raw) > max_bytes:
            line = raw.count(b"\n", 0, max_bytes) + 1
            raise SpecError(
                path,
                line,
                f"the file is larger than {_size(max_bytes)} (the limit for this kind of file, "
                "see docs/check.md): refused without reading further",
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            line = raw.count(b"\n", 0, e.start) + 1
            raise SpecError(path, line, f"not UTF-8 text (byte {raw[e.start]:#04x})") from None
    except OSError as e:
        raise SpecError(path, None, f"cannot read: {e.strerror or e}") from None
    return load(text, path), text


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1 << 10 else f"{n} bytes"


# -- shape checks ---------------------------------------------------------------------------
def type_name(v: Any) -> str:
    if v is None:
        return "nothing (null)"
    if isinstance(v, bool):
        return f"a boolean ({str(v).lower()})"
    if isinstance(v, int):
        return f"a number ({v})"
    if isinstance(v, float):
        return f"a number ({v})"
    if isinstance(v, str):
        return f"text ({v!r})"
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return "a list"
    return type(v).__name__


def mapping(loc: Loc, what: str) -> dict[str, Loc]:
    if not isinstance(loc.value, dict):
        raise loc.error(f"{what} must be a mapping (key: value lines), not {type_name(loc.value)}")
    return loc.value


def sequence(loc: Loc, what: str, allow_scalar: bool = False) -> list[Loc]:
    if isinstance(loc.value, list):
        return loc.value
    if allow_scalar and not isinstance(loc.value, dict) and loc.value is not None:
        return [loc]
    raise loc.error(f"{what} must be a list (e.g. [a, b]), not {type_name(loc.value)}")


def integer(loc: Loc, what: str, minimum: int | None = 0) -> int:
    v = loc.value
    if isinstance(v, bool) or not isinstance(v, int):
        raise loc.error(f"{what} must be a whole number, not {type_name(v)}")
    if minimum is not None and v < minimum:
        raise loc.error(f"{what} must be at least {minimum}, not {v}")
    return v


def number(loc: Loc, what: str) -> float:
    v = loc.value
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise loc.error(f"{what} must be a number, not {type_name(v)}")
    if v < 0 or v != v:
        raise loc.error(f"{what} must be a number of zero or more, not {v}")
    return float(v)


def text(loc: Loc, what: str) -> str:
    if not isinstance(loc.value, str) or not loc.value:
        raise loc.error(f"{what} must be text, not {type_name(loc.value)}")
    return loc.value


def known_keys(parent: Loc, allowed: Iterable[str], what: str) -> None:
    """Reject a key of the mapping `parent` that is not in `allowed`, suggesting the closest one."""
    allowed = list(allowed)
    for key in parent.value:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise SpecError(
                parent.source,
                parent.key_line(key),
                f"unknown key {key!r} in {what} (known: {', '.join(allowed)}){hint}",
            )
