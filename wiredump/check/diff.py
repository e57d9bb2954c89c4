"""Comparing the transcript of a run with a baseline: pair connections, then diff each pair.

Connections are paired by content, never by stream number or port (both change from run
to run and connections interleave differently): first identical transcripts, then the
most similar remaining pair of the same protocol (same opening requests count most;
then the share of identical entries, as difflib measures it). A baseline connection left
without a partner is missing; a run connection left over is unexpected. Each pair is
diffed entry by entry per role; the first difference (the earliest packet) is named.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from wiredump.check.outcome import Offender, Outcome
from wiredump.check.transcript import ConnTranscript, Entry, conn_key, entry_text

MIN_SIMILARITY = 0.5
MAX_COMPARISONS = 10_000
MAX_DIFF_LINES = 20


@dataclass(slots=True)
class Difference:
    role: str
    expected: Entry | None
    came: Entry | None
    index: int
    """1-based position of the entry in the baseline's list for this role."""
    packet: int | None
    frame_index: int | None

    def text(self, repeat: bool) -> str:
        exp = entry_text(self.expected.as_dict(repeat)) if self.expected else None
        got = entry_text(self.came.as_dict(repeat)) if self.came else None
        at = f"packet {self.packet}, frame {self.frame_index}" if self.packet else ""
        if exp and got:
            return f"{self.role} entry {self.index} ({at}): expected {exp}; came {got}"
        if exp:
            where = f"before {at}" if at else "at the end"
            return f"{self.role} entry {self.index}: expected {exp}; missing ({where})"
        return f"{self.role} {at}: unexpected {got} (after baseline {self.role} entry {self.index - 1})"


def _seq(t: ConnTranscript, role: str, repeat: bool) -> list[tuple[str, int]]:
    return [(e.key, e.count if repeat else 1) for e in t.side(role)]


def similarity(a: ConnTranscript, b: ConnTranscript, repeat: bool) -> float:
    if a.protocol != b.protocol:
        return 0.0
    sa = [("c", *x) for x in _seq(a, "client", repeat)] + [("s", *x) for x in _seq(a, "server", repeat)]
    sb = [("c", *x) for x in _seq(b, "client", repeat)] + [("s", *x) for x in _seq(b, "server", repeat)]
    ratio = difflib.SequenceMatcher(None, sa, sb, autojunk=False).ratio()
    return ratio + (1.0 if a.opens_with() == b.opens_with() else 0.0)


def pair(
    expected: list[ConnTranscript], actual: list[ConnTranscript], repeat: bool
) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """(baseline index, run index) pairs, baseline indexes left, run indexes left."""
    pairs: list[tuple[int, int]] = []
    free_a = list(range(len(actual)))
    by_key: dict[str, list[int]] = {}
    for j in free_a:
        by_key.setdefault(conn_key(actual[j], repeat), []).append(j)
    left_e = []
    for i, t in enumerate(expected):
        lst = by_key.get(conn_key(t, repeat))
        if lst:
            j = lst.pop(0)
            pairs.append((i, j))
            free_a.remove(j)
        else:
            left_e.append(i)
    scored = []
    # Many leftover connections on both sides: compare only those opening the same way, so
    # the cost stays near linear (each comparison is a sequence diff).
    narrow = len(left_e) * len(free_a) > MAX_COMPARISONS
    for i in left_e:
        for j in free_a:
            if expected[i].protocol != actual[j].protocol:
                continue
            if narrow and expected[i].opens_with() != actual[j].opens_with():
                continue
            s = similarity(expected[i], actual[j], repeat)
            if s >= MIN_SIMILARITY:
                scored.append((-s, i, j))
    scored.sort()
    used_e: set[int] = set()
    used_a: set[int] = set()
    for _, i, j in scored:
        if i in used_e or j in used_a:
            continue
        used_e.add(i)
        used_a.add(j)
        pairs.append((i, j))
    pairs.sort()
    return pairs, [i for i in left_e if i not in used_e], [j for j in free_a if j not in used_a]


