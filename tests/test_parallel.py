"""Parallel export (connections split across processes) gives the serial export's rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import CAPTURES
from wiredump.cli.entry import main
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


# -- the terminal's end-of-capture notes and progress with --workers N (issue 16 items 7, 12, 13) ------
# Expected lines are the text, with the snap-length figures computed from the records the
# tests build; each case runs with one worker and with two and must give the same output and exit.

NO_BROKER = "no Kafka/Pulsar/Pravega/TANK frames in 1 TCP connection (port 80); try -d PORT=PROTO"


def _kafka_metadata(cid: int) -> bytes:
    """A Kafka Metadata v1 request for topic `orders` (api key 3, client id `c`)."""
    import struct

    body = struct.pack(">i", 1) + struct.pack(">h", 6) + b"orders"
    msg = struct.pack(">hhi", 3, 1, cid) + struct.pack(">h", 1) + b"c" + body
    return struct.pack(">i", len(msg)) + msg


def _web(path: Path) -> Path:
    """One HTTP connection on port 80: handshake and one GET (4 packets), no broker traffic."""
    from crafted import Conn, Rec, write_pcap

    recs: list[Rec] = []
    Conn(recs, 51000, 80).client(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    return write_pcap(path, recs)


def _snap(path: Path) -> tuple[Path, int]:
    """A Kafka request whose 4 records each claim 4 more bytes than captured; the first's length."""
    from crafted import Conn, Rec, write_pcap

    recs: list[Rec] = []
    Conn(recs, 40000, 9092).client(_kafka_metadata(1))
    for r in recs:
        r.orig_len = len(r.data) + 4
    return write_pcap(path, recs), len(recs[0].data)


def _snap_line(first: int) -> str:
    return (
        f"4 packets (#1 to #4) cut by the snap length or claiming a longer original length than "
        f"captured, e.g. #1: packet cut by the snap length: {first} of {first + 4} bytes captured "
        "(each is a truncated_packet row of the anomalies table; -A shows each)"
    )


def _both(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    """Run with --workers 1 and --workers 2; both must give the same output and exit code."""
    from cli_support import run_cli

    one = run_cli(capsys, *args, "--workers", "1")
    two = run_cli(capsys, *args, "--workers", "2")
    assert (two.code, two.out, two.err) == (one.code, one.out, one.err)
    return one.code, one.out, one.err


def test_workers_say_when_there_is_no_broker_traffic(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    web = _web(tmp_path / "web.pcap")
    assert _both(capsys, web) == (0, "", f"wiredump: {NO_BROKER}\n")
    assert _both(capsys, web, "-T", "jsonl") == (0, "", f"wiredump: {NO_BROKER}\n")


def test_workers_summarise_snap_length_notes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    snap, first = _snap(tmp_path / "snap.pcap")
    code, out, err = _both(capsys, snap)
    assert code == 0
    assert out.splitlines() == [
        "     4   0.003000   0 127.0.0.1:40000 → 127.0.0.1:9092 kafka   Metadata v1 id=1 [unanswered]  orders"
    ]
    assert err == f"wiredump: {_snap_line(first)}\n"
    code, out, err = _both(capsys, snap, "-A")  # -A: each note on its packet, no summary
    assert code == 0 and err == ""
    assert [x.split()[0] for x in out.splitlines() if "truncated_packet" in x] == ["1", "2", "3", "4"]


def test_workers_notes_of_several_captures(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    web = _web(tmp_path / "web.pcap")
    snap, first = _snap(tmp_path / "snap.pcap")
    code, out, err = _both(capsys, web, snap)
    assert code == 0
    lines = out.splitlines()
    assert lines[:2] == [f"==> {web} <==", f"==> {snap} <=="]  # a header for the capture with no line too
    assert len(lines) == 3 and "Metadata v1 id=1" in lines[2]
    assert err == f"wiredump: {web}: {NO_BROKER}\nwiredump: {snap}: {_snap_line(first)}\n"


def test_export_with_workers_shows_progress(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from cli_support import run_cli
    from crafted import Conn, Rec, write_pcap

    from wiredump.cli import source

    recs: list[Rec] = []
    c = Conn(recs, 51000, 80)
    for _ in range(2097):
        c.client(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    pcap = write_pcap(tmp_path / "web.pcap", recs)
    assert len(recs) == 2100
    seen = tmp_path / "seen"  # the bar is drawn in a worker process: it reports through a file
    monkeypatch.setattr(source.Progress, "wanted", staticmethod(lambda: True))

    def update(self: source.Progress, pos: int, packets: int) -> None:
        with open(seen, "a") as f:
            f.write(f"{packets}\n")

    monkeypatch.setattr(source.Progress, "update", update)
    for workers in ("1", "2"):
        seen.write_text("")
        res = run_cli(capsys, "export", pcap, "-o", tmp_path / f"out{workers}", "--workers", workers)
        assert res.code == 0, res.err
        assert seen.read_text().split() == ["1024", "2048"]  # every 1024 packets of the 2100, one bar
    monkeypatch.setattr(source.Progress, "wanted", staticmethod(lambda: False))  # a pipe, CI=true
    seen.write_text("")
    assert run_cli(capsys, "export", pcap, "-o", tmp_path / "out3", "--workers", "2").code == 0
    assert seen.read_text() == ""
