"""The one declaration of the tables' columns (wiredump/tables.json): the schemas, the docs and the
filter agree with it, and it holds the contract's columns (copied here by hand from CONTRACT.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from wiredump.dissect import columns
from wiredump.dissect.filter import COLUMNS as FILTER_COLUMNS
from wiredump.dissect.filter import INT, STR
from wiredump.dissect.tables import SCHEMAS, TABLES

ROOT = Path(__file__).resolve().parents[1]

# Contract (CONTRACT.md, "Tables"): type and whether the contract says the column may be null.
# Written here from the contract's text, not from the declaration, so a drift in either shows.
S, I64, I32, B, BIN = "string", "int64", "int32", "bool", "binary"
TSU, TSM, MAP = "timestamp[us, UTC]", "timestamp[ms, UTC]", "map<string, binary>"
CONTRACT_NULLABLE = {
    "frames": {"version", "correlation_id", "error_code", "error", "peer_packet", "latency_us"},
    "exchanges": {
        "correlation_id", "request_packet", "response_packet", "request_ts", "response_ts", "latency_us",
        "error_code",
    },
    "messages": {
        "topic", "partition", "offset", "message_id", "key", "value", "timestamp", "headers", "compression",
        "checksum_ok",
    },
    "anomalies": {"stream", "protocol", "offset"},
    "connections": {"protocol"},
}  # fmt: skip


def test_the_contracts_tables_are_declared() -> None:
    # `partitions` (issue 18) is added beside the contract's five; none of those may go.
    assert set(CONTRACT_NULLABLE) <= set(TABLES)


def test_declaration_file_is_the_one_the_package_reads() -> None:
    doc = json.loads((ROOT / "wiredump" / "tables.json").read_text(encoding="utf-8"))
    assert [t["name"] for t in doc["tables"]] == list(columns.declared()) == list(TABLES)
    assert set(doc["types"]) == set(columns.ARROW_TYPES)


@pytest.mark.parametrize("name", TABLES)
def test_schema_is_built_from_the_declaration(name: str) -> None:
    decl = columns.declared()[name].columns
    schema = SCHEMAS[name]
    assert schema.names == [c.name for c in decl]
    for field, c in zip(schema, decl, strict=True):
        assert field.type == columns.ARROW_TYPES[c.type]
        assert field.nullable  # Parquet OPTIONAL, as every export always wrote
    assert all(len(c.meaning) > 10 and "|" not in c.meaning for c in decl)


@pytest.mark.parametrize("name", list(CONTRACT_NULLABLE))
def test_declared_nulls_cover_the_contracts(name: str) -> None:
    decl = {c.name: c for c in columns.declared()[name].columns}
    for col in CONTRACT_NULLABLE[name]:
        assert decl[col].null, (name, col)
    # Columns the contract gives no `null` to are never null in the rows (an added column may be).
    contract_cols = {"frames": 24, "exchanges": 12, "messages": 16, "anomalies": 7, "connections": 16}[name]
    for c in list(decl.values())[:contract_cols]:
        assert c.null == (c.name in CONTRACT_NULLABLE[name]), (name, c.name)


def test_types_map_to_arrow() -> None:
    assert columns.ARROW_TYPES[TSU] == pa.timestamp("us", tz="UTC")
    assert columns.ARROW_TYPES[TSM] == pa.timestamp("ms", tz="UTC")
    assert columns.ARROW_TYPES[MAP] == pa.map_(pa.string(), pa.binary())
    assert columns.ARROW_TYPES[I32] == pa.int32() and columns.ARROW_TYPES[BIN] == pa.binary()


def test_docs_list_exactly_the_declared_columns() -> None:
    text = (ROOT / "docs" / "tables.md").read_text(encoding="utf-8")
    blocks = columns.docs_blocks(text)
    for name in TABLES:
        assert blocks[name] == columns.markdown_table(name), (
            f"run python -m wiredump.dissect.columns --write ({name})"
        )
    assert columns.render_docs(text) == text


def test_filter_columns_agree_with_the_frames_declaration() -> None:
    # Every frames column can be filtered on, with a matching kind (timestamps as integer µs).
    for c in columns.declared()["frames"].columns:
        col = FILTER_COLUMNS[c.name]
        want = STR if c.type == S else INT
        assert col.type == want, c.name


def test_rows_read_the_declared_columns() -> None:
    """The frames, exchanges, anomalies and connections rows are read in the declared column
    order (tables.json, no list of their own); a column whose attribute the model lacks is
    refused when the module loads."""
    import dataclasses

    from wiredump.dissect import tables
    from wiredump.dissect.model import ConnectionSummary, Frame

    f = Frame("kafka", "Produce", 0, packet=12, first_packet=11, ts_us=1_700_000_000_000_001, stream=3)
    f.src, f.src_port, f.dst, f.dst_port, f.latency_us, f.summary = "10.0.0.1", 4000, "10.0.0.2", 9092, 7, "s"
    row = tables.frame_row(f, "cap")
    assert row["ts"] == 1_700_000_000_000_001 and row["packet"] == 12 and row["first_packet"] == 11
    assert (row["src"], row["src_port"], row["dst_port"], row["latency_us"]) == ("10.0.0.1", 4000, 9092, 7)
    assert list(row) == SCHEMAS["frames"].names
    c = ConnectionSummary(
        5, "10.0.0.1", 4000, "10.0.0.2", 9092, "kafka", 9, 100, 200, 4, 0, 1, 10, 20, "closed"
    )
    row = tables.connection_row(c, "cap")
    assert (row["stream"], row["first_ts"], row["last_ts"], row["state"]) == (5, 10, 20, "closed")
    assert (row["bytes_client"], row["bytes_server"], row["retransmissions"]) == (100, 200, 1)

    @dataclasses.dataclass
    class NoLatency:
        stream: int = 0

    with pytest.raises(ImportError, match="latency_us"):
        tables._getter("exchanges", NoLatency)
