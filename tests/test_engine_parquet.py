"""The export's Parquet files written by the engine (`EngineTables`, `wiredump._engine.ParquetTables`).

`wiredump export` (Parquet, one process) has the engine build the tables and write them on a
thread of its own, with no batch crossing into Python and no pyarrow loaded. What it writes must
read back as the tables pyarrow's writer makes of the same capture (`tables.TableSet`, the
event path: Python's `TableBuilder` over the engine's events), on every real capture and sample,
alone and all in one run: same schema, same rows, same values. Its own choices are checked as
such: few row groups (cut at `ROW_GROUP_BYTES`, not one per batch), the codec, dictionaries and
statistics `parquet_settings` declares. And what goes wrong says where: a full disk is one line
naming the file, exit 2.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cli_support import run_cli

from tests.conftest import CAPTURES, SAMPLES
from wiredump.dissect import parquet_settings
from wiredump.dissect.pipeline import Options, dissect, open_source
from wiredump.dissect.tables import TABLES, TableSet

_engine = pytest.importorskip("wiredump._engine")

PATHS = sorted(SAMPLES.glob("*.pcap")) + sorted(CAPTURES.rglob("*.pcap"))


def _by_events(paths: list[Path], out: Path) -> dict[str, int]:
    """pyarrow's files, from the engine's events through Python's `TableBuilder`."""
    tables = TableSet(out, fmt="parquet")
    try:
        tables.add_events(dissect([str(p) for p in paths], Options()))
    finally:
        counts = tables.close()
    return counts


def _by_engine(paths: list[Path], out: Path) -> dict[str, int]:
    """The engine's files, as `wiredump export` writes them."""
    from wiredump.dissect.engine_tables import EngineTables

    tables = EngineTables(out)
    try:
        for p in paths:
            end = tables.add_native(open_source(str(p), Options()))
            assert end.name == str(p)
    finally:
        counts = tables.close()
    return counts


def _assert_same_tables(a: Path, b: Path) -> None:
    """Every table of `a` and `b` reads back equal (schema and values); on a difference, the column."""
    for name in TABLES:
        ta, tb = pq.read_table(a / f"{name}.parquet"), pq.read_table(b / f"{name}.parquet")
        assert ta.schema.equals(tb.schema), f"{name}: {ta.schema} != {tb.schema}"
        assert ta.num_rows == tb.num_rows, name
        if not ta.equals(tb):
            for col in ta.column_names:
                assert ta[col].to_pylist() == tb[col].to_pylist(), f"{name}.{col}"
            pytest.fail(f"{name}: unequal tables with equal columns")


