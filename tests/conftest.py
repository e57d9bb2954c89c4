"""Shared test fixtures: where the real captures are."""

from __future__ import annotations

import csv
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


def tsv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of an independent decode (`X.pdus.tsv`, `X.frames.tsv`) as dicts by column."""
    with path.open() as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def dissect_lists(path: Path, protocol: str | None = None) -> tuple[list, list, list]:
    """(frames, anomalies, exchanges) of one capture; frames of `protocol` only when given."""
    from wiredump.dissect.pipeline import Options, dissect

    frames, anomalies, exchanges = [], [], []
    for ev in dissect([str(path)], Options()):
        if ev.kind == "frame" and (protocol is None or ev.obj.protocol == protocol):
            frames.append(ev.obj)
        elif ev.kind == "anomaly":
            anomalies.append(ev.obj)
        elif ev.kind == "exchange":
            exchanges.append(ev.obj)
    return frames, anomalies, exchanges
