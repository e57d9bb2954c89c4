#!/usr/bin/env python3
"""Seed the Rust Kafka fuzz target (engine/fuzz) with every real body of the Kafka captures.

Why: libFuzzer finds deep paths (tagged fields, record batches, codecs) much sooner from real
bodies than from nothing. Each seed is the target's input format: two bytes picking the plan
(2 × its index in the generated table, +1 for a response), then the body. Record sets are also
written bare (pick past the table). The bodies are the frames the engine decoded (kept whole,
`keep_bytes`), less their header (NOTES §2: header v2 when flexible, else v1; responses v1 when
flexible, else v0; ControlledShutdown v0 requests and ApiVersions responses keep the oldest).
Usage: python scripts/kafka_fuzz_seeds.py [OUT_DIR]
"""

from __future__ import annotations

import hashlib
import struct
import sys
from pathlib import Path

from wiredump import _engine
from wiredump.dissect.pipeline import Options, dissect
from wiredump.dissect.protocols.kafka import schema

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT.parent / "shared" / "captures" / "kafka"


def flexible(key: int, version: int) -> bool:
    api = schema.schema()["apis"].get(str(key))
    return api is not None and api["flexible"] is not None and version >= api["flexible"]


def header_version(key: int, version: int, response: bool) -> int:
    if response:
        return 0 if key == 18 else int(flexible(key, version))
    return 0 if (key, version) == (7, 0) else 2 if flexible(key, version) else 1


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "engine" / "fuzz" / "corpus" / "kafka_decode"
    out.mkdir(parents=True, exist_ok=True)
    # The generated table is sorted by (api key, version): the same order here.
    pairs = sorted((k, v) for k, vs in schema.api_versions().items() for v in vs)
    index = {p: i for i, p in enumerate(pairs)}
    seeds: set[bytes] = set()
    paths = [ROOT / "samples" / "kafka-basic.pcap", *sorted(CAPTURES.glob("*.pcap"))]
    for ev in dissect([str(p) for p in paths], Options(keep_bytes=True)):
        f = ev.obj
        if ev.kind != "frame" or f.protocol != "kafka" or f.data is None or f.version is None:
            continue
        if (f.type_code, f.version) not in index:
            continue
        response = f.kind == "response"
        hv = header_version(f.type_code, f.version, response)
        read = _engine.kafka_response_header if response else _engine.kafka_request_header
        _, error, start = read(f.data, hv)
        if error is not None:
            continue
        body = bytes(f.data[start:])
        seeds.add(struct.pack(">H", 2 * index[(f.type_code, f.version)] + response) + body)
        for s, e, *_ in _engine.kafka_record_sets(response, f.type_code, f.version, body) or []:
            seeds.add(struct.pack(">H", 0xFFFE) + body[s:e])
    for s in seeds:
        (out / hashlib.sha1(s).hexdigest()).write_bytes(s)
    print(f"{len(seeds)} seeds from {len(paths)} captures in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
