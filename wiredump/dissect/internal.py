"""Internal errors: a bug in wiredump caught by a shield, reported as what it is.

The engine keeps going when a protocol's code panics or fails, but a decoder bug must never pass
for bad input: each one becomes an `internal_error` anomaly naming what failed and where
(engine/src/shield.rs). Stats count them apart and the test suite fails on any it sees.
"""

from __future__ import annotations

INTERNAL_ERROR = "internal_error"
"""The anomaly kind."""
