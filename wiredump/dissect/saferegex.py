"""Regular expressions for `matches` that cannot hang: a Thompson-NFA (Pike VM) search.

Python's `re` backtracks, so a pattern such as `(a+)+b` against a long run of `a`s
takes exponential time — a hostile or careless `-Y 'kafka.topic matches "(a+)+b"'`
would hang the run. This module parses the pattern with Python's own parser (same
syntax and errors as `re`), compiles it to an NFA and simulates every alternative at
once: time is O(len(text) × len(program)) whatever the pattern, no timeout needed.

Supported: literals, `.`, classes (`[a-z]`, `\\d`, `\\w`, `\\s`, negated), groups,
`|`, `* + ? {m,n}` (greedy, lazy and possessive read alike: only match/no match is
asked), `^ $ \\A \\Z \\b \\B`, flags `(?i)` and `(?s)`. Refused with an error (never
silently mis-matched): back-references, look-ahead/behind, conditionals. Bounded
repeats are expanded; a pattern whose program would exceed `MAX_PROGRAM`
instructions is refused too.
"""

from __future__ import annotations

import re
import re._constants as C  # type: ignore[import-not-found]
import re._parser as P  # type: ignore[import-not-found]
from collections.abc import Callable
from typing import Any

MAX_PROGRAM = 20_000
"""Instructions at most (bounded repeats are expanded: `a{1000}` is 1000 instructions)."""

_CHAR, _SPLIT, _JMP, _MATCH, _ASSERT = range(5)


class UnsupportedPattern(ValueError):
    """A construct the linear-time engine cannot run (back-reference, look-around…)."""


def _category(cat: Any) -> Callable[[str], bool]:
    name = str(cat)
    table: dict[str, Callable[[str], bool]] = {
        "CATEGORY_DIGIT": str.isdigit,
        "CATEGORY_NOT_DIGIT": lambda c: not c.isdigit(),
        "CATEGORY_SPACE": str.isspace,
        "CATEGORY_NOT_SPACE": lambda c: not c.isspace(),
        "CATEGORY_WORD": lambda c: c.isalnum() or c == "_",
        "CATEGORY_NOT_WORD": lambda c: not (c.isalnum() or c == "_"),
    }
    if name not in table:
        raise UnsupportedPattern(f"unsupported class {name}")
    return table[name]


class _Compiler:
    def __init__(self, ignore_case: bool, dotall: bool) -> None:
        self.prog: list[tuple[Any, ...]] = []
        self.ignore_case = ignore_case
        self.dotall = dotall

    def emit(self, *ins: Any) -> int:
        if len(self.prog) >= MAX_PROGRAM:
            raise UnsupportedPattern(f"pattern too large (over {MAX_PROGRAM} instructions once expanded)")
        self.prog.append(ins)
        return len(self.prog) - 1

    def char(self, pred: Callable[[str], bool]) -> None:
        if self.ignore_case:
            base = pred
            pred = lambda c: base(c) or base(c.lower()) or base(c.upper())  # noqa: E731
        self.emit(_CHAR, pred)

    def seq(self, items: Any) -> None:
        for op, av in items:
            self.node(op, av)

    def node(self, op: Any, av: Any) -> None:
        if op is C.LITERAL:
            ch = chr(av)
            self.char(lambda c, ch=ch: c == ch)
        elif op is C.NOT_LITERAL:
            ch = chr(av)
            self.char(lambda c, ch=ch: c != ch)
        elif op is C.ANY:
            self.char((lambda c: True) if self.dotall else (lambda c: c != "\n"))
        elif op is C.IN:
            self.char(self.charset(av))
        elif op is C.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            saved = (self.ignore_case, self.dotall)
            if add_flags & re.IGNORECASE:
                self.ignore_case = True
            if add_flags & re.DOTALL:
                self.dotall = True
            if del_flags & re.IGNORECASE:
                self.ignore_case = False
            self.seq(sub)
            self.ignore_case, self.dotall = saved
        elif op is C.BRANCH:
            _, alternatives = av
            jumps = []
            for i, alt in enumerate(alternatives):
                if i < len(alternatives) - 1:
                    split = self.emit(_SPLIT, 0, 0)
                    self.prog[split] = (_SPLIT, split + 1, None)
                    self.seq(alt)
                    jumps.append(self.emit(_JMP, None))
                    self.prog[split] = (_SPLIT, split + 1, len(self.prog))
                else:
                    self.seq(alt)
            for j in jumps:
                self.prog[j] = (_JMP, len(self.prog))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", C.MAX_REPEAT)):
            lo, hi, sub = av
            for _ in range(lo):
                self.seq(sub)
            if hi == C.MAXREPEAT:
                split = self.emit(_SPLIT, None, None)
                self.seq(sub)
                self.emit(_JMP, split)
                self.prog[split] = (_SPLIT, split + 1, len(self.prog))
            else:
                pending = []
                for _ in range(hi - lo):
                    split = self.emit(_SPLIT, None, None)
                    pending.append(split)
                    self.seq(sub)
                for split in pending:
                    self.prog[split] = (_SPLIT, split + 1, len(self.prog))
        elif op is C.AT:
            self.emit(_ASSERT, str(av))
        elif op is getattr(C, "ATOMIC_GROUP", None):
            self.seq(av)
        else:
            raise UnsupportedPattern(f"{str(op).lower().replace('_', ' ')} is not supported by matches")

    def charset(self, items: Any) -> Callable[[str], bool]:
        negate = False
        tests: list[Callable[[str], bool]] = []
        singles: set[str] = set()
        for op, av in items:
            if op is C.NEGATE:
                negate = True
            elif op is C.LITERAL:
                singles.add(chr(av))
            elif op is C.RANGE:
                lo, hi = av
                tests.append(lambda c, lo=lo, hi=hi: lo <= ord(c) <= hi)
            elif op is C.CATEGORY:
                tests.append(_category(av))
            else:
                raise UnsupportedPattern(f"unsupported class item {op}")

        def test(c: str) -> bool:
            hit = c in singles or any(t(c) for t in tests)
            return hit != negate

        return test


