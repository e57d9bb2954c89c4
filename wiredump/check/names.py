"""`protocol.Type` names with wildcards, as rules write them (`kafka.Produce`, `pulsar.*`).

Matching is case-insensitive (`pulsar.send` finds `SEND`) with shell wildcards (`*`,
`?`, `[..]`). When several patterns of one rule match a frame, the most specific one
decides: an exact name beats a pattern, and among patterns the one with more literal
characters wins (`kafka.Fetch*` before `kafka.*` before `*`), then the first written.

Names are checked when they are read: the protocols are those of the registry, and a type or
error name written without wildcards must be one the protocol declares (`ProtocolSpec.type_names`,
`error_names`), since a misspelt name would match nothing and the rule would hold forever.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from fnmatch import fnmatchcase

from wiredump.check.spec import Loc
from wiredump.dissect.protocols.base import ProtocolSpec

_WILD = set("*?[")


def protocols() -> tuple[str, ...]:
    """The protocols rules may name: those of the protocol registry, in its order."""
    return tuple(_registry())


def _registry() -> dict[str, ProtocolSpec]:
    from wiredump.dissect.protocols import all_protocols

    return all_protocols()


def _specs(protocol: str) -> list[ProtocolSpec]:
    """The protocols a (lower-case, possibly wildcard) protocol part names."""
    return [s for n, s in _registry().items() if fnmatchcase(n, protocol)]


def _closest(word: str, known: dict[str, str]) -> str:
    """`; did you mean X?` for the known name closest to `word` (keys lower-case), or nothing."""
    close = difflib.get_close_matches(word.lower(), list(known), n=1, cutoff=0.6)
    return f"; did you mean {known[close[0]]}?" if close else ""


def error_names(pattern: Pattern) -> dict[str, str]:
    """Lower-case → declared error name, over the protocols the pattern's protocol part names.

    Empty when none of them declares its errors (then names are not checked).
    """
    out: dict[str, str] = {}
    for spec in _specs(pattern.protocol):
        for name in sorted(spec.error_names()):
            out.setdefault(name.lower(), name)
    return out


def check_error_name(loc: Loc, name: str, pattern: Pattern) -> None:
    """Refuse an error name none of the pattern's protocols can report (`allowed_errors`).

    Error names are compared whole (case-insensitive) with the frames' errors, so a name that
    is not declared could never match: a usage error, with the closest declared name.
    """
    known = error_names(pattern)
    if known and name.lower() not in known:
        raise _err(
            loc,
            loc.line,
            f"unknown error name {name!r} for {pattern.text}{_closest(name, known)}",
        )


@dataclass(frozen=True, slots=True)
class Pattern:
    text: str
    protocol: str
    type: str
    line: int
    order: int

    @property
    def specificity(self) -> tuple[int, int, int]:
        literal = sum(1 for c in self.text if c not in _WILD)
        exact = not (_WILD & set(self.text))
        return (int(exact), literal, -self.order)

    def matches(self, protocol: str | None, type_: str | None) -> bool:
        return fnmatchcase((protocol or "").lower(), self.protocol) and fnmatchcase(
            (type_ or "").lower(), self.type
        )


def parse(loc: Loc, key: str, order: int, line: int | None = None) -> Pattern:
    """Validate `key` (a name written in the rules file at `loc`) and compile it."""
    where = line if line is not None else loc.line
    text = key.strip()
    if text == "*":
        return Pattern(text, "*", "*", where, order)
    proto, dot, type_ = text.partition(".")
    if not dot or not proto or not type_:
        raise _err(
            loc, where, f"{key!r} is not a name: write protocol.Type (e.g. kafka.Produce) or protocol.*"
        )
    proto_l = proto.lower()
    known_protocols = protocols()
    if not (_WILD & set(proto_l)) and proto_l not in known_protocols:
        hint = _closest(proto_l, {p: p for p in known_protocols})
        raise _err(
            loc, where, f"unknown protocol {proto!r} in {key!r} (known: {', '.join(known_protocols)}){hint}"
        )
    if not (_WILD & set(type_)):
        _check_type(loc, where, key, proto_l, type_)
    return Pattern(text, proto_l, type_.lower(), where, order)


def _check_type(loc: Loc, line: int, key: str, protocol: str, type_: str) -> None:
    """Refuse a type (no wildcard) that none of the named protocols declares, naming the closest."""
    known: dict[str, str] = {}
    for spec in _specs(protocol):
        for t in sorted(spec.type_names()):
            known.setdefault(t.lower(), f"{spec.name}.{t}")
    if known and type_.lower() not in known:
        what = "no protocol has" if _WILD & set(protocol) else f"{protocol} has no"
        raise _err(loc, line, f"unknown type {type_!r} in {key!r}: {what} such frame{_closest(type_, known)}")


def _err(loc: Loc, line: int, reason: str) -> Exception:
    from wiredump.check.spec import SpecError

    return SpecError(loc.source, line, reason)


def best(patterns: list[Pattern], protocol: str | None, type_: str | None) -> Pattern | None:
    """The most specific pattern matching the name, or None."""
    found = [p for p in patterns if p.matches(protocol, type_)]
    if not found:
        return None
    return max(found, key=lambda p: p.specificity)
