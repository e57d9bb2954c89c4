"""The timeline (`wiredump CAPTURE`) on real captures, checked against the independent decodes."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from cli_support import parse_lines, pcap_payload, pcap_times, read_tsv, run_cli

from wiredump.dissect.tables import FRAMES


@pytest.fixture(scope="module")
def kafka_basic(captures):
    return captures / "kafka" / "kafka-python-basic.pcap"


def test_kafka_lines_match_the_pdus_tsv(capsys, kafka_basic):
    res = run_cli(capsys, kafka_basic)
    assert res.code == 0, res.err
    lines = parse_lines(res.out)
    rows = read_tsv(kafka_basic.with_name("kafka-python-basic.pdus.tsv"))
    assert len(lines) == len(rows) == 88
    by_key = {(int(x["packet"]), int(x["cid"])): x for x in lines}
    for r in rows:
        line = by_key[(int(r["last_frame"]), int(r["correlation_id"]))]
        assert int(line["stream"]) == int(r["stream"])
        assert line["protocol"] == "kafka"
        assert line["type"] == r["api_name"]
        assert int(line["version"]) == int(r["api_version"])
        # Every PDU of this capture sits in one segment, so first packet == packet.
        if r["dir"] == "req":
            assert line["arrow"] == "→"
            assert line["peer"] == f"→ #{r['peer_frame']}"
        else:
            assert line["arrow"] == "←"
            assert line["peer"].startswith(f"← #{r['peer_frame']} ")
        assert line["server"] == "127.0.0.1:9092"


def test_known_produce_line(capsys, kafka_basic):
    """Packet 45: the first Produce (pdus.tsv: stream 3, v9, correlation id 3, answered in packet 46)."""
    times = pcap_times(kafka_basic)
    res = run_cli(capsys, kafka_basic, "-Y", "packet == 45 || packet == 46")
    req, resp = parse_lines(res.out)
    d = times[44] - times[0]
    assert req["time"] == f"{d // 1_000_000}.{d % 1_000_000:06d}"
    assert (req["stream"], req["type"], req["version"], req["cid"]) == ("3", "Produce", "9", "3")
    assert req["client"] == "127.0.0.1:36052"
    assert req["peer"] == "→ #46"
    # The producer sent 201 records to kp-basic (scenario.json); this batch holds 30 + 20 of them.
    assert "kp-basic[0] 30 records" in req["summary"] and "kp-basic[1] 20 records" in req["summary"]
    lat = times[45] - times[44]
    assert resp["peer"] == f"← #45 {lat / 1000:.3f}ms"


def test_time_formats(capsys, kafka_basic):
    times = pcap_times(kafka_basic)
    res = run_cli(capsys, kafka_basic, "-Y", "packet in {45 46}", "-t", "a")
    first = parse_lines(res.out)[0]
    dt = datetime.fromtimestamp(times[44] / 1e6, tz=timezone.utc)
    assert first["time"] == dt.strftime("%H:%M:%S.%f")
    res = run_cli(capsys, kafka_basic, "-Y", "packet in {45 46}", "-t", "d")
    a, b = parse_lines(res.out)
    assert a["time"] == "0.000000"
    d = times[45] - times[44]
    assert b["time"] == f"0.{d:06d}"
    res = run_cli(capsys, kafka_basic, "-Y", "packet == 45", "-t", "e")
    assert parse_lines(res.out)[0]["time"] == f"{times[44] // 1_000_000}.{times[44] % 1_000_000:06d}"
    res = run_cli(capsys, kafka_basic, "-t", "x")
    assert res.code == 2 and "-t takes" in res.err


def test_pulsar_lines_match_the_summary(capsys, captures):
    pcap = captures / "pulsar" / "s01-producer-nobatch.pcap"
    summary = json.loads(pcap.with_name("s01-producer-nobatch.summary.json").read_text())
    res = run_cli(capsys, pcap)
    lines = parse_lines(res.out)
    assert len(lines) == summary["frames_total"] == 210
    got = sorted((int(x["packet"]), x["type"]) for x in lines)
    want = sorted((f["last_packet"], f["type"]) for f in summary["frames"])
    assert got == want
    for pair in summary["request_pairs"]:
        req = next(
            x for x in lines if int(x["packet"]) == pair["request_packet"] and x["type"] == pair["request"]
        )
        assert req["cid"] == str(pair["request_id"])
        assert req["peer"] == f"→ #{pair['response_packet']}"


def test_tank_lines_match_the_pdus_tsv(capsys, captures):
    pcap = captures / "tank" / "t07-errors.pcap"
    rows = read_tsv(pcap.with_name("t07-errors.pdus.tsv"))
    lines = parse_lines(run_cli(capsys, pcap).out)
    assert len(lines) == len(rows)
    for r in rows:
        cands = [
            x
            for x in lines
            if int(x["packet"]) == int(r["last_frame"])
            and x["type"] == r["msg_name"]
            and x["stream"] == r["stream"]
        ]
        assert cands, r
        if r["request_id"]:
            line = next(x for x in cands if x["cid"] == r["request_id"])
            assert line["arrow"] == ("→" if r["dir"] == "c>s" else "←")
            if r["peer_frame"]:
                assert line["peer"].split()[1] == f"#{r['peer_frame']}"


def test_pravega_lines_match_the_frames_tsv(capsys, captures):
    pcap = captures / "pravega" / "p06-seal-and-errors.pcap"
    rows = read_tsv(pcap.with_name("p06-seal-and-errors.frames.tsv"))
    lines = parse_lines(run_cli(capsys, pcap).out)
    assert len(lines) == len(rows) == 72
    got = sorted((int(x["packet"]), x["stream"], x["type"], x["cid"] or "") for x in lines)
    want = sorted((int(r["last_frame"]), r["stream"], r["type"], r["request_id"]) for r in rows)
    assert got == want


def test_unanswered_requests_are_badged(capsys, captures):
    """The requests pdus.tsv lists without a peer are exactly the ones marked unanswered."""
    pcap = captures / "kafka" / "kafka-python-legacy-msgset.pcap"
    rows = read_tsv(pcap.with_name("kafka-python-legacy-msgset.pdus.tsv"))
    want = sorted(int(r["last_frame"]) for r in rows if r["dir"] == "req" and not r["peer_frame"])
    assert want == [20, 109, 175]
    lines = parse_lines(run_cli(capsys, pcap).out)
    got = sorted(int(x["packet"]) for x in lines if x["badges"] and "unanswered" in x["badges"])
    assert got == want
    # Requests answered have their peer, never a badge.
    assert all(x["peer"] for x in lines if x["arrow"] == "→" and int(x["packet"]) not in want)


def test_plain_output_has_no_escape_codes(capsys, kafka_basic):
    res = run_cli(capsys, kafka_basic, "-V", "-x", "-c", "5")
    assert "\x1b" not in res.out
    res = run_cli(capsys, kafka_basic, "--no-color", "-c", "5")
    assert "\x1b" not in res.out and len(parse_lines(res.out)) == 5


def test_count(capsys, kafka_basic):
    res = run_cli(capsys, kafka_basic, "-c", "3")
    assert [x["packet"] for x in parse_lines(res.out)] == ["4", "6", "8"]
    res = run_cli(capsys, kafka_basic, "-c", "0")
    assert res.out == ""


def test_json_rows_have_the_frames_columns(capsys, kafka_basic):
    res = run_cli(capsys, kafka_basic, "-T", "json", "-Y", "type == Produce")
    rows = json.loads(res.out)
    tsv = read_tsv(kafka_basic.with_name("kafka-python-basic.pdus.tsv"))
    produce = [r for r in tsv if r["api_name"] == "Produce"]
    assert len(rows) == len(produce) == 10
    assert all(list(r) == FRAMES.names for r in rows)
    first = rows[0]
    assert (first["packet"], first["stream"], first["version"], first["correlation_id"]) == (45, 3, 9, 3)
    assert (first["kind"], first["role"], first["peer_packet"], first["dst_port"]) == (
        "request",
        "client",
        46,
        9092,
    )
    assert first["ts"].endswith("Z")
    detail = first["detail"]  # an object, not JSON text inside JSON (issue 16)
    assert detail["body"]["acks"] == -1
    res = run_cli(capsys, kafka_basic, "-T", "jsonl")
    objs = [json.loads(x) for x in res.out.splitlines()]
    assert len(objs) == len(tsv)
    assert json.loads(run_cli(capsys, kafka_basic, "-T", "json", "-c", "0").out) == []


def test_verbose_tree_and_hex(capsys, kafka_basic):
    res = run_cli(capsys, kafka_basic, "-V", "-x", "-Y", "packet == 45")
    out = res.out
    assert "acks: -1 (int)" in out
    assert 'name: "kp-basic" (str)' in out
    assert 'client_id: "heldout-kp-producer" (str)' in out  # pdus.tsv client_id of packet 45
    hex_rows = [
        x for x in out.splitlines() if len(x) > 5 and x[:4].isalnum() and x[4] == " " and x[5] in " ["
    ]
    dumped = bytearray()
    for row in hex_rows:
        cells = row[5:54].replace("[", " ").replace("]", " ").split()
        dumped += bytes(int(c, 16) for c in cells)
    payload = pcap_payload(kafka_basic, 45)
    tsv = {int(r["last_frame"]): r for r in read_tsv(kafka_basic.with_name("kafka-python-basic.pdus.tsv"))}
    # pdus.tsv's length is the Kafka size field; the frame adds the 4 bytes of that field.
    assert len(dumped) == int(tsv[45]["length"]) + 4 == len(payload)
    assert bytes(dumped) == payload


def test_missing_capture_is_one_line_exit_2(capsys, tmp_path):
    res = run_cli(capsys, tmp_path / "nope.pcap")
    assert res.code == 2
    assert res.err.strip().count("\n") == 0 and "no such file" in res.err


def _edit_pcap(src, dst, drop=(), dup=()):
    """Copy a pcap, leaving out the `drop` packets and writing the `dup` packets twice."""
    import struct

    b = src.read_bytes()
    out, pos, n = [b[:24]], 24, 0
    while pos + 16 <= len(b):
        incl = struct.unpack_from("<I", b, pos + 8)[0]
        rec = b[pos : pos + 16 + incl]
        pos += 16 + incl
        n += 1
        if n in drop:
            continue
        out.append(rec)
        if n in dup:
            out.append(rec)
    dst.write_bytes(b"".join(out))


def test_gap_and_retransmission_lines(capsys, captures, tmp_path):
    """Drop a data packet inside Pravega's 1 MiB append and repeat one inside the 3 MiB append."""
    src = captures / "pravega" / "p08-large-events.pcap"
    missing = len(pcap_payload(src, 31))
    repeated = len(pcap_payload(src, 61))
    assert missing == repeated == 65483
    pcap = tmp_path / "gap.pcap"
    _edit_pcap(src, pcap, drop={31}, dup={61})
    res = run_cli(capsys, pcap)
    out = res.out.splitlines()
    gap = [x for x in out if "! gap" in x]
    assert len(gap) == 1 and f"{missing} client bytes missing" in gap[0]
    assert any("! resync (pravega)" in x for x in out)
    assert not any("retransmission" in x for x in out)
    frames = parse_lines(res.out)
    cut = next(x for x in frames if x["type"] == "AppendBlockEnd")
    assert "truncated" in cut["badges"]
    assert any(x["badges"] and "after gap" in x["badges"] for x in frames)
    res = run_cli(capsys, pcap, "-A")
    retrans = [x for x in res.out.splitlines() if "! retransmission" in x]
    # Packet numbers shift by one after the dropped packet: the second copy of old #61 is #61.
    assert len(retrans) == 1 and retrans[0].split()[0] == "61" and f"{repeated} client bytes" in retrans[0]
    # With a filter, only frames are shown.
    res = run_cli(capsys, pcap, "-Y", "stream == 0")
    import re

    assert res.out and not any(re.match(r"^\s*\d+\s+\S+\s+\d+ ! ", x) for x in res.out.splitlines())


