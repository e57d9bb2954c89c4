"""atheris target: the Python kafka session driven through the framer (see _harness for the encoding)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import main, session_target  # noqa: E402

PROTOCOL = "kafka"


def make() -> Callable[[bytes], None]:
    """The one-input function (the regression tests call it too, without atheris)."""
    return session_target(PROTOCOL)


if __name__ == "__main__":
    main(make)
