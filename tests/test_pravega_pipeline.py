"""Pravega through the whole pipeline on a crafted capture, laid out like the Java client's traffic.

A writer on a pooled connection (request ids carry a flow id) appends three events in
an APPEND_BLOCK closed by a PARTIAL_EVENT, the block spread over three TCP segments;
a second writer is sent elsewhere by WRONG_HOST; keep-alives go both ways; a reader's
READ_SEGMENT is answered by two SEGMENT_READs that split an event; the segment store
listens on a port that is not Pravega's default, so it is recognised by the HELLO.
Expected values are the inputs chosen here (WIRE.md §4, §6).
"""

from __future__ import annotations

import uuid
from pathlib import Path

from crafted import Conn, Rec, write_pcap
from test_pravega_crafted import (
    HELLO_C,
    HELLO_S,
    LONG_MIN,
    SEG,
    WRITER,
    append_setup,
    block_end,
    cmd,
    data_appended,
    i32,
    i64,
    read_segment,
    record,
    s,
    segment_read,
    setup_append,
)

from wiredump.dissect.pipeline import Options, dissect

PORT = 22345  # not 12345: the protocol is recognised by the client's HELLO


def test_java_like_writer_and_reader(tmp_path: Path) -> None:
    flow = 3 << 32
    other = uuid.UUID(int=42)
    e1, e2, e3 = b"evt-1", b"evt-2" * 10, b"evt-3, the one split by the block end" * 4
    whole = record(e1) + record(e2)
    r3 = record(e3)
    block = cmd(3, WRITER.bytes + whole + cmd(-2, r3[:40]))
    end = block_end(len(whole), r3[40:], 3, 3, flow | 1)

    recs: list[Rec] = []
    w = Conn(recs, 50000, PORT)
    w.client(HELLO_C)
    w.server(HELLO_S)
    setup_pkt = w.client(setup_append(flow | 1))
    setup_ok_pkt = w.server(append_setup(flow | 1))
    w.client(block[:50])
    w.client(block[50:120])
    end_pkt = w.client(block[120:] + end)
    ack_pkt = w.server(data_appended(3, LONG_MIN, flow | 1, len(whole) + len(r3)))
    other_pkt = w.client(setup_append(flow | 2, writer=other))
    wrong_pkt = w.server(cmd(50, i64(flow | 2) + s(SEG) + s("10.0.0.9:12345") + s("")))
    ka_c = w.client(cmd(100, b""))
    ka_s = w.server(cmd(100, b""))

    r = Conn(recs, 50002, PORT)
    r_hello = r.client(HELLO_C)
    r_hello_ok = r.server(HELLO_S)
    data = whole + r3
    read_pkt = r.client(read_segment(7, 0))
    read1 = r.server(segment_read(7, 0, data[:60]))
    read2 = r.server(segment_read(7, 60, data[60:], tail=True))
    oversize_pkt = r.server(i32(10) + i32(0x7FFFFFF0))

    path = write_pcap(tmp_path / "pravega.pcap", recs)
    frames, anomalies, exchanges = [], [], []
    for ev in dissect([str(path)], Options()):
        {"frame": frames, "anomaly": anomalies, "exchange": exchanges}.get(ev.kind, []).append(ev.obj)

    assert {f.protocol for f in frames} == {"pravega"}
    got = [(f.stream, f.type, f.kind, f.packet, f.correlation_id, f.peer_packet) for f in frames]
    assert got == [
        (0, "Hello", "request", 4, None, 5),
        (0, "Hello", "response", 5, None, 4),
        (0, "SetupAppend", "request", setup_pkt, flow | 1, setup_ok_pkt),
        (0, "AppendSetup", "response", setup_ok_pkt, flow | 1, setup_pkt),
        (0, "AppendBlock", "request", end_pkt, None, None),
        (0, "AppendBlockEnd", "request", end_pkt, flow | 1, ack_pkt),
        (0, "DataAppended", "response", ack_pkt, flow | 1, end_pkt),
        (0, "SetupAppend", "request", other_pkt, flow | 2, wrong_pkt),
        (0, "WrongHost", "response", wrong_pkt, flow | 2, other_pkt),
        (0, "KeepAlive", "event", ka_c, None, None),
        (0, "KeepAlive", "event", ka_s, None, None),
        (1, "Hello", "request", r_hello, None, r_hello_ok),
        (1, "Hello", "response", r_hello_ok, None, r_hello),
        (1, "ReadSegment", "request", read_pkt, 7, read1),
        (1, "SegmentRead", "response", read1, 7, read_pkt),
        (1, "SegmentRead", "response", read2, 7, read_pkt),
    ]
    by_type = {f.type: f for f in frames}
    assert by_type["AppendBlock"].first_packet == end_pkt - 2
    produced = [
        (m.topic, m.offset, m.value, m.detail["writer_id"]) for m in by_type["AppendBlockEnd"].messages
    ]
    assert produced == [(SEG, 1, e1, str(WRITER)), (SEG, 2, e2, str(WRITER)), (SEG, 3, e3, str(WRITER))]
    reads = [f for f in frames if f.type == "SegmentRead"]
    assert [[m.value for m in f.messages] for f in reads] == [[e1], [e2, e3]]
    assert by_type["WrongHost"].error == "WrongHost" and by_type["WrongHost"].error_code == 50
    assert by_type["AppendBlockEnd"].fields["flow"] == {"flow_id": 3, "sequence": 1}

    assert [(a.kind, a.packet) for a in anomalies] == [
        ("oversize_frame", oversize_pkt),
        ("resync", oversize_pkt),
    ]
    assert sorted(((e.stream, e.type, e.status, e.error_code) for e in exchanges), key=str) == [
        (0, "AppendBlock", "no_response_expected", None),
        (0, "AppendBlockEnd", "answered", None),
        (0, "Hello", "answered", None),
        (0, "SetupAppend", "answered", 50),
        (0, "SetupAppend", "answered", None),
        (1, "Hello", "answered", None),
        (1, "ReadSegment", "answered", None),
    ]
