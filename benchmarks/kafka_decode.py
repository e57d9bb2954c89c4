#!/usr/bin/env python3
"""Kafka decode time per body and per record set: the Rust engine beside the Python reference.

Every body the session decodes and every record set it reads while dissecting the captures
(default: the Kafka captures in ../shared/captures/kafka and samples/kafka-basic.pcap) is
collected first, then each decoder runs over all of them `--repeat` times in this one process:

  python walker     body.walk_body (the reference plan walker)
  python compiled   body.decode_body (the generated Python fast path the engine uses today)
  rust -> dict      wiredump._engine.kafka_decode (Rust decode + the same Python dict)
  rust only         the Rust decoder alone (tree with spans, no Python objects)

and for record sets: records.decode_record_set, _engine.kafka_records, and Rust alone.
Build the extension in release mode first (`maturin develop --release`), or the figures
measure a debug build.

Usage: python benchmarks/kafka_decode.py [--repeat N] [CAPTURE ...]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from wiredump import _engine
from wiredump.dissect.limits import Limits
from wiredump.dissect.model import Frame
from wiredump.dissect.pipeline import Options, dissect
from wiredump.dissect.protocols.kafka import schema, session
from wiredump.dissect.protocols.kafka.body import Bad, decode_body, walk_body
from wiredump.dissect.protocols.kafka.records import RecordContext, decode_record_set
from wiredump.dissect.wire import Short

ROOT = Path(__file__).resolve().parent.parent


def collect(paths: list[Path]) -> tuple[list[tuple[Any, ...]], list[tuple[bytes, bool]]]:
    """(is_response, key, version, frame bytes, body start, plan) of every body; (set, partial_ok) of every record set."""
    by_plan: dict[int, tuple[int, int, str]] = {}
    for k, vs in schema.api_versions().items():
        for v in vs:
            for kind in ("request", "response"):
                by_plan.setdefault(id(schema.plan(k, v, kind)), (k, v, kind))
    bodies: list[tuple[Any, ...]] = []
    sets: list[tuple[bytes, bool]] = []
    real_body, real_records = session.decode_body, session.decode_record_set

    def body(data: bytes, start: int, plan: Any, hook: Any, secrets: frozenset[str] = frozenset()) -> Any:
        k, v, kind = by_plan[id(plan)]
        bodies.append((kind == "response", k, v, bytes(data), start, plan))
        return real_body(data, start, plan, hook, secrets)

    def records(data: bytes, rc: Any) -> Any:
        sets.append((bytes(data), rc.partial_ok))
        return real_records(data, rc)

    session.decode_body, session.decode_record_set = body, records  # type: ignore[assignment]
    try:
        for p in paths:
            for _ in dissect([str(p)], Options()):
                pass
    finally:
        session.decode_body, session.decode_record_set = real_body, real_records  # type: ignore[assignment]
    return bodies, sets


def timed(fn: Any, repeat: int) -> float:
    t = time.perf_counter()
    for _ in range(repeat):
        fn()
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("captures", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args()
    paths = a.captures or [
        ROOT / "samples" / "kafka-basic.pcap",
        *sorted((ROOT.parent / "shared" / "captures" / "kafka").glob("*.pcap")),
    ]
    bodies, sets = collect(paths)
    nbytes = sum(len(d) - s for _, _, _, d, s, _ in bodies)
    print(
        f"{len(bodies)} bodies ({nbytes} bytes), {len(sets)} record sets "
        f"({sum(len(d) for d, _ in sets)} bytes) from {len(paths)} captures; repeat {a.repeat}"
    )

    def py(decoder: Any) -> Any:
        def run() -> None:
            for _, _, _, data, start, plan in bodies:
                try:
                    decoder(data, start, plan, None)
                except (Short, Bad):
                    pass

        return run

    def rust_dict() -> None:
        for resp, k, v, data, start, _ in bodies:
            _engine.kafka_decode(resp, k, v, data, start)

    n = len(bodies) * a.repeat
    rows = [
        ("python walker", timed(py(walk_body), a.repeat)),
        ("python compiled", timed(py(decode_body), a.repeat)),
        ("rust -> dict", timed(rust_dict, a.repeat)),
        ("rust only", _engine.kafka_bench_bodies([b[:5] for b in bodies], a.repeat) / 1e9),
    ]
    base = rows[1][1]
    print(f"\n{'bodies':<18}{'µs/body':>10}{'MB/s':>10}{'vs python compiled':>20}")
    for name, secs in rows:
        print(
            f"{name:<18}{secs / n * 1e6:>10.2f}{nbytes * a.repeat / secs / 1e6:>10.1f}{base / secs:>19.1f}×"
        )

    def py_records() -> None:
        for data, partial_ok in sets:
            f = Frame("kafka", "x", 0)
            rc = RecordContext(f, "client", Limits(), None, None, partial_ok, 0, True, {}, True)
            decode_record_set(data, rc)

    def rust_records() -> None:
        for data, partial_ok in sets:
            _engine.kafka_records(data, partial_ok)

    n = len(sets) * a.repeat
    sbytes = sum(len(d) for d, _ in sets) * a.repeat
    rows = [
        ("python", timed(py_records, a.repeat)),
        ("rust -> python", timed(rust_records, a.repeat)),
        ("rust only", _engine.kafka_bench_records(sets, a.repeat) / 1e9),
    ]
    base = rows[0][1]
    print(f"\n{'record sets':<18}{'µs/set':>10}{'MB/s':>10}{'vs python':>20}")
    for name, secs in rows:
        print(f"{name:<18}{secs / n * 1e6:>10.2f}{sbytes / secs / 1e6:>10.1f}{base / secs:>19.1f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
