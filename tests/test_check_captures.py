"""`wiredump check` / `wiredump baseline` on real captures.

Expected packet numbers, streams and counts come from the independent decodes beside
the captures (`*.pdus.tsv`, `*.summary.json`), and the damaged / re-run captures are
made here by editing the pcap bytes with a small reader of our own (not wiredump's).
"""

from __future__ import annotations

import csv
import json
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from wiredump.cli.entry import main

DATA = Path(__file__).parent / "data" / "check"


# -- a tiny classic-pcap editor (Ethernet + IPv4 + TCP), independent of wiredump -----------------
class Pcap:
    def __init__(self, path: Path) -> None:
        raw = path.read_bytes()
        magic = raw[:4]
        self.e = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        assert struct.unpack(self.e + "I", magic)[0] in (0xA1B2C3D4, 0xA1B23C4D)
        assert struct.unpack(self.e + "I", raw[20:24])[0] == 1, "Ethernet captures only"
        self.header = raw[:24]
        self.records: list[list] = []  # [ts_sec, ts_frac, orig_len, bytearray]
        pos = 24
        while pos + 16 <= len(raw):
            sec, frac, incl, orig = struct.unpack(self.e + "IIII", raw[pos : pos + 16])
            self.records.append([sec, frac, orig, bytearray(raw[pos + 16 : pos + 16 + incl])])
            pos += 16 + incl

    def tcp(self, number: int) -> tuple[int, int, int, int]:
        """(payload offset, payload length, sport, dport) of 1-based packet `number`."""
        d = self.records[number - 1][3]
        assert d[12:14] == b"\x08\x00"
        ihl = (d[14] & 0x0F) * 4
        total = struct.unpack(">H", d[16:18])[0]
        assert d[23] == 6
        t = 14 + ihl
        sport, dport = struct.unpack(">HH", d[t : t + 4])
        doff = (d[t + 12] >> 4) * 4
        return t + doff, 14 + total - (t + doff), sport, dport

    def set_ports(self, number: int, sport: int, dport: int) -> None:
        d = self.records[number - 1][3]
        t = 14 + (d[14] & 0x0F) * 4
        d[t : t + 4] = struct.pack(">HH", sport, dport)

    def write(self, path: Path) -> Path:
        out = bytearray(self.header)
        for sec, frac, orig, d in self.records:
            out += struct.pack(self.e + "IIII", sec, frac, len(d), max(orig, len(d))) + d
        path.write_bytes(bytes(out))
        return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    out, err = capsys.readouterr()
    return code, out, err


