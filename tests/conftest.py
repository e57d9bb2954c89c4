"""Shared test fixtures: where the real captures are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
CAPTURES = Path(os.environ.get("WIREDUMP_CAPTURES", ROOT.parent / "shared" / "captures"))


@pytest.fixture(scope="session")
def captures() -> Path:
    """The folder of real captures with their independent decodes (../shared/captures)."""
    if not CAPTURES.is_dir():
        pytest.skip(f"real captures not found at {CAPTURES}")
    return CAPTURES
