"""The engine over records read elsewhere (`records.dissect_records`, a Spark task's input) against
the engine over the file itself.

A Spark task gets one capture's records from its own reader (`wiredump.dissect.split`), with the
file's own packet numbers and the reader's end facts given after the last record; the engine takes
them through `Dissector.from_records`. Its events must be those of the same capture read as a file,
event for event (the rest of the suite checks those against the independent decodes).
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CAPTURES
from wiredump.dissect.capture import Record, open_capture
from wiredump.dissect.pipeline import Options, dissect
from wiredump.dissect.records import dissect_records

PICKS = [
    CAPTURES / "kafka" / "kafka-python-basic.pcap",
    CAPTURES / "pulsar" / "s04-consumer.pcap",
    CAPTURES / "pravega" / "p02-batching-multi-segment.pcap",
    CAPTURES / "tank" / "t02-bundles.pcap",
]
"""One capture per protocol."""


def _norm(o: Any) -> Any:
    """A comparable value for an event object: every dataclass field, recursively."""
    if is_dataclass(o):
        return (type(o).__name__, *(_norm(getattr(o, f.name)) for f in fields(o)))
    if isinstance(o, list | tuple):
        return tuple(_norm(x) for x in o)
    if isinstance(o, dict):
        return tuple(sorted((k, _norm(v)) for k, v in o.items()))
    return o


class _End:
    """End facts as a Spark task knows them once its records are exhausted."""

    def __init__(self, truncated: str | None, skipped: int) -> None:
        self.truncated = truncated
        self.skipped_unknown_link = skipped


def _records(path: Path) -> tuple[list[Record], _End]:
    reader = open_capture(str(path))
    recs = list(reader)
    return recs, _End(reader.truncated, getattr(reader, "skipped_unknown_link", 0))


def _events(events: Any) -> list[tuple]:
    return [(e.kind, e.capture, _norm(e.obj), _norm(e.frame)) for e in events]


@pytest.mark.parametrize("path", [p for p in PICKS if p.exists()], ids=lambda p: p.stem)
def test_records_decode_as_the_file(path: Path) -> None:
    recs, end = _records(path)
    name = str(path)  # the name the file is dissected under
    got = _events(dissect_records(name, iter(recs), Options(), end))
    assert got == _events(dissect([str(path)], Options()))
    assert sum(k == "frame" for k, *_ in got) > 0
    # A share of the connections, as `--shards` tasks decode.
    for k in range(2):
        opts = Options(shard=(k, 2))
        assert _events(dissect_records(name, iter(recs), opts, end)) == _events(dissect([name], opts))
    # The file's numbers, whatever they are: a task whose records start later and skip some
    # (records of another interface, left out) keeps them as given.
    sub = [r for r in recs[3:] if r.number % 7]
    numbers = {r.number for r in sub}
    evs = list(dissect_records(path.name, iter(sub), Options(), _End("cut short for the test", 2)))
    assert {e.obj.packet for e in evs if e.kind == "frame"} <= numbers
    assert evs[-1].obj.truncated == "cut short for the test"


def test_end_facts_reach_capture_end() -> None:
    path = PICKS[0]
    if not path.exists():
        pytest.skip(f"no capture {path}")
    recs, _ = _records(path)
    evs = list(dissect_records("x.pcap", iter(recs), Options(), _End("damaged at the end", 5)))
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
        list(dissect_records(path.name, failing(), Options(), end))


def test_record_hook_sees_every_record_and_may_read_the_reader() -> None:
    """`on_record` (the CLI's packet times and progress) gets every record's number and time, the
    Python reader's, before the events of that record, and may read the reader meanwhile."""
    from wiredump.dissect.pipeline import dissect_capture, open_source

    path = str(PICKS[0])
    if not PICKS[0].exists():
        pytest.skip(f"no capture {path}")
    expected = [(r.number, r.ts_us) for r in open_capture(path)]
    reader = open_source(path, Options(protocols=()))
    seen: list[tuple[int, int]] = []

    def on_record(number: int, ts_us: int) -> None:
        assert reader.bytes_read > 0
        seen.append((number, ts_us))

    reader.on_record = on_record
    for ev in dissect_capture(reader, Options(protocols=())):
        packet = getattr(ev.obj, "packet", None) or getattr(ev.obj, "packets", 0)
        assert seen and seen[-1][0] >= packet, "an event before its packet's record"
    assert seen == expected
