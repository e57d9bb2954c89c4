"""Reading YAML/JSON spec files with the line of every value, and validating their shape.

Rules and baselines are written by hand, so a mistake must point at the line: values
are loaded from yaml's node tree (not `safe_load`), each wrapped in a `Loc` that keeps
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


_MAX_DEPTH = 64


def _to_loc(node: yaml.Node, source: str, constructor: yaml.constructor.SafeConstructor, depth: int) -> Loc:
    line, col = node.start_mark.line + 1, node.start_mark.column + 1
    if depth > _MAX_DEPTH:
        raise SpecError(source, line, f"nesting deeper than {_MAX_DEPTH} levels")
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Loc] = {}
        key_lines: dict[str, int] = {}
        for knode, vnode in node.value:
            kline = knode.start_mark.line + 1
            if not isinstance(knode, yaml.ScalarNode):
                raise SpecError(source, kline, "a key must be a plain name, not a list or mapping")
            if knode.tag == "tag:yaml.org,2002:merge":
                raise SpecError(source, kline, "merge keys (<<) are not supported")
            key = str(constructor.construct_object(knode))
            if key in out:
                raise SpecError(source, kline, f"duplicate key {key!r} (first on line {key_lines[key]})")
            key_lines[key] = kline
            out[key] = _to_loc(vnode, source, constructor, depth + 1)
        return Loc(out, line, col, source, key_lines)
    if isinstance(node, yaml.SequenceNode):
        return Loc([_to_loc(n, source, constructor, depth + 1) for n in node.value], line, col, source)
    try:
        value = constructor.construct_object(node)
    except yaml.YAMLError as e:
        raise SpecError(source, line, f"bad value: {getattr(e, 'problem', None) or e}") from None
    return Loc(value, line, col, source)


def load(text: str, source: str) -> Loc | None:
    """Parse YAML (or JSON) text; None for an empty document. Raises `SpecError`."""
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        reason = " ".join(str(p) for p in (e.context, e.problem) if p) or "not valid YAML"
        raise SpecError(
            source,
            mark.line + 1 if mark else None,
            f"not valid YAML: {reason}",
            mark.column + 1 if mark else None,
        ) from None
    except yaml.YAMLError as e:
        raise SpecError(source, None, f"not valid YAML: {e}") from None
    nodes = [n for n in nodes if n is not None]
    if not nodes:
        return None
    if len(nodes) > 1:
        raise SpecError(source, nodes[1].start_mark.line + 1, "more than one YAML document (---) in the file")
    return _to_loc(nodes[0], source, yaml.constructor.SafeConstructor(), 0)


def read(path: str) -> tuple[Loc | None, str]:
    """Load a spec file from disk; an unreadable file is a `SpecError` without a line."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise SpecError(path, None, f"cannot read: {reason}") from None
    return load(text, path), text


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
