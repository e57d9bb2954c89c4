"""Spark's reader (`wiredump.dissect.split`, through pyarrow's file systems) gives exactly the records
of the local reader.

The reference is `wiredump.dissect.capture`, whose records test_capture*.py check by hand and
test_capture_readers.py against the engine's own reader. Both must give the same records
(numbers, times, link types, bytes, notes) in the same order, with the same end-of-file facts
(truncation text, skipped records), on pcap, ns pcap and pcapng (made with Wireshark's editcap,
which is independent of wiredump), cut short, damaged and compressed.
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


def _split(path: Path) -> tuple[list[tuple], str | None, int]:
    """The records as a Spark task reads the whole file."""
    cf = S.probe(str(path))
    end = S.RangeEnd(None, 0)
    recs = [
        (x.number, x.ts_us, x.linktype, x.data, x.orig_len, x.ts_note)
        for x in S.read_range(cf, S.whole_file(cf), end)
    ]
    return recs, end.truncated, end.skipped_unknown_link


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


@pytest.mark.parametrize(
    "name",
    [
        "kafka/go-sniffer-kafka.pcap",
        "tank/t04-keys.pcap",
        "pulsar/s04-consumer.pcap",
        "kafka/kafka-python-basic.pcap",
        "pravega/p08-large-events.pcap",
    ],
)
def test_a_pcap_reads_as_locally(captures: Path, name: str) -> None:
    path = captures / name
    ref = _local(path)
    assert len(ref[0]) >= 20
    assert _split(path) == ref


@pytest.mark.parametrize("name", ["kafka/go-sniffer-kafka.pcap", "tank/t04-keys.pcap", "ns"])
def test_a_pcapng_and_an_ns_pcap_read_as_locally(pcapng: dict[str, Path], name: str) -> None:
    path = pcapng[name]
    cf = S.probe(str(path))
    assert cf.format == ("pcap" if name == "ns" else "pcapng") and (name != "ns" or cf.nano)
    assert _split(path) == _local(path)


def test_a_capture_cut_short_is_truncated_where_the_local_reader_says(captures: Path, tmp_path: Path) -> None:
    data = (captures / "tank/t04-keys.pcap").read_bytes()
    for keep in (len(data) - 7, len(data) - 30, 2000, 40):
        path = tmp_path / f"cut{keep}.pcap"
        path.write_bytes(data[:keep])
        ref = _local(path)
        assert ref[1] is not None
        assert _split(path) == ref, keep


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
    assert _split(path) == ref


def test_compressed_captures_are_read_whole(captures: Path, tmp_path: Path) -> None:
    path = tmp_path / "t04.pcap.gz"
    path.write_bytes(gzip.compress((captures / "tank/t04-keys.pcap").read_bytes()))
    assert S.probe(str(path)).format == "whole"
    assert _split(path) == _local(path)


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
    got = [r.number for r in S.read_range(b, S.whole_file(b))]
    assert got == list(range(1, len(_local(path)[0]) + 1))
