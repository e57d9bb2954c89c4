"""The hostile set (issue 17): captures built to make the engine spend memory or time, and the
peak RSS and wall time of `wiredump` (timeline), `wiredump stats` and `wiredump export` on each.

Built under `benchmarks/data/hostile/` (reused when present; `--rebuild` makes them again):

* amplification: one compressed batch under the ratio cap (`Limits.max_ratio`) that holds
  millions of empty messages, for every codec of every protocol: Kafka record batches
  (gzip, snappy, lz4, zstd; 2.4M empty 7-byte records, as in the issue), Pulsar batches (lz4,
  zlib, zstd, snappy; 2M empty entries), TANK snappy bundles (a Produce and a Consume response,
  4 × 2M two-byte messages each; and a Consume chunk of 16 MiB of zero bytes, which read as
  zero-length bundles was one bundle and one anomaly per byte) and Pravega, which has no codec: an APPEND_BLOCK_END and a
  SEGMENT_READ of 1.9M empty events each (16 MB commands). Each batch carries one incompressible
  value so that its ratio stays under the cap, as an attacker's would;
* a SYN flood of 1M distinct connections (one SYN each, 100 µs apart: 100 s of capture time);
* 100k Kafka connections that each send the first 100 bytes of a 1,000-byte request and stay
  open (a partial frame pending in every framer), and the same closed by FIN after the partial;
* a pcapng of 1M interface description blocks (20 MB) and a packet on the last one kept;
* the pcapng timestamp cases of `tests/test_capture_timestamps.py` (if_tsoffset 2^62 s,
  if_tsresol of seconds with times 2^40..2^64, the most negative offset).

Each command runs in a child process; the figures are the child's peak RSS (`wait4`) and wall
time, with the goals of the issue (≤ 300 MB, ≤ 60 s), whether its output held a traceback,
and the anomaly kinds of the export (the damage reported). The machine's load average is
printed first: wall times on a loaded machine are upper bounds.

    python benchmarks/hostile.py [--only NAME ...] [--rebuild] [--commands timeline,stats,export]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import cramjam
import crc32c
import lz4.block
import lz4.frame
import zstandard

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# The crafted-frame builders of tests/ import their helpers (`conversation`) as pytest does.
sys.path.insert(1, str(ROOT / "tests"))

DATA = ROOT / "benchmarks" / "data" / "hostile"
MAX_RSS_MB = 300
MAX_SECONDS = 60
KILL_AFTER = 300
TS0 = 1_700_000_000_000_000
RATIO = 800
"""Output/input ratio the amplification batches aim at: under `Limits.max_ratio` (1000)."""


# -- a fast pcap writer (scapy would take minutes for a million packets) -------------------------
class Pcap:
    """Ethernet/IPv4/TCP packets written straight to a classic pcap (µs)."""

    def __init__(self, path: Path) -> None:
        self.fh = open(path, "wb")  # noqa: SIM115 — closed in close()
        self.fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        self.ts = TS0

    def packet(
        self, src: int, dst: int, sport: int, dport: int, seq: int, ack: int, flags: int, payload: bytes = b""
    ) -> None:
        ip_len = 20 + 20 + len(payload)
        ip = struct.pack(">BBHHHBBHII", 0x45, 0, ip_len, 0, 0x4000, 64, 6, 0, src, dst)
        tcp = struct.pack(
            ">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0
        )
        data = b"\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x01\x08\x00" + ip + tcp + payload
        sec, usec = divmod(self.ts, 1_000_000)
        self.fh.write(struct.pack("<IIII", sec, usec, len(data), len(data)) + data)

    def close(self) -> None:
        self.fh.close()


FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10
LOCAL = 0x7F000001


class Flow:
    """One TCP connection: handshake, data both ways (cut in 32,000-byte segments), FIN."""

    MSS = 32_000

    def __init__(self, pcap: Pcap, cport: int, sport: int, client: int = LOCAL, server: int = LOCAL) -> None:
        self.p, self.cport, self.sport, self.client, self.server = pcap, cport, sport, client, server
        self.cseq, self.sseq = 1000, 5000
        self._send(True, SYN)
        self.cseq += 1
        self._send(False, SYN | ACK)
        self.sseq += 1
        self._send(True, ACK)

    def _send(self, client: bool, flags: int, payload: bytes = b"") -> None:
        p = self.p
        p.ts += 10
        if client:
            p.packet(self.client, self.server, self.cport, self.sport, self.cseq, self.sseq, flags, payload)
        else:
            p.packet(self.server, self.client, self.sport, self.cport, self.sseq, self.cseq, flags, payload)

    def send(self, client: bool, data: bytes) -> None:
        for i in range(0, len(data), self.MSS):
            piece = data[i : i + self.MSS]
            self._send(client, PSH | ACK, piece)
            if client:
                self.cseq += len(piece)
            else:
                self.sseq += len(piece)

    def close(self) -> None:
        self._send(True, FIN | ACK)
        self.cseq += 1
        self._send(False, FIN | ACK)
        self.sseq += 1
        self._send(True, ACK)


def two_way(path: Path, port: int, exchanges: list[tuple[bool, bytes]]) -> None:
    pcap = Pcap(path)
    flow = Flow(pcap, 40000, port)
    for client, data in exchanges:
        flow.send(client, data)
    flow.close()
    pcap.close()


def incompressible(n: int) -> bytes:
    return random.Random(n).randbytes(n)


# -- Kafka ---------------------------------------------------------------------------------------
def uvarint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if not v:
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def zz(v: int) -> bytes:
    return uvarint((v << 1) ^ (v >> 63))


KAFKA_CODECS: dict[str, tuple[int, Callable[[bytes], bytes]]] = {
    "gzip": (1, lambda b: _gzip(b)),
    "snappy": (2, lambda b: bytes(cramjam.snappy.compress_raw(b))),
    "lz4": (3, lambda b: lz4.frame.compress(b)),
    "zstd": (4, lambda b: zstandard.ZstdCompressor(level=19).compress(b)),
}


def _gzip(b: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(b) + c.flush()


def kafka_records(n: int, pad: int) -> bytes:
    """One record with `pad` incompressible value bytes, then `n` empty 7-byte records."""
    value = incompressible(pad)
    body = b"\x00" + zz(0) + zz(0) + zz(-1) + zz(len(value)) + value + zz(0)
    empty = zz(6) + b"\x00" + zz(0) + zz(0) + zz(-1) + zz(0) + zz(0)
    assert len(empty) == 7
    return zz(len(body)) + body + empty * n


def kafka_batch(codec: int, compressed: bytes, count: int) -> bytes:
    after_crc = struct.pack(">hiqqqhii", codec, 0, TS0 // 1000, TS0 // 1000, -1, -1, -1, count) + compressed
    tail = struct.pack(">ibI", 0, 2, crc32c.crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(tail)) + tail


def kafka_produce(corr: int, batch: bytes | None) -> bytes:
    client = b"hostile"
    header = struct.pack(">hhih", 0, 3, corr, len(client)) + client
    topic = b"amplified"
    body = (
        struct.pack(">hhi", -1, 1, 30000)
        + struct.pack(">ih", 1, len(topic))
        + topic
        + struct.pack(">ii", 1, 0)
    )
    body += struct.pack(">i", len(batch)) + batch if batch is not None else struct.pack(">i", -1)
    msg = header + body
    return struct.pack(">i", len(msg)) + msg


def build_kafka(path: Path, codec: str) -> None:
    n = 2_400_000
    raw = kafka_records(n, 7 * n // RATIO)
    code, compress = KAFKA_CODECS[codec]
    batch = kafka_batch(code, compress(raw), n + 1)
    two_way(path, 9092, [(True, kafka_produce(1, batch)), (True, kafka_produce(2, None))])


def build_kafka_tiny_batches(path: Path) -> None:
    """A Produce whose 49 MB record set is 800k empty 61-byte record batches (a batch header
    with no record, a valid CRC): one decoded batch each in the frame's fields."""
    batch = kafka_batch(0, b"", 0)
    assert len(batch) == 61
    two_way(path, 9092, [(True, kafka_produce(1, batch * 800_000))])


