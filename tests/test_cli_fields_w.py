"""`-T fields -e … -E …` and `-w OUT.pcap`, checked against tshark and the decodes beside the captures."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.cli_support import run_cli
from tests.conftest import tsv_rows

PINNED = "kafka/kafka-python-pinned-2.5.pcap"
EMBEDDED_TOPICS = {"11", "14"}
"""JoinGroup and SyncGroup carry topics inside the embedded consumer protocol, which tshark shows as bytes."""


def tshark(*args: str) -> str:
    if shutil.which("tshark") is None:
        pytest.skip("tshark not installed")
    return subprocess.run(["tshark", *args], capture_output=True, text=True, check=True).stdout


def pcap_records(path: Path) -> list[tuple[int, bytes]]:
    """(µs time, bytes) of each record of a little-endian µs pcap, read without wiredump."""
    data = path.read_bytes()
    assert struct.unpack_from("<I", data)[0] == 0xA1B2C3D4
    out, pos = [], 24
    while pos + 16 <= len(data):
        sec, usec, incl, _ = struct.unpack_from("<IIII", data, pos)
        out.append((sec * 1_000_000 + usec, data[pos + 16 : pos + 16 + incl]))
        pos += 16 + incl
    return out


# -- -T fields ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "options",
    [
        ["header=y", "separator=,"],
        ["header=y", "separator=/s", "quote=d"],
        ["occurrence=f", "separator=;"],
        ["occurrence=l", "aggregator=|"],
    ],
)
def test_fields_lines_are_tsharks(
    capsys: pytest.CaptureFixture[str], captures: Path, options: list[str]
) -> None:
    """Every line tshark prints for these fields, wiredump prints the same; the lines tshark lacks are the
    JoinGroup/SyncGroup frames whose topics only wiredump decodes. wiredump also takes the options joined
    by commas in one -E (tshark wants one -E each)."""
    path = captures / PINNED
    fields = [
        "-e",
        "frame.number",
        "-e",
        "kafka.topic_name",
        "-e",
        "kafka.partition_id",
        "-e",
        "kafka.client_id",
    ]
    tshark_opts = [a for o in options for a in ("-E", o)]
    expected = tshark(
        "-r", str(path), "-Y", "kafka.topic_name", "-T", "fields", *fields, *tshark_opts
    ).splitlines()
    r = run_cli(capsys, path, "-Y", "kafka.topic_name", "-T", "fields", *fields, "-E", ",".join(options))
    assert r.code == 0, r.err
    got = r.out.splitlines()
    if "header=y" in options:
        sep = {"separator=,": ",", "separator=/s": " "}[options[1]]
        assert got[0] == sep.join(
            ["frame.number", "kafka.topic_name", "kafka.partition_id", "kafka.client_id"]
        )
        got, expected = got[1:], expected[1:]
    assert len(expected) > 20
    assert set(expected) <= set(got)
    api = {row["last_frame"]: row["api_key"] for row in tsv_rows(path.with_name(path.stem + ".pdus.tsv"))}
    for line in set(got) - set(expected):
        digits = ""
        for ch in line.lstrip('"'):
            if not ch.isdigit():
                break
            digits += ch
        assert api[digits] in EMBEDDED_TOPICS, line


@pytest.mark.parametrize("flt", ["kafka.error != 0", "kafka.error == 0 && kafka.api_key == 3"])
def test_fields_error_codes_are_tsharks(capsys: pytest.CaptureFixture[str], captures: Path, flt: str) -> None:
    """Every error code of a frame, once each (tshark's semantics for != on a repeated field)."""
    path = captures / PINNED
    fields = ["-e", "frame.number", "-e", "kafka.error", "-e", "kafka.api_key", "-E", "header=y"]
    expected = tshark("-r", str(path), "-Y", flt, "-T", "fields", *fields)
    assert len(expected.splitlines()) > 1
    r = run_cli(capsys, path, "-Y", flt, "-T", "fields", *fields)
    assert r.code == 0 and r.out == expected


def test_fields_values_escape_and_types(capsys: pytest.CaptureFixture[str], captures: Path) -> None:
    """Booleans 1/0, times with 9 decimals, record keys as hex: as tshark prints them."""
    path = captures / PINNED
    fields = ["-e", "frame.number", "-e", "kafka.allow_auto_topic_creation", "-e", "frame.time_relative"]
    expected = tshark("-r", str(path), "-Y", "kafka.allow_auto_topic_creation", "-T", "fields", *fields)
    r = run_cli(capsys, path, "-Y", "kafka.allow_auto_topic_creation", "-T", "fields", *fields)
    assert r.code == 0 and r.out == expected
    key = b"kp-pinned-gzip-key-0003"
    r = run_cli(capsys, path, "-Y", f'kafka.record.key == "{key.decode()}"', "-e", "kafka.record.key")
    assert key.hex() in r.out.strip().split(",")


def test_fields_usage_errors(capsys: pytest.CaptureFixture[str], captures: Path) -> None:
    path = captures / PINNED
    r = run_cli(capsys, path, "-T", "fields")
    assert r.code == 2 and "needs at least one -e" in r.err
    r = run_cli(capsys, path, "-e", "kafka.clientid")
    assert r.code == 2 and "did you mean 'kafka.client_id'?" in r.err
    r = run_cli(capsys, path, "-e", "frame.number", "-E", "occurrence=x")
    assert r.code == 2 and "occurrence takes f, l or a" in r.err


def test_fields_pravega_segment_against_frames_tsv(
    capsys: pytest.CaptureFixture[str], captures: Path
) -> None:
    path = captures / "pravega/p01-writer-reader-basic.pcap"
    rows = tsv_rows(path.with_name(path.stem + ".frames.tsv"))
    r = run_cli(capsys, path, "-T", "fields", "-e", "frame.number", "-e", "type", "-e", "pravega.segment")
    assert r.code == 0, r.err
    got = Counter(tuple(line.split("\t")) for line in r.out.splitlines())
    expected = Counter((row["last_frame"], row["type"], row["segment"]) for row in rows)
    assert got == expected


# -- -w -------------------------------------------------------------------------------------------------
def frames_of(
    capsys: pytest.CaptureFixture[str], path: Path, flt: str, pairing: bool
) -> Counter[tuple[str, ...]]:
    cols = ["kind", "type", "version", "correlation_id", "status", "length"]
    if pairing:
        cols += ["summary", "latency_us"]
    args = [a for c in cols for a in ("-e", c)]
    r = run_cli(capsys, path, "-Y", flt, "-T", "fields", *args)
    assert r.code == 0, r.err
    return Counter(tuple(line.split("\t")) for line in r.out.splitlines())


@pytest.mark.parametrize(
    ("capture", "flt"),
    [
        (PINNED, 'kafka.topic == "kp-pinned-gzip"'),
        (PINNED, "kafka.error == MEMBER_ID_REQUIRED"),
        ("pulsar/s02-producer-batching.pcap", "pulsar.sequence_id in {2 3}"),
        ("tank/t02-bundles.pcap", "tank.topic && kind == response"),
        ("pravega/p02-batching-multi-segment.pcap", 'pravega.segment matches "/1\\\\."'),
    ],
)
def test_write_keeps_the_matching_frames(
    capsys: pytest.CaptureFixture[str], captures: Path, tmp_path: Path, capture: str, flt: str
) -> None:
    path = captures / capture
    out = tmp_path / "small.pcap"
    r = run_cli(capsys, path, "-Y", flt, "-w", out)
    assert r.code == 0, r.err
    assert r.out == ""
    # Frames keep their pairing (latency) and summaries, except a summary that names context from a frame
    # not written (a Pulsar SEND names the topic of its producer's PRODUCER command; see docs/terminal.md).
    pairing = not capture.startswith("pulsar/")
    expected = frames_of(capsys, path, flt, pairing)
    assert expected
    assert frames_of(capsys, out, flt, pairing) == expected
    # Every written record is one of the original's, byte for byte, in the original order.
    original = pcap_records(path)
    index = {rec: i for i, rec in enumerate(original)}
    written = pcap_records(out)
    positions = [index[rec] for rec in written]
    assert positions == sorted(positions)
    assert len(written) < len(original)
    with path.open("rb") as a, out.open("rb") as b:
        assert struct.unpack("<I", a.read(24)[20:24]) == struct.unpack("<I", b.read(24)[20:24])  # link type


def test_write_takes_every_segment_and_the_handshake(
    capsys: pytest.CaptureFixture[str], captures: Path, tmp_path: Path
) -> None:
    """Packets written = the segments tshark reassembled each matching PDU from, the request's of a matching
    response, and the connections' payload-less packets (handshake, ACKs, FIN)."""
    path = captures / PINNED
    flt = 'kafka.topic_name == "kp-pinned-lz4" && kafka.api_key == 1'
    out = tmp_path / "small.pcap"
    r = run_cli(capsys, path, "-Y", flt.replace("topic_name", "topic"), "-w", out)
    assert r.code == 0, r.err
    matched = {
        int(x) for x in tshark("-r", str(path), "-Y", flt, "-T", "fields", "-e", "frame.number").split()
    }
    rows = tsv_rows(path.with_name(path.stem + ".pdus.tsv"))
    by_last = {int(row["last_frame"]): row for row in rows}
    needed: set[int] = set()
    streams = set()
    for n in matched:
        row = by_last[n]
        streams.add(row["stream"])
        segs = json.loads(
            tshark("-r", str(path), "-Y", f"frame.number == {n}", "-T", "json", "-e", "tcp.segment")
        )
        seg_frames = segs[0]["_source"]["layers"].get("tcp.segment", [str(n)])
        needed |= {int(x) for x in seg_frames}
        if row["dir"] == "resp":
            needed.add(int(row["peer_frame"]))
    bare = tshark(
        "-r", str(path), "-Y", "tcp.len == 0", "-T", "fields", "-e", "frame.number", "-e", "tcp.stream"
    )
    control = {int(a) for a, s in (line.split("\t") for line in bare.splitlines()) if s in streams}
    assert len(control) >= 3 * len(streams)  # at least each handshake
    original = pcap_records(path)
    written = {original.index(rec) + 1 for rec in pcap_records(out)}
    assert written == needed | control


def test_write_usage_errors(capsys: pytest.CaptureFixture[str], captures: Path, tmp_path: Path) -> None:
    path = captures / PINNED
    r = run_cli(capsys, path, path, "-w", tmp_path / "x.pcap")
    assert r.code == 2 and "-w reads one capture file" in r.err
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = run_cli(capsys, path, "-Y", "kafka", "-w", blocker / "sub.pcap")
    assert r.code == 2 and r.err.startswith(f"wiredump: -w {blocker / 'sub.pcap'}: cannot be written")
    assert len(r.err.splitlines()) == 1


def test_written_capture_reads_the_same_in_tshark(
    capsys: pytest.CaptureFixture[str], captures: Path, tmp_path: Path
) -> None:
    """tshark finds in the small capture the same Kafka PDUs (api key, version, correlation id, topics) as in
    the original, for the frames the filter keeps."""
    path = captures / PINNED
    out = tmp_path / "small.pcap"
    r = run_cli(capsys, path, "-Y", 'kafka.topic == "kp-pinned-snappy"', "-w", out)
    assert r.code == 0, r.err
    cols = [
        "-e",
        "kafka.api_key",
        "-e",
        "kafka.api_version",
        "-e",
        "kafka.correlation_id",
        "-e",
        "kafka.topic_name",
    ]

    def pdus(p: Path) -> Counter[str]:
        text = tshark("-r", str(p), "-Y", 'kafka.topic_name == "kp-pinned-snappy"', "-T", "fields", *cols)
        return Counter(text.splitlines())

    expected = pdus(path)
    assert sum(expected.values()) > 10
    assert pdus(out) == expected