def differences(exp: ConnTranscript, got: ConnTranscript, repeat: bool) -> list[Difference]:
    out: list[Difference] = []
    for role in ("client", "server"):
        a, b = exp.side(role), got.side(role)
        sm = difflib.SequenceMatcher(None, _seq(exp, role, repeat), _seq(got, role, repeat), autojunk=False)
        for op, i1, i2, j1, j2 in sm.get_opcodes():
            if op == "equal":
                continue
            n = max(i2 - i1, j2 - j1)
            for k in range(n):
                e = a[i1 + k] if i1 + k < i2 else None
                c = b[j1 + k] if j1 + k < j2 else None
                # Where a missing entry would have been: the run entry just after the range.
                anchor = c or (b[j2] if j2 < len(b) else None)
                out.append(
                    Difference(
                        role,
                        e,
                        c,
                        i1 + k + 1 if e else i2 + 1,
                        anchor.packet if anchor else None,
                        anchor.index if anchor else None,
                    )
                )
    out.sort(key=lambda d: (d.packet is None, d.packet or 0, d.role))
    return out


def _totals_lines(exp: ConnTranscript, got: ConnTranscript) -> list[str]:
    lines = []
    for d in sorted(set(exp.totals) | set(got.totals)):
        e, g = exp.totals.get(d, {}), got.totals.get(d, {})
        for topic in sorted(set(e) | set(g)):
            if e.get(topic, 0) != g.get(topic, 0):
                lines.append(f"messages {d} {topic}: expected {e.get(topic, 0)}; came {g.get(topic, 0)}")
    return lines


def _conn_lines(exp: ConnTranscript, got: ConnTranscript) -> list[str]:
    lines = []
    if exp.port != got.port:
        lines.append(f"server port: expected {exp.port}; came {got.port}")
    if exp.state != got.state:
        lines.append(f"state: expected {exp.state}; came {got.state}")
    return lines


def _title(t: ConnTranscript) -> str:
    return f"{t.protocol} opening {' → '.join(t.opens_with()) or '(no frames)'}"


def compare(
    expected: list[ConnTranscript], actual: list[ConnTranscript], repeat: bool, suite: str, source: str
) -> list[Outcome]:
    """One outcome per baseline connection, and one for connections the baseline lacks."""
    pairs, missing, extra = pair(expected, actual, repeat)
    got_for = dict(pairs)
    outcomes = []
    for i, exp in enumerate(expected):
        name = f"{exp.label or f'connection {i + 1}'}: {_title(exp)}"
        o = Outcome(suite, name, True, "", exp.line, source, section="baseline")
        outcomes.append(o)
        if i in missing:
            o.passed = False
            o.message = "missing: no connection in the captures resembles it"
            continue
        got = actual[got_for[i]]
        diffs = differences(exp, got, repeat)
        extra_lines = _conn_lines(exp, got) + _totals_lines(exp, got)
        matched = f"{got.where()}"
        if not diffs and not extra_lines:
            o.message = f"matches {matched}"
            continue
        o.passed = False
        if diffs:
            first = diffs[0]
            o.message = f"differs from {matched}; first difference: {first.text(repeat)}"
            e = first.came or first.expected
            o.add(
                Offender(
                    got.capture or "",
                    first.packet,
                    got.stream,
                    got.protocol,
                    str(e.data.get("type")) if e else None,
                    first.role,
                    first.text(repeat),
                )
            )
        else:
            o.message = f"differs from {matched}: {extra_lines[0]}"
        lines = extra_lines + [d.text(repeat) for d in diffs]
        o.details = lines[:MAX_DIFF_LINES]
        if len(lines) > MAX_DIFF_LINES:
            o.details.append(f"… {len(lines) - MAX_DIFF_LINES} more differences")
    o = Outcome(suite, "no unexpected connections", not extra, "", None, source, section="baseline")
    o.message = (
        "every connection of the captures is in the baseline"
        if not extra
        else f"{len(extra)} connection{'s' * (len(extra) != 1)} not in the baseline"
    )
    for j in sorted(extra, key=lambda j: (actual[j].capture or "", actual[j].stream or 0)):
        t = actual[j]
        first = (t.client or t.server or [None])[0]
        o.add(
            Offender(
                t.capture or "",
                first.packet if first else None,
                t.stream,
                t.protocol,
                str(first.data.get("type")) if first else None,
                None,
                f"unexpected connection in {t.capture}: {_title(t)}",
            )
        )
    outcomes.append(o)
    return outcomes
