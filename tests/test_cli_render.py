"""Screenshot-like checks: the timeline and stats of a real capture in 80- and 200-column terminals."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console

from wiredump.cli.output import Out
from wiredump.cli.render import hex_lines, plain_table, short_latency
from wiredump.cli.source import Run, annotate
from wiredump.cli.stats import collect, print_rich
from wiredump.cli.timeline import TimelineOptions, TimelinePrinter
from wiredump.dissect.pipeline import Options


def console(width: int) -> Console:
    return Console(
        width=width, record=True, force_terminal=True, color_system="truecolor", file=io.StringIO()
    )


def rich_timeline(pcap, width: int, **opts) -> tuple[str, str]:
    c = console(width)
    run = Run([str(pcap)], Options())
    printer = TimelinePrinter(Out(console=c), TimelineOptions(**opts))
    printer.run(run, annotate(run.events()))
    printer.finish()
    return c.export_text(), c.file.getvalue()


@pytest.fixture(scope="module")
def legacy(captures):
    return captures / "kafka" / "kafka-python-legacy-msgset.pcap"


@pytest.mark.parametrize("width", [80, 200])
def test_timeline_fits_the_terminal(legacy, width):
    text, raw = rich_timeline(legacy, width)
    lines = text.rstrip("\n").split("\n")
    # 55 frames (pdus.tsv has 55 rows), one line each: nothing wrapped onto a second line.
    assert len(lines) == 55
    assert all(re.match(r"^\s*\d+\s+\d+\.\d{6}\s+\d+ ", x) for x in lines)
    assert all(cell_len(x) <= width for x in lines)
    assert "\x1b[" in raw  # coloured
    unanswered = [x for x in lines if "[unanswered]" in x]
    assert [int(x.split()[0]) for x in unanswered] == [20, 109, 175]
    if width == 200:
        assert "127.0.0.1:60024 → 127.0.0.1:9092 kafka" in text
        assert not any(x.endswith("…") for x in lines if len(x) < 190)
    else:
        assert any(x.endswith("…") for x in lines)  # long summaries are cut, not wrapped


@pytest.mark.parametrize("width", [80, 200])
def test_stats_fit_the_terminal(captures, legacy, width):
    """Three captures with long type names (PARTITIONED_METADATA_RESPONSE) and long error names."""
    pcaps = [
        legacy,
        captures / "pulsar" / "s04-consumer.pcap",
        captures / "pravega" / "p02-batching-multi-segment.pcap",
    ]
    c = console(width)
    result = collect([str(p) for p in pcaps], None, False).result()
    print_rich(Out(console=c), result)
    text = c.export_text()
    lines = text.rstrip("\n").split("\n")
    assert all(cell_len(x) <= width for x in lines)
    # Every type row starts on a line of its own with its frame count and all its latency columns.
    for t in result["types"]:
        lat = t["latency_us"]
        shown = ("p50", "p90", "p99", "max") if width >= 110 else ("p50", "p99", "max")  # p90 needs room
        cells = [short_latency(lat[k]) for k in shown]
        pattern = rf"^ {t['protocol']}\s+{re.escape(t['type'][:8])}\S*\s+{t['frames']}\s.*" + r"\s+".join(
            re.escape(x) for x in cells
        )
        assert any(re.match(pattern, x) for x in lines), t["type"]
    states = [x for x in lines if re.search(r"\s(closed|open|reset|midstream)\s*$", x)]
    assert len(states) == len(result["connections"]) == 23
    assert "Latency histogram" in text and "█" in text


def test_hex_lines_mark_bytes():
    data = bytes(range(20))
    lines = list(hex_lines(data, [(1, 3)]))
    assert lines[0].startswith("0000  00[01 02]03 04")
    assert lines[0].endswith(" " + "".join(chr(b) if 32 <= b < 127 else "." for b in data[:16]))
    assert lines[1].startswith("0010  10 11 12 13")


def test_small_helpers():
    assert [short_latency(v) for v in (None, 337, 1011, 50_100, 501_563, 3_005_000)] == [
        "-",
        "337µs",
        "1.01ms",
        "50.1ms",
        "502ms",
        "3.00s",
    ]
    assert list(plain_table(["a", "bb"], [["xyz", "1"]], right={1})) == ["a    bb", "---  --", "xyz   1"]


def test_badges_and_plain_line_for_bad_frames():
    from wiredump.cli.render import badges, parts, plain_line, rich_line
    from wiredump.dissect.model import Anomaly, Frame

    f = Frame(protocol="pulsar", type="SEND", type_code=6, kind="request", correlation_id=4)
    f.role, f.packet, f.stream = "client", 12, 0
    f.src, f.src_port, f.dst, f.dst_port = "10.0.0.1", 50000, "10.0.0.2", 6650
    f.summary = "producer_id=0 seq=4"
    f.status = "bad_checksum"
    f.anomalies.append(Anomaly("bad_checksum", "crc32c 0x1 != 0x2", 20))
    f.anomalies.append(Anomaly("decompression_failed", "lz4: bad frame", 30))
    assert badges(f, "unanswered", "gap") == [
        "bad_checksum",
        "decompression_failed",
        "unanswered",
        "after gap",
    ]
    line = plain_line(parts(f, "1.000000", "unanswered"))
    assert line == (
        "    12   1.000000   0 10.0.0.1:50000 → 10.0.0.2:6650 pulsar  SEND id=4 "
        "[bad_checksum, decompression_failed, unanswered]  producer_id=0 seq=4"
    )
    r = Frame(protocol="kafka", type="Produce", type_code=0, kind="response", version=9, correlation_id=3)
    r.role, r.packet, r.stream, r.peer_packet, r.latency_us = "server", 46, 3, 45, 1011
    r.src, r.src_port, r.dst, r.dst_port = "127.0.0.1", 9092, "127.0.0.1", 36052
    r.error, r.error_code, r.summary = "NOT_LEADER_OR_FOLLOWER", 6, "t[0]@-1"
    p = parts(r, "0.056109")
    assert plain_line(p) == (
        "    46   0.056109   3 127.0.0.1:36052 ← 127.0.0.1:9092 kafka   Produce v9 id=3 ← #45 1.011ms "
        "[error NOT_LEADER_OR_FOLLOWER]  t[0]@-1"
    )
    styled = rich_line(p, 200)
    assert styled.plain == plain_line(p)
    assert any("red" in str(span.style) for span in styled.spans)


@pytest.mark.parametrize("width", [80, 200])
def test_follow_lines_fit_their_half(captures, width):
    from wiredump.cli.follow import conversation_lines
    from wiredump.dissect.pipeline import dissect

    pcap = captures / "pulsar" / "s04-consumer.pcap"
    n = 0
    for ev in dissect([str(pcap)], Options()):
        if ev.kind != "frame":
            continue
        f = ev.obj
        for line, _head in conversation_lines(f, "1.000000", None, width):
            assert cell_len(line) <= width
            if f.role == "client":
                assert not line.startswith(" " * (width // 2))
            else:
                assert line.startswith(" " * (width // 2 - 2))
        n += 1
    assert n == 322  # s04-consumer.summary.json: frames_total


def test_annotate_reply_verdicts_keep_order():
    from wiredump.cli.source import NO_REPLY_YET, UNANSWERED
    from wiredump.dissect.model import Anomaly, Exchange, Frame
    from wiredump.dissect.pipeline import CaptureEnd, Event

    def req(packet: int, cid: int, awaiting: bool = False) -> Frame:
        f = Frame(protocol="kafka", type="Produce", type_code=0, kind="request", correlation_id=cid)
        f.packet, f.first_packet, f.stream, f.awaiting = packet, packet, 1, awaiting
        return f

    def ex(packet: int, cid: int, status: str) -> Event:
        return Event("exchange", Exchange(1, "kafka", "Produce", cid, status, request_packet=packet), "c")

    a, b, c, d = req(10, 1), req(11, 2), req(12, 3, awaiting=True), req(14, 4)
    later = Frame(protocol="kafka", type="Fetch", type_code=1, kind="response")
    later.packet, later.first_packet, later.stream = 20, 20, 1
    events = [
        ex(11, 2, "no_response_expected"),  # before its frame
        Event("frame", a, "c"),
        Event("frame", b, "c"),
        Event("frame", c, "c"),
        Event("anomaly", Anomaly("gap", "10 bytes missing", packet=13, stream=1), "c"),
        Event("frame", d, "c"),  # waits for its verdict, holding `later` back
        Event("frame", later, "c"),
        ex(10, 1, "unanswered"),
        ex(14, 4, "unanswered"),
        Event("capture_end", CaptureEnd("c", 20, None, 0), "c"),
    ]
    items = list(annotate(events))
    frames = [(i.ev.obj.packet, i.reply, i.after) for i in items if i.ev.kind == "frame"]
    assert frames == [
        (10, UNANSWERED, None),
        (11, None, None),
        (12, NO_REPLY_YET, None),
        (14, UNANSWERED, "gap"),
        (20, None, None),
    ]
    assert [i.ev.kind for i in items] == [e.kind for e in events]  # nothing lost, order kept


# ANSI SGR codes of rich's standard styles (ECMA-48: 1 bold, 32 green, 33 yellow, 35 magenta, 36 cyan).
_SGR = {"bold cyan": "1;36", "bold magenta": "1;35", "bold green": "1;32", "bold yellow": "1;33"}


@pytest.mark.parametrize(
    ("protocol", "capture"),
    [
        ("kafka", "kafka/kafka-python-basic.pcap"),
        ("pulsar", "pulsar/s01-producer-nobatch.pcap"),
        ("pravega", "pravega/p01-writer-reader-basic.pcap"),
        ("tank", "tank/t01-basic.pcap"),
    ],
)
def test_protocol_colour_is_the_protocols_own(captures, protocol, capture):
    """Each protocol's name is coloured as the protocol declares (`STYLE` in its `names` module,
    read through the registry); the renderer itself names no protocol."""
    from wiredump.dissect.protocols import all_protocols

    path = captures / capture
    style = all_protocols()[protocol].style()
    _, raw = rich_timeline(path, 200)
    assert f"\x1b[{_SGR[style]}m{protocol}" in raw
    assert len({spec.style() for spec in all_protocols().values()}) == len(all_protocols())
    for module in ("render", "follow", "stats"):
        text = (Path(__file__).parents[1] / "wiredump" / "cli" / f"{module}.py").read_text()
        assert not [p for p in all_protocols() if f'"{p}"' in text], module
