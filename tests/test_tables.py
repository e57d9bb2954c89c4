"""The five tables: the contract's schemas, real captures against their independent decodes,
empty input, determinism, bounded batches, JSON lines and value coercion."""

from __future__ import annotations

import base64
import csv
import json
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from wiredump.dissect.pipeline import dissect
from wiredump.dissect.tables import (
    SCHEMAS,
    TABLES,
    TableBuilder,
    TableSet,
    column,
    frame_row,
    iso_ts,
    json_row,
    rows_to_batch,
)

# The tables of ../shared/CONTRACT.md, typed as the contract says (copied from the contract by hand,
# not from tables.py, so a drift in either shows here).
S, I64, I32, B, BIN = pa.string(), pa.int64(), pa.int32(), pa.bool_(), pa.binary()
TSU, TSM = pa.timestamp("us", tz="UTC"), pa.timestamp("ms", tz="UTC")
CONTRACT = {
    "frames": [
        ("capture", S), ("packet", I64), ("first_packet", I64), ("ts", TSU), ("stream", I64),
        ("src", S), ("src_port", I32), ("dst", S), ("dst_port", I32), ("protocol", S), ("role", S),
        ("kind", S), ("type", S), ("type_code", I32), ("version", I32), ("correlation_id", I64),
        ("length", I64), ("status", S), ("error_code", I32), ("error", S), ("peer_packet", I64),
        ("latency_us", I64), ("summary", S), ("detail", S),
    ],
    "exchanges": [
        ("capture", S), ("stream", I64), ("protocol", S), ("type", S), ("correlation_id", I64),
        ("request_packet", I64), ("response_packet", I64), ("request_ts", TSU), ("response_ts", TSU),
        ("latency_us", I64), ("error_code", I32), ("status", S),
    ],
    "messages": [
        ("capture", S), ("packet", I64), ("stream", I64), ("protocol", S), ("direction", S),
        ("topic", S), ("partition", I32), ("offset", I64), ("message_id", S), ("key", BIN),
        ("value_size", I64), ("value", BIN), ("timestamp", TSM), ("headers", pa.map_(S, BIN)),
        ("compression", S), ("checksum_ok", B),
    ],
    "anomalies": [
        ("capture", S), ("packet", I64), ("stream", I64), ("protocol", S), ("kind", S),
        ("offset", I64), ("detail", S),
    ],
    "connections": [
        ("capture", S), ("stream", I64), ("client", S), ("client_port", I32), ("server", S),
        ("server_port", I32), ("protocol", S), ("packets", I64), ("bytes_client", I64),
        ("bytes_server", I64), ("frames", I64), ("gaps", I64), ("retransmissions", I64),
        ("first_ts", TSU), ("last_ts", TSU), ("state", S),
    ],
}  # fmt: skip


def export(paths: list[str], out: Path, **kw: object) -> dict[str, int]:
    tables = TableSet(out, **kw)  # type: ignore[arg-type]
    tables.add_events(dissect(paths))
    return tables.close()


def pcap_records(path: Path) -> list[tuple[int, int]]:
    """(ts_us, captured length) of each record of a classic µs pcap, read here independently."""
    data = path.read_bytes()
    assert struct.unpack_from("<I", data)[0] == 0xA1B2C3D4
    out, pos = [], 24
    while pos + 16 <= len(data):
        sec, usec, incl, _orig = struct.unpack_from("<IIII", data, pos)
        out.append((sec * 1_000_000 + usec, incl))
        pos += 16 + incl
    return out


def empty_pcap(path: Path) -> Path:
    path.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    return path


def test_tables_are_the_contract_ones_and_partitions() -> None:
    """`partitions` (issue 18 item 7) is added beside the contract's tables, never in their place."""
    assert TABLES == (*CONTRACT, "partitions")


@pytest.mark.parametrize("name", list(CONTRACT))
def test_schemas_hold_the_contract_columns_in_order(name: str) -> None:
    schema = SCHEMAS[name]
    want = CONTRACT[name]
    assert [(f.name, f.type) for f in schema][: len(want)] == want
    extra = schema.names[len(want) :]
    assert extra == (["detail", "offset_delta"] if name == "messages" else [])  # added, never renamed


def test_empty_capture_gives_five_empty_tables_of_the_same_schema(tmp_path: Path) -> None:
    cap = empty_pcap(tmp_path / "empty.pcap")
    counts = export([str(cap)], tmp_path / "out")
    assert counts == dict.fromkeys(TABLES, 0)
    for name in TABLES:
        t = pq.read_table(tmp_path / "out" / f"{name}.parquet")
        assert t.num_rows == 0
        assert t.schema.equals(SCHEMAS[name], check_metadata=False)


