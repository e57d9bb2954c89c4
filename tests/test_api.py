"""The public API (`wiredump.dissect`, `wiredump.tables`) against the independent decodes."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

import wiredump
from tests.conftest import tsv_rows
from wiredump.dissect.capture import CaptureError


def _expected(captures: Path) -> list[tuple[int, str]]:
    # t01-basic.pdus.tsv: one row per PDU, `last_frame` is the packet that completes it.
    rows = tsv_rows(captures / "tank" / "t01-basic.pdus.tsv")
    return sorted((int(r["last_frame"]), r["msg_name"]) for r in rows)


def test_dissect_yields_the_frames_of_the_independent_decode(captures: Path) -> None:
    path = captures / "tank" / "t01-basic.pcap"
    frames = [e.obj for e in wiredump.dissect(path) if e.kind == "frame"]
    assert sorted((f.packet, f.type) for f in frames) == _expected(captures)
    ends = [e for e in wiredump.dissect([str(path)]) if e.kind == "capture_end"]
    assert len(ends) == 1 and ends[0].obj.packets == 101  # summary.json: "packets": 101


def test_dissect_stays_callable_after_the_engine_package_is_imported(captures: Path) -> None:
    # `import wiredump.dissect.pipeline` binds `wiredump.dissect` to the package: still callable.
    importlib.import_module("wiredump.dissect.pipeline")
    path = captures / "tank" / "t01-basic.pcap"
    frames = [e.obj for e in wiredump.dissect(path, hold_frames=8) if e.kind == "frame"]
    assert sorted((f.packet, f.type) for f in frames) == _expected(captures)


def test_tables_match_the_independent_decode(captures: Path) -> None:
    path = captures / "tank" / "t01-basic.pcap"
    summary = json.loads((captures / "tank" / "t01-basic.summary.json").read_text())
    t = wiredump.tables(path)
    assert t["frames"].num_rows == len(_expected(captures))
    assert t["connections"].num_rows == summary["connections"]
    produced = [r for r in t["messages"].to_pylist() if r["direction"] == "produce"]
    assert len(produced) == summary["produced_messages"]
    assert t["exchanges"].schema.field("latency_us").type.bit_width == 64


def test_values_and_options_pass_through(captures: Path) -> None:
    path = captures / "tank" / "t01-basic.pcap"
    plain = wiredump.tables(path)["messages"].to_pylist()
    assert all(r["value"] is None for r in plain)  # values are off by default, as in the export
    rows = wiredump.tables(path, values=True, hold_frames=8)["messages"].to_pylist()
    produced = [r for r in rows if r["direction"] == "produce"]
    assert produced and all(len(r["value"]) == r["value_size"] > 0 for r in produced)
    # Each produced value is bytes of its Produce request on the wire (keep_bytes keeps them).
    wire: dict[int, list[bytes]] = {}
    for e in wiredump.dissect(path, keep_bytes=True):
        if e.kind == "frame":
            wire.setdefault(e.obj.packet, []).append(e.obj.data)
    assert all(any(r["value"] in data for data in wire[r["packet"]]) for r in produced)


def test_a_missing_capture_is_a_capture_error(tmp_path: Path) -> None:
    with pytest.raises(CaptureError):
        list(wiredump.dissect(tmp_path / "missing.pcap"))