def pdus(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def forbid_rules(tmp_path: Path) -> Path:
    p = tmp_path / "forbid.yaml"
    p.write_text("forbid: [bad_checksum]\n")
    return p


# -- rules ------------------------------------------------------------------------------------------
def test_kafka_bad_checksum_fails_and_names_the_packet(
    captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = captures / "kafka" / "kafka-python-basic.pcap"
    rows = pdus(captures / "kafka" / "kafka-python-basic.pdus.tsv")
    # The first Produce request, whole in one segment (independent decode).
    produce = next(
        r for r in rows if r["api_name"] == "Produce" and r["dir"] == "req" and r["segments"] == "1"
    )
    packet, stream, length = int(produce["last_frame"]), int(produce["stream"]), int(produce["length"])
    assert (packet, stream) == (45, 3)
    pcap = Pcap(src)
    off, size, _, dport = pcap.tcp(packet)
    assert dport == 9092 and size == 4 + length  # the packet holds exactly this PDU (size prefix + body)
    # 20 bytes before the end of the request: inside the value of the last record of the
    # batch (after it come only the record's header count and 3 tagged-field bytes).
    pcap.records[packet - 1][3][off + size - 20] ^= 0x5A
    bad = pcap.write(tmp_path / "bad.pcap")

    code, out, err = run(["check", str(bad), "--rules", str(forbid_rules(tmp_path))], capsys)
    assert code == 1, out + err
    assert "FAIL forbid bad_checksum" in out
    assert f"packet {packet} stream {stream} kafka.Produce (client)" in out

    code, out, _ = run(["check", str(src), "--rules", str(forbid_rules(tmp_path))], capsys)
    assert code == 0 and "PASS forbid bad_checksum" in out


def test_pulsar_bad_checksum_json_names_the_packet(
    captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = captures / "pulsar" / "s01-producer-nobatch.pcap"
    summary = json.loads((captures / "pulsar" / "s01-producer-nobatch.summary.json").read_text())
    send = summary["payload_frames"][10]
    assert send["type"] == "SEND" and send["packets"][0] == send["packets"][1] and send["checksum_ok"]
    packet = send["packets"][0]
    pcap = Pcap(src)
    off, size, _, _ = pcap.tcp(packet)
    # One frame per packet here: 4-byte total size + total_size bytes; the payload ends it.
    assert size == send["total_size"] + 4
    pcap.records[packet - 1][3][off + size - 1] ^= 0x01
    bad = pcap.write(tmp_path / "bad.pcap")

    code, out, _ = run(["check", str(bad), "--rules", str(forbid_rules(tmp_path)), "--json"], capsys)
    assert code == 1
    doc = json.loads(out)
    assert doc["passed"] is False and doc["failed"] == 1
    (check,) = doc["suites"][0]["checks"]
    assert check["rule"] == "forbid bad_checksum" and check["passed"] is False
    offenders = check["offenders"]
    assert [(o["packet"], o["stream"], o["protocol"], o["type"], o["role"]) for o in offenders] == [
        (packet, 0, "pulsar", "SEND", "client")
    ]


def test_clean_capture_passes_full_rules(captures: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = captures / "kafka" / "kafka-python-basic.pcap"
    rows = pdus(captures / "kafka" / "kafka-python-basic.pdus.tsv")
    produces = sum(1 for r in rows if r["api_name"] == "Produce" and r["dir"] == "req")
    fetches = sum(1 for r in rows if r["api_name"] == "Fetch" and r["dir"] == "req")
    code, out, err = run(["check", str(src), "--rules", str(DATA / "rules-clean.yaml")], capsys)
    assert code == 0, out + err
    assert "FAIL" not in out
    # Frame counts as the independent decode has them (one per exchange).
    assert f"expect kafka.Produce: {produces} frames" in out
    assert f"expect kafka.Fetch: {fetches} frames" in out


def test_rules_failures_name_packets(
    captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = captures / "kafka" / "kafka-python-basic.pcap"
    rows = pdus(captures / "kafka" / "kafka-python-basic.pdus.tsv")
    fetch_req = [r for r in rows if r["api_name"] == "Fetch" and r["dir"] == "req"]
    rules = tmp_path / "r.yaml"
    rules.write_text(
        "versions:\n  kafka.Fetch: {max: 11}\n"
        "expect:\n  kafka.Produce: {max: 2}\n  pulsar.*: {min: 1}\n"
        "latency_ms:\n  kafka.*: {max: 0}\n"
    )
    code, out, _ = run(["check", str(src), "--rules", str(rules), "--no-color"], capsys)
    assert code == 1
    assert f"FAIL versions kafka.Fetch: {len(fetch_req)} of {len(fetch_req)} frames not ≤ 11" in out
    first = fetch_req[0]
    assert f"packet {first['last_frame']} stream {first['stream']} kafka.Fetch (client): version 12" in out
    assert "FAIL expect pulsar.*: 0 frames" in out
    # Produce requests beyond the second one are listed (independent: packets of the 3rd request).
    produce_req = [r for r in rows if r["api_name"] == "Produce" and r["dir"] == "req"]
    assert f"packet {produce_req[2]['last_frame']} stream 3 kafka.Produce (client)" in out
    assert "FAIL latency_ms kafka.*" in out


def test_junit_shape(captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = captures / "kafka" / "kafka-python-basic.pcap"
    rules = tmp_path / "r.yaml"
    rules.write_text("forbid: [bad_checksum, malformed]\nexpect:\n  kafka.Produce: {max: 2}\n")
    base = tmp_path / "b.yaml"
    assert (
        run(["baseline", str(captures / "pulsar" / "s01-producer-nobatch.pcap"), "-o", str(base)], capsys)[0]
        == 0
    )
    junit = tmp_path / "report.xml"
    code, _, _ = run(
        ["check", str(src), "--rules", str(rules), "--baseline", str(base), "--junit", str(junit)], capsys
    )
    assert code == 1
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites"
    # Only elements and attributes the common JUnit schema (Jenkins junit-10.xsd) allows.
    allowed = {
        "testsuites": {"name", "time", "tests", "failures", "disabled", "errors"},
        "testsuite": {"name", "tests", "failures", "errors", "time", "disabled", "skipped", "timestamp",
                      "hostname", "id", "package"},
        "testcase": {"name", "assertions", "time", "classname", "status"},
        "failure": {"message", "type"},
        "system-out": set(),
    }  # fmt: skip
    for el in root.iter():
        assert el.tag in allowed and set(el.attrib) <= allowed[el.tag], (el.tag, el.attrib)
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [str(src), f"baseline {base}"]
    total = failures = 0
    for s in suites:
        cases = s.findall("testcase")
        assert int(s.get("tests")) == len(cases)
        assert int(s.get("failures")) == sum(1 for c in cases if c.find("failure") is not None)
        for c in cases:
            assert c.get("name") and c.get("classname") and c.get("time") is not None
            assert set(ch.tag for ch in c) <= {"failure", "system-out"}
        total += len(cases)
        failures += int(s.get("failures"))
    assert int(root.get("tests")) == total and int(root.get("failures")) == failures
    rule_cases = {c.get("name"): c for c in suites[0].findall("testcase")}
    assert set(rule_cases) == {"forbid bad_checksum", "forbid malformed", "expect kafka.Produce"}
    assert rule_cases["forbid bad_checksum"].find("failure") is None
    f = rule_cases["expect kafka.Produce"].find("failure")
    assert f is not None and "5 frames" in f.get("message") and "packet 50" in f.text
    # Baseline: the pulsar connection is missing, the kafka connections are unexpected.
    base_cases = suites[1].findall("testcase")
    assert all(c.find("failure") is not None for c in base_cases)
    assert "missing" in base_cases[0].find("failure").get("message")


# -- baselines --------------------------------------------------------------------------------------
def rerun(src: Path, dst: Path) -> Path:
    """The same traffic as a second run would show it: every client port changed, every
    timestamp moved a day on with growing delays, and the first connection moved to the end
    of the file (so stream numbers and interleaving differ)."""
    pcap = Pcap(src)
    servers = {9092, 6650, 1234, 11000, 12345}
    first_conn = None
    moved, kept = [], []
    for i in range(1, len(pcap.records) + 1):
        _, _, sport, dport = pcap.tcp(i)
        client, server = (sport, dport) if dport in servers else (dport, sport)
        if first_conn is None:
            first_conn = client
        new = 20000 + (client * 7) % 40000
        if dport in servers:
            pcap.set_ports(i, new, dport)
        else:
            pcap.set_ports(i, sport, new)
        (moved if client == first_conn else kept).append(pcap.records[i - 1])
    pcap.records = kept + moved
    for n, rec in enumerate(pcap.records):
        rec[0] += 86400
        rec[1] = (rec[1] + n * 997) % 1_000_000
    return pcap.write(dst)


def test_baseline_passes_on_own_capture_and_rerun(
    captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = captures / "kafka" / "kafka-python-basic.pcap"
    base = tmp_path / "golden.yaml"
    code, _, err = run(["baseline", str(src), "-o", str(base)], capsys)
    assert code == 0, err
    text = base.read_text()
    # 7 connections (independent decode: streams 0..6), each opening with ApiVersions.
    streams = {r["stream"] for r in pdus(captures / "kafka" / "kafka-python-basic.pdus.tsv")}
    assert len(streams) == 7 and text.count("- protocol: kafka") == 7
    assert text.count("opens_with: [ApiVersions") == 7
    assert "9092" not in text and "correlation" not in text  # ports and ids left out
    # Message totals per connection as the scenario reports them (201 sent, 201 received).
    steps = [
        s["step"]
        for s in json.loads((captures / "kafka" / "kafka-python-basic.scenario.json").read_text())["steps"]
    ]
    assert "producer sent 201 to kp-basic (compression=None)" in steps
    assert "consumer group kp-basic-group received 201/201" in steps
    assert "    produce: {kp-basic: 201}" in text and "    deliver: {kp-basic: 201}" in text
    code, out, _ = run(["check", str(src), "--baseline", str(base)], capsys)
    assert code == 0, out

    again = rerun(src, tmp_path / "rerun.pcap")
    p1, p2 = Pcap(src), Pcap(again)
    assert p1.tcp(1)[2:] != p2.tcp(1)[2:]  # the run starts on another connection, other ports
    code, out, _ = run(["check", str(again), "--baseline", str(base)], capsys)
    assert code == 0, out
    # Types skipped at check time are left out of both sides.
    code, out, _ = run(
        ["check", str(again), "--baseline", str(base), "--skip", "kafka.Fetch,kafka.Metadata"], capsys
    )
    assert code == 0, out
    # Writing the baseline again from the re-run gives the same file byte for byte.
    base2 = tmp_path / "golden2.yaml"
    run(["baseline", str(again), "-o", str(base2)], capsys)
    assert base2.read_text() == text


def test_baseline_passes_on_real_rerun_with_other_codec(
    captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lz4 = captures / "pulsar" / "s03-compression-lz4.pcap"
    snappy = captures / "pulsar" / "s03-compression-snappy.pcap"
    s1 = json.loads((captures / "pulsar" / "s03-compression-lz4.summary.json").read_text())
    s2 = json.loads((captures / "pulsar" / "s03-compression-snappy.summary.json").read_text())
    assert s1["connections"][0]["client"] != s2["connections"][0]["client"]  # other port
    assert s1["command_counts"] == s2["command_counts"]
    base = tmp_path / "golden.json"
    assert run(["baseline", str(lz4), "-o", str(base)], capsys)[0] == 0
    json.loads(base.read_text())  # the JSON form is valid JSON
    # The topic names carry the codec's name, so they are left out for this comparison.
    code, out, _ = run(["check", str(snappy), "--baseline", str(base), "--ignore", "topics"], capsys)
    assert code == 0, out
    code, out, _ = run(["check", str(snappy), "--baseline", str(base)], capsys)
    assert code == 1 and "s03-compressed-snappy" in out
    # Or keep the topics, recorded through a pattern that covers every codec's topic name.
    topics = {f["command"]["topic"] for f in s2["frames"] if f["type"] == "PRODUCER"}
    assert topics == {"persistent://public/default/s03-compressed-snappy"}
    pattern = r"persistent://public/default/s03-compressed-\w+"
    yaml_base = tmp_path / "golden.yaml"
    assert run(["baseline", str(lz4), "-o", str(yaml_base), "--topic-pattern", pattern], capsys)[0] == 0
    assert f"topic_patterns: ['{pattern}']" in yaml_base.read_text()
    for codec in ("snappy", "zlib", "zstd"):
        other = captures / "pulsar" / f"s03-compression-{codec}.pcap"
        code, out, _ = run(["check", str(other), "--baseline", str(yaml_base)], capsys)
        assert code == 0, out
    code, out, _ = run(["check", str(snappy), "--baseline", str(base), "--topic-pattern", pattern], capsys)
    assert code == 0, out


def test_baseline_fails_on_other_scenario_naming_first_difference(
    captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nobatch = captures / "pulsar" / "s01-producer-nobatch.pcap"
    batching = captures / "pulsar" / "s02-producer-batching.pcap"
    s1 = json.loads((captures / "pulsar" / "s01-producer-nobatch.summary.json").read_text())
    s2 = json.loads((captures / "pulsar" / "s02-producer-batching.summary.json").read_text())

    def first_send_run(summary: dict) -> tuple[int, int]:
        client = [f["type"] for f in summary["frames"] if f["dir"] == "c2s"]
        start = client.index("SEND")
        assert client[:start] == ["CONNECT", "PARTITIONED_METADATA", "LOOKUP", "PRODUCER"]
        n = 0
        while client[start + n] == "SEND":
            n += 1
        return start, n

    # Independent: both runs open CONNECT, PARTITIONED_METADATA, LOOKUP, PRODUCER; then s01
    # sends 100 single messages in a row, s02 only a few batches before its next lookup:
    # the first difference is s02's first SEND.
    (i1, n1), (i2, n2) = first_send_run(s1), first_send_run(s2)
    assert i1 == i2 == 4 and n1 == 100 and n2 < n1
    first_send = s2["payload_frames"][0]
    packet = first_send["packets"][1]
    base = tmp_path / "golden.yaml"
    assert run(["baseline", str(nobatch), "-o", str(base), "--ignore", "topics"], capsys)[0] == 0
    code, out, _ = run(["check", str(batching), "--baseline", str(base)], capsys)
    assert code == 1
    line = next(x for x in out.splitlines() if "FAIL connection 1" in x)
    assert (
        f"first difference: client entry 5 (packet {packet}, frame 5): expected SEND ×{n1}; came SEND ×{n2}"
        in line
    )

    # With per-frame message counts the difference is the batch size (s02 batches 40 at first).
    assert (
        run(["baseline", str(nobatch), "-o", str(base), "--ignore", "topics", "--include", "batch"], capsys)[
            0
        ]
        == 0
    )
    code, out, _ = run(["check", str(batching), "--baseline", str(base)], capsys)
    same = 1
    while s2["payload_frames"][same]["num_messages_in_batch"] == first_send["num_messages_in_batch"]:
        same += 1
    want = f"expected SEND batch=1 ×{n1}; came SEND batch={first_send['num_messages_in_batch']} ×{same}"
    assert code == 1 and want in out
    assert "messages produce *: expected 100; came 180" in out  # totals: summaries' batch sizes
    assert sum(p["num_messages_in_batch"] or 1 for p in s2["payload_frames"] if p["type"] == "SEND") == 180


def test_baseline_missing_and_unexpected_connections(
    captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tank = captures / "tank" / "t01-basic.pcap"
    pulsar = captures / "pulsar" / "s01-producer-nobatch.pcap"
    base = tmp_path / "golden.yaml"
    assert run(["baseline", str(tank), str(pulsar), "-o", str(base)], capsys)[0] == 0
    code, out, _ = run(["check", str(tank), "--baseline", str(base), "--json"], capsys)
    assert code == 1
    doc = json.loads(out)
    checks = doc["suites"][0]["checks"]
    failed = [c for c in checks if not c["passed"]]
    assert len(failed) == 1 and "pulsar" in failed[0]["rule"] and "missing" in failed[0]["message"]
    code, out, _ = run(["check", str(tank), str(pulsar), str(pulsar), "--baseline", str(base), "-q"], capsys)
    assert code == 1 and "FAIL no unexpected connections: 1 connection not in the baseline" in out


def test_unanswered_requests_per_name(
    captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = captures / "pravega" / "p08-large-events.pcap"
    rows = pdus(captures / "pravega" / "p08-large-events.frames.tsv")
    answered = {(r["stream"], r["request_id"]) for r in rows if r["dir"] == "s>c"}
    reads = [r for r in rows if r["type"] == "ReadSegment"]
    lost = [r for r in reads if (r["stream"], r["request_id"]) not in answered]
    assert len(lost) == 1  # independent decode: the last read is never answered
    rules = tmp_path / "r.yaml"
    rules.write_text("max_unanswered:\n  pravega.ReadSegment: 0\n  '*': 0\n")
    code, out, _ = run(["check", str(src), "--rules", str(rules)], capsys)
    assert code == 1
    assert "FAIL max_unanswered pravega.ReadSegment: 1 unanswered request" in out
    assert f"packet {lost[0]['last_frame']} stream {lost[0]['stream']} pravega.ReadSegment" in out
    assert f"id {lost[0]['request_id']} got no response" in out
    assert "PASS max_unanswered *: 0 unanswered" in out
    rules.write_text("max_unanswered:\n  pravega.ReadSegment: 1\n  '*': 0\n")
    assert run(["check", str(src), "--rules", str(rules)], capsys)[0] == 0


def test_forbid_scoped_to_names(captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = captures / "kafka" / "kafka-python-basic.pcap"
    pcap = Pcap(src)
    off, size, _, _ = pcap.tcp(45)  # a whole Produce request (see the first test)
    pcap.records[44][3][off + size - 20] ^= 0x5A
    bad = pcap.write(tmp_path / "bad.pcap")
    rules = tmp_path / "r.yaml"
    rules.write_text("forbid:\n  pulsar.*: [bad_checksum]\n  kafka.Fetch: [bad_checksum]\n")
    code, out, _ = run(["check", str(bad), "--rules", str(rules)], capsys)
    assert code == 0, out
    rules.write_text("forbid:\n  kafka.Produce: [bad_*]\n")
    code, out, _ = run(["check", str(bad), "--rules", str(rules)], capsys)
    assert code == 1 and "FAIL forbid bad_* in kafka.Produce" in out and "packet 45 stream 3" in out


def test_combined_judges_all_captures_together(
    captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = captures / "kafka" / "kafka-python-basic.pcap"
    rows = pdus(captures / "kafka" / "kafka-python-basic.pdus.tsv")
    n = sum(1 for r in rows if r["api_name"] == "Produce" and r["dir"] == "req")
    rules = tmp_path / "r.yaml"
    rules.write_text(f"expect:\n  kafka.Produce: {{min: {n + 1}}}\n")
    code, out, _ = run(["check", str(src), str(src), "--rules", str(rules)], capsys)
    assert code == 1 and out.count(f"FAIL expect kafka.Produce: {n} frames") == 2
    code, out, _ = run(["check", str(src), str(src), "--rules", str(rules), "--combined"], capsys)
    assert code == 0 and f"PASS expect kafka.Produce: {2 * n} frames" in out and "all captures" in out


def test_latency_percentiles_match_packet_times(
    captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = captures / "kafka" / "kafka-python-basic.pcap"
    rows = pdus(captures / "kafka" / "kafka-python-basic.pdus.tsv")
    pcap = Pcap(src)
    nanos = pcap.header[:4] in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")

    def ts_us(packet: int) -> int:
        sec, frac = pcap.records[packet - 1][:2]
        return sec * 1_000_000 + (frac // 1000 if nanos else frac)

    # Latency = time of the packet completing the response − time of the one completing the request.
    requests = {(r["stream"], r["correlation_id"]): int(r["last_frame"]) for r in rows if r["dir"] == "req"}
    lat = sorted(
        ts_us(int(r["last_frame"])) - ts_us(requests[(r["stream"], r["correlation_id"])])
        for r in rows
        if r["api_name"] == "Produce" and r["dir"] == "resp"
    )
    n = len(lat)
    p50 = lat[max(1, -(-50 * n // 100)) - 1]  # nearest rank
    rules = tmp_path / "r.yaml"
    rules.write_text("latency_ms:\n  kafka.Produce: {p50: 100, max: 0.001}\n")
    code, out, _ = run(["check", str(src), "--rules", str(rules)], capsys)
    assert code == 1
    assert (
        f"p50 {p50 / 1000:.3f} ms ≤ 100 ms, max {lat[-1] / 1000:.3f} ms > 0.001 ms over {n} exchanges" in out
    )
    # The slowest exchange is listed first.
    first = next(x for x in out.splitlines() if "kafka.Produce:" in x and "packet" in x)
    assert f"{lat[-1] / 1000:.3f} ms" in first


@pytest.mark.tshark
def test_allowed_errors_match_tshark(
    captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil
    import subprocess

    if not shutil.which("tshark"):
        pytest.skip("tshark not installed")
    # kafka-python-pinned-2.5 stays at versions tshark 4.0 decodes (captures README).
    src = captures / "kafka" / "kafka-python-pinned-2.5.pcap"
    res = subprocess.run(
        ["tshark", "-r", str(src), "-Y", "kafka.error", "-T", "fields", "-e", "frame.number", "-e", "tcp.stream",
         "-e", "kafka.error"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    bad = set()
    for line in res.stdout.splitlines():
        packet, stream, codes = line.split("\t")
        if any(c != "0" for c in codes.split(",")):
            bad.add((int(packet), int(stream)))
    assert bad  # the capture holds a rejected JoinGroup
    rules = tmp_path / "r.yaml"
    rules.write_text("allowed_errors:\n  kafka.*: [0]\n")
    code, out, _ = run(["check", str(src), "--rules", str(rules), "--json"], capsys)
    assert code == 1
    (check,) = json.loads(out)["suites"][0]["checks"]
    assert {(o["packet"], o["stream"]) for o in check["offenders"]} == bad


def test_kafka_baseline_passes_on_real_reruns_with_other_codecs(
    captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    k = captures / "kafka"
    scen = {
        c: json.loads((k / f"ck-compress-{c}.scenario.json").read_text()) for c in ("gzip", "lz4", "zstd")
    }
    for c in ("lz4", "zstd"):  # the same scenario, only the codec (and topic name) differ
        assert [s["step"].replace(c, "X") for s in scen[c]["steps"]] == [
            s["step"].replace("gzip", "X") for s in scen["gzip"]["steps"]
        ]
    ports = {
        c: {r["stream"]: Pcap(k / f"ck-compress-{c}.pcap").tcp(int(r["first_frame"]))[2:] for r in pdus(k / f"ck-compress-{c}.pdus.tsv")}
        for c in ("gzip", "zstd")
    }  # fmt: skip
    assert set(ports["gzip"].values()).isdisjoint(ports["zstd"].values())  # other client ports
    base = tmp_path / "golden.yaml"
    assert (
        run(["baseline", str(k / "ck-compress-gzip.pcap"), "-o", str(base), "--ignore", "topics"], capsys)[0]
        == 0
    )
    assert base.read_text().count("- protocol: kafka") == len(ports["gzip"]) == 7
    for c in ("lz4", "zstd"):
        code, out, _ = run(["check", str(k / f"ck-compress-{c}.pcap"), "--baseline", str(base)], capsys)
        assert code == 0, out


def test_latency_numbers_equal_the_stats_command(captures: Path) -> None:
    """`check` must never disagree with `wiredump stats` on a percentile."""
    from wiredump.check.evaluate import SuiteEvaluator
    from wiredump.check.rules import parse
    from wiredump.check.spec import load
    from wiredump.dissect.pipeline import dissect
    from wiredump.dissect.stats import StatsCollector

    src = str(captures / "pulsar" / "s04-consumer.pcap")
    stats = StatsCollector()
    events = list(dissect([src]))
    stats.add_events(events)
    lat = {(t.protocol, t.type): t.as_dict()["latency_us"] for t in stats.types.values() if t.latencies}
    assert lat
    text = "latency_ms:\n" + "".join(f"  {p}.{t}: {{p50: 0, p90: 0, p99: 0, max: 0}}\n" for p, t in lat)
    ev = SuiteEvaluator(parse(load(text, "r.yaml"), "r.yaml"), src)
    for e in events:
        ev.feed(e)
    for o in ev.outcomes():
        p, t = o.rule.split(" ", 1)[1].split(".", 1)
        s = lat[(p, t)]
        want = ", ".join(
            f"{k} {s[k] / 1000:.3f} ms" + (" ≤ 0 ms" if s[k] == 0 else " > 0 ms")
            for k in ("p50", "p90", "p99", "max")
        )
        assert o.message == f"{want} over {s['count']} exchange{'s' * (s['count'] != 1)}"


def test_capture_without_frames_is_judged(
    captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.pcap"
    empty.write_bytes((captures / "kafka" / "kafka-python-basic.pcap").read_bytes()[:24])  # header only
    rules = tmp_path / "r.yaml"
    rules.write_text("expect:\n  kafka.*: {min: 1}\n")
    code, out, _ = run(
        ["check", str(empty), str(captures / "kafka" / "kafka-python-basic.pcap"), "--rules", str(rules)],
        capsys,
    )
    assert code == 1
    assert f"{empty}\n  FAIL expect kafka.*: 0 frames, expected ≥ 1" in out
    assert "PASS expect kafka.*" in out


def test_json_baseline_round_trip(captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = captures / "tank" / "t02-bundles.pcap"
    as_json, as_yaml = tmp_path / "b.json", tmp_path / "b.yaml"
    assert run(["baseline", str(src), "-o", str(as_json)], capsys)[0] == 0
    assert run(["baseline", str(src), "-o", str(as_yaml)], capsys)[0] == 0
    import yaml

    assert json.loads(as_json.read_text()) == yaml.safe_load(as_yaml.read_text())
    for b in (as_json, as_yaml):
        code, out, _ = run(["check", str(src), "--baseline", str(b)], capsys)
        assert code == 0, out
    # Independent: the produced message count equals the TANK summary's.
    summary = json.loads((captures / "tank" / "t02-bundles.summary.json").read_text())
    doc = json.loads(as_json.read_text())
    produced = sum(sum(c.get("messages", {}).get("produce", {}).values()) for c in doc["connections"])
    assert produced == summary["produced_messages"]


def test_allowed_error_names_on_tank(
    captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = captures / "tank" / "t07-errors.pcap"
    rows = pdus(captures / "tank" / "t07-errors.pdus.tsv")
    # Independent decode: Produce requests to a topic that does not exist and to a partition
    # the one-partition topic `events` lacks; their responses must carry an error.
    bad_req = {
        r["stream"]: r for r in rows if r["msg_name"] == "Produce" and r["topics"] in ("nosuch/0", "events/7")
    }
    assert len(bad_req) == 2
    responses = {
        (int(r["last_frame"]), int(r["stream"]))
        for r in rows
        if r["dir"] == "s>c" and r["msg_name"] == "Produce" and r["stream"] in bad_req
    }
    rules = tmp_path / "r.yaml"
    rules.write_text("allowed_errors:\n  tank.*: [0]\n")
    code, out, _ = run(["check", str(src), "--rules", str(rules), "--json"], capsys)
    assert code == 1
    (check,) = json.loads(out)["suites"][0]["checks"]
    places = {(o["packet"], o["stream"]) for o in check["offenders"] if o["type"] == "Produce"}
    assert places == responses
    # Allowed by name for Produce: only the other types' errors remain.
    rules.write_text(
        "allowed_errors:\n  tank.*: [0]\n  tank.Produce: [0, UNKNOWN_TOPIC, unknown_partition]\n"
    )
    code, out, _ = run(["check", str(src), "--rules", str(rules)], capsys)
    assert "PASS allowed_errors tank.Produce" in out and "FAIL allowed_errors tank.*" in out


def test_exit_codes_of_the_installed_command(captures: Path, tmp_path: Path) -> None:
    """The real process: 0 pass, 1 fail, 2 bad rules file — and plain text in a pipe."""
    import subprocess
    import sys

    src = str(captures / "tank" / "t01-basic.pcap")
    ok, bad, broken = tmp_path / "ok.yaml", tmp_path / "bad.yaml", tmp_path / "broken.yaml"
    ok.write_text("forbid: [malformed]\n")
    bad.write_text("expect:\n  tank.Produce: {max: 0}\n")
    broken.write_text("forbid: [malformed]\nexpect: 3\n")
    codes = []
    for rules in (ok, bad, broken):
        res = subprocess.run(
            [sys.executable, "-m", "wiredump", "check", src, "--rules", str(rules)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        codes.append(res.returncode)
        assert "\x1b[" not in res.stdout
    assert codes == [0, 1, 2]
    assert f"{broken}:2" in res.stderr and "must be a mapping" in res.stderr