def test_kafka_frames_match_the_independent_pdu_list(captures: Path, tmp_path: Path) -> None:
    cap = captures / "kafka" / "kafka-python-basic.pcap"
    export([str(cap)], tmp_path)
    frames = pq.read_table(tmp_path / "frames.parquet").to_pylist()
    with open(cap.with_suffix(".pdus.tsv"), newline="") as fh:
        pdus = list(csv.DictReader(fh, delimiter="\t"))
    assert len(frames) == len(pdus) == 88
    last_of_first = {(int(p["stream"]), int(p["first_frame"])): int(p["last_frame"]) for p in pdus}
    want = sorted(
        (
            int(p["stream"]),
            int(p["last_frame"]),
            int(p["first_frame"]),
            "client" if p["dir"] == "req" else "server",
            p["api_name"],
            int(p["api_version"]),
            int(p["correlation_id"]),
            int(p["length"]) + 4,  # the tsv counts the bytes after the 4-byte length prefix
            last_of_first[(int(p["stream"]), int(p["peer_frame"]))] if p["peer_frame"] else None,
        )
        for p in pdus
    )
    got = sorted(
        (
            f["stream"],
            f["packet"],
            f["first_packet"],
            f["role"],
            f["type"],
            f["version"],
            f["correlation_id"],
            f["length"],
            f["peer_packet"],
        )
        for f in frames
    )
    assert got == want
    assert {f["capture"] for f in frames} == {str(cap)}
    assert {f["protocol"] for f in frames} == {"kafka"}


def test_timestamps_are_utc_and_exact(captures: Path, tmp_path: Path) -> None:
    cap = captures / "kafka" / "kafka-python-basic.pcap"
    records = pcap_records(cap)
    export([str(cap)], tmp_path)
    frames = pq.read_table(tmp_path / "frames.parquet")
    assert frames.schema.field("ts").type == TSU
    for packet, ts in zip(
        frames["packet"].to_pylist(), frames["ts"].cast(pa.int64()).to_pylist(), strict=True
    ):
        assert ts == records[packet - 1][0]
    conns = pq.read_table(tmp_path / "connections.parquet").to_pylist()
    assert min(c["first_ts"] for c in conns).tzname() == "UTC"


def test_tank_messages_count_the_produced_messages_of_the_summary(captures: Path, tmp_path: Path) -> None:
    cap = captures / "tank" / "t03-compressed.pcap"
    summary = json.loads(cap.with_suffix(".summary.json").read_text())
    export([str(cap)], tmp_path, values=True)
    msgs = pq.read_table(tmp_path / "messages.parquet").to_pylist()
    produced = [m for m in msgs if m["direction"] == "produce"]
    assert len(produced) == summary["produced_messages"] == 804
    assert max(m["value_size"] for m in msgs) <= summary["max_message_length"]
    # --values: the value column holds exactly value_size bytes.
    assert all(m["value"] is not None and len(m["value"]) == m["value_size"] for m in msgs)


def test_values_are_left_out_unless_asked(captures: Path, tmp_path: Path) -> None:
    cap = captures / "tank" / "t03-compressed.pcap"
    export([str(cap)], tmp_path)
    msgs = pq.read_table(tmp_path / "messages.parquet")
    assert msgs.num_rows > 0
    assert msgs["value"].null_count == msgs.num_rows
    assert pa.compute.sum(msgs["value_size"]).as_py() > 0


def test_pravega_events_and_capture_column_over_several_captures(captures: Path, tmp_path: Path) -> None:
    a = captures / "pravega" / "p02-batching-multi-segment.pcap"
    b = captures / "pulsar" / "s01-producer-nobatch.pcap"
    export([str(a), str(b)], tmp_path / "both")
    export([str(a)], tmp_path / "a")
    export([str(b)], tmp_path / "b")
    for name in TABLES:
        both = pq.read_table(tmp_path / "both" / f"{name}.parquet")
        alone = pa.concat_tables([pq.read_table(tmp_path / x / f"{name}.parquet") for x in ("a", "b")])
        assert both.equals(alone), name
    msgs = pq.read_table(tmp_path / "a" / "messages.parquet").to_pylist()
    summary = json.loads(a.with_suffix(".summary.json").read_text())
    produced = [m for m in msgs if m["direction"] == "produce"]
    assert len(produced) == summary["events_in_appends"] == 605
    assert {m["capture"] for m in msgs} == {str(a)}


def test_same_capture_twice_gives_byte_identical_parquet(captures: Path, tmp_path: Path) -> None:
    caps = [
        str(captures / "pulsar" / "s02-producer-batching.pcap"),
        str(captures / "kafka" / "ck-compress-lz4.pcap"),
    ]
    export(caps, tmp_path / "one", values=True)
    export(caps, tmp_path / "two", values=True)
    for name in TABLES:
        one = (tmp_path / "one" / f"{name}.parquet").read_bytes()
        two = (tmp_path / "two" / f"{name}.parquet").read_bytes()
        assert one == two, name
    assert pq.read_table(tmp_path / "one" / "frames.parquet").num_rows > 0


