"""The Rust engine's Arrow tables (engine/src/arrow_out) against the Python reference (tables.py).

The same pipeline events go through Python's `TableBuilder` and, converted to the engine's
records (`_engine.TableRecords`), through the Rust builders; the five tables must be equal
column for column, type for type, value for value (`detail` JSON text byte for byte), cut into
the same batches in the same order. The inputs: every real capture and sample, damaged variants
of them (tests/variants.py), several captures in one run, and hand-made records that reach what
captures rarely do (floats, deep nesting, odd keys and objects, values too wide for a column).
The expected values are the Python reference's, which test_tables.py checks against the decodes
beside the captures. Then: pyarrow, polars and DuckDB read the Rust streams.
"""

from __future__ import annotations

import enum
import math
import random
import struct
from collections.abc import Iterable
from itertools import chain
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests import variants as V
from tests.conftest import CAPTURES, ROOT
from wiredump.dissect.model import Anomaly, ConnectionSummary, Exchange, Frame, Message, TopicPartition
from wiredump.dissect.pipeline import ANOMALY, CONNECTION, EXCHANGE, FRAME, Event, Options, dissect
from wiredump.dissect.tables import (
    BATCH_BYTES,
    BATCH_ROWS,
    PARQUET_OPTIONS,
    ROW_OVERHEAD,
    SCHEMAS,
    TABLES,
    TableBuilder,
    rows_to_batch,
)

_engine = pytest.importorskip("wiredump._engine")

REAL = sorted(CAPTURES.glob("*/*.pcap")) + sorted((ROOT / "samples").glob("*.pcap"))
REAL_IDS = [f"{p.parent.name}/{p.stem}" for p in REAL]
RUST_TABLES = ("frames", "exchanges", "messages", "anomalies", "connections", "partitions")
"""The tables the Rust builders make: all of them."""
SMALL_BATCHES = {"batch_rows": 7, "batch_bytes": 3000}
"""Bounds small enough that every capture's tables are cut many times, by rows and by bytes."""


# -- the two builders --------------------------------------------------------------------------------
def python_tables(
    events: list[Event], values: bool, batch_rows: int = BATCH_ROWS, batch_bytes: int = BATCH_BYTES
) -> tuple[dict[str, list[pa.RecordBatch]], list[tuple[str, int]]]:
    """The reference: batches per table and the order they were handed out in."""
    builder = TableBuilder(values, batch_rows, batch_bytes)
    per: dict[str, list[pa.RecordBatch]] = {n: [] for n in TABLES}
    order = []
    for name, rows in chain(builder.feed(events), builder.finish()):
        per[name].append(rows_to_batch(name, rows))
        order.append((name, len(rows)))
    return per, order


def rust_tables(
    events: list[Event], values: bool, batch_rows: int = BATCH_ROWS, batch_bytes: int = BATCH_BYTES
) -> tuple[dict[str, Any], list[tuple[str, int]]]:
    streams, order = _engine.TableRecords(events).tables(values, batch_rows, batch_bytes)
    return streams, order


def first_difference(a: list[Any], b: list[Any]) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y or type(x) is not type(y):
            return f"row {i}: python {x!r:.400} / rust {y!r:.400}"
    return f"python {len(a)} rows / rust {len(b)} rows"


def assert_same_tables(events: list[Event], values: bool, **bounds: int) -> dict[str, pa.Table]:
    py, py_order = python_tables(events, values, **bounds)
    rs, rs_order = rust_tables(events, values, **bounds)
    assert list(rs) == [t for t in TABLES if t in RUST_TABLES] == list(RUST_TABLES)
    out = {}
    for name in RUST_TABLES:
        want = pa.Table.from_batches(py[name], schema=SCHEMAS[name])
        got = pa.table(rs[name])
        assert got.schema.equals(SCHEMAS[name]), (name, got.schema)
        assert [f.nullable for f in got.schema] == [f.nullable for f in SCHEMAS[name]]
        for col in want.column_names:
            a, b = want.column(col), got.column(col)
            assert a.type == b.type, (name, col)
            if not a.equals(b):
                raise AssertionError(f"{name}.{col}: {first_difference(a.to_pylist(), b.to_pylist())}")
        assert rs[name].batch_rows == [b.num_rows for b in py[name]], name
        out[name] = got
    assert rs_order == [(t, n) for t, n in py_order if t in RUST_TABLES]
    return out


