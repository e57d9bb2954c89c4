"""Peak memory of `wiredump export` on decompression bombs.

Builds two captures on the fly:

* a Kafka Produce v3 request whose record batch (gzip) inflates to 300 MB of zeros;
* a Pulsar SEND whose ZLIB payload inflates to 300 MB of zeros;

each followed by an ordinary frame, exports each one in a child process and
prints the child's peak RSS, the anomalies reported, and whether the frame after
the bomb still decoded.

    python benchmarks/bombs.py [--mb 300]
"""

from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import crc32c
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.crafted import Rec, link, tcp, write_pcap  # noqa: E402


def zeros_compressed(n: int, wbits: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, wbits)
    chunk = b"\0" * (1 << 20)
    out = []
    left = n
    while left:
        k = min(left, len(chunk))
        out.append(c.compress(chunk[:k]))
        left -= k
    out.append(c.flush())
    return b"".join(out)


def uvarint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zigzag(v: int) -> bytes:
    return uvarint((v << 1) ^ (v >> 63))


def kafka_bomb(mb: int) -> list[bytes]:
    size = mb * 1024 * 1024
    # One record whose value is `size` zero bytes, gzip-compressed as the batch's records.
    head = b"\x00" + zigzag(0) + zigzag(0) + zigzag(-1) + zigzag(size)
    body_len = len(head) + size + 1
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [c.compress(zigzag(body_len) + head)]
    chunk = b"\0" * (1 << 20)
    left = size
    while left:
        k = min(left, len(chunk))
        parts.append(c.compress(chunk[:k]))
        left -= k
    parts.append(c.compress(zigzag(0)))
    parts.append(c.flush())
    records = b"".join(parts)
    after_crc = struct.pack(">hiqqqhii", 1, 0, 0, 0, -1, -1, -1, 1) + records
    batch_tail = struct.pack(">ibI", 0, 2, crc32c.crc32c(after_crc)) + after_crc
    batch = struct.pack(">qi", 0, len(batch_tail)) + batch_tail
    return [produce_request(1, batch), produce_request(2, b"")]


def produce_request(corr: int, batch: bytes) -> bytes:
    client = b"bomb"
    header = struct.pack(">hhih", 0, 3, corr, len(client)) + client
    body = struct.pack(">hhi", -1, 1, 30000)  # transactional_id null, acks 1, timeout
    topic = b"bombs"
    body += struct.pack(">ih", 1, len(topic)) + topic + struct.pack(">ii", 1, 0)
    body += struct.pack(">i", len(batch)) + batch if batch else struct.pack(">i", -1)
    msg = header + body
    return struct.pack(">i", len(msg)) + msg


def pulsar_bomb(mb: int) -> list[bytes]:
    from wiredump.proto import PulsarApi_pb2 as api

    size = mb * 1024 * 1024
    connect = api.BaseCommand(
        type=api.BaseCommand.CONNECT, connect=api.CommandConnect(client_version="bomb", protocol_version=20)
    )
    producer = api.BaseCommand(
        type=api.BaseCommand.PRODUCER,
        producer=api.CommandProducer(topic="persistent://public/default/bombs", producer_id=0, request_id=1),
    )

    def simple(cmd: api.BaseCommand) -> bytes:
        c = cmd.SerializeToString()
        return struct.pack(">II", 4 + len(c), len(c)) + c

    def send(seq: int, payload: bytes, compression: int, usize: int) -> bytes:
        cmd = api.BaseCommand(
            type=api.BaseCommand.SEND, send=api.CommandSend(producer_id=0, sequence_id=seq, num_messages=1)
        )
        meta = api.MessageMetadata(
            producer_name="bomb",
            sequence_id=seq,
            publish_time=1,
            compression=compression,
            uncompressed_size=usize,
        )
        c, m = cmd.SerializeToString(), meta.SerializeToString()
        tail = struct.pack(">I", len(m)) + m + payload
        checksummed = b"\x0e\x01" + struct.pack(">I", crc32c.crc32c(tail)) + tail
        return struct.pack(">II", 4 + len(c) + len(checksummed), len(c)) + c + checksummed

    return [
        simple(connect),
        simple(producer),
        send(0, zeros_compressed(size, 15), api.ZLIB, size),
        send(1, b"fine", 0, 4),
    ]


def write(path: Path, port: int, frames: list[bytes]) -> None:
    recs = []
    seq = 1000
    ts = 1_700_000_000_000_000
    mss = 60000
    for frame in frames:
        for i in range(0, len(frame), mss):
            piece = frame[i : i + mss]
            recs.append(
                Rec(link(1, tcp("127.0.0.1", "127.0.0.1", 40000, port, seq=seq, payload=piece)), ts_us=ts)
            )
            seq += len(piece)
            ts += 10
    write_pcap(path, recs)


def export(path: Path, out: Path) -> tuple[float, float, int]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "wiredump", "export", str(path), "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - t0, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=300)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="wiredump-bombs-"))
    print(f"{'capture':<28} {'bomb':>9} {'wall s':>7} {'peak RSS MB':>12} {'exit':>5}  anomalies / frames")
    for name, port, frames in (
        ("kafka gzip batch", 9092, kafka_bomb(args.mb)),
        ("pulsar zlib payload", 6650, pulsar_bomb(args.mb)),
    ):
        pcap = tmp / f"{name.split()[0]}.pcap"
        write(pcap, port, frames)
        out = tmp / f"out-{name.split()[0]}"
        seconds, rss, rc = export(pcap, out)
        kinds = pq.read_table(out / "anomalies.parquet").column("kind").to_pylist()
        frames_t = pq.read_table(out / "frames.parquet")
        statuses = list(
            zip(frames_t.column("type").to_pylist(), frames_t.column("status").to_pylist(), strict=True)
        )
        print(
            f"{name:<28} {args.mb:>6} MB {seconds:>7.2f} {rss:>12.1f} {rc:>5}  {sorted(set(kinds))} {statuses}"
        )


if __name__ == "__main__":
    main()