def build_kafka_max_record(path: Path) -> None:
    """One Produce near the 100 MiB frame maximum: a single uncompressed record of a 91 MB
    incompressible value (what a frame at the maximum costs the framing, whatever it holds)."""
    batch = kafka_batch(0, kafka_records(0, 91_000_000), 1)
    two_way(path, 9092, [(True, kafka_produce(1, batch))])


def build_kafka_metadata_topics(path: Path) -> None:
    """Two Metadata v0 exchanges: a small answer (the broker's direction is then in step), then one
    of 1M empty 8-byte topics (error 0, name "", no partition): one element of the decoded body
    each (8 MB; the frame maximum is 100 MiB)."""
    client = b"hostile"

    def req(corr: int) -> bytes:
        r = struct.pack(">hhih", 3, 0, corr, len(client)) + client + struct.pack(">i", 0)
        return struct.pack(">i", len(r)) + r

    def resp(corr: int, n: int) -> bytes:
        r = struct.pack(">iii", corr, 0, n) + struct.pack(">hhi", 0, 0, 0) * n
        return struct.pack(">i", len(r)) + r

    two_way(path, 9092, [(True, req(1) + req(2)), (False, resp(1, 0)), (False, resp(2, 1_000_000))])


def build_kafka_pipelined(path: Path, conns: int = 8, n: int = 70_000) -> None:
    """8 connections, each sending 70,000 ApiVersions v0 requests (15 bytes each) that are
    never answered: every request waits in its connection's pending map (up to
    `Limits.max_pending_requests`, 65,536 per connection) until the capture ends."""
    client = b"c"
    pcap = Pcap(path)
    flows = [Flow(pcap, 40000 + i, 9092) for i in range(conns)]
    for flow in flows:
        reqs = b"".join(
            struct.pack(">ihhih", 10 + len(client), 18, 0, corr, len(client)) + client for corr in range(n)
        )
        flow.send(True, reqs)
    for flow in flows:
        flow.close()
    pcap.close()


