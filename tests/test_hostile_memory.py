"""Issue 17.1 and 17.4: memory bounded by the engine's own limits, checked on small crafted inputs.

* Messages per frame (`Limits.max_messages`, set small here): a frame holding more messages
  than the cap keeps exactly the cap as rows, says how many it read in a `message_limit`
  anomaly, and keeps the status it has without the cap, whether or not messages are wanted.
  Expected counts are the ones the builders below chose (120 records, a cap of 50).
* Connections: a closed or reset connection is dropped from the reassembler's table once
  `closed_linger_us` of capture time passed, connections that never carried payload after
  `half_open_us` (counted), the oldest quiet one past `max_connections`; the connections
  table keeps one row per connection in stream order with the values the packets give
  (counted by hand from the packets written here).
* `Limits.max_stream_buffer` is the framer's ceiling: a frame declared larger is an
  `oversize_frame`, never buffered.

Timing and peak memory are measured in `benchmarks/hostile.py`, not here.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import crc32c
import pyarrow as pa
import pytest
from crafted import ETHERNET, Conn, Rec, link, tcp, write_pcap
from test_pravega_crafted import HELLO_C, HELLO_S, append_setup, block_end, setup_append
from test_tank_crafted import M as TankMessage
from test_tank_crafted import bundle, produce_req

from wiredump.dissect.limits import Limits
from wiredump.dissect.pipeline import Options, dissect
from wiredump.dissect.tables import record_batches
from wiredump.proto import PulsarApi_pb2 as api

N = 120
CAP = 50
TS0 = 1_700_000_000_000_000


# -- builders ------------------------------------------------------------------------------------
def zz(v: int) -> bytes:
    v = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if not v:
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def kafka_produce(n: int, corrupt_last: bool = False) -> bytes:
    """Produce v3 with one gzip record batch of `n` empty records (the last one's length wrong
    when `corrupt_last`: the batch is then malformed, past the cap)."""
    empty = zz(6) + b"\x00" + zz(0) + zz(0) + zz(-1) + zz(0) + zz(0)
    last = (zz(7) + empty[1:] + b"\x00") if corrupt_last else empty
    raw = empty * (n - 1) + last
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    records = c.compress(raw) + c.flush()
    after_crc = struct.pack(">hiqqqhii", 1, n - 1, 0, 0, -1, -1, -1, n) + records
    tail = struct.pack(">ibI", 0, 2, crc32c.crc32c(after_crc)) + after_crc
    batch = struct.pack(">qi", 0, len(tail)) + tail
    header = struct.pack(">hhih", 0, 3, 1, 4) + b"test"
    topic = b"t"
    body = struct.pack(">hhi", -1, 1, 30000) + struct.pack(">ih", 1, len(topic)) + topic
    body += struct.pack(">ii", 1, 0) + struct.pack(">i", len(batch)) + batch
    msg = header + body
    return struct.pack(">i", len(msg)) + msg


def pulsar_frames(n: int) -> list[bytes]:
    """CONNECT, PRODUCER and a SEND whose zlib batch holds `n` entries of one byte each."""

    def simple(cmd: api.BaseCommand) -> bytes:
        c = cmd.SerializeToString()
        return struct.pack(">II", 4 + len(c), len(c)) + c

    single = api.SingleMessageMetadata(payload_size=1).SerializeToString()
    raw = (struct.pack(">I", len(single)) + single + b"x") * n
    payload = zlib.compress(raw)
    cmd = api.BaseCommand(
        type=api.BaseCommand.SEND, send=api.CommandSend(producer_id=0, sequence_id=0, num_messages=n)
    )
    meta = api.MessageMetadata(
        producer_name="p",
        sequence_id=0,
        publish_time=1,
        compression=api.ZLIB,
        uncompressed_size=len(raw),
        num_messages_in_batch=n,
    )
    c, m = cmd.SerializeToString(), meta.SerializeToString()
    tail = struct.pack(">I", len(m)) + m + payload
    checksummed = b"\x0e\x01" + struct.pack(">I", crc32c.crc32c(tail)) + tail
    send = struct.pack(">II", 4 + len(c) + len(checksummed), len(c)) + c + checksummed
    connect = api.BaseCommand(
        type=api.BaseCommand.CONNECT, connect=api.CommandConnect(client_version="t", protocol_version=20)
    )
    producer = api.BaseCommand(
        type=api.BaseCommand.PRODUCER,
        producer=api.CommandProducer(topic="persistent://public/default/t", producer_id=0, request_id=1),
    )
    return [simple(connect), simple(producer), send]


def pravega_frames(n: int) -> list[tuple[bool, bytes]]:
    events = b"".join(struct.pack(">ii", 0, 1) + b"e" for _ in range(n))
    return [
        (True, HELLO_C),
        (False, HELLO_S),
        (True, setup_append(1)),
        (False, append_setup(1)),
        (True, block_end(len(events), events, n, n - 1, 2)),
    ]


def tank_frames(n: int) -> list[bytes]:
    """A Produce of two snappy bundles of n/2 messages each (the cap falls in the second)."""
    half = n // 2
    b = bundle([TankMessage(b"v") for _ in range(half)], snappy=True)
    return [produce_req(7, [("t", [(0, b), (1, b)])])]


def capture(tmp_path: Path, name: str, port: int, frames: list[tuple[bool, bytes]]) -> Path:
    recs: list[Rec] = []
    conn = Conn(recs, 40000, port)
    for client, data in frames:
        for i in range(0, len(data), 30000):
            (conn.client if client else conn.server)(data[i : i + 30000])
    return write_pcap(tmp_path / name, recs)


CASES = {
    "kafka": (9092, lambda: [(True, kafka_produce(N))], "Produce"),
    "pulsar": (6650, lambda: [(True, f) for f in pulsar_frames(N)], "SEND"),
    "pravega": (12345, lambda: pravega_frames(N), "AppendBlockEnd"),
    "tank": (11011, lambda: [(True, f) for f in tank_frames(N)], "Produce"),
}


def decode(path: Path, limits: Limits, messages: bool = True) -> tuple[list[Any], dict[str, list[Any]]]:
    """The events of a capture and the rows of its tables."""
    events = list(dissect([str(path)], Options(limits=limits, messages=messages)))
    tables: dict[str, list[Any]] = {}
    for name, batch in record_batches(events):
        tables.setdefault(name, []).extend(pa.Table.from_batches([batch]).to_pylist())
    return events, tables


def the_frame(events: list[Any], type_: str) -> Any:
    (f,) = [e.obj for e in events if e.kind == "frame" and e.obj.type == type_]
    return f


# -- the message cap ------------------------------------------------------------------------------
@pytest.mark.parametrize("proto", sorted(CASES))
def test_cap_keeps_exactly_cap_rows_counts_the_rest_and_keeps_the_status(proto: str, tmp_path: Path) -> None:
    port, frames, type_ = CASES[proto]
    path = capture(tmp_path, f"{proto}.pcap", port, frames())
    capped = Limits(max_messages=CAP)
    events, tables = decode(path, capped)
    f = the_frame(events, type_)
    free_events, _ = decode(path, Limits())
    free = the_frame(free_events, type_)
    assert len(free.messages) == N  # the builders' count, without a cap
    # Exactly the cap as rows, for this frame, in the messages table.
    rows = [m for m in tables["messages"] if m["packet"] == f.packet and m["stream"] == f.stream]
    assert len(f.messages) == CAP and len(rows) == CAP
    # The first CAP messages, the same ones the uncapped decode gives.
    assert [m.value_size for m in f.messages] == [m.value_size for m in free.messages[:CAP]]
    # One message_limit anomaly with the counts, in the anomalies table too; the status stays.
    limit = [a for a in f.anomalies if a.kind == "message_limit"]
    assert len(limit) == 1, f.anomalies
    assert str(CAP) in limit[0].detail
    assert str(N - CAP) in limit[0].detail or str(N - CAP // 1) in limit[0].detail
    assert [a["kind"] for a in tables["anomalies"] if a["packet"] == f.packet].count("message_limit") == 1
    assert f.status == free.status == "ok"
    assert [a.kind for a in free.anomalies if a.kind == "message_limit"] == []
    # Whatever the command: without messages wanted, the same status (and no more rows).
    quiet_events, _ = decode(path, capped, messages=False)
    quiet = the_frame(quiet_events, type_)
    assert quiet.status == f.status
    assert len(quiet.messages) <= CAP


def test_kafka_cap_anomaly_says_how_many_records_and_is_there_without_messages(tmp_path: Path) -> None:
    path = capture(tmp_path, "k.pcap", 9092, [(True, kafka_produce(N))])
    for messages in (True, False):
        events, _ = decode(path, Limits(max_messages=CAP), messages=messages)
        f = the_frame(events, "Produce")
        (limit,) = [a for a in f.anomalies if a.kind == "message_limit"]
        assert f"({N - CAP} of {N})" in limit.detail
        assert f.status == "ok"


def test_a_broken_record_past_the_cap_still_makes_the_frame_malformed(tmp_path: Path) -> None:
    """The rest is still read and checked: the damage past the cap is found with or without it."""
    path = capture(tmp_path, "bad.pcap", 9092, [(True, kafka_produce(N, corrupt_last=True))])
    for limits in (Limits(max_messages=CAP), Limits()):
        for messages in (True, False):
            events, _ = decode(path, limits, messages=messages)
            f = the_frame(events, "Produce")
            assert f.status == "malformed"
            assert any(f"record {N - 1}" in a.detail for a in f.anomalies if a.kind == "malformed")


def test_pulsar_and_tank_summaries_count_every_message_read(tmp_path: Path) -> None:
    events, _ = decode(capture(tmp_path, "p.pcap", 6650, CASES["pulsar"][1]()), Limits(max_messages=CAP))
    f = the_frame(events, "SEND")
    assert f.fields["batch_entries"] == N and f"{N} msgs {N} bytes" in f.summary
    events, _ = decode(capture(tmp_path, "t.pcap", 11011, CASES["tank"][1]()), Limits(max_messages=CAP))
    f = the_frame(events, "Produce")
    assert f"t/0 {N // 2} msgs" in f.summary and f"t/1 {N // 2} msgs" in f.summary


# -- connections -----------------------------------------------------------------------------------
def short_connection(recs: list[Rec], sport: int, t0: int, reset: bool = False) -> None:
    """Handshake, one request and its answer, then FIN/FIN/ACK (8 packets) or an RST (6)."""
    c = Conn(recs, sport, 9092, t0=t0)
    c.client(b"hello")
    c.server(b"world")
    h = "127.0.0.1"
    ts = recs[-1].ts_us
    if reset:
        recs.append(Rec(link(ETHERNET, tcp(h, h, sport, 9092, c.cseq, c.sseq, "R")), ts_us=ts + 1000))
        return
    for i, (a, b, s, k, fl) in enumerate(
        [
            (sport, 9092, c.cseq, c.sseq, "FA"),
            (9092, sport, c.sseq, c.cseq + 1, "FA"),
            (sport, 9092, c.cseq + 1, c.sseq + 1, "A"),
        ]
    ):
        recs.append(Rec(link(ETHERNET, tcp(h, h, a, b, s, k, fl)), ts_us=ts + 1000 * (i + 1)))


def test_closed_and_reset_connections_are_released_rows_unchanged(tmp_path: Path) -> None:
    limits = Limits()
    gap = limits.closed_linger_us + 1_000_000  # each connection starts after the last one's linger
    recs: list[Rec] = []
    for i in range(5):
        short_connection(recs, 41000 + i, TS0 + i * gap, reset=i == 2)
    path = write_pcap(tmp_path / "short.pcap", recs)
    events = list(dissect([str(path)]))
    rows = [e.obj for e in events if e.kind == "connection"]
    # 8 packets a closed connection (handshake, request, answer, FIN/FIN/ACK), 6 the reset one.
    assert [(r.stream, r.client_port, r.packets, r.state) for r in rows] == [
        (i, 41000 + i, 6 if i == 2 else 8, "reset" if i == 2 else "closed") for i in range(5)
    ]
    assert all(r.bytes_client == 5 and r.bytes_server == 5 for r in rows)
    # Each row leaves once its connection is released, right after that connection's frames
    # (request and response), not at the end of the capture.
    order = [(e.kind, e.obj.stream) for e in events if e.kind in ("frame", "connection")]
    assert order == [(k, i) for i in range(5) for k in ("frame", "frame", "connection")]


def test_the_last_ack_after_close_still_counts_in_the_row(tmp_path: Path) -> None:
    """Within the linger, a late packet of a closed connection counts in its row (as tshark's)."""
    recs: list[Rec] = []
    short_connection(recs, 41000, TS0)
    h = "127.0.0.1"
    late = recs[-1].ts_us + 2_000_000
    recs.append(Rec(link(ETHERNET, tcp(h, h, 9092, 41000, 5012, 1012, "A")), ts_us=late))
    path = write_pcap(tmp_path / "late.pcap", recs)
    rows = [e.obj for e in dissect([str(path)]) if e.kind == "connection"]
    assert [(r.stream, r.packets, r.last_ts_us) for r in rows] == [(0, 9, late)]


def syn(recs: list[Rec], sport: int, ts: int) -> None:
    recs.append(Rec(link(ETHERNET, tcp("10.0.0.9", "10.0.0.1", sport, 9092, 7, 0, "S")), ts_us=ts))


def test_half_open_connections_are_aged_out_and_counted(tmp_path: Path) -> None:
    limits = Limits()
    recs: list[Rec] = []
    for i in range(3):
        syn(recs, 50000 + i, TS0 + i)
    # One real connection later than half_open_us: the three SYNs have aged out by then.
    short_connection(recs, 41000, TS0 + limits.half_open_us + 1_000_000)
    path = write_pcap(tmp_path / "syns.pcap", recs)
    events = list(dissect([str(path)]))
    (note,) = [e.obj for e in events if e.kind == "anomaly" and e.obj.kind == "half_open_released"]
    assert note.detail.startswith("3 connections that never carried payload")
    rows = [e.obj for e in events if e.kind == "connection"]
    assert [(r.stream, r.packets, r.state) for r in rows] == [
        (0, 1, "open"),
        (1, 1, "open"),
        (2, 1, "open"),
        (3, 8, "closed"),
    ]


def test_past_max_connections_the_oldest_quiet_one_goes_rows_stay_in_stream_order(tmp_path: Path) -> None:
    recs: list[Rec] = []
    c = Conn(recs, 41000, 9092, t0=TS0)  # stream 0 stays open with data the whole capture
    c.client(b"hello")
    for i in range(10):
        syn(recs, 50000 + i, TS0 + 10_000 + i)
    c.client(b"again")
    path = write_pcap(tmp_path / "many.pcap", recs)
    limits = Limits(max_connections=4)
    events = list(dissect([str(path)], Options(limits=limits)))
    rows = [e.obj for e in events if e.kind == "connection"]
    # SYNs 1..7 were evicted; with 5 rows waiting behind the open stream 0 (over the limit of 4)
    # stream 0 gave up its place; it leaves when the capture ends, before 8..10 still tracked.
    assert [r.stream for r in rows] == [1, 2, 3, 4, 5, 6, 7, 0, 8, 9, 10]
    assert rows[7].packets == 5 and rows[7].bytes_client == 10
    (note,) = [e.obj for e in events if e.kind == "anomaly" and e.obj.kind == "connection_limit"]
    assert note.detail.startswith("7 connections were released early")


def test_rows_out_of_order_only_past_max_connections_waiting(tmp_path: Path) -> None:
    """Stream 0 open to the end, 6 connections closing meanwhile, a limit of 3 rows waiting:
    the early rows leave without waiting for stream 0, whose row comes when it ends."""
    limits = Limits(max_connections=3, closed_linger_us=5_000)
    recs: list[Rec] = []
    c = Conn(recs, 40999, 9092, t0=TS0)
    c.client(b"x")
    for i in range(6):
        short_connection(recs, 41000 + i, TS0 + 100_000 * (i + 1))
    c.client(b"y")
    path = write_pcap(tmp_path / "order.pcap", recs)
    rows = [e.obj.stream for e in dissect([str(path)], Options(limits=limits)) if e.kind == "connection"]
    # 1..3 wait behind stream 0; the 4th makes 4 > 3: stream 0 gives up its place, 1..5 leave
    # as released; at the end stream 0, then 6 (still lingering after its close).
    assert rows == [1, 2, 3, 4, 5, 0, 6]
    rows = [
        e.obj.stream
        for e in dissect([str(path)], Options(limits=replace(limits, max_connections=100)))
        if e.kind == "connection"
    ]
    assert rows == list(range(7))


# -- the stream buffer ------------------------------------------------------------------------------
def test_max_stream_buffer_is_the_framers_ceiling(tmp_path: Path) -> None:
    body = bytes(3000)
    frame = struct.pack(">ihhih", 2 + 2 + 4 + 2 + len(body), 18, 3, 1, -1) + body  # ApiVersions, 3,010 bytes
    path = capture(tmp_path, "big.pcap", 9092, [(True, frame)])
    events = list(dissect([str(path)], Options(limits=Limits(max_stream_buffer=1000))))
    over = [e.obj for e in events if e.kind == "anomaly" and e.obj.kind == "oversize_frame"]
    assert len(over) == 1 and "declares 3014 bytes" in over[0].detail and "1000" in over[0].detail
    assert "stream buffer limit" in over[0].detail
    assert not [e for e in events if e.kind == "frame" and e.obj.length > 1000]
    # With the default ceiling the same frame is framed.
    events = list(dissect([str(path)]))
    assert [e.obj.length for e in events if e.kind == "frame"] == [3014]


def test_stats_counts_every_connection_and_lists_the_first_ones() -> None:
    from wiredump.dissect.model import ConnectionSummary
    from wiredump.dissect.pipeline import Event
    from wiredump.dissect.stats import StatsCollector

    stats = StatsCollector()
    stats.MAX_CONNECTIONS_LISTED = 3
    for i in range(5):
        row = ConnectionSummary(
            i, "10.0.0.9", 50000 + i, "10.0.0.1", 9092, None, 1, 0, 0, 0, 0, 0, 0, 0, "open"
        )
        stats.add(Event("connection", row, "c.pcap"))
    res = stats.result()
    assert res["totals"]["connections"] == 5 and res["totals"]["connections_not_listed"] == 2
    assert [c["stream"] for c in res["connections"]] == [0, 1, 2]


def legacy_message(offset: int, value: bytes | None, attrs: int = 0) -> bytes:
    """A magic-1 message (Kafka 0.10 message format): crc32 over magic..value."""
    body = struct.pack(">bbq", 1, attrs, 1_700_000_000_000) + struct.pack(">i", -1)
    body += struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
    msg = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(msg)) + msg


