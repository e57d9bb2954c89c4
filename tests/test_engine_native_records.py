"""The native engine over records read elsewhere (`records.dissect_records`, a Spark task's input)
against the Python reference over the same records.

A Spark task gets one capture's records from a shuffle, with the file's own packet numbers and the
reader's end facts given after the last record; the native engine takes them through
`Dissector.from_records`. Its events must be the reference's, event for event (expected values:
the Python engine, which the rest of the suite checks against the independent decodes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CAPTURES
from tests.test_engine_native import _norm
from wiredump.dissect.capture import Record, open_capture
from wiredump.dissect.pipeline import Options
from wiredump.dissect.records import dissect_records

pytest.importorskip("wiredump._engine")

PICKS = [
    CAPTURES / "kafka" / "kafka-python-basic.pcap",
    CAPTURES / "pulsar" / "s04-consumer.pcap",
    CAPTURES / "pravega" / "p02-batching-multi-segment.pcap",
    CAPTURES / "tank" / "t02-bundles.pcap",
]
"""One capture per protocol (every capture is compared whole, by file, in test_engine_native.py)."""


class _End:
    """End facts as a Spark task knows them once its records are exhausted."""

    def __init__(self, truncated: str | None, skipped: int) -> None:
        self.truncated = truncated
        self.skipped_unknown_link = skipped


def _records(path: Path) -> tuple[list[Record], _End]:
    reader = open_capture(str(path))
    recs = list(reader)
    return recs, _End(reader.truncated, getattr(reader, "skipped_unknown_link", 0))


def _events(engine: str, name: str, recs: list[Record], end: _End | None, **kw: Any) -> list[tuple]:
    return [
        (e.kind, e.capture, _norm(e.obj), _norm(e.frame))
        for e in dissect_records(name, iter(recs), Options(engine=engine, **kw), end)
    ]


def _same(name: str, recs: list[Record], end: _End | None, **kw: Any) -> list[tuple]:
    py = _events("python", name, recs, end, **kw)
    rs = _events("native", name, recs, end, **kw)
    for i, (a, b) in enumerate(zip(py, rs, strict=False)):
        assert a == b, f"{name}: event {i} differs\n python: {a}\n native: {b}"
    assert len(py) == len(rs)
    return py


@pytest.mark.parametrize("path", [p for p in PICKS if p.exists()], ids=lambda p: p.stem)
def test_records_decode_as_the_reference(path: Path) -> None:
    recs, end = _records(path)
    got = _same(path.name, recs, end)
    assert sum(k == "frame" for k, *_ in got) > 0
    # The file's numbers, whatever they are: a task whose records start later and skip some
    # (records of another interface, left out) keeps them as given.
    sub = [r for r in recs[3:] if r.number % 7]
    _same(path.name, sub, _End("cut short for the test", 2))
    # A share of the connections, as `--shards` tasks decode.
    for k in range(2):
        _same(path.name, recs, end, shard=(k, 2))


def test_end_facts_reach_capture_end() -> None:
    path = PICKS[0]
    if not path.exists():
        pytest.skip(f"no capture {path}")
    recs, _ = _records(path)
    evs = list(dissect_records("x.pcap", iter(recs), Options(engine="native"), _End("damaged at the end", 5)))
    end = evs[-1].obj
    assert (end.name, end.packets, end.truncated, end.skipped_unknown_link) == (
        "x.pcap",
        recs[-1].number,
        "damaged at the end",
        5,
    )
    assert [e.obj.kind for e in evs if e.kind == "anomaly" and e.obj.kind == "truncated_capture"] == [
        "truncated_capture"
    ]


def test_an_error_of_the_records_iterable_is_raised() -> None:
    """A failing read in the task (a file system error) is the task's error, not an early end."""
    path = PICKS[0]
    if not path.exists():
        pytest.skip(f"no capture {path}")
    recs, end = _records(path)

    def failing() -> Any:
        yield from recs[:10]
        raise OSError("the remote file went away")

    with pytest.raises(OSError, match="went away"):
        list(dissect_records(path.name, failing(), Options(engine="native"), end))
