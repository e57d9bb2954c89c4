"""The five tables of the contract: schemas, row conversion, streaming writers.

Schemas are fixed here once, so every output (Parquet, JSON lines, the Spark job,
`-T json`) has the same columns whatever the input, and an empty capture still
gives tables of the right shape. Writers buffer a bounded number of rows and write
them as one row group, so memory stays flat however large the capture is.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from wiredump.dissect.model import Anomaly, ConnectionSummary, Exchange, Frame, Message

TS_US = pa.timestamp("us", tz="UTC")
TS_MS = pa.timestamp("ms", tz="UTC")

FRAMES = pa.schema(
    [
        ("capture", pa.string()),
        ("packet", pa.int64()),
        ("first_packet", pa.int64()),
        ("ts", TS_US),
        ("stream", pa.int64()),
        ("src", pa.string()),
        ("src_port", pa.int32()),
        ("dst", pa.string()),
        ("dst_port", pa.int32()),
        ("protocol", pa.string()),
        ("role", pa.string()),
        ("kind", pa.string()),
        ("type", pa.string()),
        ("type_code", pa.int32()),
        ("version", pa.int32()),
        ("correlation_id", pa.int64()),
        ("length", pa.int64()),
        ("status", pa.string()),
        ("error_code", pa.int32()),
        ("error", pa.string()),
        ("peer_packet", pa.int64()),
        ("latency_us", pa.int64()),
        ("summary", pa.string()),
        ("detail", pa.string()),
    ]
)

EXCHANGES = pa.schema(
    [
        ("capture", pa.string()),
        ("stream", pa.int64()),
        ("protocol", pa.string()),
        ("type", pa.string()),
        ("correlation_id", pa.int64()),
        ("request_packet", pa.int64()),
        ("response_packet", pa.int64()),
        ("request_ts", TS_US),
        ("response_ts", TS_US),
        ("latency_us", pa.int64()),
        ("error_code", pa.int32()),
        ("status", pa.string()),
    ]
)

MESSAGES = pa.schema(
    [
        ("capture", pa.string()),
        ("packet", pa.int64()),
        ("stream", pa.int64()),
        ("protocol", pa.string()),
        ("direction", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("message_id", pa.string()),
        ("key", pa.binary()),
        ("value_size", pa.int64()),
        ("value", pa.binary()),
        ("timestamp", TS_MS),
        ("headers", pa.map_(pa.string(), pa.binary())),
        ("compression", pa.string()),
        ("checksum_ok", pa.bool_()),
        ("detail", pa.string()),
    ]
)

ANOMALIES = pa.schema(
    [
        ("capture", pa.string()),
        ("packet", pa.int64()),
        ("stream", pa.int64()),
        ("protocol", pa.string()),
        ("kind", pa.string()),
        ("offset", pa.int64()),
        ("detail", pa.string()),
    ]
)

CONNECTIONS = pa.schema(
    [
        ("capture", pa.string()),
        ("stream", pa.int64()),
        ("client", pa.string()),
        ("client_port", pa.int32()),
        ("server", pa.string()),
        ("server_port", pa.int32()),
        ("protocol", pa.string()),
        ("packets", pa.int64()),
        ("bytes_client", pa.int64()),
        ("bytes_server", pa.int64()),
        ("frames", pa.int64()),
        ("gaps", pa.int64()),
        ("retransmissions", pa.int64()),
        ("first_ts", TS_US),
        ("last_ts", TS_US),
        ("state", pa.string()),
    ]
)

SCHEMAS: dict[str, pa.Schema] = {
    "frames": FRAMES,
    "exchanges": EXCHANGES,
    "messages": MESSAGES,
    "anomalies": ANOMALIES,
    "connections": CONNECTIONS,
}
TABLES = tuple(SCHEMAS)


# -- JSON for `detail` -------------------------------------------------------------------------
MAX_DETAIL_BYTES = 4096
"""Bytes values longer than this are cut in `detail` (the values themselves are in `messages`)."""


def _json_default(o: Any) -> Any:
    if isinstance(o, (bytes, bytearray, memoryview)):
        b = bytes(o)
        if len(b) > MAX_DETAIL_BYTES:
            return b[:MAX_DETAIL_BYTES].hex() + f"…(+{len(b) - MAX_DETAIL_BYTES} bytes)"
        return b.hex()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    return str(o)


def to_json(fields: Any) -> str:
    return json.dumps(fields, default=_json_default, ensure_ascii=False, separators=(",", ":"))


# -- rows ----------------------------------------------------------------------------------------
def frame_row(f: Frame, capture: str) -> dict[str, Any]:
    return {
        "capture": capture,
        "packet": f.packet,
        "first_packet": f.first_packet,
        "ts": f.ts_us,
        "stream": f.stream,
        "src": f.src,
        "src_port": f.src_port,
        "dst": f.dst,
        "dst_port": f.dst_port,
        "protocol": f.protocol,
        "role": f.role,
        "kind": f.kind,
        "type": f.type,
        "type_code": f.type_code,
        "version": f.version,
        "correlation_id": f.correlation_id,
        "length": f.length,
        "status": f.status,
        "error_code": f.error_code,
        "error": f.error,
        "peer_packet": f.peer_packet,
        "latency_us": f.latency_us,
        "summary": f.summary,
        "detail": to_json(f.fields),
    }


def message_row(m: Message, f: Frame, capture: str, values: bool) -> dict[str, Any]:
    return {
        "capture": capture,
        "packet": f.packet,
        "stream": f.stream,
        "protocol": f.protocol,
        "direction": m.direction,
        "topic": m.topic,
        "partition": m.partition,
        "offset": m.offset,
        "message_id": m.message_id,
        "key": m.key,
        "value_size": m.value_size,
        "value": m.value if values else None,
        "timestamp": m.timestamp_ms,
        "headers": m.headers,
        "compression": m.compression,
        "checksum_ok": m.checksum_ok,
        "detail": to_json(m.detail) if m.detail else None,
    }


def anomaly_row(a: Anomaly, capture: str) -> dict[str, Any]:
    return {
        "capture": capture,
        "packet": a.packet,
        "stream": a.stream,
        "protocol": a.protocol,
        "kind": a.kind,
        "offset": a.offset,
        "detail": a.detail,
    }


def exchange_row(e: Exchange, capture: str) -> dict[str, Any]:
    return {
        "capture": capture,
        "stream": e.stream,
        "protocol": e.protocol,
        "type": e.type,
        "correlation_id": e.correlation_id,
        "request_packet": e.request_packet,
        "response_packet": e.response_packet,
        "request_ts": e.request_ts_us,
        "response_ts": e.response_ts_us,
        "latency_us": e.latency_us,
        "error_code": e.error_code,
        "status": e.status,
    }


def connection_row(c: ConnectionSummary, capture: str) -> dict[str, Any]:
    return {
        "capture": capture,
        "stream": c.stream,
        "client": c.client,
        "client_port": c.client_port,
        "server": c.server,
        "server_port": c.server_port,
        "protocol": c.protocol,
        "packets": c.packets,
        "bytes_client": c.bytes_client,
        "bytes_server": c.bytes_server,
        "frames": c.frames,
        "gaps": c.gaps,
        "retransmissions": c.retransmissions,
        "first_ts": c.first_ts_us,
        "last_ts": c.last_ts_us,
        "state": c.state,
    }


def rows_to_table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    schema = SCHEMAS[name]
    cols = {n: [r[n] for r in rows] for n in schema.names}
    return pa.table([pa.array(cols[n], type=schema.field(n).type) for n in schema.names], schema=schema)


# -- JSON lines ------------------------------------------------------------------------------------
def json_value(name: str, schema: pa.Schema, v: Any) -> Any:
    """A column value as JSON shows it: timestamps ISO-8601 UTC, binary base64."""
    if v is None:
        return None
    t = schema.field(name).type
    if pa.types.is_timestamp(t):
        unit = 1_000_000 if t.unit == "us" else 1000
        return datetime.fromtimestamp(v / unit, tz=timezone.utc).isoformat().replace("+00:00", "Z")
    if pa.types.is_binary(t):
        return base64.b64encode(v).decode()
    if pa.types.is_map(t):
        return {k: (base64.b64encode(b).decode() if b is not None else None) for k, b in v}
    return v


def json_row(name: str, row: dict[str, Any]) -> dict[str, Any]:
    schema = SCHEMAS[name]
    return {n: json_value(n, schema, row[n]) for n in schema.names}


# -- writers ---------------------------------------------------------------------------------------
class TableWriter:
    """Streams rows of one table to Parquet (one row group per `batch_rows`) or JSON lines."""

    def __init__(self, name: str, path: Path, fmt: str = "parquet", batch_rows: int = 65536) -> None:
        self.name = name
        self.schema = SCHEMAS[name]
        self.path = path
        self.fmt = fmt
        self.batch_rows = batch_rows
        self.rows: list[dict[str, Any]] = []
        self.count = 0
        self._pq: pq.ParquetWriter | None = None
        self._fh = None
        if fmt == "parquet":
            self._pq = pq.ParquetWriter(str(path), self.schema, compression="zstd", write_statistics=True)
        elif fmt == "jsonl":
            self._fh = open(path, "w", encoding="utf-8")
        else:
            raise ValueError(f"unknown format {fmt!r}")

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.batch_rows:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        self.count += len(self.rows)
        if self._pq is not None:
            self._pq.write_table(rows_to_table(self.name, self.rows), row_group_size=self.batch_rows)
        else:
            assert self._fh is not None
            for r in self.rows:
                self._fh.write(json.dumps(json_row(self.name, r), ensure_ascii=False, separators=(",", ":")))
                self._fh.write("\n")
        self.rows.clear()

    def close(self) -> None:
        self.flush()
        if self._pq is not None:
            self._pq.close()
        if self._fh is not None:
            self._fh.close()


class TableSet:
    """All five tables of a run, fed from pipeline events."""

    def __init__(
        self, out_dir: Path, fmt: str = "parquet", values: bool = False, batch_rows: int = 65536
    ) -> None:
        out_dir.mkdir(parents=True, exist_ok=True)
        ext = "parquet" if fmt == "parquet" else "jsonl"
        self.values = values
        self.writers = {n: TableWriter(n, out_dir / f"{n}.{ext}", fmt, batch_rows) for n in TABLES}

    def add_events(self, events: Iterable[Any]) -> None:
        from wiredump.dissect.pipeline import ANOMALY, CONNECTION, EXCHANGE, FRAME

        w = self.writers
        frames, messages, anomalies = w["frames"], w["messages"], w["anomalies"]
        exchanges, connections = w["exchanges"], w["connections"]
        values = self.values
        for ev in events:
            kind = ev.kind
            if kind == FRAME:
                f = ev.obj
                frames.add(frame_row(f, ev.capture))
                for m in f.messages:
                    messages.add(message_row(m, f, ev.capture, values))
            elif kind == ANOMALY:
                anomalies.add(anomaly_row(ev.obj, ev.capture))
            elif kind == EXCHANGE:
                exchanges.add(exchange_row(ev.obj, ev.capture))
            elif kind == CONNECTION:
                connections.add(connection_row(ev.obj, ev.capture))

    def close(self) -> dict[str, int]:
        for w in self.writers.values():
            w.close()
        return {n: w.count for n, w in self.writers.items()}