def test_batches_are_bounded_in_rows_and_bytes(captures: Path, tmp_path: Path) -> None:
    cap = str(captures / "tank" / "t03-compressed.pcap")
    per_frame = max(len(ev.obj.messages) for ev in dissect([cap]) if ev.kind == "frame")
    builder = TableBuilder(values=True, batch_rows=100, batch_bytes=1 << 30)
    sizes = [len(rows) for name, rows in builder.feed(dissect([cap])) if name == "messages"]
    sizes += [len(rows) for name, rows in builder.finish() if name == "messages"]
    # A batch is cut after the frame that fills it: it may overshoot by one frame's messages.
    assert sum(sizes) == 2412 and len(sizes) >= 3 and max(sizes) < 100 + per_frame
    builder = TableBuilder(values=True, batch_rows=1 << 20, batch_bytes=20_000)
    batches = [rows for name, rows in builder.feed(dissect([cap])) if name == "messages"]
    assert len(batches) > 3
    # The writer turns each batch into one row group, so the file streams.
    export([cap], tmp_path, batch_rows=50)
    meta = pq.ParquetFile(tmp_path / "messages.parquet").metadata
    assert meta.num_row_groups >= 3 and meta.num_rows == 2412


def test_jsonl_holds_the_same_rows(captures: Path, tmp_path: Path) -> None:
    cap = str(captures / "kafka" / "kafka-python-basic.pcap")
    export([cap], tmp_path / "pq", values=True)
    export([cap], tmp_path / "js", fmt="jsonl", values=True)
    for name in TABLES:
        table = pq.read_table(tmp_path / "pq" / f"{name}.parquet")
        lines = (tmp_path / "js" / f"{name}.jsonl").read_text().splitlines()
        assert len(lines) == table.num_rows
        schema = SCHEMAS[name]
        for row, line in zip(table.to_pylist(), lines, strict=True):
            got = json.loads(line)
            assert list(got) == schema.names
            for col in schema:
                v, j = row[col.name], got[col.name]
                if v is None:
                    assert j is None
                elif pa.types.is_timestamp(col.type):
                    assert j == v.isoformat(
                        timespec="microseconds" if col.type.unit == "us" else "milliseconds"
                    ).replace("+00:00", "Z")
                elif pa.types.is_binary(col.type):
                    assert base64.b64decode(j) == v
                elif pa.types.is_map(col.type):
                    assert j == {k: base64.b64encode(b).decode() if b is not None else None for k, b in v}
                else:
                    assert j == v, (name, col.name)


def test_iso_timestamps_are_exact_at_the_microsecond() -> None:
    # 2024-02-29T23:59:59.999999Z: float seconds would round this up to the next second.
    assert iso_ts(1_709_251_199_999_999, "us") == "2024-02-29T23:59:59.999999Z"
    assert iso_ts(1_709_251_199_999, "ms") == "2024-02-29T23:59:59.999Z"
    assert iso_ts(0, "us") == "1970-01-01T00:00:00.000000Z"


def test_values_that_do_not_fit_become_null_not_a_crash() -> None:
    assert column([1, 2**40, None], pa.int32()).to_pylist() == [1, None, None]
    assert column([b"a", bytearray(b"b"), memoryview(b"c")], pa.binary()).to_pylist() == [b"a", b"b", b"c"]
    headers = column([[("k", b"v"), (b"\xffraw", None)]], pa.map_(pa.string(), pa.binary()))
    assert headers.to_pylist() == [[("k", b"v"), ("\ufffdraw", None)]]
    assert column(["ok", b"\xff"], pa.string()).to_pylist() == ["ok", "\ufffd"]
    batch = rows_to_batch("anomalies", [("c", 1, None, None, "gap", 2**70, "x")])
    assert batch.to_pylist() == [
        {
            "capture": "c",
            "packet": 1,
            "stream": None,
            "protocol": None,
            "kind": "gap",
            "offset": None,
            "detail": "x",
        }
    ]


def test_frame_row_and_json_row_for_other_sinks(captures: Path) -> None:
    cap = str(captures / "kafka" / "go-sniffer-kafka.pcap")
    frames = [ev.obj for ev in dissect([cap]) if ev.kind == "frame"]
    row = frame_row(frames[0], cap)
    assert list(row) == SCHEMAS["frames"].names
    js = json_row("frames", row)
    assert js["ts"].endswith("Z") and json.loads(js["detail"]) == json.loads(row["detail"])
