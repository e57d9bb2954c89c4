"""Internal errors: a bug in wiredump caught by a shield, reported as what it is.

The framing engine (and any code that catches a generic exception to protect the run)
keeps going when a protocol's code raises, but a decoder bug must never pass for bad
input: each caught exception becomes an `internal_error` anomaly naming the exception,
the function and protocol it came from, where in the stream it happened and the
innermost line of wiredump's code that raised it. Call it as `internal.internal_error`
(through the module) so that the test suite can watch every one made.
"""

from __future__ import annotations

import os
import traceback

from wiredump.dissect.model import Anomaly

INTERNAL_ERROR = "internal_error"
"""The anomaly kind."""
MAX_DETAIL = 300


def _origin(exc: BaseException) -> str:
    """`file.py:LINE in function` of the innermost frame that raised, or ''."""
    tb = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ is not None else []
    if not tb:
        return ""
    last = tb[-1]
    return f" (raised at {os.path.basename(last.filename)}:{last.lineno} in {last.name})"


def internal_error(
    exc: BaseException,
    function: str,
    protocol: str | None = None,
    where: str = "",
    offset: int | None = None,
) -> Anomaly:
    """The anomaly for `exc`, caught around `function` (e.g. `decode`) of `protocol`.

    `where` says what was being handled, in words (e.g. "client bytes at stream offset 120").
    """
    what = f"{protocol}.{function}" if protocol else function
    at = f" on {where}" if where else ""
    msg = str(exc)
    if len(msg) > 120:
        msg = msg[:117] + "..."
    detail = f"internal error: {type(exc).__name__} in {what}{at}{_origin(exc)}: {msg}"
    return Anomaly(INTERNAL_ERROR, detail[:MAX_DETAIL], offset, protocol=protocol)
