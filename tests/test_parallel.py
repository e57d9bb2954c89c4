"""Parallel export (connections split across processes) gives the serial export's rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import CAPTURES
from wiredump.cli.app import main
from wiredump.dissect.tables import TABLES

REAL = [
    CAPTURES / "kafka" / "kafka-python-basic.pcap",
    CAPTURES / "pulsar" / "s04-consumer.pcap",
    CAPTURES / "pravega" / "p02-batching-multi-segment.pcap",
    CAPTURES / "tank" / "t02-bundles.pcap",
]


def _export(out: Path, workers: int) -> None:
    with pytest.raises(SystemExit) as e:
        main(["export", *map(str, REAL), "-o", str(out), "--workers", str(workers)])
    assert e.value.code == 0


def _sorted(t):  # noqa: ANN001, ANN202
    keys = [(c, "ascending") for c in t.schema.names if c not in ("key", "value", "headers")]
    return t.sort_by(keys)


@pytest.mark.skipif(not all(p.exists() for p in REAL), reason="real captures missing")
def test_two_workers_give_the_serial_rows(tmp_path: Path) -> None:
    _export(tmp_path / "one", 1)
    _export(tmp_path / "two", 2)
    for table in TABLES:
        a = pq.read_table(tmp_path / "one" / f"{table}.parquet")
        b = pq.read_table(tmp_path / "two" / f"{table}.parquet")
        assert a.schema == b.schema
        assert a.num_rows == b.num_rows, table
        if table in ("frames", "messages", "connections"):
            assert a.equals(b), table  # same rows in the same (packet) order
        else:
            assert _sorted(a).equals(_sorted(b)), table
    frames = pq.read_table(tmp_path / "two" / "frames.parquet")
    # Every protocol's connections were decoded by one of the two workers.
    assert set(frames.column("protocol").to_pylist()) == {"kafka", "pulsar", "pravega", "tank"}


@pytest.mark.skipif(not all(p.exists() for p in REAL), reason="real captures missing")
def test_parallel_export_is_deterministic(tmp_path: Path) -> None:
    _export(tmp_path / "a", 2)
    _export(tmp_path / "b", 2)
    for table in TABLES:
        assert (tmp_path / "a" / f"{table}.parquet").read_bytes() == (
            tmp_path / "b" / f"{table}.parquet"
        ).read_bytes()
