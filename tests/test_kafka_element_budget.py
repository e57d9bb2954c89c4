"""Kafka: a body keeps at most `Limits.max_elements` array elements.

An empty Metadata v0 topic is 8 bytes on the wire and a dict (a Rust node) plus a partitions row
once decoded: 1M of them in an 8 MB frame cost over a gigabyte. Past the budget the elements are
read (the body's framing and checks stay right) but not kept, and the frame says how many and
from where in one `element_limit` anomaly. The frames are built by hand from the Metadata v0
layout (reference NOTES §4: int32 arrays, int16 strings); the expected counts and offsets are
computed by hand below.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

from tests.crafted import write_pcap
from tests.test_kafka_trust import conversation
from wiredump.dissect.limits import Limits
from wiredump.dissect.model import Frame
from wiredump.dissect.pipeline import FRAME, Options, dissect

Partition = tuple[int, int, list[int], list[int]]  # error code, index, replicas, isr
Topic = tuple[int, bytes, list[Partition]]  # error code, name, partitions


def metadata_v0_body(brokers: int, topics: list[Topic]) -> bytes:
    """A Metadata v0 response body: brokers (node_id, host "b", port), then topics."""
    out = struct.pack(">i", brokers)
    out += b"".join(struct.pack(">ih", i, 1) + b"b" + struct.pack(">i", 9092) for i in range(brokers))
    out += struct.pack(">i", len(topics))
    for err, name, parts in topics:
        out += struct.pack(">hh", err, len(name)) + name + struct.pack(">i", len(parts))
        for perr, index, replicas, isr in parts:
            out += struct.pack(">hii", perr, index, 1)
            out += struct.pack(">i", len(replicas)) + b"".join(struct.pack(">i", r) for r in replicas)
            out += struct.pack(">i", len(isr)) + b"".join(struct.pack(">i", r) for r in isr)
    return out


def request(corr: int) -> bytes:
    """Metadata v0 request (api 3, client id "t"), all topics (an empty array)."""
    r = struct.pack(">hhih", 3, 0, corr, 1) + b"t" + struct.pack(">i", 0)
    return struct.pack(">i", len(r)) + r


def response(corr: int, body: bytes) -> bytes:
    return struct.pack(">ii", 4 + len(body), corr) + body


def capture(path: Path, exchanges: list[tuple[bytes, bytes]]) -> Path:
    """One TCP connection carrying each request and its answer (answers cut in 60,000-byte segments)."""
    return write_pcap(path, conversation(exchanges, 40000, 1_700_000_000_000_000, segment=60_000))


def responses(path: Path, limits: Limits | None = None) -> list[Frame]:
    opts = Options(limits=limits)
    return [e.obj for e in dissect([str(path)], opts) if e.kind == FRAME and e.obj.kind == "response"]


def test_metadata_past_the_budget_keeps_the_first_elements(tmp_path: Path) -> None:
    # Elements in the order they are read: brokers[0] (1), topics[0] "t0" (2), its partitions[0]
    # (3), that partition's replica_nodes[0] (4) and isr_nodes[0] (5); then empty 8-byte topics,
    # topics[i] being element i + 5. The budget (100,000) keeps topics up to [99,995]; topics[99,996]
    # on are read, not kept: 7 empty topics, then "gone" (error 3) with a partition (error 9) holding
    # one replica: 7 + 1 + 1 + 1 = 10 elements, 100,010 in all.
    gone: Topic = (3, b"gone", [(9, 0, [1], [])])
    topics: list[Topic] = [(0, b"t0", [(0, 0, [1], [1])])]
    topics += [(0, b"", [])] * (99_995 + 7) + [gone]
    assert len(topics) == 100_004
    body = metadata_v0_body(1, topics)
    small = metadata_v0_body(1, [(0, b"t0", [(0, 0, [1], [1])])])
    path = capture(
        tmp_path / "metadata.pcap", [(request(1), response(1, small)), (request(2), response(2, body))]
    )
    first, big = responses(path)
    assert first.anomalies == [] and len(first.fields["body"]["topics"]) == 1
    # Offsets in the frame: size 4 + correlation id 4, then the body: broker count 4 + one broker
    # (4 + 2 + 1 + 4) = 15, topic count 4 = 19, "t0" (2 + 2 + 2 + 4) = 29, its partition
    # (2 + 4 + 4 + 4 + 4 + 4 + 4) = 55, then topics[i] at 55 + 8 * (i - 1): topics[99,996] at 800,015.
    assert [(a.kind, a.detail, a.offset) for a in big.anomalies] == [
        (
            "element_limit",
            "100010 array elements in the body; the first 100000 are kept in its fields, 10 more were "
            "read and not listed, from topics[99996] on (limit 100000 per frame)",
            8 + 800_015,
        )
    ]
    assert big.status == "ok"  # read to its end: no bytes after the body
    kept = big.fields["body"]["topics"]
    assert len(kept) == 99_996
    assert kept[0] == {
        "error_code": 0,
        "name": "t0",
        "partitions": [
            {"error_code": 0, "partition_index": 0, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}
        ],
    }
    assert kept[-1] == {"error_code": 0, "name": "", "partitions": []}
    # The dropped topic's error code is the frame's first (no kept element has one), the only one
    # collected inside dropped elements (the partition's 9 is not).
    assert big.error_code == 3
    assert big.fields["_errors"] == [
        {"path": "topics[100003].error_code", "error_code": 3, "error": "UNKNOWN_TOPIC_OR_PARTITION"}
    ]
    assert all(p.topic != "gone" for p in big.partitions or [])


def test_small_budgets_count_every_element_read(tmp_path: Path) -> None:
    # 40 random Metadata v0 responses: each holds brokers + topics + their partitions + each
    # partition's replica and isr nodes elements (counted here from what is written); past the
    # budget the frame says how many it read and how many it kept, under the budget nothing.
    rng = random.Random(17)
    exchanges, totals = [], []
    for corr in range(1, 41):
        brokers = rng.randint(0, 3)
        topics: list[Topic] = [
            (
                rng.choice([0, 0, 3]),
                b"t%d" % i,
                [
                    (rng.choice([0, 0, 5]), j, [1] * rng.randint(0, 3), [2] * rng.randint(0, 2))
                    for j in range(rng.randint(0, 3))
                ],
            )
            for i in range(rng.randint(0, 6))
        ]
        totals.append(
            brokers
            + sum(1 + sum(1 + len(rep) + len(isr) for _, _, rep, isr in parts) for _, _, parts in topics)
        )
        exchanges.append((request(corr), response(corr, metadata_v0_body(brokers, topics))))
    path = capture(tmp_path / "small.pcap", exchanges)
    for budget in (0, 1, 3, 7, 12, 40):
        got = responses(path, Limits(max_elements=budget))
        assert len(got) == 40
        for f, total in zip(got, totals, strict=True):
            limits = [a.detail for a in f.anomalies if a.kind == "element_limit"]
            if total > budget:
                assert len(limits) == 1 and limits[0].startswith(
                    f"{total} array elements in the body; the first {budget} are kept"
                ), (budget, total, limits)
            else:
                assert limits == [], (budget, total)