def test_progress_bar_only_on_a_terminal_and_never_in_ci(capsys, monkeypatch, kafka_basic):
    from wiredump.cli.source import Progress

    monkeypatch.setenv("CI", "true")
    assert Progress.wanted() is False
    monkeypatch.delenv("CI")
    assert Progress.wanted() is False  # stderr is captured here, not a terminal
    res = run_cli(capsys, kafka_basic)
    assert res.err == ""
    bar = Progress(total=200, enabled=True)
    bar.update(100, 1234)
    bar.close()
    err = capsys.readouterr().err
    assert "\r[" in err and " 50.0%" in err and "1,234 packets" in err
    assert err.endswith("\r")  # the bar wipes itself


@pytest.mark.tshark
def test_kafka_timeline_agrees_with_tshark(capsys, captures):
    """kafka-python-pinned-2.5 stays at versions tshark 4.0 decodes: compare packet, stream, time, ids."""
    import shutil
    import subprocess

    if not shutil.which("tshark"):
        pytest.skip("tshark not installed")
    pcap = captures / "kafka" / "kafka-python-pinned-2.5.pcap"
    fields = ["frame.number", "tcp.stream", "frame.time_relative", "kafka.api_key", "kafka.api_version"]
    fields += ["kafka.correlation_id", "kafka.request_frame"]
    cmd = ["tshark", "-n", "-r", str(pcap), "-Y", "kafka", "-T", "fields"] + [
        a for f in fields for a in ("-e", f)
    ]
    rows = [
        line.split("\t")
        for line in subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()
    ]
    ours = {}
    for obj in map(json.loads, run_cli(capsys, pcap, "-T", "jsonl").out.splitlines()):
        ours.setdefault(obj["packet"], []).append(obj)
    lines = {int(x["packet"]): x for x in parse_lines(run_cli(capsys, pcap).out)}
    checked = 0
    for number, stream, rel, key, version, cid, request_frame in rows:
        if "," in key:
            continue  # several PDUs in one packet: compared by the pdus.tsv tests
        got = ours[int(number)]
        assert len(got) == 1
        f = got[0]
        assert (f["stream"], f["type_code"], f["correlation_id"]) == (int(stream), int(key), int(cid))
        if version:
            assert f["kind"] == "request" and f["version"] == int(version)
        if request_frame:
            assert f["kind"] == "response" and f["peer_packet"] == int(request_frame)
        assert lines[int(number)]["time"] == rel[:-3]  # tshark prints nanoseconds
        checked += 1
    assert checked == len(ours) == 132


def test_workers_give_the_serial_lines(capsys, captures, tmp_path):
    """--workers 2 splits connections across processes; the merged output equals the serial one."""
    gap = tmp_path / "gap.pcap"
    _edit_pcap(captures / "pravega" / "p08-large-events.pcap", gap, drop={31}, dup={61})
    legacy = captures / "kafka" / "kafka-python-legacy-msgset.pcap"
    cases = [
        [gap, "-A"],
        [legacy, captures / "tank" / "t07-errors.pcap"],
        [legacy, "-Y", "kind == request", "-c", "7"],
        [legacy, "-T", "jsonl", "-t", "a"],
        [legacy, "-V", "-x", "-c", "3"],
    ]
    for args in cases:
        serial = run_cli(capsys, *args, "--workers", "1")
        parallel = run_cli(capsys, *args, "--workers", "2")
        assert serial.code == parallel.code == 0
        assert parallel.out == serial.out, args
        assert serial.out
    assert len(parse_lines(run_cli(capsys, legacy, "-c", "7", "--workers", "2").out)) == 7
    res = run_cli(capsys, "-", "--workers", "2")
    assert res.code == 2 and "stdin" in res.err