def events_of(paths: Iterable[Path | str], **options: Any) -> list[Event]:
    return list(dissect([str(p) for p in paths], Options(**options)))


# -- real captures -----------------------------------------------------------------------------------
@pytest.mark.parametrize("path", REAL, ids=REAL_IDS)
def test_real_captures_give_the_same_tables(path: Path) -> None:
    events = events_of([path])
    tables = assert_same_tables(events, values=True)
    assert tables["frames"].num_rows > 0 and tables["connections"].num_rows > 0
    assert_same_tables(events, values=False, **SMALL_BATCHES)


def test_several_captures_in_one_run() -> None:
    paths = [CAPTURES / "kafka" / "ck-compress-lz4.pcap", CAPTURES / "pulsar" / "s02-producer-batching.pcap"]
    paths = [p for p in paths if p.exists()]
    if len(paths) < 2:
        pytest.skip("real captures not available")
    tables = assert_same_tables(events_of(paths), values=True, batch_rows=100, batch_bytes=1 << 20)
    assert set(tables["frames"]["capture"].to_pylist()) == {str(p) for p in paths}


def test_parquet_written_from_either_is_byte_identical(tmp_path: Path) -> None:
    # The export writes one row group per batch: same batches, same files.
    paths = [CAPTURES / "tank" / "t03-compressed.pcap", CAPTURES / "pulsar" / "s04-consumer.pcap"]
    if not all(p.exists() for p in paths):
        pytest.skip("real captures not available")
    events = events_of(paths)
    bounds = {"batch_rows": 500, "batch_bytes": 200_000}
    py, _ = python_tables(events, True, **bounds)
    rs, _ = rust_tables(events, True, **bounds)
    for name in RUST_TABLES:
        files = []
        for side, batches in (("py", py[name]), ("rs", pa.RecordBatchReader.from_stream(rs[name]))):
            path = tmp_path / f"{side}-{name}.parquet"
            with pq.ParquetWriter(str(path), SCHEMAS[name], **PARQUET_OPTIONS) as w:
                for b in batches:
                    w.write_batch(b, row_group_size=max(b.num_rows, 1))
            files.append(path.read_bytes())
        assert files[0] == files[1], name
    assert pq.ParquetFile(tmp_path / "rs-messages.parquet").metadata.num_row_groups > 3


VARIANT_SOURCES = [
    CAPTURES / "kafka" / "kafka-python-basic.pcap",
    CAPTURES / "pulsar" / "s03-compression-lz4.pcap",
    CAPTURES / "pravega" / "p06-seal-and-errors.pcap",
    CAPTURES / "tank" / "t07-errors.pcap",
]


