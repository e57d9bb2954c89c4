"""Shared test fixtures: where the real captures are."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
SHARED = Path(os.environ.get("WIREDUMP_SHARED", ROOT.parent / "shared"))
"""The workspace's shared folder (captures, protocol reference), beside the repository."""
CAPTURES = Path(os.environ.get("WIREDUMP_CAPTURES", SHARED / "captures"))
REFERENCE = SHARED / "reference"


@pytest.fixture(scope="session")
def captures() -> Path:
    """The folder of real captures with their independent decodes (../shared/captures)."""
    if not CAPTURES.is_dir():
        pytest.skip(f"real captures not found at {CAPTURES}")
    return CAPTURES
