"""The tables of the contract: schemas, row conversion, record batches, streaming writers.

Schemas are fixed once (declared in wiredump/tables.json, read by columns.py), so every
output (Parquet, JSON lines, the Spark job, `-T json`) has the same columns whatever the
input, and an empty capture still gives tables of the right shape.

One code path turns pipeline events into Arrow record batches (`TableBuilder`): the
local export writes those batches to Parquet, the Spark job ships the very same
batches out of its executors, so both give the same rows. Rows are buffered as
tuples in schema order (one C-level `attrgetter` call per object, not a dict per
row) and turned into columns with `zip(*rows)` when a batch is full; a batch is cut
at a bounded number of rows *and* of estimated bytes, so memory stays flat however
large the capture (or its message values) is.

Output is deterministic: rows leave in pipeline order, batches are cut at the same
places, and the Parquet metadata holds nothing that changes from run to run (no
time, no path), so exporting a capture twice gives byte-identical files.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from operator import attrgetter
from pathlib import Path
from typing import Any, TextIO

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from wiredump.dissect import parquet_settings
from wiredump.dissect.columns import TS_MS, TS_US, ColumnDecl, declared, schema  # noqa: F401 (TS_*: kept importable from here)
from wiredump.dissect.model import Anomaly, ConnectionSummary, Exchange, Frame, Message
from wiredump.dissect.writer_thread import BackgroundWriter

# The schemas come from the one declaration of the columns (wiredump/tables.json, read by columns.py;
# the Rust engine's builders and docs/tables.md derive from the same file).
FRAMES = schema("frames")
EXCHANGES = schema("exchanges")
MESSAGES = schema("messages")
ANOMALIES = schema("anomalies")
CONNECTIONS = schema("connections")

# -- partitions (issue 18 item 7): one row per (frame, topic, partition) --------------------------
# Why a table and not a list<struct> column on frames: the questions asked of these results are
# per topic/partition ("error rate by topic", "last offset per partition"), which a flat table
# answers with one GROUP BY in every reader (DuckDB, pandas, polars, Spark SQL) without UNNEST or
# explode, and which Parquet statistics and predicate pushdown serve on `topic`/`partition`.
# Each protocol's session fills `Frame.partitions` from its own `partitions` module.
PARTITIONS = schema("partitions")
_PARTITION_FRAME = attrgetter(
    "packet", "ts_us", "stream", "protocol", "role", "kind", "type", "correlation_id", "latency_us"
)
_PARTITION_COLS = attrgetter(
    "topic", "partition", "error_code", "error", "offset", "high_watermark", "log_start_offset", "records"
)


def partition_tuples(f: Frame, capture: str) -> list[tuple[Any, ...]]:
    """The `partitions` rows of one frame (tuples in schema order); none when it names no topic."""
    if not f.partitions:
        return []
    head = (capture, *_PARTITION_FRAME(f))
    return [(*head, *_PARTITION_COLS(p)) for p in f.partitions]


# -- end of partitions ---------------------------------------------------------------------------

SCHEMAS: dict[str, pa.Schema] = {
    "frames": FRAMES,
    "exchanges": EXCHANGES,
    "messages": MESSAGES,
    "anomalies": ANOMALIES,
    "connections": CONNECTIONS,
    "partitions": PARTITIONS,
}
TABLES = tuple(SCHEMAS)

BATCH_ROWS = 16384
"""Most rows in one record batch (one Parquet row group)."""
BATCH_BYTES = 4 << 20
"""Most estimated bytes in one record batch: bounds memory when rows are large (values, big decodes)."""
ROW_OVERHEAD = 512
"""Rough bytes a buffered row costs besides its variable-length text and binary values.