@pytest.mark.parametrize("path", VARIANT_SOURCES, ids=[p.stem for p in VARIANT_SOURCES])
def test_damaged_variants_give_the_same_tables(tmp_path: Path, path: Path) -> None:
    if not path.exists():
        pytest.skip("real captures not available")
    cap = V.read(path)
    recs = cap.recs
    swapped = list(recs)
    for i in range(1, len(swapped) - 1, 2):
        swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
    variants = {
        "ooo": V.out_of_order(recs, places=6)[0],
        "retrans": V.retransmitted(recs, dups=5)[0],
        "lost-many": V.drop(recs, set(V.spread(V.losable(recs), 12))),
        "mid": recs[len(recs) // 2 :],
        "pairs-swapped": swapped,
        "snap": [V.replace(r, data=r.data[:90]) if len(r.data) > 90 else r for r in recs],
    }
    kinds: set[str] = set()
    for name, rs in variants.items():
        events = events_of([V.write(cap, rs, tmp_path / f"{name}.pcap")])
        tables = assert_same_tables(events, values=True, **SMALL_BATCHES)
        kinds |= set(tables["anomalies"]["kind"].to_pylist())
    assert {"gap", "retransmission"} <= kinds  # the variants did damage the streams


# -- hand-made records ---------------------------------------------------------------------------------
class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Thing:
    def __str__(self) -> str:
        return "thing é"


class Ratio(float):
    """A float subclass: orjson hands it to the default (str), not to its float writer."""


def nested(depth: int, leaf: Any) -> Any:
    v = leaf
    for _ in range(depth):
        v = [v]
    return v


def random_floats(n: int) -> list[float]:
    rnd = random.Random(15)
    out = [struct.unpack("<d", rnd.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(n)]
    out += [rnd.uniform(-1e6, 1e6) for _ in range(n)]
    out += [10.0**e * m for e in range(-30, 30) for m in (1.0, 1.5, 9.999, 3.3333333333333335)]
    out += [0.0, -0.0, math.nan, math.inf, -math.inf, 5e-324, 1.7976931348623157e308, 2**53 + 0.0]
    return out


def frame(packet: int, fields: dict[Any, Any], **kw: Any) -> Frame:
    f = Frame("kafka", "Produce", 0, kind="request", version=9, correlation_id=packet, summary="s é")
    f.fields = fields
    f.packet = f.first_packet = packet
    f.ts_us, f.stream, f.src, f.dst = 1_700_000_000_000_000 + packet, 0, "10.0.0.1", "10.0.0.2"
    f.src_port, f.dst_port, f.length = 40000, 9092, 100
    for k, v in kw.items():
        setattr(f, k, v)
    return f


def edge_events() -> list[Event]:
    big = 2**64 - 1
    fields: list[dict[Any, Any]] = [
        {"floats": random_floats(400)},
        {"s": '\x00\x08\t\n\x0c\r\x1f\x7f\u2028é€😀"\\/', "": "empty key", "é": [True, False, None]},
        {"ints": [0, -1, 2**63 - 1, -(2**63), 2**63, big], "nested": {"a": {"b": {"c": []}}, "d": {}}},
        {"bytes": b"\x00\xff", "ba": bytearray(b"\x01"), "mv": memoryview(b"\x02\x03"), "long": b"x" * 5000},
        {"exact": b"y" * 4096, "tuple": (1, (2, "3")), "set": {3, 1, 2}, "fs": frozenset({"b", "a"})},
        {7: "int key", None: "none key", True: "bool key", 2.5: "float key", 1e-7: "tiny key"},
        {"enum": Colour.RED, "intenum": Level.HIGH, "obj": Thing(), "ratio": Ratio(1.5)},
        {"deep_ok": nested(252, [1e-5, math.nan])},  # 254 levels in all: orjson writes it
        {"too_deep": nested(300, [1e-5, math.nan, 1e16, -0.0])},  # orjson refuses: json.dumps writes it
        {"dup": 1, "a": {"x": 1, "y": [{"z": 1.25}]}},
    ]
    events: list[Event] = []
    for i, fs in enumerate(fields, start=1):
        events.append(Event(FRAME, frame(i, fs), "edge.pcap"))
    msgs = [
        Message("produce", 3, topic="t", partition=2, offset=5, key=b"k", value=b"abc", timestamp_ms=-1),
        Message("deliver", 0, headers=[("h", b"v"), (b"\xffraw", None), ("e", b"")], detail={}),  # type: ignore[list-item]
        Message("deliver", 4, value=b"\x00" * 4, detail={"batch_index": 2, "producer": "p é", "f": 0.1}),
        Message("produce", 0, partition=2**40, offset=2**70, timestamp_ms=2**63, offset_delta=1, headers=[]),
    ]
    events.append(
        Event(FRAME, frame(20, {"n": 1}, messages=msgs, role="server", kind="response"), "edge.pcap")
    )
    parts = [
        TopicPartition("t", 0, 0, None, 5, 9, 1, 3),
        TopicPartition(None),
        TopicPartition("é", 2**40, -(2**31) - 1, "BAD", -1, 2**63 - 1, -(2**63), 0),  # beyond int32: null
    ]
    events.append(Event(FRAME, frame(22, {}, partitions=parts, latency_us=12, kind="response"), "edge.pcap"))
    events.append(Event(FRAME, frame(23, {}, partitions=[]), "edge.pcap"))  # names none: no row
    tail = TopicPartition("tail", 0, None, None, 2**64 - 1, 2**64 - 2)  # TANK's u64 seqnums: null in int64
    events.append(Event(FRAME, frame(28, {}, partitions=[tail]), "edge.pcap"))
    events.extend(
        Event(FRAME, frame(24 + i, {}, partitions=[TopicPartition(f"t{i}", i)] * 3), "edge.pcap")
        for i in range(4)
    )
    wide = frame(21, {}, type_code=2**40, version=2**31, correlation_id=2**70, error_code=-(2**31) - 1)
    wide.packet = 2**63 + 1  # beyond int64: null in the column, as the reference's column() makes it
    wide.status, wide.error, wide.peer_packet, wide.latency_us = "malformed", "BAD", 20, 17
    events.append(Event(FRAME, wide, "edge.pcap"))
    events.append(Event(ANOMALY, Anomaly("gap", "lost é", None, 3, None, None), "edge.pcap"))
    events.append(Event(ANOMALY, Anomaly("malformed", "x", 2**63 + 5, 4, 1, "kafka"), "edge.pcap"))
    events.append(Event(EXCHANGE, Exchange(0, "kafka", "Fetch", None, "unanswered", 3), "edge.pcap"))
    events.append(
        Event(EXCHANGE, Exchange(1, "tank", "Consume", 5, "answered", 3, 4, 10, 20, 10, 0), "edge.pcap")
    )
    conn = ConnectionSummary(0, "::1", 1, "::2", 9092, None, 5, 1, 2, 3, 4, 5, 6, 7, "reset")
    events.append(Event(CONNECTION, conn, "other.pcap"))
    events.append(Event("capture_end", None, "other.pcap"))
    return events


def test_hand_made_records_give_the_same_tables() -> None:
    events = edge_events()
    for values in (True, False):
        tables = assert_same_tables(events, values=values)
        assert_same_tables(events, values=values, batch_rows=3, batch_bytes=ROW_OVERHEAD * 2)
    detail = tables["frames"]["detail"].to_pylist()
    assert '"1e-5"' not in detail[0] and "NaN" in detail[8] and "NaN" not in detail[7]  # both writers met
    assert tables["frames"]["type_code"].to_pylist()[-1] is None


def test_integers_beyond_64_bits_are_refused_not_changed() -> None:
    # The reference writes them (json.dumps); the engine's model holds 64-bit integers, and no
    # decoder makes wider ones. The conversion says so rather than write something else.
    with pytest.raises(TypeError, match="64 bits"):
        _engine.TableRecords([Event(FRAME, frame(1, {"n": 2**64}), "c")])


def test_bounds_are_the_references() -> None:
    assert (_engine.TABLE_BATCH_ROWS, _engine.TABLE_BATCH_BYTES) == (BATCH_ROWS, BATCH_BYTES)
    assert _engine.TABLE_ROW_OVERHEAD == ROW_OVERHEAD


# -- readers -------------------------------------------------------------------------------------------
def test_pyarrow_polars_and_duckdb_read_the_streams() -> None:
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    path = CAPTURES / "kafka" / "kafka-python-basic.pcap"
    if not path.exists():
        pytest.skip("real captures not available")
    events = events_of([path])
    streams = _engine.tables_from_events(events, values=True)
    py, _ = python_tables(events, True)
    want = {n: pa.Table.from_batches(py[n], schema=SCHEMAS[n]) for n in TABLES}

    reader = pa.RecordBatchReader.from_stream(streams["frames"])
    assert reader.schema.equals(SCHEMAS["frames"])
    assert reader.read_all().equals(want["frames"])
    # The stream can be read again: the same buffers are exported, not copied.
    a = pa.table(streams["messages"])["key"].chunks[0].buffers()[2]
    b = pa.table(streams["messages"])["key"].chunks[0].buffers()[2]
    assert a.address == b.address and a.size > 0

    frames_pl = pl.DataFrame(streams["frames"])
    assert frames_pl.height == want["frames"].num_rows
    assert frames_pl["detail"].to_list() == want["frames"]["detail"].to_pylist()
    assert str(frames_pl.schema["ts"]) == "Datetime(time_unit='us', time_zone='UTC')"
    msgs_pl = pl.DataFrame(streams["messages"])
    assert msgs_pl["value_size"].sum() == pa.compute.sum(want["messages"]["value_size"]).as_py()

    frames = streams["frames"]  # noqa: F841 — DuckDB finds it by name
    got = duckdb.sql("select type, count(*) from frames group by type order by type").fetchall()
    counts: dict[str, int] = {}
    for t in want["frames"]["type"].to_pylist():
        counts[t] = counts.get(t, 0) + 1
    assert got == sorted(counts.items())
    assert duckdb.from_arrow(streams["messages"]).count("*").fetchall() == [(want["messages"].num_rows,)]