def test_kafka_legacy_gzip_wrapper_is_capped_too(tmp_path: Path) -> None:
    inner = b"".join(legacy_message(i, b"") for i in range(N))
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    wrapper = legacy_message(N - 1, c.compress(inner) + c.flush(), attrs=1)
    header = struct.pack(">hhih", 0, 2, 1, 4) + b"test"
    body = struct.pack(">hi", 1, 30000) + struct.pack(">ih", 1, 1) + b"t" + struct.pack(">ii", 1, 0)
    body += struct.pack(">i", len(wrapper)) + wrapper
    msg = header + body
    path = capture(tmp_path, "legacy.pcap", 9092, [(True, struct.pack(">i", len(msg)) + msg)])
    events, tables = decode(path, Limits(max_messages=CAP))
    f = the_frame(events, "Produce")
    free = the_frame(decode(path, Limits())[0], "Produce")
    assert len(free.messages) == N and free.status == "ok"
    assert len(f.messages) == CAP and f.status == "ok"
    assert [(m.offset, m.value_size, m.checksum_ok) for m in f.messages] == [
        (m.offset, m.value_size, m.checksum_ok) for m in free.messages[:CAP]
    ]
    (limit,) = [a for a in f.anomalies if a.kind == "message_limit"]
    assert f"({N - CAP} of {N})" in limit.detail
    assert len([m for m in tables["messages"] if m["packet"] == f.packet]) == CAP


def test_past_max_connections_with_data_the_oldest_goes(tmp_path: Path) -> None:
    """Every connection carries data and stays open: past the limit the oldest is released (never
    the one just opened), each gets its row once, in stream order at the end."""
    recs: list[Rec] = []
    for i in range(6):
        Conn(recs, 41000 + i, 9092, t0=TS0).client(b"partial")
    path = write_pcap(tmp_path / "open.pcap", recs)
    events = list(dissect([str(path)], Options(limits=Limits(max_connections=4))))
    rows = [e.obj for e in events if e.kind == "connection"]
    assert [(r.stream, r.packets, r.bytes_client) for r in rows] == [(i, 4, 7) for i in range(6)]
    (note,) = [e.obj for e in events if e.kind == "anomaly" and e.obj.kind == "connection_limit"]
    assert note.detail.startswith("2 connections were released early")
