"""The splittable reader gives, at every cut point, exactly the records of the local reader.

The reference is `wiredump.dissect.capture` (one reader over the whole file), whose records the
rest of the suite checks against tshark and the independent decodes beside the captures. Here
the file is cut into ranges, each range is counted and read on its own as a Spark task would,
and the union must be the same records (numbers, times, link types, bytes, notes) in the same
order, with the same end-of-file facts (truncation text, skipped records). pcapng versions of
the real captures are made with Wireshark's editcap, which is independent of wiredump.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import pytest

from wiredump.dissect import split as S
from wiredump.dissect.capture import CaptureError, open_capture


def _local(path: Path) -> tuple[list[tuple], str | None, int]:
    r = open_capture(str(path))
    recs = [(x.number, x.ts_us, x.linktype, x.data, x.orig_len, x.ts_note) for x in r]
    return recs, r.truncated, r.skipped_unknown_link


def _split(path: Path, cuts: list[int]) -> tuple[list[tuple], str | None, int, int]:
    """Count, plan (recounting merged ranges) and read ranges [cuts[i], cuts[i+1]) as tasks would."""
    cf = S.probe(str(path))
    bounds = [cf.data_start, *cuts, cf.size]
    ranges = [S.Range(0, a, b) for a, b in zip(bounds, bounds[1:], strict=False) if a < b] or [
        S.Range(0, cf.data_start, cf.size)
    ]
    tasks: list[S.Task] = []
    while True:
        counts = [S.count_range(cf, r) for r in ranges]
        done, redo = S.plan([cf], ranges, counts)
        tasks += done
        if not redo:
            break
        ranges = redo
    out: list[tuple] = []
    truncated, skipped = None, 0
    for t in sorted(tasks, key=lambda t: t.start):
        end = S.RangeEnd(None, 0)
        out += [
            (x.number, x.ts_us, x.linktype, x.data, x.orig_len, x.ts_note) for x in S.read_range(cf, t, end)
        ]
        skipped += end.skipped_unknown_link
        if end.truncated:
            truncated = end.truncated
            break
    return out, truncated, skipped, len(tasks)


@pytest.fixture(scope="module")
def pcapng(captures: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("editcap") is None:
        pytest.skip("editcap (Wireshark) is not installed")
    out = tmp_path_factory.mktemp("ng")
    made = {}
    for name in ("kafka/go-sniffer-kafka.pcap", "tank/t04-keys.pcap", "pulsar/s04-consumer.pcap"):
        dst = out / (Path(name).stem + ".pcapng")
        subprocess.run(["editcap", "-F", "pcapng", str(captures / name), str(dst)], check=True)
        made[name] = dst
    ns = out / "t04-keys.ns.pcap"
    subprocess.run(["editcap", "-F", "nsecpcap", str(captures / "tank/t04-keys.pcap"), str(ns)], check=True)
    made["ns"] = ns
    return made


@pytest.mark.parametrize("name", ["kafka/go-sniffer-kafka.pcap", "tank/t04-keys.pcap"])
def test_every_cut_point_of_a_small_pcap(captures: Path, name: str) -> None:
    path = captures / name
    ref = _local(path)
    assert len(ref[0]) >= 20
    split_in_two = 0
    for c in range(25, path.stat().st_size):
        got = _split(path, [c])
        assert got[:3] == ref, c
        split_in_two += got[3] == 2
    # The guesses are good: nearly every cut gives two tasks (a cut in the last records has no
    # two successors to confirm it, and merges).
    assert split_in_two > 0.9 * (path.stat().st_size - 25)


@pytest.mark.parametrize("name", ["kafka/go-sniffer-kafka.pcap", "tank/t04-keys.pcap", "ns"])
def test_every_cut_point_of_a_small_pcapng_and_ns_pcap(pcapng: dict[str, Path], name: str) -> None:
    path = pcapng[name]
    ref = _local(path)
    cf = S.probe(str(path))
    assert cf.format == ("pcap" if name == "ns" else "pcapng") and (name != "ns" or cf.nano)
    for c in range(cf.data_start + 1, path.stat().st_size):
        assert _split(path, [c])[:3] == ref, c


@pytest.mark.parametrize(
    "name,size",
    [
        ("pulsar/s04-consumer.pcap", 997),
        ("kafka/kafka-python-basic.pcap", 4096),
        ("pravega/p02-batching-multi-segment.pcap", 1500),
        ("kafka/ck-compress-zstd.pcap", 333),
        ("pravega/p08-large-events.pcap", 700_000),  # records of ~65 KB: many ranges hold no boundary
    ],
)
def test_many_ranges_give_the_same_records_and_packet_numbers(captures: Path, name: str, size: int) -> None:
    path = captures / name
    ref = _local(path)
    cuts = list(range(24 + size, path.stat().st_size, size))
    assert len(cuts) >= 8
    got = _split(path, cuts)
    assert got[:3] == ref
    assert got[3] >= 8


def test_many_ranges_of_a_pcapng(pcapng: dict[str, Path]) -> None:
    path = pcapng["pulsar/s04-consumer.pcap"]
    ref = _local(path)
    got = _split(path, list(range(512, path.stat().st_size, 512)))
    assert got[:3] == ref and got[3] >= 8


def test_a_capture_cut_short_is_truncated_where_the_local_reader_says(captures: Path, tmp_path: Path) -> None:
    data = (captures / "tank/t04-keys.pcap").read_bytes()
    for keep in (len(data) - 7, len(data) - 30, 2000, 40):
        path = tmp_path / f"cut{keep}.pcap"
        path.write_bytes(data[:keep])
        ref = _local(path)
        assert ref[1] is not None
        for step in (13, 200):
            assert _split(path, list(range(24 + step, keep, step)))[:3] == ref, (keep, step)


def test_a_damaged_record_length_stops_reading_as_locally(captures: Path, tmp_path: Path) -> None:
    data = bytearray((captures / "tank/t04-keys.pcap").read_bytes())
    # The third record's caplen claims 2^31 bytes: the local reader stops there.
    pos = 24
    for _ in range(2):
        pos += 16 + int.from_bytes(data[pos + 8 : pos + 12], "little")
    data[pos + 8 : pos + 12] = (1 << 31).to_bytes(4, "little")
    path = tmp_path / "damaged.pcap"
    path.write_bytes(bytes(data))
    ref = _local(path)
    assert len(ref[0]) == 2 and "corrupt" in (ref[1] or "")
    for step in (50, 500):
        assert _split(path, list(range(24 + step, len(data), step)))[:3] == ref


def test_compressed_captures_are_one_range_read_whole(captures: Path, tmp_path: Path) -> None:
    path = tmp_path / "t04.pcap.gz"
    path.write_bytes(gzip.compress((captures / "tank/t04-keys.pcap").read_bytes()))
    cf = S.probe(str(path))
    assert cf.format == "whole" and S.cut(cf, 0, 100) == [S.Range(0, 0, cf.size)]
    assert _split(path, [])[:3] == _local(path)


def test_probe_names_the_capture_as_given(tmp_path: Path) -> None:
    (tmp_path / "empty.pcap").write_bytes(b"")
    (tmp_path / "text.pcap").write_bytes(b"hello, this is not a capture at all")
    cases = {
        "empty.pcap": "is empty",
        "text.pcap": "not a pcap or pcapng capture",
        "missing.pcap": "no such file",
    }
    for name, why in cases.items():
        with pytest.raises(CaptureError) as e:
            S.probe(name, (tmp_path / name).as_uri())
        assert str(e.value).startswith(f"{name}: ") and why in str(e.value)


def test_file_uris_and_plain_paths_read_the_same(captures: Path) -> None:
    path = captures / "tank/t04-keys.pcap"
    a = S.probe(str(path))
    b = S.probe("t04", path.as_uri())
    assert (a.size, a.format, a.first_sec) == (b.size, b.format, b.first_sec)
    tasks = S.plan_file_locally(b, 0, 1000)
    got = [r.number for t in tasks for r in S.read_range(b, t)]
    assert got == list(range(1, len(_local(path)[0]) + 1))


@pytest.mark.parametrize(
    "name", ["kafka/kafka-python-basic.pcap", "pravega/p08-large-events.pcap", "pulsar/s04-consumer.pcap"]
)
def test_a_whole_file_task_reads_as_locally(captures: Path, pcapng: dict[str, Path], name: str) -> None:
    """`whole_file` (no counting pass: the default route's capture date, the data source) on pcap and,
    where editcap made one, pcapng."""
    for path in (captures / name, pcapng.get(name)):
        if path is None:
            continue
        cf = S.probe(str(path))
        end = S.RangeEnd(None, 0)
        recs = [
            (x.number, x.ts_us, x.linktype, x.data, x.orig_len, x.ts_note)
            for x in S.read_range(cf, S.whole_file(cf), end)
        ]
        assert (recs, end.truncated, end.skipped_unknown_link) == _local(path)
