"""The options that make the engine do less (`detail`, `messages`, `values`) change only what they
say.

The plain timeline runs with both off: the engine then skips converting walked bodies into
field trees and partitions (`detail`) and making messages out of records (`messages`), while
every record is still read and checked. Its lines come from what is left, so everything else
a frame carries (type, version, status, error, summary, anomalies, peer and latency) and every
other event must be exactly what a full decode gives, on every real capture of every protocol.
The export without `--values` turns `values` off: message values are then not copied, and
nothing else may change. A decoder that let any of these options change a summary, skip a
check or lose an anomaly fails here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import wiredump
from tests.conftest import CAPTURES

_CAPTURES = sorted(p for p in CAPTURES.rglob("*") if p.suffix in (".pcap", ".pcapng"))

# What each option is allowed to change on a frame.
_DETAIL = {"fields", "partitions"}
_MESSAGES = {"messages"}


def _events(path: Path, drop: set[str], values: bool = True, **options: Any) -> list[tuple[str, Any]]:
    """The events of a capture; frames as dicts without the `drop` attributes and, when not
    `values`, without their messages' values."""
    out: list[tuple[str, Any]] = []
    for e in wiredump.dissect(path, values=values, **options):
        obj = e.obj
        if e.kind == "frame":
            obj = {k: v for k, v in dataclasses.asdict(obj).items() if k not in drop}
            if not values:
                for m in obj["messages"]:
                    del m["value"]
        out.append((e.kind, obj))
    return out


def test_the_shared_captures_are_found() -> None:
    protocols = {p.relative_to(CAPTURES).parts[0] for p in _CAPTURES}
    assert {"kafka", "pulsar", "pravega", "tank"} <= protocols


@pytest.mark.parametrize("path", _CAPTURES, ids=lambda p: str(p.relative_to(CAPTURES)))
def test_detail_off_changes_only_fields_and_partitions(path: Path) -> None:
    full = _events(path, _DETAIL)
    lean = _events(path, _DETAIL, detail=False)
    assert lean == full


@pytest.mark.parametrize("path", _CAPTURES, ids=lambda p: str(p.relative_to(CAPTURES)))
def test_messages_off_changes_only_messages(path: Path) -> None:
    full = _events(path, _MESSAGES | _DETAIL, detail=False)
    lean = _events(path, _MESSAGES | _DETAIL, detail=False, messages=False)
    assert lean == full


@pytest.mark.parametrize("path", _CAPTURES, ids=lambda p: str(p.relative_to(CAPTURES)))
def test_values_off_changes_only_message_values(path: Path) -> None:
    full = _events(path, _DETAIL, detail=False)
    lean = _events(path, _DETAIL, detail=False, values=False)
    for _, obj in full:
        if isinstance(obj, dict):
            for m in obj["messages"]:
                del m["value"]
    assert lean == full
