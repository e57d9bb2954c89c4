"""`protocol.Type` names with wildcards, as rules write them (`kafka.Produce`, `pulsar.*`).

Matching is case-insensitive (`pulsar.send` finds `SEND`) with shell wildcards (`*`,
`?`, `[..]`). When several patterns of one rule match a frame, the most specific one
decides: an exact name beats a pattern, and among patterns the one with more literal
characters wins (`kafka.Fetch*` before `kafka.*` before `*`), then the first written.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from wiredump.check.spec import Loc

PROTOCOLS = ("kafka", "pulsar", "pravega", "tank")
_WILD = set("*?[")


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
    if not (_WILD & set(proto_l)) and proto_l not in PROTOCOLS:
        raise _err(loc, where, f"unknown protocol {proto!r} in {key!r} (known: {', '.join(PROTOCOLS)})")
    return Pattern(text, proto_l, type_.lower(), where, order)


def _err(loc: Loc, line: int, reason: str) -> Exception:
    from wiredump.check.spec import SpecError

    return SpecError(loc.source, line, reason)


def best(patterns: list[Pattern], protocol: str | None, type_: str | None) -> Pattern | None:
    """The most specific pattern matching the name, or None."""
    found = [p for p in patterns if p.matches(protocol, type_)]
    if not found:
        return None
    return max(found, key=lambda p: p.specificity)
