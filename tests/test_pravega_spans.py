"""Pravega field spans (`Frame.spans`, what `-x --mark NAME` highlights) hold exactly the bytes the
wire encodes the field's value in, the value taken from the independent decodes beside the
captures (`*.frames.tsv`), its encoding from Pravega's wire format (`WireCommands`: request ids
are big-endian int64, writer ids a UUID's 16 bytes, segment names Java's `writeUTF`: an unsigned
16-bit length then the bytes)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import wiredump
from tests.conftest import CAPTURES, tsv_rows
from wiredump.dissect.model import Frame

_CAPTURES = sorted((CAPTURES / "pravega").glob("*.pcap"))


def _encodings(row: dict[str, str]) -> dict[str, bytes]:
    """The fields the decode names, encoded as the wire carries them."""
    out: dict[str, bytes] = {}
    if row["request_id"]:
        out["request_id"] = struct.pack(">q", int(row["request_id"]))
    if row["writer_id"]:
        out["writer_id"] = bytes.fromhex(row["writer_id"])
    if row["segment"]:
        name = row["segment"].encode()
        out["segment"] = struct.pack(">H", len(name)) + name
    return out


def _holds(f: Frame, want: dict[str, bytes]) -> bool:
    """Does each named field's span of the frame's bytes hold its encoded value?"""
    assert f.spans is not None and f.data is not None
    return all(name in f.spans and f.data[slice(*f.spans[name])] == value for name, value in want.items())


@pytest.mark.parametrize("path", _CAPTURES, ids=lambda p: p.name)
def test_spans_hold_the_encoded_values_of_the_independent_decode(path: Path) -> None:
    rows = tsv_rows(path.with_name(path.name.replace(".pcap", ".frames.tsv")))
    frames: dict[tuple[int, str], list[Frame]] = {}
    for e in wiredump.dissect(path, spans=True, keep_bytes=True):
        if e.kind == "frame":
            frames.setdefault((e.obj.packet, e.obj.type), []).append(e.obj)
    checked = 0
    for row in rows:
        want = _encodings(row)
        if not want:
            continue
        candidates = frames.get((int(row["last_frame"]), row["type"]), [])
        assert candidates, f"no {row['type']} frame at #{row['last_frame']}"
        # Several frames of a type can end in one packet: the row is one of them.
        assert any(_holds(f, want) for f in candidates), (row, [f.spans for f in candidates])
        checked += len(want)
    assert checked >= 10  # every capture names segments, writers and request ids