# -- Pulsar --------------------------------------------------------------------------------------
PULSAR_CODECS: dict[str, tuple[int, Callable[[bytes], bytes]]] = {
    "lz4": (1, lambda b: lz4.block.compress(b, store_size=False)),
    "zlib": (2, lambda b: zlib.compress(b, 9)),
    "zstd": (3, lambda b: zstandard.ZstdCompressor(level=19).compress(b)),
    "snappy": (4, lambda b: bytes(cramjam.snappy.compress_raw(b))),
}


def pulsar_simple(cmd: Any) -> bytes:
    """A Pulsar simple command frame: total size, command size, the BaseCommand."""
    c = cmd.SerializeToString()
    return struct.pack(">II", 4 + len(c), len(c)) + c


def pulsar_big_handshake() -> list[tuple[bool, bytes]]:
    """CONNECT, then a CONNECTED from a broker that allows 128 MiB messages (max_message_size),
    so that the frames after it may be as large as the hostile cases need."""
    from wiredump.proto import PulsarApi_pb2 as api

    connect = api.BaseCommand(type=api.BaseCommand.CONNECT)
    connect.connect.client_version = "hostile"
    connect.connect.protocol_version = 20
    connected = api.BaseCommand(type=api.BaseCommand.CONNECTED)
    connected.connected.server_version = "hostile"
    connected.connected.protocol_version = 20
    connected.connected.max_message_size = 128 * 1024 * 1024
    return [(True, pulsar_simple(connect)), (False, pulsar_simple(connected))]


