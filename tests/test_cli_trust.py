"""The terminal a tshark user can trust (issue 16): escaped wire strings, clear errors, colour in
pipes, lines in packet order, progress, what a capture without broker traffic says, snap-length
summaries, and the smaller points (IPv6 endpoints, plurals, -h, --mark, JSON detail, show/follow).

Expected values are written by hand from the bytes the tests build (the hostile topic's escapes
follow tshark's convention: `\\x1b`, `\\a`, `\\0`, `\\\\`), or read from the captures' independent
decodes (pdus.tsv, tshark) and from the pcap records themselves.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from cli_support import parse_lines, pcap_times, run_cli
from crafted import Conn, Rec, write_pcap

HOSTILE = "a\x1b[31mred\x1b]0;pwned\x07\x1b[2J\x00z\\"
"""A topic that colours, retitles the terminal window, clears the screen, hides text after a NUL."""
ESCAPED = "a\\x1b[31mred\\x1b]0;pwned\\a\\x1b[2J\\0z\\\\"
"""The same topic as it must be printed: every control character visible, the backslash doubled."""


@pytest.fixture
def kafka_basic(captures: Path) -> Path:
    return captures / "kafka" / "kafka-python-basic.pcap"


def _s16(text: str) -> bytes:
    b = text.encode()
    return struct.pack(">h", len(b)) + b


def metadata_v1(cid: int, client: str, topics: list[str]) -> bytes:
    """A Kafka Metadata v1 request (api key 3): header v1 (client id int16 string), topics array."""
    body = struct.pack(">i", len(topics)) + b"".join(_s16(t) for t in topics)
    msg = struct.pack(">hhi", 3, 1, cid) + _s16(client) + body
    return struct.pack(">i", len(msg)) + msg


def one_request(path: Path, topics: list[str], host: str = "127.0.0.1") -> Path:
    """Handshake (packets 1-3, 1 ms apart) then one Metadata request at packet 4, 3 ms in."""
    recs: list[Rec] = []
    c = Conn(recs, 40000, 9092, host=host)
    assert c.client(metadata_v1(7, "evil-client", topics)) == 4
    return write_pcap(path, recs)


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    return one_request(tmp_path / "hostile.pcap", [HOSTILE, "orders"])


def test_escape_function_by_hand():
    from wiredump.cli.escape import escape

    assert escape(HOSTILE) == ESCAPED
    assert escape("plain topic-1 ünïcode") == "plain topic-1 ünïcode"
    assert escape("tab\there\r\n") == "tab\\there\\r\\n"
    assert escape("\x7f\x9b\u202e") == "\\x7f\\x9b\\u202e"  # DEL, C1 CSI, right-to-left override
    assert escape('say "hi"', '"') == 'say \\"hi\\"'


def test_hostile_topic_escaped_in_every_text_output(capsys, hostile, tmp_path):
    line = (
        "     4   0.003000   0 127.0.0.1:40000 → 127.0.0.1:9092 kafka   Metadata v1 id=7 [unanswered]  "
        f"{ESCAPED}, orders"
    )
    res = run_cli(capsys, hostile)
    assert res.code == 0 and res.out.splitlines() == [line]
    res = run_cli(capsys, hostile, "-V")
    assert any(x.strip() == f'name: "{ESCAPED}" (str)' for x in res.out.splitlines())
    plain_outputs = [res.out]
    res = run_cli(capsys, "show", hostile, "-p", "4")
    assert any(x.strip() == f'name: "{ESCAPED}" (str)' for x in res.out.splitlines())
    res = run_cli(capsys, "follow", hostile, "-s", "0")
    assert f"  {ESCAPED}, orders" in res.out.splitlines()
    plain_outputs.append(res.out)
    plain_outputs.append(run_cli(capsys, "stats", hostile).out)
    colored = run_cli(capsys, hostile, "--color").out
    assert f"{ESCAPED}, orders" in _strip_ansi(colored)
    colored += run_cli(capsys, "stats", hostile, "--color").out
    colored += run_cli(capsys, "follow", hostile, "-s", "0", "--color").out
    # The check report quotes topics in a baseline diff.
    plain = one_request(tmp_path / "plain.pcap", ["plain", "orders"])
    base = tmp_path / "base.yaml"
    assert run_cli(capsys, "baseline", plain, "-o", base).code == 0
    res = run_cli(capsys, "check", hostile, "--baseline", base)
    assert res.code == 1 and f"topics={ESCAPED},orders" in res.out
    plain_outputs.append(res.out)
    for out in plain_outputs:
        assert not any(ch in out for ch in "\x1b\x07\x00"), out
    # Colour codes are the program's own; the topic's never reach the terminal.
    assert not any(s in colored for s in ("\x07", "\x00", "\x1b]", "\x1b[2J"))
    # Machine formats keep the exact value.
    row = json.loads(run_cli(capsys, hostile, "-T", "jsonl").out)
    assert row["detail"]["body"]["topics"][0]["name"] == HOSTILE


def test_export_to_a_path_that_cannot_be_written_is_one_line_exit_2(capsys, tmp_path, kafka_basic):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for target in (afile / "sub", Path("/proc/wiredump-no-such-dir"), afile):
        res = run_cli(capsys, "export", kafka_basic, "-o", target)
        assert res.code == 2, target
        assert res.err.count("\n") == 1 and res.err.startswith("wiredump: ") and "Traceback" not in res.err


def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_color_in_a_pipe_is_full_width(capsys, kafka_basic):
    plain = run_cli(capsys, kafka_basic, "--no-color").out.splitlines()
    colored = run_cli(capsys, kafka_basic, "--color").out
    assert "\x1b[" in colored
    lines = [_strip_ansi(x) for x in colored.splitlines()]
    assert len(lines) == len(plain)
    long = [p for p in plain if 80 < len(p) <= 200]
    assert long  # lines a terminal of 80 columns would have cut
    for p, c in zip(plain, lines, strict=True):
        if len(p) <= 200:
            assert c == p


def _packets(out: str) -> list[int]:
    return [int(x.split()[0]) for x in out.splitlines() if x[:6].strip().isdigit()]


def _drop(src: Path, dst: Path, drop: int) -> Path:
    b = src.read_bytes()
    out, pos, n = [b[:24]], 24, 0
    while pos + 16 <= len(b):
        incl = struct.unpack_from("<I", b, pos + 8)[0]
        n += 1
        if n != drop:
            out.append(b[pos : pos + 16 + incl])
        pos += 16 + incl
    dst.write_bytes(b"".join(out))
    return dst


def test_timeline_lines_in_packet_order_on_real_captures(capsys, captures):
    names = sorted(captures.glob("*/*.pcap"))
    assert len(names) >= 28
    for pcap in names:
        got = _packets(run_cli(capsys, pcap, "-A").out)
        assert got and got == sorted(got), pcap


def test_timeline_order_when_packets_are_lost(capsys, captures, tmp_path):
    """Lost packets make gaps, held requests, frames TCP delivers late and resyncs found later."""
    basic = captures / "kafka" / "kafka-python-basic.pcap"
    tsv = {int(r["first_frame"]): r for r in _tsv(basic.with_name("kafka-python-basic.pdus.tsv"))}
    # Packet 101 is a server packet: dropping it leaves the SyncGroup request at 96 unanswered
    # (held back while it waits) while the gap is found when the client acknowledges past it.
    assert tsv[96]["api_name"] == "SyncGroup" and tsv[96]["peer_frame"] == "101"
    lost = _drop(basic, tmp_path / "lost101.pcap", 101)
    out = run_cli(capsys, lost, "-A").out
    got = _packets(out)
    assert got == sorted(got)
    near = [x for x in out.splitlines() if 96 <= int(x.split()[0]) <= 101]
    # Old packet 102 (OffsetFetch) is new packet 101: the gap line comes first, then that frame.
    assert "! gap" in near[-2] and near[-1].split()[0] == "101" and "OffsetFetch" in near[-1]
    assert "[after gap" in near[-1]
    p08 = captures / "pravega" / "p08-large-events.pcap"
    for drop in (31, 45):
        got = _packets(run_cli(capsys, _drop(p08, tmp_path / f"p08-{drop}.pcap", drop), "-A").out)
        assert got == sorted(got), drop
    for pcap in sorted(captures.glob("*/*.pcap"))[::4]:
        got = _packets(run_cli(capsys, _drop(pcap, tmp_path / f"d-{pcap.name}", 20), "-A").out)
        assert got == sorted(got), pcap


def _tsv(path: Path) -> list[dict[str, str]]:
    import csv

    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def test_progress_line_by_hand():
    from wiredump.cli.source import Progress

    bar = Progress(total=100_000_000, enabled=True)
    bar.started = 0.0
    line = bar.line(50_000_000, 1234, now=10.0)
    assert line == "[" + "#" * 15 + "." * 15 + "]  50.0%  1,234 packets  5.0 MB/s  ETA 0:00:10"
    bar.done = 90_000_000
    assert bar.line(10_000_000, 9, now=20.0).endswith("100.0%  9 packets  5.0 MB/s")


def port80(path: Path, packets: int = 3) -> Path:
    """One HTTP connection: handshake, then `packets - 3` client packets of a GET."""
    recs: list[Rec] = []
    c = Conn(recs, 51000, 80)
    for _ in range(packets - 3):
        c.client(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    return write_pcap(path, recs)


@pytest.mark.parametrize(
    "args",
    [
        ["export", "{pcap}", "-o", "{tmp}/out"],
        ["check", "{pcap}", "--rules", "{tmp}/rules.yaml"],
        ["baseline", "{pcap}", "-o", "{tmp}/b.yaml"],
        ["stats", "{pcap}"],
        ["follow", "{pcap}", "-s", "0"],
    ],
)
def test_progress_in_every_long_command(capsys, monkeypatch, tmp_path, args):
    from wiredump.cli import source

    pcap = port80(tmp_path / "web.pcap", 2100)
    (tmp_path / "rules.yaml").write_text("max_unanswered: 0\n")
    seen: list[int] = []
    monkeypatch.setattr(source.Progress, "wanted", staticmethod(lambda: True))
    monkeypatch.setattr(source.Progress, "update", lambda self, pos, packets: seen.append(packets))
    res = run_cli(capsys, *[a.format(pcap=pcap, tmp=tmp_path) for a in args])
    assert res.code in (0, 1), res.err
    assert seen == [1024, 2048]  # every 1024 packets of the 2100


def test_no_broker_traffic_says_so(capsys, tmp_path):
    pcap = port80(tmp_path / "web.pcap", 4)
    res = run_cli(capsys, pcap)
    assert res.code == 0 and res.out == ""
    assert res.err == (
        "wiredump: no Kafka/Pulsar/Pravega/TANK frames in 1 TCP connection (port 80); try -d PORT=PROTO\n"
    )
    res = run_cli(capsys, "stats", pcap)
    assert res.code == 0 and res.out.startswith("1 capture, 4 packets, 0 frames, 0 bytes")
    assert res.err == (
        "wiredump: no Kafka/Pulsar/Pravega/TANK frames in 1 TCP connection (port 80); try -d PORT=PROTO\n"
    )


def test_snap_length_notes_are_one_line_per_capture(capsys, tmp_path):
    recs: list[Rec] = []
    c = Conn(recs, 40000, 9092)
    c.client(metadata_v1(1, "c", ["orders"]))
    for r in recs:  # every record claims 4 more bytes on the wire (an FCS the capture left out)
        r.orig_len = len(r.data) + 4
    pcap = write_pcap(tmp_path / "snap.pcap", recs)
    res = run_cli(capsys, pcap)
    assert res.code == 0
    assert not any("truncated_packet" in x for x in res.out.splitlines())
    notes = [x for x in res.err.splitlines() if "snap length" in x]
    first = len(recs[0].data)
    assert notes == [
        f"wiredump: 4 packets (#1 to #4) cut by the snap length or claiming a longer original length than "
        f"captured, e.g. #1: packet cut by the snap length: {first} of {first + 4} bytes captured "
        "(each is a truncated_packet row of the anomalies table; -A shows each)"
    ]
    assert sum("truncated_packet" in x for x in run_cli(capsys, pcap, "-A").out.splitlines()) == 4
    out = tmp_path / "tables"
    assert run_cli(capsys, "export", pcap, "-o", out, "--format", "jsonl").code == 0
    rows = [json.loads(x) for x in (out / "anomalies.jsonl").read_text().splitlines()]
    assert [r["packet"] for r in rows if r["kind"] == "truncated_packet"] == [1, 2, 3, 4]


def test_ipv6_endpoints_in_brackets(capsys, tmp_path):
    pcap = one_request(tmp_path / "v6.pcap", ["orders"], host="::1")
    lines = parse_lines(run_cli(capsys, pcap).out)
    assert (lines[0]["client"], lines[0]["server"]) == ("[::1]:40000", "[::1]:9092")
    stats = run_cli(capsys, "stats", pcap).out
    assert re.search(r"^0\s+\[::1\]:40000\s+\[::1\]:9092\s+kafka", stats, re.M)
    assert "client [::1]:40000" in run_cli(capsys, "follow", pcap, "-s", "0").out


def test_stats_sentences_agree_with_their_numbers(capsys, tmp_path, kafka_basic):
    pcap = one_request(tmp_path / "one.pcap", ["orders"])
    head = run_cli(capsys, "stats", pcap).out.splitlines()[:2]
    size = len(metadata_v1(7, "evil-client", ["orders"]))
    assert head == [
        f"1 capture, 4 packets, 1 frame, {size} bytes, 0 messages",
        "1 connection, 0 anomalies, 1 unanswered request",
    ]
    # 68,810 TCP payload bytes in the sample (tshark's tcp.len summed below): "68.8 KB", no "bytes".
    first = run_cli(capsys, "stats", kafka_basic).out.splitlines()[0]
    if shutil.which("tshark"):
        lens = subprocess.run(
            ["tshark", "-r", str(kafka_basic), "-T", "fields", "-e", "tcp.len"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert f"{sum(map(int, lens)) / 1000:.1f} KB," in first
    assert "KB bytes" not in first


def test_help_short_option(capsys):
    for args in (["-h"], ["show", "-h"], ["stats", "-h"]):
        res = run_cli(capsys, *args)
        assert res.code == 0 and res.out.startswith("Usage: wiredump")


def test_mark_an_unknown_field_is_an_error(capsys, kafka_basic):
    res = run_cli(capsys, kafka_basic, "-x", "--mark", "no_such_field")
    assert res.code == 2 and res.out == ""
    assert (
        res.err
        == "wiredump: --mark 'no_such_field': no decoded field is called 'no_such_field' (see `wiredump fields`)\n"
    )
    res = run_cli(capsys, "show", kafka_basic, "-p", "4", "-x", "--mark", "client_idd")
    assert res.code == 2 and "did you mean 'client_id'?" in res.err


def test_json_detail_is_an_object_and_jsonl_v_has_messages(capsys, kafka_basic):
    tsv = {int(r["last_frame"]): r for r in _tsv(kafka_basic.with_name("kafka-python-basic.pdus.tsv"))}
    row = json.loads(run_cli(capsys, kafka_basic, "-T", "jsonl", "-V", "-Y", "packet == 45").out)
    assert row["detail"]["header"]["api_key"] == int(tsv[45]["api_key"]) == 0  # Produce
    assert row["detail"]["header"]["client_id"] == tsv[45]["client_id"]
    # The scenario the capture was recorded with: the producer sent to kp-basic only.
    scenario = json.loads(kafka_basic.with_name("kafka-python-basic.scenario.json").read_text())
    assert "producer sent 201 to kp-basic (compression=None)" in [x["step"] for x in scenario["steps"]]
    assert {m["topic"] for m in row["messages"]} == {"kp-basic"}
    assert row["messages"] and all(isinstance(m["detail"], dict) for m in row["messages"])
    assert row["anomalies"] == []
    rows = json.loads(run_cli(capsys, kafka_basic, "-T", "json", "-c", "3").out)
    assert all(isinstance(r["detail"], dict) for r in rows)


def test_tank_summaries(capsys, captures):
    t01 = captures / "tank" / "t01-basic.pcap"
    lines = run_cli(capsys, t01).out.splitlines()
    pings = [x for x in lines if " Ping" in x]
    assert pings and all(x.endswith(" tank    Ping") for x in pings)  # no "Ping  Ping"
    # t06: the tail Consume at packet 64 waits 2**32-1 ms (test_tank_captures checks that value).
    t06 = captures / "tank" / "t06-boundary-and-tail.pcap"
    line = next(x for x in run_cli(capsys, t06).out.splitlines() if x.split()[0] == "64")
    assert line.endswith("max_wait forever") and "4294967295" not in line


def test_show_names_the_capture_and_knows_its_size(capsys, kafka_basic):
    res = run_cli(capsys, "show", kafka_basic, "-p", "45")
    assert res.out.splitlines()[0] == f"==> {kafka_basic} <=="
    n = len(pcap_times(kafka_basic))
    res = run_cli(capsys, "show", kafka_basic, "-p", str(n + 1))
    assert res.code == 2 and res.err == f"wiredump: no packet #{n + 1}: {kafka_basic} has {n} packets\n"


def test_show_and_follow_on_a_truncated_capture_exit_2(capsys, tmp_path, kafka_basic):
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(kafka_basic.read_bytes()[:-10])  # the last record loses its end
    n = len(pcap_times(kafka_basic))
    res = run_cli(capsys, "show", cut, "-p", str(n))
    assert res.code == 2 and "capture is truncated" in res.err
    res = run_cli(capsys, "show", cut, "-p", "4")  # found long before the cut: still exit 2
    assert res.code == 2 and "capture is truncated" in res.err and "ApiVersions" in res.out
    res = run_cli(capsys, "follow", cut, "-s", "0")
    assert res.code == 2 and "capture is truncated" in res.err and res.out


def test_follow_two_captures_has_a_header_each(capsys, tmp_path, kafka_basic):
    other = one_request(tmp_path / "one.pcap", ["orders"])
    out = run_cli(capsys, "follow", kafka_basic, other, "-s", "0").out.splitlines()
    assert [x for x in out if x.startswith("==>")] == [f"==> {kafka_basic} <==", f"==> {other} <=="]
    assert [x.split()[:2] for x in out if x.startswith("client ")] == [
        ["client", "127.0.0.1:36036"],
        ["client", "127.0.0.1:40000"],
    ]


def test_status_and_error_visible_at_80_columns(kafka_basic):
    """Packet 88 of the sample is a JoinGroup answered MEMBER_ID_REQUIRED (error 79, per tshark)."""
    import io

    from rich.console import Console

    from wiredump.cli.output import Out
    from wiredump.cli.source import Run, annotate
    from wiredump.cli.timeline import TimelineOptions, TimelinePrinter
    from wiredump.dissect.filter import compile_filter
    from wiredump.dissect.pipeline import Options

    if shutil.which("tshark"):
        err = subprocess.run(
            [
                "tshark",
                "-r",
                str(kafka_basic),
                "-Y",
                "frame.number == 88",
                "-T",
                "fields",
                "-e",
                "kafka.error",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert "79" in err
    c = Console(width=80, record=True, force_terminal=True, file=io.StringIO())
    run = Run([str(kafka_basic)], Options())
    printer = TimelinePrinter(Out(console=c), TimelineOptions(filter=compile_filter("packet == 88")))
    printer.run(run, annotate(run.events()))
    printer.finish()
    (line,) = c.export_text().splitlines()
    assert len(line) <= 80 and "[error MEMBER_ID_REQUIRED]" in line and "JoinGroup v7" in line


def test_readme_rules_hold_on_the_readme_sample(capsys, tmp_path):
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    block = re.search(r"```yaml\n# rules\.yaml[^\n]*\n(.*?)```", readme, re.S)
    assert block
    rules = tmp_path / "rules.yaml"
    rules.write_text(block.group(1))
    sample = root / "samples" / "kafka-basic.pcap"
    assert "samples/kafka-basic.pcap" in block.group(0)
    res = run_cli(capsys, "check", sample, "--rules", rules)
    assert res.code == 0, res.out
    # Without the JoinGroup exception the error tshark sees at packet 88 breaks the rule.
    rules.write_text(block.group(1).replace(", kafka.JoinGroup: [0, MEMBER_ID_REQUIRED]", ""))
    res = run_cli(capsys, "check", sample, "--rules", rules)
    assert res.code == 1 and "packet 88 stream 6 kafka.JoinGroup" in res.out
