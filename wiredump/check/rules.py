"""The rules file of `wiredump check --rules` (see docs/check.md): parsing and validation.

Every key is optional. Each leaf (one forbidden kind, one name under a per-name rule)
becomes one `Rule` with its line in the file, so reports and JUnit test cases can say
exactly which line of the file broke.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wiredump.check import names, spec
from wiredump.check.names import Pattern
from wiredump.check.spec import Loc, SpecError
from wiredump.dissect import anomalies
from wiredump.dissect.model import STATUSES


def known_kinds() -> tuple[str, ...]:
    """The frame statuses and every declared anomaly kind (`wiredump.dissect.anomalies`).

    Used only to catch misspellings (a forbidden kind that is never reported would pass forever).
    """
    return (*STATUSES, *anomalies.declared())


TOP_KEYS = ("forbid", "max_unanswered", "allowed_errors", "latency_ms", "expect", "versions")
KINDS = ("request", "response", "event", "any")
_PCT = re.compile(r"^p(\d{1,2}(?:\.\d+)?|100)$")


@dataclass(slots=True)
class Rule:
    """One checkable statement of the rules file."""

    section: str
    """The top-level key: forbid, max_unanswered, allowed_errors, latency_ms, expect, versions."""
    name: str
    """What it is about: a name pattern (`kafka.*`), or the forbidden kind."""
    line: int
    pattern: Pattern | None = None
    kinds: tuple[str, ...] = ()
    """forbid: the anomaly kinds / statuses (wildcards allowed)."""
    limit: int | None = None
    """max_unanswered."""
    codes: frozenset[int] = frozenset()
    error_names: frozenset[str] = frozenset()
    """allowed_errors: codes and (lower-case) error names allowed."""
    latency: dict[str, float] = field(default_factory=dict)
    """latency_ms: `p99` / `max` → milliseconds."""
    min: int | None = None
    max: int | None = None
    """expect (frame counts) and versions."""
    kind: str | None = None
    """expect: which frames count (None: requests, events, and responses not named like a request)."""

    @property
    def title(self) -> str:
        return f"{self.section} {self.name}"


@dataclass(slots=True)
class Rules:
    source: str
    rules: list[Rule]

    def section(self, name: str) -> list[Rule]:
        return [r for r in self.rules if r.section == name]


def typo_warnings(rules: Rules) -> list[str]:
    """Forbidden kinds that look like a misspelling of a known one (`bad_cheksum`)."""
    import difflib

    out = []
    known = known_kinds()
    for r in rules.section("forbid"):
        kind = r.kinds[0]
        if kind in known or set("*?[") & set(kind):
            continue
        close = difflib.get_close_matches(kind, known, n=1, cutoff=0.75)
        if close:
            out.append(
                f"{rules.source}:{r.line}: warning: {kind!r} is not a status or anomaly kind that wiredump "
                f"reports; did you mean {close[0]!r}? (as written it can never match)"
            )
    return out


def load(path: str) -> Rules:
    """Read and validate a rules file; raises `SpecError` with the line of the mistake."""
    root, _ = spec.read(path, spec.MAX_RULES_BYTES)
    return parse(root, path)


def parse(root: Loc | None, source: str) -> Rules:
    if root is None:
        raise SpecError(source, None, "the rules file is empty (write at least one rule, see docs/check.md)")
    top = spec.mapping(root, "the rules file")
    spec.known_keys(root, TOP_KEYS, "the rules file")
    out: list[Rule] = []
    order = 0
    for key, loc in top.items():
        kline = root.key_line(key)
        if key == "forbid":
            out.extend(_forbid(loc, kline))
        elif key == "max_unanswered":
            if isinstance(loc.value, dict):
                if not loc.value:
                    raise SpecError(
                        source, kline, "max_unanswered is empty: give a number or protocol.Type: number"
                    )
                for i, (name, v) in enumerate(loc.value.items()):
                    p = names.parse(loc, name, order + i, loc.key_line(name))
                    limit = spec.integer(v, f"max_unanswered for {name}")
                    out.append(Rule("max_unanswered", name, p.line, pattern=p, limit=limit))
                order += len(loc.value)
            else:
                limit = spec.integer(loc, "max_unanswered")
                out.append(
                    Rule(
                        "max_unanswered", "*", kline, pattern=names.parse(loc, "*", order, kline), limit=limit
                    )
                )
        else:
            m = spec.mapping(loc, key)
            if not m:
                raise SpecError(source, kline, f"{key} is empty: give at least one protocol.Type name")
            for name, v in m.items():
                p = names.parse(loc, name, order, loc.key_line(name))
                order += 1
                out.append(_PER_NAME[key](name, p, v))
    return Rules(source, out)


def _forbid(loc: Loc, kline: int) -> list[Rule]:
    """`forbid: [kinds]` for everything, or `forbid: {name: [kinds]}` per protocol/type."""
    out: list[Rule] = []
    if isinstance(loc.value, dict):
        for i, (name, v) in enumerate(loc.value.items()):
            p = names.parse(loc, name, i, loc.key_line(name))
            for k in spec.sequence(v, f"forbid for {name}", allow_scalar=True):
                kind = spec.text(k, "a forbidden anomaly kind or status")
                out.append(Rule("forbid", f"{kind} in {name}", k.line, pattern=p, kinds=(kind,)))
        return out
    everything = names.parse(loc, "*", 0, kline)
    for k in spec.sequence(loc, "forbid", allow_scalar=True):
        kind = spec.text(k, "a forbidden anomaly kind or status")
        out.append(Rule("forbid", kind, k.line, pattern=everything, kinds=(kind,)))
    if not out:
        raise SpecError(
            loc.source, kline, "forbid is empty: list anomaly kinds or statuses, e.g. [bad_checksum]"
        )
    return out


def _allowed_errors(name: str, p: Pattern, v: Loc) -> Rule:
    codes: set[int] = set()
    error_names: set[str] = set()
    if v.value is None:
        raise v.error(f"allowed_errors for {name} must be a list of error codes (use [] to allow none)")
    for c in spec.sequence(v, f"allowed_errors for {name}", allow_scalar=True):
        if isinstance(c.value, str) and c.value:
            names.check_error_name(c, c.value, p)
            error_names.add(c.value.lower())
        else:
            codes.add(spec.integer(c, f"an allowed error code for {name}", minimum=None))
    return Rule(
        "allowed_errors", name, p.line, pattern=p, codes=frozenset(codes), error_names=frozenset(error_names)
    )


def _latency(name: str, p: Pattern, v: Loc) -> Rule:
    m = spec.mapping(v, f"latency_ms for {name}")
    if not m:
        raise v.error(f"latency_ms for {name} is empty: give limits such as {{p99: 50, max: 200}}")
    limits: dict[str, float] = {}
    for key, lim in m.items():
        pm = _PCT.match(key)
        if key != "max" and not (pm and 0 < float(pm.group(1)) <= 100):
            raise SpecError(
                v.source,
                v.key_line(key),
                f"unknown latency limit {key!r} for {name} (use max or a percentile such as p50, p90, p99, p99.9)",
            )
        limits[key] = spec.number(lim, f"latency_ms {name} {key} (milliseconds)")
    return Rule("latency_ms", name, p.line, pattern=p, latency=limits)


def _min_max(section: str, name: str, p: Pattern, v: Loc, extra: tuple[str, ...] = ()) -> Rule:
    what = f"{section} for {name}"
    if isinstance(v.value, int) and not isinstance(v.value, bool) and section == "expect":
        n = spec.integer(v, what)
        return Rule(section, name, p.line, pattern=p, min=n, max=n)
    m = spec.mapping(v, what)
    spec.known_keys(v, ("min", "max", *extra), what)
    if "min" not in m and "max" not in m:
        raise v.error(f"{what} needs min, max or both")
    lo = spec.integer(m["min"], f"{what}: min") if "min" in m else None
    hi = spec.integer(m["max"], f"{what}: max") if "max" in m else None
    if lo is not None and hi is not None and lo > hi:
        raise m["min"].error(f"{what}: min {lo} is above max {hi}")
    kind = None
    if "kind" in m:
        kind = spec.text(m["kind"], f"{what}: kind")
        if kind not in KINDS:
            raise m["kind"].error(f"{what}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    return Rule(section, name, p.line, pattern=p, min=lo, max=hi, kind=kind)


_PER_NAME = {
    "allowed_errors": _allowed_errors,
    "latency_ms": _latency,
    "expect": lambda name, p, v: _min_max("expect", name, p, v, ("kind",)),
    "versions": lambda name, p, v: _min_max("versions", name, p, v),
}
