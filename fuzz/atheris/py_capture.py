"""atheris target: whole files through the Python capture reader and the pipeline.

`CaptureError` is the expected refusal of a file that is not a capture; anything else that
escapes, and any internal_error anomaly, is a finding.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import capture_target, main  # noqa: E402


def make() -> Callable[[bytes], None]:
    """The one-input function (the regression tests call it too, without atheris)."""
    return capture_target()


if __name__ == "__main__":
    main(make)
