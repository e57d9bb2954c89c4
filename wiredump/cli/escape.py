"""Making strings from the wire safe to print: one function, used by every text output.

A topic, client id or error message is chosen by whoever sends it. Printed raw, `ESC[2J`
clears the user's screen and `ESC]0;…BEL` retitles their terminal; a NUL or a carriage
return hides what precedes it. Every text output (timeline, `-V`, `follow`, `stats`,
`show`, check reports) passes wire strings through `escape`, which writes each character
a terminal would act on as a visible escape, as tshark does (`\\x1b`, `\\0`, `\\n`…).
JSON and Parquet keep the exact values: they are data, not terminal text.
"""

from __future__ import annotations

_NAMED = {
    "\\": "\\\\",
    "\0": "\\0",
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
}


def _one(c: str) -> str:
    named = _NAMED.get(c)
    if named is not None:
        return named
    if c.isprintable():
        return c
    n = ord(c)
    if n < 0x100:
        return f"\\x{n:02x}"
    if n < 0x10000:
        return f"\\u{n:04x}"
    return f"\\U{n:08x}"


def escape(s: str, quote: str = "") -> str:
    """`s` with every non-printable character (controls, NUL, DEL, C1, bidi overrides, unpaired
    surrogates…) written as `\\0`, `\\a`…`\\r`, `\\xNN`, `\\uNNNN`, and a backslash as `\\\\`, so
    the printed text can be read back unambiguously. `quote` (e.g. `"`) is escaped too, for
    values printed inside quotes. Printable text (any script) passes unchanged, and fast.
    """
    if s.isprintable() and "\\" not in s and (not quote or quote not in s):
        return s
    out = "".join(_one(c) for c in s)
    if quote:
        out = out.replace(quote, "\\" + quote)
    return out
