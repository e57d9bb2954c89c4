"""CI regression checks over captured traffic: `wiredump check` and `wiredump baseline`.

Two kinds of expectation are checked against the events of the dissection pipeline:
rules (a YAML file of limits: forbidden anomalies, unanswered requests, allowed error
codes, latency percentiles, frame counts, versions) and a baseline (a golden
protocol-level transcript recorded from a known-good run). Both produce `Outcome`s that
the reports render as text, JSON or JUnit XML. Input mistakes (a bad rules or baseline
file) raise `SpecError`, which carries the file, line and reason.
"""

from __future__ import annotations

from wiredump.check.outcome import Offender, Outcome
from wiredump.check.spec import SpecError

__all__ = ["Offender", "Outcome", "SpecError"]
