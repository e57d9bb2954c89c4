"""`wiredump show`, `wiredump follow` and every command's --help."""

from __future__ import annotations

import json
import re

import pytest
from cli_support import pcap_payload, read_tsv, run_cli


@pytest.fixture(scope="module")
def kafka_basic(captures):
    return captures / "kafka" / "kafka-python-basic.pcap"


def test_show_packet_tree_then_hex(capsys, kafka_basic):
    res = run_cli(capsys, "show", kafka_basic, "--packet", "45", "-x", "--mark", "0:4")
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    assert lines.pop(0) == f"==> {kafka_basic} <=="  # show names the capture
    assert re.match(
        r"^\s+45\s+\S+\s+3 127\.0\.0\.1:36052 → 127\.0\.0\.1:9092 kafka\s+Produce v9 id=3 → #46", lines[0]
    )
    out = res.out
    # field tree first (header then body), messages, then the hex dump
    assert (
        out.index('client_id: "heldout-kp-producer" (str)')
        < out.index("acks: -1 (int)")
        < out.index("0000 [")
    )
    assert "messages (50): (list[50])" in out  # 30 + 20 records in this Produce (see its summary)
    assert 'topic: "kp-basic" (str)' in out
    payload = pcap_payload(kafka_basic, 45)
    # The size prefix (first 4 bytes) is marked: "[00 00 1d 0f]"
    assert f"0000 [{payload[:4].hex(' ')}]{payload[4:8].hex(' ')}" in out
    assert int.from_bytes(payload[:4], "big") + 4 == len(payload)


def test_show_several_packets_and_a_missing_one(capsys, kafka_basic):
    res = run_cli(capsys, "show", kafka_basic, "-p", "45", "-p", "46")
    assert res.code == 0
    assert "Produce v9 id=3 → #46" in res.out and "Produce v9 id=3 ← #45" in res.out
    res = run_cli(capsys, "show", kafka_basic, "-p", "5")
    assert res.code == 1
    assert "no frame completes in packet #5" in res.err


def test_show_packet_with_several_frames(capsys, captures):
    """Pulsar s01: the summary lists the frames that end in each packet; show prints them all."""
    pcap = captures / "pulsar" / "s01-producer-nobatch.pcap"
    summary = json.loads(pcap.with_name("s01-producer-nobatch.summary.json").read_text())
    counts: dict[int, int] = {}
    for f in summary["frames"]:
        counts[f["last_packet"]] = counts.get(f["last_packet"], 0) + 1
    packet, n = max(counts.items(), key=lambda kv: kv[1])
    assert n > 1
    res = run_cli(capsys, "show", pcap, "-p", str(packet))
    heads = [x for x in res.out.splitlines() if re.match(rf"^\s+{packet}\s", x)]
    assert len(heads) == n


def test_follow_stream_as_a_conversation(capsys, kafka_basic):
    res = run_cli(capsys, "follow", kafka_basic, "--stream", "3", "--width", "100")
    assert res.code == 0, res.err
    lines = res.out.splitlines()
    assert lines[0].startswith("client 127.0.0.1:36052") and "server 127.0.0.1:9092" in lines[0]
    heads = [x for x in lines if re.search(r"#\d+ \d+\.\d{6} ", x)]
    rows = [r for r in read_tsv(kafka_basic.with_name("kafka-python-basic.pdus.tsv")) if r["stream"] == "3"]
    assert len(heads) == len(rows) == 14
    for line, r in zip(heads, sorted(rows, key=lambda r: int(r["last_frame"])), strict=True):
        assert f"#{r['last_frame']} " in line and f"{r['api_name']} v{r['api_version']}" in line
        if r["dir"] == "req":
            assert line.startswith("#")  # client on the left
        else:
            assert line.startswith(" " * 40)  # server on the right half
    assert lines[-1].startswith("== 14 frames")
    res = run_cli(capsys, "follow", kafka_basic, "--stream", "99")
    assert res.code == 1 and "no TCP stream 99" in res.err


