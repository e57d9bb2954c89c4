"""The plain timeline, for which the engine hands the frames over without their decoded fields.

The lines read only a frame's columns and summary, so `timeline` turns `Options.detail` off when
nothing else looks at the fields (no -V, -Y, -T, --mark NAME) and the `Dissector` then makes no
Python object per decoded field. These tests check that the flag leaves every other part of a
frame as it was, and that the plain line is the rich path's line.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from tests.conftest import CAPTURES, ROOT
from wiredump.dissect.pipeline import FRAME, Options, dissect

REAL = sorted(CAPTURES.glob("*/*.pcap")) + sorted((ROOT / "samples").glob("*.pcap"))
REAL_IDS = [f"{p.parent.name}/{p.stem}" for p in REAL]


@pytest.mark.parametrize("path", REAL[:12], ids=REAL_IDS[:12])
def test_detail_off_leaves_only_fields_and_partitions_out(path: Path) -> None:
    def frames(detail: bool) -> list:
        return [e.obj for e in dissect([str(path)], Options(detail=detail)) if e.kind == FRAME]

    full, bare = frames(True), frames(False)
    assert len(full) == len(bare)
    skip = {"fields", "partitions", "context", "anomalies", "messages"}
    for a, b in zip(full, bare, strict=True):
        assert b.fields == {} and b.partitions is None
        for f in fields(a):
            if f.name not in skip:
                assert getattr(a, f.name) == getattr(b, f.name), f.name
        assert [(x.kind, x.detail, x.offset) for x in a.anomalies] == [
            (x.kind, x.detail, x.offset) for x in b.anomalies
        ]
        assert len(a.messages) == len(b.messages)
    assert any(f.fields for f in full), "a capture with decoded fields at all"


@pytest.mark.parametrize("path", REAL, ids=REAL_IDS)
def test_plain_frame_is_plain_line_of_parts(path: Path) -> None:
    """The plain timeline's one-step line equals the line made from its `Parts` (the rich path's)."""
    from wiredump.cli.render import parts, plain_frame, plain_line

    frames = [e.obj for e in dissect([str(path)], Options()) if e.kind == FRAME]
    verdicts = [(None, None), ("unanswered", None), (None, "gap"), ("no reply yet", "resync")]
    for i, f in enumerate(frames):
        reply, after = verdicts[i % len(verdicts)]
        time = f"{i}.000001"
        assert plain_frame(f, time, reply, after) == plain_line(parts(f, time, reply, after))


def test_frames_follow_the_dataclass_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine reads `Frame`'s field order from the dataclass (the one declaration, no list of
    its own): a class declared in another order gets the same values; one with a field the engine
    does not fill (with a default) is made with keywords; one without a field the engine fills is
    refused rather than losing it."""
    import dataclasses

    from wiredump.dissect import model

    path = REAL[0]
    expected = [e.obj for e in dissect([str(path)], Options()) if e.kind == FRAME]
    declared = [(f.name, f.type, f) for f in dataclasses.fields(model.Frame)]
    reordered = dataclasses.make_dataclass(
        "Frame", list(reversed([(n, t, dataclasses.field(default=None)) for n, t, _ in declared]))
    )
    extra = dataclasses.make_dataclass(
        "Frame",
        [("first_of_all", int, dataclasses.field(default=7))]
        + [(n, t, dataclasses.field(default=None)) for n, t, _ in declared],
    )
    for cls in (reordered, extra):
        monkeypatch.setattr(model, "Frame", cls)
        got = [e.obj for e in dissect([str(path)], Options()) if e.kind == FRAME]
        assert got and all(type(f) is cls for f in got)
        assert len(got) == len(expected)
        for a, b in zip(expected, got, strict=True):
            for name, _, _ in declared:
                if name not in ("anomalies", "messages", "partitions", "context"):
                    assert getattr(b, name) == getattr(a, name), name
    assert all(f.first_of_all == 7 for f in got)
    lacking = dataclasses.make_dataclass(
        "Frame", [(n, t, dataclasses.field(default=None)) for n, t, _ in declared if n != "latency_us"]
    )
    monkeypatch.setattr(model, "Frame", lacking)
    with pytest.raises(TypeError, match="latency_us"):
        list(dissect([str(path)], Options()))