Measured: a buffered frames row (a tuple of 24 Python objects) costs ~500 bytes
before its strings; with 16 MiB batches and the smaller estimate, the export of a
50k-packet Kafka capture peaked at 246 MB, with these numbers at ~130 MB."""


# -- JSON for `detail` -------------------------------------------------------------------------
MAX_DETAIL_BYTES = 4096
"""Bytes values longer than this are cut in `detail` (the values themselves are in `messages`)."""


def _json_default(o: Any) -> Any:
    if isinstance(o, (bytes, bytearray, memoryview)):
        b = bytes(o)
        if len(b) > MAX_DETAIL_BYTES:
            return b[:MAX_DETAIL_BYTES].hex() + f"…(+{len(b) - MAX_DETAIL_BYTES} bytes)"
        return b.hex()
    if isinstance(o, (set, frozenset)):
        return sorted(o, key=repr)  # sorted: the same set gives the same text every run
    if isinstance(o, tuple):
        return list(o)
    return str(o)


_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS


def to_json(fields: Any) -> str:
    """Compact JSON of a decode; orjson (measured ~6x faster than json here), json as the fallback.

    The fallback covers what orjson refuses (integers beyond 64 bits) and gives the same text
    for everything orjson accepts: compact separators, keys in insertion order, UTF-8 kept.
    """
    try:
        return orjson.dumps(fields, default=_json_default, option=_ORJSON_OPTIONS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(fields, default=_json_default, ensure_ascii=False, separators=(",", ":"))


# -- rows as tuples in schema order ----------------------------------------------------------------
def _attr(c: ColumnDecl) -> str:
    """The model attribute a column is read from: its name, with the unit a timestamp's attribute
    carries (`ts` ← `Frame.ts_us`, `timestamp` ← `Message.timestamp_ms`)."""
    if c.type.startswith("timestamp["):
        return f"{c.name}_{c.type[len('timestamp[') :].split(',')[0]}"
    return c.name


def _getter(table: str, model: type, skip: tuple[str, ...] = ("capture",)) -> Any:
    """One `attrgetter` of a table's columns in declared order (`tables.json`, the one
    declaration), but those in `skip` (the capture, computed columns): a column added there
    is read here with no list to keep in step. A column whose attribute the model lacks is
    refused at import, not found at the first row."""
    names = [_attr(c) for c in declared()[table].columns if c.name not in skip]
    known = {f.name for f in dataclasses.fields(model)}
    missing = [n for n in names if n not in known]
    if missing:
        raise ImportError(f"{table} columns without a {model.__name__} attribute: {missing}")
    return attrgetter(*names)


_FRAME_COLS = _getter("frames", Frame, ("capture", "detail"))
_FRAME_PLACE = attrgetter("packet", "stream", "protocol")
_MESSAGE_HEAD = attrgetter("direction", "topic", "partition", "offset", "message_id", "key", "value_size")
_MESSAGE_TAIL = attrgetter("timestamp_ms", "headers", "compression", "checksum_ok")
_ANOMALY_COLS = _getter("anomalies", Anomaly)
_EXCHANGE_COLS = _getter("exchanges", Exchange)
_CONNECTION_COLS = _getter("connections", ConnectionSummary)


def frame_tuple(f: Frame, capture: str) -> tuple[Any, ...]:
    return (capture, *_FRAME_COLS(f), to_json(f.fields))


def message_tuple(m: Message, f: Frame, capture: str, values: bool) -> tuple[Any, ...]:
    return (
        capture,
        *_FRAME_PLACE(f),
        *_MESSAGE_HEAD(m),
        m.value if values else None,
        *_MESSAGE_TAIL(m),
        to_json(m.detail) if m.detail else None,
        m.offset_delta,
    )


def anomaly_tuple(a: Anomaly, capture: str) -> tuple[Any, ...]:
    return (capture, *_ANOMALY_COLS(a))


def exchange_tuple(e: Exchange, capture: str) -> tuple[Any, ...]:
    return (capture, *_EXCHANGE_COLS(e))


def connection_tuple(c: ConnectionSummary, capture: str) -> tuple[Any, ...]:
    return (capture, *_CONNECTION_COLS(c))


# -- rows as dicts (for callers that want names: `-T json`, tests) ----------------------------------
def _as_dict(name: str, row: tuple[Any, ...]) -> dict[str, Any]:
    return dict(zip(SCHEMAS[name].names, row, strict=True))


def frame_row(f: Frame, capture: str) -> dict[str, Any]:
    return _as_dict("frames", frame_tuple(f, capture))


def message_row(m: Message, f: Frame, capture: str, values: bool) -> dict[str, Any]:
    return _as_dict("messages", message_tuple(m, f, capture, values))


def anomaly_row(a: Anomaly, capture: str) -> dict[str, Any]:
    return _as_dict("anomalies", anomaly_tuple(a, capture))


def exchange_row(e: Exchange, capture: str) -> dict[str, Any]:
    return _as_dict("exchanges", exchange_tuple(e, capture))


def connection_row(c: ConnectionSummary, capture: str) -> dict[str, Any]:
    return _as_dict("connections", connection_tuple(c, capture))


# -- columns ---------------------------------------------------------------------------------------
def _clean(v: Any, t: pa.DataType) -> Any:
    """One value made to fit its column; a value that cannot fit becomes null (never a crash)."""
    if v is None:
        return None
    try:
        if pa.types.is_integer(t) or pa.types.is_timestamp(t):
            v = int(v)
            bits = t.bit_width - 1
            return v if -(1 << bits) <= v < (1 << bits) else None
        if pa.types.is_binary(t):
            return bytes(v)
        if pa.types.is_string(t):
            if isinstance(v, (bytes, bytearray)):
                return bytes(v).decode("utf-8", "replace")
            return v if isinstance(v, str) else str(v)
        if pa.types.is_boolean(t):
            return bool(v)
        if pa.types.is_map(t):
            out = []
            for k, b in v:
                key = k.decode("utf-8", "replace") if isinstance(k, (bytes, bytearray)) else str(k)
                out.append((key, None if b is None else bytes(b)))
            return out
    except (TypeError, ValueError):
        return None
    return v


def column(values: Sequence[Any], t: pa.DataType) -> pa.Array:
    """An Arrow array of one column; values that do not fit the type are coerced or nulled."""
    try:
        return pa.array(values, type=t)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return pa.array([_clean(v, t) for v in values], type=t)


def rows_to_batch(name: str, rows: Sequence[tuple[Any, ...]]) -> pa.RecordBatch:
    """Tuples in schema order → one record batch of the table's schema."""
    schema = SCHEMAS[name]
    if not rows:
        return _empty_batch(schema)
    cols = list(zip(*rows, strict=True))
    return pa.RecordBatch.from_arrays(
        [column(c, f.type) for c, f in zip(cols, schema, strict=True)], schema=schema
    )