COMMANDS = {
    "timeline": [
        "--filter",
        "--decode-as",
        "--count",
        "--verbose",
        "--hex",
        "--format",
        "--time",
        "--all-anomalies",
        "--mark",
        "--line-buffered",
        "--workers",
        "--color",
        "--progress",
    ],
    "show": ["--packet", "--hex", "--mark", "--filter", "--decode-as", "--color"],
    "stats": ["--filter", "--json", "--decode-as", "--color", "--progress"],
    "follow": ["--stream", "--filter", "--decode-as", "--width", "--color"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_explains_every_option_with_an_example(capsys, command):
    res = run_cli(capsys, command, "--help")
    assert res.code == 0
    text = res.out
    assert "Example" in text
    for opt in COMMANDS[command]:
        assert opt in text
    # Each option's help line carries an example ("e.g." / "E.g.") or its own sample value.
    options = text.split("Options:", 1)[1]
    entries = re.split(r"\n  (?=-)", options)
    for entry in entries:
        if not entry.strip() or entry.strip().startswith(("--help", "-h, --help")):
            continue
        assert re.search(r"e\.g\.|E\.g\.|repeatable", entry), entry


def test_show_points_from_a_middle_packet_to_the_frame(capsys, captures):
    """p08: frames.tsv places the first 1 MiB AppendBlockEnd on packets first_frame..last_frame."""
    pcap = captures / "pravega" / "p08-large-events.pcap"
    row = next(
        r for r in read_tsv(pcap.with_name("p08-large-events.frames.tsv")) if r["type"] == "AppendBlockEnd"
    )
    first, last = int(row["first_frame"]), int(row["last_frame"])
    assert last - first > 10
    middle = (first + last) // 2
    res = run_cli(capsys, "show", pcap, "-p", str(middle))
    assert res.code == 1
    assert f"packet #{middle} carries part of the frame completed in #{last}" in res.err
    res = run_cli(capsys, "show", pcap, "-p", str(last))
    assert res.code == 0 and "AppendBlockEnd" in res.out.splitlines()[1]
    assert f'packets: "{first}-{last}"' in res.out


def _marked_runs(out: str) -> list[bytes]:
    """The bracketed byte runs of a plain hex dump (a run closed at a line's end and reopened at the
    next line's start continues)."""
    runs: list[bytes] = []
    cur: bytearray | None = None
    for line in out.splitlines():
        if not re.match(r"^[0-9a-f]{4}[ \[]", line):
            continue
        hexpart = line[5:56].rstrip()  # 16 cells of " xx" (one "  " gap) and the closing mark
        if cur is not None and not hexpart.startswith("["):
            runs.append(bytes(cur))
            cur = None
        i = 0
        while i < len(hexpart):
            ch = hexpart[i]
            if ch == "[":
                cur = cur if (i == 0 and cur is not None) else bytearray()
            elif ch == "]":
                if i < len(hexpart) - 1 and cur is not None:
                    runs.append(bytes(cur))
                    cur = None
            elif ch in "0123456789abcdef" and hexpart[i + 1 : i + 2] in tuple("0123456789abcdef"):
                if cur is not None:
                    cur.append(int(hexpart[i : i + 2], 16))
                i += 1
            i += 1
    if cur is not None:
        runs.append(bytes(cur))
    return runs


def test_show_marks_a_field_by_name(capsys, kafka_basic):
    """--mark client_id brackets the client id's bytes (its span, not a search for its value);
    pdus.tsv names packet 45's client heldout-kp-producer."""
    tsv = {int(r["last_frame"]): r for r in read_tsv(kafka_basic.with_name("kafka-python-basic.pdus.tsv"))}
    res = run_cli(capsys, "show", kafka_basic, "-p", "45", "-x", "--mark", "client_id", "--mark", "0:4")
    assert res.code == 0, res.err
    runs = _marked_runs(res.out)
    payload = pcap_payload(kafka_basic, 45)
    assert runs[0] == payload[:4]
    # The field's whole encoding, where the decoder read it: Kafka's nullable string is an int16
    # length (19 = len("heldout-kp-producer")) then the bytes.
    client_id = tsv[45]["client_id"].encode()
    assert runs[1] == len(client_id).to_bytes(2, "big") + client_id
    assert len(runs) == 2


def _first_marked_offset(out: str) -> int:
    """The frame offset of the first bracketed byte of a plain hex dump (`0010  6c[64 …`)."""
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]{4})([ \[].*)$", line)
        if not m or "[" not in m.group(2)[:51]:
            continue
        before = m.group(2)[: m.group(2).index("[")]
        return int(m.group(1), 16) + len(re.findall(r"[0-9a-f]{2}", before))
    raise AssertionError("nothing marked")


def test_show_marks_kafka_header_fields(capsys, kafka_basic):
    """Kafka's header fields are declared from the frame (`kafka.correlation_id`…) and the
    decoder keeps their spans: `--mark correlation_id` and `--mark api_key` are accepted and
    bracket the header's bytes. Expected bytes come from pdus.tsv (written by another decoder)
    and Kafka's header layout: a request is length(4) api_key(2) api_version(2)
    correlation_id(4), a response length(4) correlation_id(4), all big-endian."""
    rows = read_tsv(kafka_basic.with_name("kafka-python-basic.pdus.tsv"))

    def whole(r: dict[str, str]) -> bool:  # the packet holds exactly this one PDU
        n = int(r["first_frame"])
        return n == int(r["last_frame"]) and len(pcap_payload(kafka_basic, n)) == int(r["length"]) + 4

    req = next(r for r in rows if r["dir"] == "req" and r["api_name"] == "Produce" and whole(r))
    resp = next(r for r in rows if r["dir"] == "resp" and r["api_name"] == "Produce" and whole(r))
    for r, at in ((req, 8), (resp, 4)):
        packet = int(r["first_frame"])
        res = run_cli(capsys, "show", kafka_basic, "-p", str(packet), "-x", "--mark", "correlation_id")
        assert res.code == 0, res.err
        cid = int(r["correlation_id"]).to_bytes(4, "big", signed=True)
        assert _marked_runs(res.out) == [cid]
        assert _first_marked_offset(res.out) == at  # the header's place, not another copy
        assert pcap_payload(kafka_basic, packet)[at : at + 4] == cid
    res = run_cli(capsys, "show", kafka_basic, "-p", req["first_frame"], "-x", "--mark", "api_key")
    assert res.code == 0, res.err
    assert _marked_runs(res.out) == [int(req["api_key"]).to_bytes(2, "big")]
    assert _first_marked_offset(res.out) == 4
    # A name no declaration knows is still refused.
    res = run_cli(capsys, "show", kafka_basic, "-p", req["first_frame"], "-x", "--mark", "correlation_idd")
    assert res.code == 2 and "correlation_id" in res.err


def test_show_marks_numbers_by_their_span(capsys, kafka_basic):
    """Numbers have no value to search for: their spans mark them. Packet 45 is a Produce with
    required acks -1 and a 30000 ms timeout (tshark's kafka.required_acks and kafka.timeout);
    Kafka writes them as a big-endian int16 and int32, so the marked bytes are computed here."""
    res = run_cli(capsys, "show", kafka_basic, "-p", "45", "-x", "--mark", "timeout_ms", "--mark", "acks")
    assert res.code == 0, res.err
    assert _marked_runs(res.out) == [(-1).to_bytes(2, "big", signed=True) + (30000).to_bytes(4, "big")]