@pytest.mark.parametrize("path", PATHS, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_capture_reads_back_as_pyarrows(tmp_path: Path, path: Path) -> None:
    counts_a = _by_events([path], tmp_path / "a")
    counts_b = _by_engine([path], tmp_path / "b")
    assert counts_a == counts_b
    _assert_same_tables(tmp_path / "a", tmp_path / "b")
    for name in TABLES:
        assert pq.read_metadata(tmp_path / "b" / f"{name}.parquet").num_rows == counts_b[name]


def test_all_captures_in_one_run(tmp_path: Path) -> None:
    """Every capture in one export: rows of several captures share batches and row groups."""
    counts_a = _by_events(PATHS, tmp_path / "a")
    counts_b = _by_engine(PATHS, tmp_path / "b")
    assert counts_a == counts_b
    assert counts_b["frames"] > 1000 and counts_b["messages"] > 1000  # something was compared
    _assert_same_tables(tmp_path / "a", tmp_path / "b")
    # Few row groups: pyarrow's writer made one per batch.
    groups_a = pq.ParquetFile(tmp_path / "a" / "messages.parquet").num_row_groups
    groups_b = pq.ParquetFile(tmp_path / "b" / "messages.parquet").num_row_groups
    assert groups_b < groups_a


def test_the_same_export_twice_is_the_same_bytes(tmp_path: Path) -> None:
    """Deterministic output (docs/tables.md): the writer thread, the row-group cuts and the
    files' metadata depend on the rows alone."""
    samples = sorted(SAMPLES.glob("*.pcap"))
    _by_engine(samples, tmp_path / "one")
    _by_engine(samples, tmp_path / "two")
    for name in TABLES:
        assert (tmp_path / "one" / f"{name}.parquet").read_bytes() == (
            tmp_path / "two" / f"{name}.parquet"
        ).read_bytes()


def test_kafka_sample_values(tmp_path: Path) -> None:
    """The Kafka sample's first frame is packet 4: ApiVersions (key 0x0012) v4, correlation id 1
    (bytes 4-11 of its TCP payload), answered by packet 6."""
    _by_engine([SAMPLES / "kafka-basic.pcap"], tmp_path)
    frames = pq.read_table(tmp_path / "frames.parquet").to_pylist()
    first = frames[0]
    assert (
        first["packet"],
        first["type"],
        first["type_code"],
        first["version"],
        first["correlation_id"],
    ) == (
        4,
        "ApiVersions",
        18,
        4,
        1,
    )
    assert (first["protocol"], first["role"], first["kind"], first["peer_packet"]) == (
        "kafka",
        "client",
        "request",
        6,
    )
    assert first["detail"].startswith("{")


def test_file_settings_are_parquet_settings(tmp_path: Path) -> None:
    """zstd on every column chunk, dictionaries on `DICTIONARY_COLUMNS` only, min/max on every
    column but the blobs, written by wiredump."""
    _by_engine(PATHS, tmp_path)
    meta = pq.read_metadata(tmp_path / "frames.parquet")
    assert meta.created_by.startswith("wiredump ")
    for name in ("frames", "messages", "exchanges", "partitions"):
        meta = pq.read_metadata(tmp_path / f"{name}.parquet")
        group = meta.row_group(0)
        for i in range(group.num_columns):
            col = group.column(i)
            top = col.path_in_schema.split(".")[0]
            assert col.compression == "ZSTD", (name, top)
            dictionary = "RLE_DICTIONARY" in col.encodings or "PLAIN_DICTIONARY" in col.encodings
            assert dictionary == (top in parquet_settings.DICTIONARY_COLUMNS), (name, top, col.encodings)
            has_stats = col.statistics is not None and col.statistics.has_min_max
            if top in parquet_settings.BLOB_COLUMNS:
                assert not has_stats, (name, top)
            elif col.num_values > col.statistics.null_count:  # min/max of a column with a value
                assert has_stats, (name, top)


def test_row_groups_cut_at_the_byte_bound(tmp_path: Path) -> None:
    """A small byte bound makes many row groups, each about that size compressed; every row is
    still there, in order."""
    tables = TableSet(tmp_path / "ref", fmt="parquet")
    tables.add_events(dissect([str(p) for p in PATHS], Options()))
    tables.close()
    out = tmp_path / "small"
    out.mkdir()
    feed = _engine.TableFeed(False, 512, 64 << 10, cut_anywhere=True)
    files = _engine.ParquetTables(
        str(out),
        zstd_level=parquet_settings.ZSTD_LEVEL,
        dictionary=list(parquet_settings.DICTIONARY_COLUMNS),
        no_statistics=sorted(parquet_settings.BLOB_COLUMNS),
        row_group_rows=1 << 20,
        row_group_bytes=32 << 10,
        page_bytes=8 << 10,
    )
    for p in PATHS:
        feed.pump_into(open_source(str(p), Options()), files)
    feed.finish_into(files)
    files.close()
    meta = pq.read_metadata(out / "frames.parquet")
    assert meta.num_row_groups > 10
    sizes = [meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)]
    assert max(sizes[:-1]) < 32 * (32 << 10)  # compressed ~32 KiB: far below its raw size
    _assert_same_tables(tmp_path / "ref", out)
    # And the row bound.
    rows = tmp_path / "rows"
    rows.mkdir()
    feed = _engine.TableFeed(False, cut_anywhere=True)
    files = _engine.ParquetTables(
        str(rows),
        zstd_level=1,
        dictionary=[],
        no_statistics=[],
        row_group_rows=100,
        row_group_bytes=1 << 30,
        page_bytes=1 << 20,
    )
    feed.pump_into(open_source(str(SAMPLES / "kafka-basic.pcap"), Options()), files)
    feed.finish_into(files)
    files.close()
    meta = pq.read_metadata(rows / "frames.parquet")
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert groups[:-1] == [100] * (len(groups) - 1) and 0 < groups[-1] <= 100
    assert sum(groups) == dict(feed.counts())["frames"]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_one_line_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`frames.parquet` on a full device: `wiredump export` says which file and why, exit 2,
    no traceback (by the short way and through typer)."""
    for args in (["export"], ["export", "--format", "parquet"]):
        out = tmp_path / f"out{len(args)}"
        out.mkdir()
        os.symlink("/dev/full", out / "frames.parquet")
        r = run_cli(capsys, *args, str(SAMPLES / "kafka-basic.pcap"), "-o", str(out))
        assert r.code == 2, r.err
        assert r.err == f"wiredump: {out / 'frames.parquet'}: No space left on device\n"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_write_failing_midway_is_raised_then_raised_again(tmp_path: Path) -> None:
    """A row group written while the capture is read fails (small row groups, `frames.parquet`
    on a full device): `pump_into` raises OSError(ENOSPC, …, the file); closing the files
    afterwards, as the export does, raises the same error, not another."""
    import errno

    os.symlink("/dev/full", tmp_path / "frames.parquet")
    feed = _engine.TableFeed(False, 64, 16 << 10, cut_anywhere=True)
    files = _engine.ParquetTables(
        str(tmp_path),
        zstd_level=1,
        dictionary=[],
        no_statistics=[],
        row_group_rows=1 << 20,
        row_group_bytes=4 << 10,
        page_bytes=4 << 10,
    )
    with pytest.raises(OSError) as first:
        for p in PATHS:
            feed.pump_into(open_source(str(p), Options()), files)
    assert (first.value.errno, first.value.filename) == (errno.ENOSPC, str(tmp_path / "frames.parquet"))
    with pytest.raises(OSError) as again:
        feed.finish_into(files)
        files.close()
    assert (again.value.errno, again.value.strerror, again.value.filename) == (
        errno.ENOSPC,
        first.value.strerror,
        first.value.filename,
    )


def test_the_pyarrow_writer_stays_selectable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`WIREDUMP_PARQUET_WRITER=pyarrow`: the export writes pyarrow's files (one row group per
    batch, byte for byte those of `TableSet`'s native path); by default the engine's."""
    sample = str(SAMPLES / "kafka-basic.pcap")
    monkeypatch.setenv(parquet_settings.WRITER_ENV, "pyarrow")
    assert run_cli(capsys, "export", sample, "-o", str(tmp_path / "pa")).code == 0
    tables = TableSet(tmp_path / "ref", fmt="parquet")
    tables.add_native(open_source(sample, Options()))
    tables.close()
    for name in TABLES:
        assert (tmp_path / "pa" / f"{name}.parquet").read_bytes() == (
            tmp_path / "ref" / f"{name}.parquet"
        ).read_bytes()
    monkeypatch.delenv(parquet_settings.WRITER_ENV)
    assert run_cli(capsys, "export", sample, "-o", str(tmp_path / "engine")).code == 0
    assert pq.read_metadata(tmp_path / "engine" / "frames.parquet").created_by.startswith("wiredump ")
    _assert_same_tables(tmp_path / "pa", tmp_path / "engine")