def build_pulsar(path: Path, codec: str) -> None:
    from wiredump.proto import PulsarApi_pb2 as api

    n = 2_000_000

    def entry(value: bytes) -> bytes:
        single = api.SingleMessageMetadata(payload_size=len(value)).SerializeToString()
        return struct.pack(">I", len(single)) + single + value

    empty = entry(b"")
    raw = entry(incompressible(len(empty) * n // RATIO)) + empty * n
    code, compress = PULSAR_CODECS[codec]
    payload = compress(raw)
    cmd = api.BaseCommand(
        type=api.BaseCommand.SEND, send=api.CommandSend(producer_id=0, sequence_id=0, num_messages=n + 1)
    )
    meta = api.MessageMetadata(
        producer_name="hostile",
        sequence_id=0,
        publish_time=TS0 // 1000,
        compression=code,
        uncompressed_size=len(raw),
        num_messages_in_batch=n + 1,
    )
    c, m = cmd.SerializeToString(), meta.SerializeToString()
    tail = struct.pack(">I", len(m)) + m + payload
    checksummed = b"\x0e\x01" + struct.pack(">I", crc32c.crc32c(tail)) + tail
    send = struct.pack(">II", 4 + len(c) + len(checksummed), len(c)) + c + checksummed
    connect = api.BaseCommand(
        type=api.BaseCommand.CONNECT,
        connect=api.CommandConnect(client_version="hostile", protocol_version=20),
    )
    producer = api.BaseCommand(
        type=api.BaseCommand.PRODUCER,
        producer=api.CommandProducer(
            topic="persistent://public/default/amplified", producer_id=0, request_id=1
        ),
    )
    two_way(path, 6650, [(True, pulsar_simple(connect)), (True, pulsar_simple(producer)), (True, send)])


def build_pulsar_acks(path: Path) -> None:
    """A broker that allows 128 MiB messages (CONNECTED max_message_size), then one ACK whose
    repeated message_id holds 10M minimal 6-byte MessageIdData (ledgerId 0, entryId 0)."""
    from wiredump.proto import PulsarApi_pb2 as api

    one = api.CommandAck(consumer_id=1, ack_type=0)
    one.message_id.add(ledgerId=0, entryId=0)
    head = api.CommandAck(consumer_id=1, ack_type=0).SerializeToString()
    elem = one.SerializeToString()[len(head) :]
    assert len(elem) == 6
    body = head + elem * 10_000_000
    ack_field = api.BaseCommand.DESCRIPTOR.fields_by_name["ack"].number
    cmd = api.BaseCommand(type=api.BaseCommand.ACK).SerializeToString()
    cmd += uvarint(ack_field << 3 | 2) + uvarint(len(body)) + body
    ack = struct.pack(">II", 4 + len(cmd), len(cmd)) + cmd
    two_way(path, 6650, [*pulsar_big_handshake(), (True, ack)])


def build_pulsar_max_frame(path: Path) -> None:
    """A broker that allows 128 MiB messages (CONNECTED max_message_size), then one SEND of a
    single uncompressed 120 MB incompressible message: a frame near the maximum."""
    from wiredump.proto import PulsarApi_pb2 as api

    producer = api.BaseCommand(
        type=api.BaseCommand.PRODUCER,
        producer=api.CommandProducer(topic="persistent://public/default/big", producer_id=0, request_id=1),
    )
    payload = incompressible(120_000_000)
    cmd = api.BaseCommand(
        type=api.BaseCommand.SEND, send=api.CommandSend(producer_id=0, sequence_id=0, num_messages=1)
    )
    meta = api.MessageMetadata(
        producer_name="hostile", sequence_id=0, publish_time=TS0 // 1000, uncompressed_size=len(payload)
    )
    c, m = cmd.SerializeToString(), meta.SerializeToString()
    tail = struct.pack(">I", len(m)) + m + payload
    checksummed = b"\x0e\x01" + struct.pack(">I", crc32c.crc32c(tail)) + tail
    send = struct.pack(">II", 4 + len(c) + len(checksummed), len(c)) + c + checksummed
    two_way(path, 6650, [*pulsar_big_handshake(), (True, pulsar_simple(producer)), (True, send)])


# -- TANK ----------------------------------------------------------------------------------------
def build_tank(path: Path) -> None:
    from tests.test_tank_crafted import chunk, consume_req, consume_resp, entry, produce_req, q, u32, varint

    n = 2_000_000
    ts = struct.pack("<Q", TS0 // 1000)

    def bundle(k: int) -> bytes:
        # First message: its own timestamp and an incompressible value; then 2-byte messages
        # (flags "same timestamp as the previous", empty content) that snappy folds ~20:1.
        pad = incompressible(2 * k // 20)
        body = b"\x00" + ts + varint(len(pad)) + pad + b"\x02\x00" * k
        return bytes([1]) + varint(k + 1) + bytes(cramjam.snappy.compress_raw(body))

    b = bundle(n)
    parts = [(p, b) for p in range(4)]
    produce = produce_req(1, [("amplified", parts)])
    consume = consume_req(2, [("amplified", [(p, 0) for p in range(4)])])
    entries = [entry(p, 0, q(0), q(4 * (n + 1)), u32(len(chunk(b)))) for p in range(4)]
    response = consume_resp(2, [("amplified", entries)], [chunk(b)] * 4)
    two_way(path, 11011, [(True, produce), (True, consume), (False, response)])


def build_tank_zero_chunk(path: Path) -> None:
    """A Consume response whose chunk is 16 MiB of zero bytes after one good bundle: read as
    `[length 0][empty bundle]` records it was one bundle and one anomaly per byte (16M of each);
    a zero length is no bundle, so it is one malformed stretch reported once."""
    from tests.test_tank_crafted import M, bundle, chunk, consume_req, consume_resp, entry, q, u32

    ch = chunk(bundle([M(b"good")])) + bytes(16 * 1024 * 1024)
    consume = consume_req(2, [("zeros", [(0, 0)])])
    response = consume_resp(2, [("zeros", [entry(0, 0, q(0), q(1), u32(len(ch)))])], [ch])
    two_way(path, 11011, [(True, consume), (False, response)])


def build_tank_tiny_bundles(path: Path) -> None:
    """A Consume response whose 2 MiB chunk is `01 04` repeated: a million one-byte bundles
    (1 message declared, none held), each malformed. Every bundle was an object with its fields
    and its anomaly (~1.3 GB in the former Python engine); past `Limits.max_batches` they are read and
    counted, not listed, and their anomalies past 64 only counted."""
    from tests.test_tank_crafted import consume_req, consume_resp, entry, q, u32

    ch = b"\x01\x04" * (1024 * 1024)
    consume = consume_req(2, [("tiny", [(0, 0)])])
    response = consume_resp(2, [("tiny", [entry(0, 0, q(0), q(1), u32(len(ch)))])], [ch])
    two_way(path, 11011, [(True, consume), (False, response)])


# -- Pravega -------------------------------------------------------------------------------------
def build_pravega(path: Path) -> None:
    from tests.test_pravega_crafted import (
        HELLO_C,
        HELLO_S,
        append_setup,
        block_end,
        read_segment,
        segment_read,
        setup_append,
    )

    n = 1_900_000
    events = b"\x00" * 8 * n  # n records of type 0, length 0
    exchanges = [
        (True, HELLO_C),
        (False, HELLO_S),
        (True, setup_append(1)),
        (False, append_setup(1)),
        (True, block_end(len(events), events, n, n - 1, 2)),
        (True, read_segment(3, 0)),
        (False, segment_read(3, 0, events)),
    ]
    two_way(path, 12345, exchanges)


# -- connections ---------------------------------------------------------------------------------
def build_syn_flood(path: Path, n: int = 1_000_000) -> None:
    pcap = Pcap(path)
    server = 0x0A000001
    for i in range(n):
        pcap.ts += 100
        src = 0x0B000000 + (i // 50_000)
        pcap.packet(src, server, 1024 + i % 50_000, 9092, i * 7919, 0, SYN)
    pcap.close()


def build_partial(path: Path, close: bool, n: int = 100_000) -> None:
    """n Kafka connections, each sending the first 100 bytes of a request declaring 1,000."""
    pcap = Pcap(path)
    request = struct.pack(">ihhih", 996, 0, 3, 1, 7) + b"partial" + bytes(100)
    for i in range(n):
        flow = Flow(pcap, 1024 + i % 60_000, 9092, client=0x0B000000 + i // 60_000)
        flow.send(True, request[:100])
        if close:
            flow.close()
    pcap.close()


# -- pcapng timestamps ---------------------------------------------------------------------------
def build_timestamps(path: Path) -> None:
    from tests.test_capture_timestamps import crafted

    crafted(path)


def build_interfaces(path: Path, n: int = 1_000_000) -> None:
    """One pcapng section describing n Ethernet interfaces (20-byte blocks, 20 MB), then a SYN on
    interface 0 and one on interface 65,535, the last one kept (`Limits.max_interfaces`): the
    934,464 blocks past it are counted, not kept (`interface_limit`)."""
    from tests.test_capture_timestamps import epb, idb, shb

    with open(path, "wb") as fh:
        fh.write(shb())
        one = idb()
        for _ in range(n // 10_000):
            fh.write(one * 10_000)
        fh.write(one * (n % 10_000))
        ip = struct.pack(">BBHHHBBHII", 0x45, 0, 40, 0, 0x4000, 64, 6, 0, 0x0B000001, 0x0A000001)
        tcp = struct.pack(">HHIIBBHHH", 40000, 9092, 1, 0, 5 << 4, SYN, 65535, 0, 0)
        frame = b"\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x01\x08\x00" + ip + tcp
        fh.write(epb(0, TS0, frame, len(frame)) + epb(65_535, TS0 + 10, frame, len(frame)))


def cases() -> Iterator[tuple[str, str, Callable[[Path], None]]]:
    for codec in KAFKA_CODECS:
        yield f"kafka-{codec}", "pcap", lambda p, c=codec: build_kafka(p, c)
    yield "kafka-tiny-batches", "pcap", build_kafka_tiny_batches
    yield "kafka-metadata-topics", "pcap", build_kafka_metadata_topics
    yield "kafka-max-record", "pcap", build_kafka_max_record
    yield "kafka-pipelined", "pcap", build_kafka_pipelined
    for codec in PULSAR_CODECS:
        yield f"pulsar-{codec}", "pcap", lambda p, c=codec: build_pulsar(p, c)
    yield "pulsar-acks", "pcap", build_pulsar_acks
    yield "pulsar-max-frame", "pcap", build_pulsar_max_frame
    yield "tank-snappy", "pcap", build_tank
    yield "tank-zero-chunk", "pcap", build_tank_zero_chunk
    yield "tank-tiny-bundles", "pcap", build_tank_tiny_bundles
    yield "pravega-events", "pcap", build_pravega
    yield "syn-flood-1m", "pcap", build_syn_flood
    yield "partial-100k-open", "pcap", lambda p: build_partial(p, close=False)
    yield "partial-100k-closed", "pcap", lambda p: build_partial(p, close=True)
    yield "pcapng-timestamps", "pcapng", build_timestamps
    yield "pcapng-interfaces", "pcapng", build_interfaces


# -- running -------------------------------------------------------------------------------------
MEASURE = """
import os, subprocess, sys, time
t0 = time.perf_counter()
with open(sys.argv[1], "wb") as fh:
    p = subprocess.Popen(sys.argv[3:], stdout=fh, stderr=subprocess.STDOUT)
    while True:  # wait4, not Popen.wait: it gives the child's resource usage
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - t0 > float(sys.argv[2]):
            p.kill()
        time.sleep(0.05)
print(time.perf_counter() - t0, ru.ru_maxrss / 1024, ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status))
"""
"""Runs one command and prints its wall time, peak RSS, CPU time and exit code, as a small process
of its own: Linux gives a child the peak RSS of the process it was forked from as a floor (the
high-water mark survives exec), so measuring from this script, grown by building the captures,
would report this script's peak instead of wiredump's."""


def run(cmd: list[str], out: Path) -> tuple[float, float, float, int, bool]:
    """(wall s, peak RSS MB, CPU s, exit code, traceback seen) of one command."""
    res = subprocess.run(
        [sys.executable, "-c", MEASURE, str(out), str(KILL_AFTER), *cmd],
        capture_output=True,
        text=True,
        check=True,
    )
    wall, rss, cpu, code = res.stdout.split()
    text = out.read_bytes()[-200_000:]
    return float(wall), float(rss), float(cpu), int(code), b"Traceback" in text


def anomaly_kinds(out_dir: Path) -> str:
    """The anomaly kinds of an export with their counts (read in a child: pyarrow is large)."""
    code = (
        "import sys, collections, pyarrow.parquet as pq\n"
        "k = collections.Counter(pq.read_table(sys.argv[1], columns=['kind']).column('kind').to_pylist())\n"
        "print(', '.join(f'{a} {n}' for a, n in sorted(k.items())))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(out_dir / "anomalies.parquet")], capture_output=True, text=True
    )
    return res.stdout.strip() or "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help="case names (prefixes) to run")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--commands", default="timeline,stats,export")
    ap.add_argument("--build", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build:
        DATA.mkdir(parents=True, exist_ok=True)
        for name, ext, build in cases():
            if name == args.build:
                build(DATA / f"{name}.{ext}")
        return
    DATA.mkdir(parents=True, exist_ok=True)
    commands = args.commands.split(",")
    print(
        f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}, "
        f"{os.cpu_count()} CPUs; limits {MAX_RSS_MB} MB, {MAX_SECONDS} s"
    )
    print(
        f"{'capture':<22} {'size':>9} {'command':<9} {'wall s':>7} {'CPU s':>7} {'peak MB':>8} {'exit':>4} "
        f"{'tb':>3}  verdict"
    )
    failures = 0
    for name, ext, _build in cases():
        if args.only and not any(name.startswith(o) for o in args.only):
            continue
        path = DATA / f"{name}.{ext}"
        if args.rebuild or not path.exists():
            # In a child, so that this process stays small (see MEASURE).
            subprocess.run([sys.executable, __file__, "--build", name], check=True)
        size = path.stat().st_size
        kinds = ""
        for command in commands:
            out = DATA / f"{name}.{command}.out"
            wd = [sys.executable, "-m", "wiredump"]
            if command == "timeline":
                cmd = [*wd, str(path)]
            elif command == "stats":
                cmd = [*wd, "stats", str(path)]
            else:
                out_dir = DATA / f"{name}.export"
                shutil.rmtree(out_dir, ignore_errors=True)
                cmd = [*wd, "export", str(path), "-o", str(out_dir)]
            seconds, rss, cpu, code, tb = run(cmd, out)
            ok = rss <= MAX_RSS_MB and seconds <= MAX_SECONDS and not tb and code == 0
            failures += not ok
            print(
                f"{name:<22} {size / 1e6:>7.2f}MB {command:<9} {seconds:>7.2f} {cpu:>7.2f} {rss:>8.1f} {code:>4} "
                f"{'yes' if tb else 'no':>3}  {'ok' if ok else 'OVER'}",
                flush=True,
            )
            if command == "export" and code == 0:
                kinds += f" {anomaly_kinds(out_dir)}"
                shutil.rmtree(out_dir, ignore_errors=True)
        if kinds:
            print(f"{'':<22} anomalies:{kinds}", flush=True)
    print(f"{failures} figure(s) over the limits")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