def _word(text: str, i: int) -> bool:
    return 0 <= i < len(text) and (text[i].isalnum() or text[i] == "_")


def _assert(kind: str, text: str, i: int, multiline: bool) -> bool:
    n = len(text)
    if kind == "AT_BEGINNING_STRING" or (kind == "AT_BEGINNING" and not multiline):
        return i == 0
    if kind == "AT_BEGINNING":
        return i == 0 or text[i - 1] == "\n"
    if kind == "AT_END_STRING":
        return i == n
    if kind == "AT_END":
        if multiline:
            return i == n or text[i] == "\n"
        return i == n or (i == n - 1 and text[i] == "\n")
    if kind == "AT_BOUNDARY":
        return _word(text, i - 1) != _word(text, i)
    if kind == "AT_NON_BOUNDARY":
        return _word(text, i - 1) == _word(text, i)
    raise UnsupportedPattern(f"unsupported anchor {kind}")


class SafeRegex:
    """A compiled pattern with `search(text) -> bool`, linear in the text's length."""

    def __init__(self, pattern: str) -> None:
        re.compile(pattern)  # the same syntax errors as `re`, with its messages
        tree = P.parse(pattern, 0)
        flags = tree.state.flags
        comp = _Compiler(bool(flags & re.IGNORECASE), bool(flags & re.DOTALL))
        comp.seq(tree)
        comp.emit(_MATCH)
        self.pattern = pattern
        self.prog = comp.prog
        self.multiline = bool(flags & re.MULTILINE)
        self._lazy = not any(ins[0] == _ASSERT for ins in self.prog)
        """Without anchors the set of live states depends on the characters only: cache its transitions
        (a lazy DFA), so each character costs one dictionary lookup once the pattern has warmed up."""
        self._steps: dict[tuple[tuple[int, ...], str], tuple[int, ...] | None] = {}

    def _add(self, states: list[int], seen: set[int], pc: int, text: str, i: int) -> bool:
        """Follow jumps/splits/assertions from pc; True when MATCH is reachable."""
        stack = [pc]
        prog = self.prog
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            ins = prog[pc]
            op = ins[0]
            if op == _CHAR:
                states.append(pc)
            elif op == _MATCH:
                return True
            elif op == _JMP:
                stack.append(ins[1])
            elif op == _SPLIT:
                stack.append(ins[2])
                stack.append(ins[1])
            elif op == _ASSERT:
                if _assert(ins[1], text, i, self.multiline):
                    stack.append(pc + 1)
        return False

    def search(self, text: str) -> bool:
        if self._lazy:
            return self._search_cached(text)
        return self._search(text)

    MAX_CACHED_STEPS = 20_000
    """Transitions kept per pattern; the cache starts over past this (memory stays bounded)."""

    def _search_cached(self, text: str) -> bool:
        start: list[int] = []
        if self._add(start, set(), 0, "", 0):
            return True
        cur = tuple(start)
        steps = self._steps
        prog = self.prog
        for c in text:
            key = (cur, c)
            if key in steps:
                nxt = steps[key]
            else:
                states: list[int] = []
                seen: set[int] = set()
                matched = False
                for pc in cur:
                    if prog[pc][1](c) and self._add(states, seen, pc + 1, "", 0):
                        matched = True
                        break
                if not matched and self._add(states, seen, 0, "", 0):
                    matched = True
                nxt = None if matched else tuple(states)
                if len(steps) >= self.MAX_CACHED_STEPS:
                    steps.clear()
                steps[key] = nxt
            if nxt is None:
                return True
            cur = nxt
        return False

    def _search(self, text: str) -> bool:
        prog = self.prog
        current: list[int] = []
        seen: set[int] = set()
        if self._add(current, seen, 0, text, 0):
            return True
        for i, c in enumerate(text):
            nxt: list[int] = []
            seen = set()
            for pc in current:
                if prog[pc][1](c) and self._add(nxt, seen, pc + 1, text, i + 1):
                    return True
            # an unanchored search: a new attempt starts at every position
            if self._add(nxt, seen, 0, text, i + 1):
                return True
            current = nxt
        return False
