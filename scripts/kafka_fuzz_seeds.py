#!/usr/bin/env python3
"""Seed the Rust Kafka fuzz target (engine/fuzz) with every real body of the Kafka captures.

Why: libFuzzer finds deep paths (tagged fields, record batches, codecs) much sooner from real
bodies than from nothing. Each seed is the target's input format: two bytes picking the plan
(2 × its index in the generated table, +1 for a response), then the body. Record sets are also
written bare (pick past the table). Usage: python scripts/kafka_fuzz_seeds.py [OUT_DIR]
"""

from __future__ import annotations

import hashlib
import struct
import sys
from pathlib import Path
from typing import Any

from wiredump.dissect.pipeline import Options, dissect
from wiredump.dissect.protocols.kafka import schema, session

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT.parent / "shared" / "captures" / "kafka"


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "engine" / "fuzz" / "corpus" / "kafka_decode"
    out.mkdir(parents=True, exist_ok=True)
    # The generated table is sorted by (api key, version): the same order here.
    pairs = sorted((k, v) for k, vs in schema.api_versions().items() for v in vs)
    index = {p: i for i, p in enumerate(pairs)}
    by_plan: dict[int, tuple[int, int, str]] = {}
    for k, v in pairs:
        for kind in ("request", "response"):
            by_plan.setdefault(id(schema.plan(k, v, kind)), (k, v, kind))
    seeds: set[bytes] = set()
    real_body = session.decode_body
    real_records = session.decode_record_set

    def body(data: bytes, start: int, plan: Any, hook: Any, secrets: frozenset[str] = frozenset()) -> Any:
        k, v, kind = by_plan[id(plan)]
        pick = 2 * index[(k, v)] + (kind == "response")
        seeds.add(struct.pack(">H", pick) + bytes(data[start:]))
        return real_body(data, start, plan, hook, secrets)

    def records(data: bytes, rc: Any) -> Any:
        seeds.add(struct.pack(">H", 0xFFFE) + bytes(data))
        return real_records(data, rc)

    session.decode_body = body  # type: ignore[assignment]
    session.decode_record_set = records  # type: ignore[assignment]
    paths = [ROOT / "samples" / "kafka-basic.pcap", *sorted(CAPTURES.glob("*.pcap"))]
    for p in paths:
        for _ in dissect([str(p)], Options()):
            pass
    for s in seeds:
        (out / hashlib.sha1(s).hexdigest()).write_bytes(s)
    print(f"{len(seeds)} seeds from {len(paths)} captures in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
