"""Where terminal commands write: rich on a colour terminal, plain buffered text elsewhere.

The choice is made once per command. In a pipe (or with `--no-color`, or `NO_COLOR`
set) lines go straight to `sys.stdout` as plain strings — no rich Console, no escape
codes, no wrapping — which keeps the timeline as fast as tshark's. On a terminal a
rich Console renders styled lines cropped to the width, so no line ever breaks.
`--color` into a pipe (`| less -R`) gives the styled lines whole, never cropped, laid
out for `$COLUMNS` (200 when unset).

Lines are written as given: callers escape strings from the wire (`cli.escape`). As a
last guard a plain line that still holds a control character is escaped whole.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console, RenderableType
from rich.text import Text

from wiredump.cli.escape import escape
from wiredump.cli.tty import color_wanted, pipe_width, stdout_tty


class Out:
    """Writes lines either plain or rich; `console` may be given (tests record a fixed width)."""

    def __init__(self, color: bool | None = None, console: Console | None = None) -> None:
        self.console = console
        self.tty = stdout_tty()
        self.crop = True
        self.progress: Any = None
        """A progress bar on stderr to clear before writing, when stdout is the same terminal."""
        width = pipe_width()
        if console is None and color_wanted(color):
            if self.tty:
                self.console = Console(highlight=False, soft_wrap=False, emoji=False)
            else:
                # Forced colour into a pipe: styled, laid out for `width`, and never cropped.
                self.console = Console(
                    highlight=False, soft_wrap=False, emoji=False, force_terminal=True, width=100_000
                )
                self.crop = False
        self.rich = self.console is not None
        self.width = self.console.width if self.console is not None and self.crop else width
        self._pending: list[Text] = []
        self._wrap = False
        self._flushed = time.monotonic()

    def _clear_progress(self) -> None:
        if self.progress is not None and self.tty:
            self.progress.clear()

    def line(self, plain: str, styled: Callable[[], Text] | None = None, wrap: bool = False) -> None:
        """One line; `styled` builds its rich form only when it will be used.

        On a terminal a line is cropped with an ellipsis at the width, unless `wrap`
        (detail lines, whose values should not be lost) folds it onto more lines.
        """
        if self.console is None:
            if not plain.isprintable():
                plain = escape(plain)
            if self.progress is not None and self.tty:
                self.progress.clear()
            sys.stdout.write(plain + "\n")  # one call per line: the plain timeline's hot path
            return
        text = styled() if styled is not None else Text(plain)
        if wrap != self._wrap:
            self.flush()
            self._wrap = wrap
        self._pending.append(text)
        if len(self._pending) >= 64 or time.monotonic() - self._flushed > 0.2:
            self.flush()  # keep a live capture (`tcpdump -w - | wiredump -`) moving

    def render(self, renderable: RenderableType) -> None:
        """A rich renderable (table, panel) on a terminal; callers give plain text otherwise."""
        self.flush()
        assert self.console is not None
        self._clear_progress()
        self.console.print(renderable, crop=self.crop)

    def flush(self) -> None:
        self._flushed = time.monotonic()
        if self.console is not None:
            if self._pending:
                self._clear_progress()
                block = Text("\n").join(self._pending)
                if not self.crop:
                    self.console.print(block, no_wrap=True, overflow="ignore", crop=False, soft_wrap=True)
                elif self._wrap:
                    self.console.print(block, overflow="fold", soft_wrap=False)
                else:
                    self.console.print(block, no_wrap=True, overflow="ellipsis", crop=True, soft_wrap=False)
                self._pending.clear()
        else:
            sys.stdout.flush()
