"""Wording shared by the terminal's lines, notes and reports (no rich here: the plain timeline's
notes use it without loading the renderer)."""

from __future__ import annotations


def plural(n: int, word: str, words: str | None = None) -> str:
    """`1 anomaly`, `2 anomalies`, `0 frames`: counts in sentences agree with their number."""
    return f"{n} {word if n == 1 else words or word + 's'}"
