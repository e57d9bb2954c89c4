"""What the output is: a terminal or not, colour wanted or not, how wide a pipe's lines are laid out.

Kept apart from `output` (which imports rich) so that the plain timeline's start-up
(`entry.main`, `plain`) can make the same decision without importing rich.
"""

from __future__ import annotations

import os
import sys

PIPE_WIDTH = 200
"""Layout width of output that goes to a pipe or file, unless $COLUMNS says otherwise."""


def stdout_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def pipe_width() -> int:
    cols = os.environ.get("COLUMNS", "")
    return int(cols) if cols.isdigit() and int(cols) >= 40 else PIPE_WIDTH


def color_wanted(color: bool | None) -> bool:
    """`--color` forces, `--no-color` forbids; by default colour only on a terminal without NO_COLOR."""
    if color is not None:
        return color
    if os.environ.get("NO_COLOR"):
        return False
    return stdout_tty()
