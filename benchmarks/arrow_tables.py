"""Building the five tables: the Rust Arrow builders (engine/src/arrow_out) against Python's.

One capture is dissected once by the Python pipeline, in chunks of events; each chunk is turned
into record batches twice, and only that is timed:

* python: `tables.TableBuilder` (rows as tuples, `detail` by orjson) and `rows_to_batch`
  (pyarrow arrays from the tuples) — what `wiredump export` does today;
* rust: `_engine.TableRecords(chunk).tables()` — the Rust builders, `detail` written in Rust, the
  batches exported through the Arrow C stream interface and imported by pyarrow.

Converting the Python events into the engine's records (`TableRecords(chunk)`) is the test
harness's cost, not the engine's (the Rust framer will make its records directly): it is shown
on its own line, as is the dissection. Both sides must give the same row counts.

    python benchmarks/arrow_tables.py [CAPTURE] [--values] [--chunk 50000]

The benchmark capture is benchmarks/data/kafka-large.pcap (benchmarks/README.md: make_capture.py);
without it, make one from a real capture with scale_capture.py, e.g.
`python benchmarks/scale_capture.py /work/shared/captures/kafka/kafka-python-basic.pcap big.pcap -n 300`.
The Rust module must be a release build (`maturin develop --release`) for the figures to mean anything.
"""

from __future__ import annotations

import argparse
import sys
import time
from itertools import islice
from pathlib import Path

import pyarrow as pa

from wiredump import _engine
from wiredump.dissect.pipeline import Options, dissect
from wiredump.dissect.tables import TABLES, TableBuilder, rows_to_batch

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "benchmarks" / "data" / "kafka-large.pcap"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("capture", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--values", action="store_true", help="fill messages.value (--values)")
    ap.add_argument("--chunk", type=int, default=50_000, help="events dissected and built at a time")
    args = ap.parse_args()
    if not args.capture.exists():
        print(f"{args.capture}: no such capture (see the docstring for how to make one)", file=sys.stderr)
        return 2

    events_iter = iter(dissect([str(args.capture)], Options()))
    builder = TableBuilder(args.values)
    py_rows = dict.fromkeys(TABLES, 0)
    rs_rows = dict.fromkeys(TABLES, 0)
    t_dissect = t_py = t_conv = t_rs = 0.0
    c_py = c_rs = 0.0  # CPU seconds: on a shared machine, wall time includes waiting for a core
    n_events = 0
    while True:
        t0 = time.perf_counter()
        chunk = list(islice(events_iter, args.chunk))
        t_dissect += time.perf_counter() - t0
        if not chunk:
            break
        n_events += len(chunk)

        t0, c0 = time.perf_counter(), time.process_time()
        for name, rows in builder.feed(chunk):
            py_rows[name] += rows_to_batch(name, rows).num_rows
        t_py += time.perf_counter() - t0
        c_py += time.process_time() - c0

        t0 = time.perf_counter()
        records = _engine.TableRecords(chunk)
        t_conv += time.perf_counter() - t0

        t0, c0 = time.perf_counter(), time.process_time()
        streams, _order = records.tables(args.values)
        for name, stream in streams.items():
            rs_rows[name] += pa.RecordBatchReader.from_stream(stream).read_all().num_rows
        t_rs += time.perf_counter() - t0
        c_rs += time.process_time() - c0
        del chunk, records, streams

    t0, c0 = time.perf_counter(), time.process_time()
    for name, rows in builder.finish():
        py_rows[name] += rows_to_batch(name, rows).num_rows
    t_py += time.perf_counter() - t0
    c_py += time.process_time() - c0

    if py_rows != rs_rows:
        print(f"row counts differ: python {py_rows}, rust {rs_rows}", file=sys.stderr)
        return 1
    total = sum(py_rows.values())
    size_mb = args.capture.stat().st_size / 1e6
    print(f"capture: {args.capture} ({size_mb:.1f} MB), {n_events:,} events, values={args.values}")
    print("rows:    " + ", ".join(f"{n} {c:,}" for n, c in py_rows.items()) + f"  (total {total:,})")
    print(f"{'':36}{'wall s':>8}{'rows/s':>12}{'CPU s':>8}{'rows/CPU s':>12}")
    for label, t, c in (
        ("python TableBuilder + rows_to_batch", t_py, c_py),
        ("rust arrow_out + C stream import", t_rs, c_rs),
    ):
        print(f"{label:36}{t:8.2f}{total / t:12,.0f}{c:8.2f}{total / max(c, 1e-9):12,.0f}")
    print(f"rust/python: x{t_py / t_rs:.1f} wall, x{c_py / max(c_rs, 1e-9):.1f} CPU")
    print(
        f"(not timed above: dissection {t_dissect:.2f} s; events -> Rust records {t_conv:.2f} s, test harness)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
