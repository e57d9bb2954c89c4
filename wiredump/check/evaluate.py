"""Judging pipeline events against rules, one suite (capture) at a time, in one pass.

Memory stays bounded except for latencies (one 8-byte number per answered request, which
a percentile needs); offenders are kept in bounded lists (for latency: a heap of the
slowest exchanges, plus counts above each limit). Which rule judges a frame:
for `expect` every key counts every frame it matches; for the other per-name rules a
frame (or exchange) is judged by the most specific key that matches it, so
`{kafka.*: …, kafka.Fetch: …}` exempts Fetch from the `kafka.*` limit.
"""

from __future__ import annotations

import heapq
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any

from wiredump.check import names
from wiredump.check.outcome import MAX_OFFENDERS, Offender, Outcome
from wiredump.check.percentile import percentile
from wiredump.check.rules import Rule, Rules
from wiredump.dissect.model import OK, Anomaly, Exchange, Frame

UNANSWERED = "unanswered"


def _offender(capture: str, f: Frame, detail: str) -> Offender:
    return Offender(capture, f.packet, f.stream, f.protocol, f.type, f.role, detail)


def _ms(us: float) -> str:
    return f"{us / 1000:.3f} ms"


class SuiteEvaluator:
    """Feeds on the events of one suite and gives one `Outcome` per rule."""

    def __init__(self, rules: Rules, suite: str) -> None:
        self.rules = rules
        self.suite = suite
        self.out: dict[int, Outcome] = {
            id(r): Outcome(suite, r.title, True, "", r.line, rules.source, section=r.section)
            for r in rules.rules
        }
        self.forbid = rules.section("forbid")
        # The last frame reported for its status, per rule: its own anomalies follow it at
        # once in the event stream and are the same problem, so they are not listed again.
        self._forbid_frame: dict[int, Frame] = {}
        self.unanswered = rules.section("max_unanswered")
        self._unanswered_n: Counter[int] = Counter()
        self.errors = rules.section("allowed_errors")
        self._errors_seen: Counter[int] = Counter()
        self.latency = rules.section("latency_ms")
        self._lat: dict[int, array[int]] = defaultdict(lambda: array("q"))
        # Per rule: the slowest exchanges above the rule's smallest limit (a min-heap of at
        # most MAX_OFFENDERS) and how many exchanges exceed each limit.
        self._slow: dict[int, list[tuple[int, int, Offender]]] = defaultdict(list)
        self._above: dict[int, Counter[float]] = defaultdict(Counter)
        self._seq = 0
        self.expect = rules.section("expect")
        # (rule id, protocol, type, frame kind) → count, and the frames seen beyond the max.
        self._expect_n: Counter[tuple[int, str, str, str]] = Counter()
        self._expect_seen: Counter[int] = Counter()
        self._request_types: set[tuple[str, str]] = set()
        self._expect_frames: dict[int, list[Offender]] = defaultdict(list)
        self.versions = rules.section("versions")
        self._versions_n: Counter[int] = Counter()
        self.frames = 0

    # -- feeding ------------------------------------------------------------------------------
    def feed(self, ev: Any) -> None:
        kind = ev.kind
        if kind == "frame":
            self._frame(ev.capture, ev.obj)
        elif kind == "anomaly":
            self._anomaly(ev.capture, ev.obj, ev.frame)
        elif kind == "exchange":
            self._exchange(ev.capture, ev.obj)

    def _frame(self, capture: str, f: Frame) -> None:
        self.frames += 1
        if f.status != OK:
            for r in self.forbid:
                if fnmatchcase(f.status, r.kinds[0]) and r.pattern and r.pattern.matches(f.protocol, f.type):
                    why = f.anomalies[0].detail if f.anomalies else ""
                    self.out[id(r)].add(
                        _offender(capture, f, f"status {f.status}" + (f": {why}" if why else ""))
                    )
                    self._forbid_frame[id(r)] = f
        if f.error_code is not None and self.errors:
            r = self._best(self.errors, f.protocol, f.type)
            if r is not None:
                self._errors_seen[id(r)] += 1
                name = (f.error or "").lower()
                if f.error_code not in r.codes and not (name and name in r.error_names):
                    allowed = sorted(r.codes) + sorted(r.error_names)
                    label = f"error {f.error_code}" + (f" ({f.error})" if f.error else "")
                    self.out[id(r)].add(
                        _offender(
                            capture,
                            f,
                            f"{label} not allowed (allowed: {', '.join(map(str, allowed)) or 'none'})",
                        )
                    )
        if f.version is not None and f.kind != "response" and self.versions:
            r = self._best(self.versions, f.protocol, f.type)
            if r is not None:
                self._versions_n[id(r)] += 1
                if (r.min is not None and f.version < r.min) or (r.max is not None and f.version > r.max):
                    self.out[id(r)].add(_offender(capture, f, f"version {f.version}, allowed {_range(r)}"))
        for r in self.expect:
            if r.pattern and r.pattern.matches(f.protocol, f.type):
                self._expect_n[(id(r), f.protocol, f.type, f.kind)] += 1
                if f.kind == "request":
                    self._request_types.add((f.protocol, f.type))
                counted = (
                    r.kind == "any"
                    or r.kind == f.kind
                    or (
                        r.kind is None
                        and (f.kind != "response" or (f.protocol, f.type) not in self._request_types)
                    )
                )
                if r.max is not None and counted:
                    self._expect_seen[id(r)] += 1
                    lst = self._expect_frames[id(r)]
                    if self._expect_seen[id(r)] > r.max and len(lst) < MAX_OFFENDERS:
                        lst.append(_offender(capture, f, f"{f.kind} beyond the {r.max} expected"))

    def _anomaly(self, capture: str, a: Anomaly, f: Frame | None) -> None:
        for r in self.forbid:
            if not fnmatchcase(a.kind, r.kinds[0]):
                continue
            if f is not None and self._forbid_frame.get(id(r)) is f:
                continue  # the frame itself was already reported for its status
            proto = a.protocol or (f.protocol if f else None)
            if r.pattern and not r.pattern.matches(proto, f.type if f else None):
                continue
            where = f" at byte {a.offset}" if a.offset is not None else ""
            detail = f"{a.kind}{where}: {a.detail}"
            if f is not None:
                self.out[id(r)].add(_offender(capture, f, detail))
            else:
                self.out[id(r)].add(Offender(capture, a.packet or None, a.stream, proto, None, None, detail))

    def _exchange(self, capture: str, e: Exchange) -> None:
        if e.status == UNANSWERED and self.unanswered:
            r = self._best(self.unanswered, e.protocol, e.type)
            if r is not None:
                self._unanswered_n[id(r)] += 1
                cid = f" id {e.correlation_id}" if e.correlation_id is not None else ""
                self.out[id(r)].add(
                    Offender(
                        capture,
                        e.request_packet,
                        e.stream,
                        e.protocol,
                        e.type,
                        None,
                        f"request{cid} got no response",
                    )
                )
        if e.latency_us is not None and self.latency:
            r = self._best(self.latency, e.protocol, e.type)
            if r is not None:
                self._latency(r, capture, e)

    def _latency(self, r: Rule, capture: str, e: Exchange) -> None:
        lat = e.latency_us
        assert lat is not None
        self._lat[id(r)].append(lat)
        limits = [v * 1000 for v in r.latency.values()]
        if lat <= min(limits):
            return
        above = self._above[id(r)]
        for v in limits:
            if lat > v:
                above[v] += 1
        heap = self._slow[id(r)]
        self._seq += 1
        if len(heap) >= MAX_OFFENDERS and lat <= heap[0][0]:
            return
        off = Offender(
            capture,
            e.response_packet,
            e.stream,
            e.protocol,
            e.type,
            None,
            f"{_ms(lat)} (request in packet {e.request_packet})",
        )
        item = (lat, -self._seq, off)  # on equal latency the earlier exchange is kept
        if len(heap) >= MAX_OFFENDERS:
            heapq.heapreplace(heap, item)
        else:
            heapq.heappush(heap, item)

    def _best(self, rules: list[Rule], protocol: str | None, type_: str | None) -> Rule | None:
        pats = [r.pattern for r in rules if r.pattern is not None]
        p = names.best(pats, protocol, type_)
        if p is None:
            return None
        for r in rules:
            if r.pattern is p:
                return r
        return None

    # -- results ------------------------------------------------------------------------------
    def outcomes(self) -> list[Outcome]:
        for r in self.rules.rules:
            o = self.out[id(r)]
            getattr(self, f"_finish_{r.section}")(r, o)
        return [self.out[id(r)] for r in self.rules.rules]

    def _finish_forbid(self, r: Rule, o: Outcome) -> None:
        o.passed = o.violations == 0
        o.message = "not seen" if o.passed else f"{o.violations} occurrence{'s' * (o.violations != 1)}"

    def _finish_max_unanswered(self, r: Rule, o: Outcome) -> None:
        n = self._unanswered_n[id(r)]
        assert r.limit is not None
        o.passed = n <= r.limit
        o.message = f"{n} unanswered request{'s' * (n != 1)} (at most {r.limit} allowed)"

    def _finish_allowed_errors(self, r: Rule, o: Outcome) -> None:
        o.passed = o.violations == 0
        seen = self._errors_seen[id(r)]
        o.message = (
            f"{seen} frame{'s' * (seen != 1)} with an error code, all allowed"
            if o.passed
            else f"{o.violations} frame{'s' * (o.violations != 1)} with an error code not allowed"
        )

    def _finish_latency_ms(self, r: Rule, o: Outcome) -> None:
        values = sorted(self._lat.get(id(r), ()))
        if not values:
            o.passed = True
            o.message = "no answered requests to measure"
            return
        parts, broken = [], []
        for key, limit_ms in r.latency.items():
            got = values[-1] if key == "max" else percentile(values, float(key[1:]))
            assert got is not None
            ok = got <= limit_ms * 1000
            parts.append(f"{key} {_ms(got)} {'≤' if ok else '>'} {limit_ms:g} ms")
            if not ok:
                broken.append(limit_ms * 1000)
        o.passed = not broken
        o.message = f"{', '.join(parts)} over {len(values)} exchange{'s' * (len(values) != 1)}"
        if broken:
            threshold = min(broken)
            slow = sorted(self._slow.get(id(r), []), reverse=True)
            listed = [off for lat, _, off in slow if lat > threshold]
            for off in listed:
                o.add(off)
            o.more += self._above[id(r)][threshold] - len(listed)

    def _finish_expect(self, r: Rule, o: Outcome) -> None:
        # Responses named like their request (Kafka's Produce answer is "Produce") belong to
        # an exchange already counted; responses with their own name (Pulsar's SEND_RECEIPT)
        # count on their own.
        req_types = {(p, t) for (rid, p, t, k) in self._expect_n if rid == id(r) and k == "request"}
        n = 0
        for (rid, p, t, k), c in self._expect_n.items():
            if rid != id(r):
                continue
            if (
                r.kind == "any"
                or r.kind == k
                or (r.kind is None and (k != "response" or (p, t) not in req_types))
            ):
                n += c
        o.passed = (r.min is None or n >= r.min) and (r.max is None or n <= r.max)
        what = "frames" if r.kind in (None, "any") else f"{r.kind} frames"
        o.message = f"{n} {what}, expected {_range(r)}"
        if r.max is not None and n > r.max:
            for off in self._expect_frames.get(id(r), []):
                o.add(off)

    def _finish_versions(self, r: Rule, o: Outcome) -> None:
        n = self._versions_n[id(r)]
        o.passed = o.violations == 0
        o.message = (
            f"{n} frame{'s' * (n != 1)} checked, all versions {_range(r)}"
            if o.passed
            else f"{o.violations} of {n} frames not {_range(r)}"
        )


def _range(r: Rule) -> str:
    if r.min is not None and r.max is not None:
        return f"{r.min}..{r.max}" if r.min != r.max else f"= {r.min}"
    if r.min is not None:
        return f"≥ {r.min}"
    return f"≤ {r.max}"


def evaluate(
    rules: Rules, events: Iterable[Any], combined: bool = False, combined_name: str = "captures"
) -> list[Outcome]:
    """Outcomes for every suite: one per capture, or one for all captures when `combined`."""
    suites: dict[str, SuiteEvaluator] = {}
    for ev in events:
        suite = combined_name if combined else ev.capture
        s = suites.get(suite)
        if s is None:
            s = suites[suite] = SuiteEvaluator(rules, suite)
        s.feed(ev)
    out: list[Outcome] = []
    for s in suites.values():
        out.extend(s.outcomes())
    return out
