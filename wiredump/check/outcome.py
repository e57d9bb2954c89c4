"""What a check found: one `Outcome` per rule (or baseline section) and suite.

Reports (text, JSON, JUnit) only read these records, so every check speaks the same
shape: a suite (the capture, or "baseline"), a rule name, pass/fail, one line of
explanation, the packets that break it and any extra lines (a diff).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

MAX_OFFENDERS = 50
"""Offending packets listed per rule; the rest are counted in `Outcome.more`."""


@dataclass(slots=True)
class Offender:
    """One place in a capture that breaks a rule."""

    capture: str
    packet: int | None
    stream: int | None = None
    protocol: str | None = None
    type: str | None = None
    role: str | None = None
    detail: str = ""

    def where(self) -> str:
        """`packet 57 stream 0 kafka Produce (client)`: the place as a reader finds it in tshark."""
        parts = []
        if self.packet is not None:
            parts.append(f"packet {self.packet}")
        if self.stream is not None:
            parts.append(f"stream {self.stream}")
        name = ".".join(p for p in (self.protocol, self.type) if p)
        if name:
            parts.append(name)
        if self.role:
            parts.append(f"({self.role})")
        return " ".join(parts) or self.capture


@dataclass(slots=True)
class Outcome:
    """The result of one rule (or baseline section) on one suite."""

    suite: str
    rule: str
    passed: bool
    message: str
    line: int | None = None
    source: str | None = None
    offenders: list[Offender] = field(default_factory=list)
    more: int = 0
    """Offenders found beyond the ones listed."""
    details: list[str] = field(default_factory=list)
    section: str = ""
    """What kind of check: a rules-file key (forbid, latency_ms, …) or `baseline`."""

    def add(self, offender: Offender) -> None:
        if len(self.offenders) < MAX_OFFENDERS:
            self.offenders.append(offender)
        else:
            self.more += 1

    @property
    def violations(self) -> int:
        return len(self.offenders) + self.more

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["violations"] = self.violations
        return d