def _empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)


def rows_to_table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    """Dict rows (any key order) → a table of the named schema."""
    names = SCHEMAS[name].names
    return pa.Table.from_batches([rows_to_batch(name, [tuple(r[n] for n in names) for r in rows])])


# -- JSON lines ------------------------------------------------------------------------------------
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def iso_ts(v: int, unit: str) -> str:
    """An integer timestamp as ISO-8601 UTC text, exact (no float rounding)."""
    if unit == "ms":
        return (_EPOCH + timedelta(milliseconds=v)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return (_EPOCH + timedelta(microseconds=v)).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _b64(b: Any) -> str:
    return base64.b64encode(bytes(b)).decode()


def json_value(name: str, schema: pa.Schema, v: Any) -> Any:
    """A column value as JSON shows it: timestamps ISO-8601 UTC, binary base64."""
    if v is None:
        return None
    t = schema.field(name).type
    if pa.types.is_timestamp(t):
        if isinstance(v, datetime):
            return v.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
        return iso_ts(int(v), t.unit)
    if pa.types.is_binary(t):
        return _b64(v)
    if pa.types.is_map(t):
        return {k: (_b64(b) if b is not None else None) for k, b in v}
    return v


def json_row(name: str, row: dict[str, Any]) -> dict[str, Any]:
    schema = SCHEMAS[name]
    return {n: json_value(n, schema, row[n]) for n in schema.names}


def json_line(name: str, row: tuple[Any, ...]) -> str:
    """One row (tuple in schema order) as one line of JSON, without the newline."""
    schema = SCHEMAS[name]
    # An integer too wide for its column is null, as in Parquet (`_clean`): a TANK sequence number
    # of 2^64-1 is no int64, and the two formats must hold the same values.
    obj = {
        f.name: json_value(f.name, schema, _clean(v, f.type) if pa.types.is_integer(f.type) else v)
        for f, v in zip(schema, row, strict=True)
    }
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def batch_tuples(batch: pa.RecordBatch) -> Iterator[tuple[Any, ...]]:
    """A record batch's rows as tuples in schema order, valued as `TableBuilder`'s rows are.

    Timestamps are read as their integer count of units (not `datetime`), as the builder
    holds them.
    """
    cols = []
    for f, col in zip(batch.schema, batch.columns, strict=True):
        if pa.types.is_timestamp(f.type):
            col = col.cast(pa.int64())
        cols.append(col.to_pylist())
    return zip(*cols, strict=True)


# -- events → batches ----------------------------------------------------------------------------------
class TableBuffer:
    """Rows of one table waiting to become a record batch."""

    __slots__ = ("name", "rows", "nbytes", "batch_rows", "batch_bytes", "count")

    def __init__(self, name: str, batch_rows: int = BATCH_ROWS, batch_bytes: int = BATCH_BYTES) -> None:
        self.name = name
        self.rows: list[tuple[Any, ...]] = []
        self.nbytes = 0
        self.batch_rows = batch_rows
        self.batch_bytes = batch_bytes
        self.count = 0

    def full(self) -> bool:
        return len(self.rows) >= self.batch_rows or self.nbytes >= self.batch_bytes

    def take(self) -> list[tuple[Any, ...]]:
        rows = self.rows
        self.rows = []
        self.nbytes = 0
        self.count += len(rows)
        return rows


class TableBuilder:
    """Turns pipeline events into rows of the tables, handed out in bounded batches.

    `feed(events)` yields `(table, rows)` each time a table's buffer is full;
    `finish()` yields what is left. Rows are tuples in schema order
    (`rows_to_batch` makes them a record batch, `json_line` a JSON line).
    """

    def __init__(
        self, values: bool = False, batch_rows: int = BATCH_ROWS, batch_bytes: int = BATCH_BYTES
    ) -> None:
        self.values = values
        self.buffers = {n: TableBuffer(n, batch_rows, batch_bytes) for n in TABLES}

    def feed(self, events: Iterable[Any]) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
        from wiredump.dissect.pipeline import ANOMALY, CONNECTION, EXCHANGE, FRAME

        b = self.buffers
        frames, messages, anomalies = b["frames"], b["messages"], b["anomalies"]
        exchanges, connections = b["exchanges"], b["connections"]
        add_frame, add_message, add_anomaly = frames.rows.append, messages.rows.append, anomalies.rows.append
        values = self.values
        for ev in events:
            kind = ev.kind
            if kind == FRAME:
                f = ev.obj
                cap = ev.capture
                detail = to_json(f.fields)
                add_frame((cap, *_FRAME_COLS(f), detail))
                frames.nbytes += ROW_OVERHEAD + len(detail) + len(f.summary)
                if f.messages:
                    place = _FRAME_PLACE(f)
                    size = 0
                    for m in f.messages:
                        value = m.value if values else None
                        mdetail = to_json(m.detail) if m.detail else None
                        add_message(
                            (
                                cap,
                                *place,
                                *_MESSAGE_HEAD(m),
                                value,
                                *_MESSAGE_TAIL(m),
                                mdetail,
                                m.offset_delta,
                            )
                        )
                        size += ROW_OVERHEAD
                        if value is not None:
                            size += len(value)
                        if m.key is not None:
                            size += len(m.key)
                        if mdetail is not None:
                            size += len(mdetail)
                    messages.nbytes += size
                    if messages.full():
                        yield "messages", messages.take()
                        add_message = messages.rows.append
                if f.partitions:
                    parts = b["partitions"]
                    rows = partition_tuples(f, cap)
                    parts.rows.extend(rows)
                    parts.nbytes += ROW_OVERHEAD * len(rows)
                    if parts.full():
                        yield "partitions", parts.take()
                if frames.full():
                    yield "frames", frames.take()
                    add_frame = frames.rows.append
            elif kind == ANOMALY:
                a = ev.obj
                add_anomaly((ev.capture, *_ANOMALY_COLS(a)))
                anomalies.nbytes += ROW_OVERHEAD + len(a.detail)
                if anomalies.full():
                    yield "anomalies", anomalies.take()
                    add_anomaly = anomalies.rows.append
            elif kind == EXCHANGE:
                exchanges.rows.append((ev.capture, *_EXCHANGE_COLS(ev.obj)))
                exchanges.nbytes += ROW_OVERHEAD
                if exchanges.full():
                    yield "exchanges", exchanges.take()
            elif kind == CONNECTION:
                connections.rows.append((ev.capture, *_CONNECTION_COLS(ev.obj)))
                connections.nbytes += ROW_OVERHEAD
                if connections.full():
                    yield "connections", connections.take()

    def finish(self) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
        for name, buf in self.buffers.items():
            if buf.rows:
                yield name, buf.take()

    def counts(self) -> dict[str, int]:
        return {n: b.count for n, b in self.buffers.items()}


def record_batches(events: Iterable[Any], values: bool = False) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Every row of the events as `(table, record batch)` pairs, in bounded batches."""
    builder = TableBuilder(values)
    for name, rows in builder.feed(events):
        yield name, rows_to_batch(name, rows)
    for name, rows in builder.finish():
        yield name, rows_to_batch(name, rows)


# -- writers ---------------------------------------------------------------------------------------
_ALL_COLUMNS = sorted({n for s in SCHEMAS.values() for n in s.names})
PARQUET_OPTIONS: dict[str, Any] = {
    "compression": parquet_settings.COMPRESSION,
    "compression_level": parquet_settings.ZSTD_LEVEL,
    "write_statistics": [c for c in _ALL_COLUMNS if c not in parquet_settings.BLOB_COLUMNS],
    "use_dictionary": list(parquet_settings.DICTIONARY_COLUMNS),
    "data_page_size": parquet_settings.PAGE_BYTES,
}
"""pyarrow's writer settings, from `parquet_settings` (the declaration the engine's writer takes
too; fixed, so output is reproducible). Names absent from a table are ignored by the writer."""


class TableWriter:
    """Streams rows of one table to Parquet (one row group per batch) or JSON lines."""

    def __init__(
        self,
        name: str,
        path: Path,
        fmt: str = "parquet",
        batch_rows: int = BATCH_ROWS,
        batch_bytes: int = BATCH_BYTES,
    ) -> None:
        self.name = name
        self.schema = SCHEMAS[name]
        self.names = self.schema.names
        self.path = path
        self.fmt = fmt
        self.buffer = TableBuffer(name, batch_rows, batch_bytes)
        self._pq: pq.ParquetWriter | None = None
        self._fh: TextIO | None = None
        if fmt == "parquet":
            self._pq = pq.ParquetWriter(str(path), self.schema, **PARQUET_OPTIONS)
        elif fmt == "jsonl":
            self._fh = open(path, "w", encoding="utf-8")  # noqa: SIM115 — closed in close()
        else:
            raise ValueError(f"unknown format {fmt!r}")

    @property
    def count(self) -> int:
        return self.buffer.count

    def add(self, row: dict[str, Any]) -> None:
        """One row given as a dict of column name → value."""
        self.add_tuple(tuple(row[n] for n in self.names))

    def add_tuple(self, row: tuple[Any, ...], size: int = ROW_OVERHEAD) -> None:
        buf = self.buffer
        buf.rows.append(row)
        buf.nbytes += size
        if buf.full():
            self.flush()

    def write_rows(self, rows: list[tuple[Any, ...]]) -> None:
        """Rows (tuples in schema order) written at once, as one row group."""
        if not rows:
            return
        if self._pq is not None:
            self._pq.write_batch(rows_to_batch(self.name, rows), row_group_size=len(rows))
        else:
            assert self._fh is not None
            name = self.name
            self._fh.writelines(json_line(name, r) + "\n" for r in rows)

    def write_batch(self, batch: pa.RecordBatch) -> None:
        """A record batch built by the native engine, written as one row group (or its JSON lines).

        The batch has the declared schema, so the Parquet bytes are those `write_rows` makes
        of the same rows; its JSON lines go through `json_line` as Python's rows do
        (timestamps read as their integers, so the text is the same to the digit).
        """
        if batch.num_rows == 0:
            return
        if self._pq is not None:
            self._pq.write_batch(batch, row_group_size=batch.num_rows)
        else:
            assert self._fh is not None
            self._fh.writelines(json_line(self.name, r) + "\n" for r in batch_tuples(batch))

    def flush(self) -> None:
        self.write_rows(self.buffer.take())

    def close(self) -> None:
        self.flush()
        if self._pq is not None:
            self._pq.close()
            self._pq = None
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class TableSet:
    """All tables of a run (`DIR/<table>.parquet` or `.jsonl`), fed from pipeline events."""

    def __init__(
        self,
        out_dir: Path,
        fmt: str = "parquet",
        values: bool = False,
        batch_rows: int = BATCH_ROWS,
        batch_bytes: int = BATCH_BYTES,
    ) -> None:
        if fmt not in ("parquet", "jsonl"):
            raise ValueError(f"unknown format {fmt!r}")
        out_dir.mkdir(parents=True, exist_ok=True)
        ext = "parquet" if fmt == "parquet" else "jsonl"
        self.values = values
        self.batch_rows = batch_rows
        self.batch_bytes = batch_bytes
        self.feed: Any = None  # the Rust builders (`wiredump._engine.TableFeed`), once `add_native` runs
        self.builder = TableBuilder(values, batch_rows, batch_bytes)
        self.writers = {
            n: TableWriter(n, out_dir / f"{n}.{ext}", fmt, batch_rows, batch_bytes) for n in TABLES
        }

    def add_native(self, dissector: Any) -> Any:
        """One capture dissected by the native engine, its tables built in Rust (the fast path).

        `dissector` is a `wiredump._engine.Dissector` not iterated otherwise. No Python
        object is made per frame: the Rust builders (`arrow_out`) cut the same bounded
        batches `TableBuilder` does, and each crosses through the Arrow C stream interface
        to its writer. The builders are shared by every capture of the set, as `TableBuilder` is.
        Returns the capture's `pipeline.CaptureEnd` (its packets and truncation).
        """
        from wiredump.dissect.pipeline import CaptureEnd

        if self.feed is None:
            from wiredump._engine import TableFeed

            self.feed = TableFeed(self.values, self.batch_rows, self.batch_bytes)
        feed = self.feed
        # The batches are written on a thread of their own while the engine (GIL released
        # in `pump`) builds the next ones: see `writer_thread`.
        with BackgroundWriter(self._write_native) as writer:
            while (ready := feed.pump(dissector)) is not None:
                writer.put(ready)
        return CaptureEnd(*feed.capture_end)

    def _write_native(self, ready: list[tuple[str, Any]]) -> None:
        for name, stream in ready:
            for batch in pa.RecordBatchReader.from_stream(stream):
                self.writers[name].write_batch(batch)

    def add_events(self, events: Iterable[Any]) -> None:
        writers = self.writers
        for name, rows in self.builder.feed(events):
            writers[name].write_rows(rows)

    def close(self) -> dict[str, int]:
        for name, rows in self.builder.finish():
            self.writers[name].write_rows(rows)
        if self.feed is not None:
            self._write_native(self.feed.finish())
        for w in self.writers.values():
            w.close()
        counts = self.builder.counts()
        if self.feed is not None:
            for n, c in self.feed.counts():
                counts[n] += c
        for n, w in self.writers.items():  # rows added straight to a writer
            counts[n] += w.count
        return counts
