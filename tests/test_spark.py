"""The Spark pipeline in local mode: the tables equal the local export row for row, and the
reports' numbers equal numbers computed independently from the local tables with pandas.

One SparkSession for the module (starting Spark is the slow part); marked `spark`
(`pytest -m "not spark"` skips them). Skipped when PySpark or Java is missing.
"""

from __future__ import annotations

import datetime as dt
import gzip
import math
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from wiredump.dissect.capture import open_capture
from wiredump.dissect.pipeline import Options, dissect
from wiredump.dissect.tables import SCHEMAS, TABLES, TableSet

pytestmark = pytest.mark.spark

# One real capture of each protocol (and one empty capture), small enough to keep Spark quick.
PICKS = {
    "kafka": "kafka/kafka-python-basic.pcap",
    "pulsar": "pulsar/s04-consumer.pcap",
    "pravega": "pravega/p06-seal-and-errors.pcap",
    "tank": "tank/t07-errors.pcap",
}


@pytest.fixture(scope="module")
def spark():  # noqa: ANN201
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not _java_home():
        pytest.skip("Java is not installed (scripts/test installs openjdk-17-jre-headless)")
    from wiredump.spark.session import get_session

    session = get_session("local[2]")
    yield session
    session.stop()


def _java_home() -> bool:
    import os

    return bool(os.environ.get("JAVA_HOME"))


@pytest.fixture(scope="module")
def exports(captures: Path, tmp_path_factory: pytest.TempPathFactory, spark) -> dict[str, object]:  # noqa: ANN001
    """The same captures exported locally and on Spark (their connections shared by two
    dissecting tasks)."""
    base = tmp_path_factory.mktemp("spark")
    empty = base / "empty.pcap"
    empty.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    paths = [str(captures / p) for p in PICKS.values()] + [str(empty)]
    # One more capture given as a URI: read through pyarrow's file system, named as typed.
    by_uri = captures / "tank" / "t02-bundles.pcap"
    local = base / "local"
    local_counts = _local_export([*paths, str(by_uri)], local)  # the whole captures, locally
    res = _cli(
        ["spark", "export", *paths, by_uri.as_uri(), "-o", str(base / "spark"), "--values", "--shards", "2"]
    )
    assert res.exit_code == 0, res.output
    return {
        "paths": [*paths, str(by_uri)],
        "uri": by_uri.as_uri(),
        "local": local,
        "spark": base / "spark",
        "counts": _counts(res.stderr),
        "local_counts": local_counts,
        "stderr": res.stderr,
    }


def _local_export(paths: list[str], out: Path, values: bool = True) -> dict[str, int]:
    """The local export of `paths` into `out` (the reference every Spark table is compared with:
    the rest of the suite checks it against the decodes beside the captures); its row counts."""
    tables = TableSet(out, values=values)
    tables.add_events(dissect(paths, Options()))
    return tables.close()


def _gzip_copy_and_local_export(path: Path, tmp_path: Path) -> tuple[Path, Path]:
    """`path` gzip-compressed beside it in `tmp_path` (a capture Spark must read whole), and the
    local export of `path` (the reference both are compared with)."""
    gz = tmp_path / f"{path.name}.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    local = tmp_path / "local"
    _local_export([str(path)], local)
    return gz, local


def _cli(args: list[str]):  # noqa: ANN202 - click's Result
    """The command line in this process: the command finds the module's session."""
    from typer.testing import CliRunner

    from wiredump.cli.app import _load_commands, app

    _load_commands()
    return CliRunner().invoke(app, args)


def _counts(stderr: str) -> dict[str, int]:
    return {k: int(v) for k, v in (item.split(": ") for item in stderr.strip().splitlines()[-1].split(", "))}


def _sorted_rows(df: pd.DataFrame) -> list[tuple]:
    def key(v: object) -> object:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return (0, "")
        return (1, repr(v))

    rows = [tuple(r) for r in df.itertuples(index=False, name=None)]
    return sorted(rows, key=lambda r: tuple(key(v) for v in r))


def _normal(table: pa.Table) -> pd.DataFrame:
    """Python values, timestamps as µs integers, maps as sorted tuples: comparable across writers."""
    cols = {}
    for f in table.schema:
        col = table[f.name]
        if pa.types.is_timestamp(f.type):
            col = col.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
        values = col.to_pylist()
        if pa.types.is_map(f.type):
            values = [tuple(v) if v is not None else None for v in values]
        cols[f.name] = pd.Series(values, dtype=object)
    return pd.DataFrame(cols)


def test_spark_tables_equal_the_local_tables_row_for_row(exports: dict[str, object]) -> None:
    """Expected values: the local export, which the rest of the suite checks against the
    independent decodes beside the captures."""
    local, spark_dir = exports["local"], exports["spark"]
    uri = exports["uri"]
    by_uri = exports["paths"][-1]  # type: ignore[index]
    assert exports["counts"] == exports["local_counts"]
    protocols_seen = set()
    for name in TABLES:
        lt = pq.read_table(local / f"{name}.parquet")  # type: ignore[operator]
        st = pq.read_table(spark_dir / name)  # type: ignore[operator]
        # Every local column with the same type and unit, then capture_date.
        assert st.schema.names == [*SCHEMAS[name].names, "capture_date"]
        assert st.select(SCHEMAS[name].names).schema == lt.schema
        names = st["capture"].to_pylist()
        if st.num_rows:
            assert uri in set(names) or name == "anomalies"  # named as typed, not file:/…
        # capture_date is the UTC date of each capture's first packet.
        first_ts = {}
        for p in exports["paths"]:  # type: ignore[union-attr]
            data = Path(p).read_bytes()
            if len(data) > 24:
                sec = struct.unpack_from("<I", data, 24)[0]
                first_ts[p] = dt.datetime.fromtimestamp(sec, tz=dt.timezone.utc).date()
        first_ts[uri] = first_ts[by_uri]
        if st.num_rows:
            dates = set(zip(names, st["capture_date"].to_pylist(), strict=True))
            assert dates == {(c, first_ts[c]) for c, _ in dates}
        st = st.set_column(0, "capture", pa.array([by_uri if c == uri else c for c in names], pa.string()))
        st = st.select(SCHEMAS[name].names)
        assert st.num_rows == lt.num_rows > 0 or name == "anomalies"
        assert _sorted_rows(_normal(st)) == _sorted_rows(_normal(lt)), name
        protocols_seen |= set(lt["protocol"].to_pylist())
    assert {"kafka", "pulsar", "pravega", "tank"} <= protocols_seen
    caps = pq.read_table(spark_dir / "captures").to_pylist()  # type: ignore[operator]
    assert [c["capture"] for c in caps] == [*exports["paths"][:-1], uri]  # type: ignore[index]
    assert {c["status"] for c in caps} == {"ok"}
    assert {c["ranges"] for c in caps} == {2}
    assert sorted(p.name for p in (spark_dir / "frames").iterdir()) == [  # type: ignore[operator]
        f"part-00000-{i:05d}.parquet"
        for i in range(len(list((spark_dir / "frames").iterdir())))  # type: ignore[operator]
    ]


def _assert_same_as_local(res, out: Path, exports: dict[str, object]) -> list[dict]:  # noqa: ANN001
    """`spark export` of the `exports` captures into `out` succeeded with the local export's counts
    and rows, every protocol present, the captures named as given; the `captures` rows."""
    paths = exports["paths"]
    assert res.exit_code == 0, res.output
    assert _counts(res.stderr) == exports["local_counts"]
    seen = _assert_tables_equal(out, exports["local"], {exports["uri"]: paths[-1]})  # type: ignore[arg-type,dict-item,index]
    assert {"kafka", "pulsar", "pravega", "tank"} <= seen
    caps = pq.read_table(out / "captures").to_pylist()
    assert [c["capture"] for c in caps] == [*paths[:-1], exports["uri"]]  # type: ignore[index,misc]
    return caps


def _assert_tables_equal(spark_dir: Path, local: Path, rename: dict[str, str]) -> set[str]:
    """Every table of a Spark export equals the local one row for row (`rename`: Spark's capture
    names that the local export spells otherwise); returns the protocols seen."""
    seen: set[str] = set()
    for name in TABLES:
        lt = pq.read_table(local / f"{name}.parquet")
        st = pq.read_table(spark_dir / name)
        assert st.select(SCHEMAS[name].names).schema == lt.schema
        names = [rename.get(c, c) for c in st["capture"].to_pylist()]
        st = st.set_column(0, "capture", pa.array(names, pa.string())).select(SCHEMAS[name].names)
        assert st.num_rows == lt.num_rows > 0 or name == "anomalies", name
        assert _sorted_rows(_normal(st)) == _sorted_rows(_normal(lt)), name
        seen |= set(lt["protocol"].to_pylist())
    return seen


def test_shards_equal_the_local_export_row_for_row(exports: dict[str, object], tmp_path: Path) -> None:
    """Each task opens the capture itself and decodes its share of the connections; the rows are
    those of the local export of the whole captures, one of each protocol, an empty one, one
    given as a URI; with 3 shares, so that shares of one capture land on the same task and on
    different ones, and stream numbers, detection and Kafka's topic names must still be the whole
    capture's."""
    out = tmp_path / "spark"
    paths = exports["paths"]
    res = _cli(["spark", "export", *paths[:-1], exports["uri"], "-o", str(out), "--values", "--shards", "3"])  # type: ignore[index,misc]
    caps = _assert_same_as_local(res, out, exports)
    assert {c["status"] for c in caps} == {"ok"} and {c["ranges"] for c in caps} == {3}


@pytest.mark.parametrize("shards", ["1", "3"])
def test_ranges_route_equals_the_local_export_row_for_row(
    shards: str, exports: dict[str, object], tmp_path: Path
) -> None:
    """`--route ranges`: the captures cut into 4 KiB ranges (most read by several tasks: packet
    numbers from the counting pass), the records shuffled to the tasks that dissect them with the
    native engine; with 1 dissecting task per capture and with 3 (each receiving every record,
    decoding its share of the connections). The rows are the local export's of the whole
    captures, one of each protocol, an empty one, one given as a URI."""
    out = tmp_path / "spark"
    paths = exports["paths"]
    args = [*paths[:-1], exports["uri"], "-o", str(out), "--values", "--route", "ranges"]  # type: ignore[index,misc]
    res = _cli(["spark", "export", *args, "--split-size", "4k", "--shards", shards])
    caps = _assert_same_as_local(res, out, exports)
    assert {c["status"] for c in caps} == {"ok"}
    # At most one range per 4 KiB after the file header (fewer where a range holds no boundary
    # or a guess is merged away); the 24-byte empty capture is one range.
    file_of = dict(zip([*paths[:-1], exports["uri"]], paths, strict=True))  # type: ignore[index,misc,arg-type]
    for c in caps:
        size = Path(file_of[c["capture"]]).stat().st_size
        assert 1 <= c["ranges"] <= max(1, math.ceil((size - 24) / 4096)), c
    for c in caps:  # packet numbers are the whole file's: the last one is the local reader's count
        assert c["packets"] == sum(1 for _ in open_capture(file_of[c["capture"]])), c
    kafka = next(c for c in caps if c["capture"].endswith(PICKS["kafka"]))
    assert kafka["ranges"] >= 8 and kafka["packets"] > 0
    assert sorted(p.name for p in (out / "frames").iterdir()) == [
        f"part-00000-{i:05d}.parquet" for i in range(len(list((out / "frames").iterdir())))
    ]


def test_ranges_route_reads_a_compressed_capture_whole(captures: Path, tmp_path: Path, spark) -> None:  # noqa: ANN001
    """A gzip-compressed capture cannot be cut: it is one range, beside the same capture
    uncompressed cut into many; both give the local export's rows."""
    path = captures / PICKS["kafka"]
    gz, local = _gzip_copy_and_local_export(path, tmp_path)
    for given in (path, gz):
        out = tmp_path / f"spark-{given.suffix}"
        res = _cli(
            [
                "spark",
                "export",
                str(given),
                "-o",
                str(out),
                "--values",
                "--route",
                "ranges",
                "--split-size",
                "8k",
            ]
        )
        assert res.exit_code == 0, res.output
        assert "kafka" in _assert_tables_equal(out, local, {str(gz): str(path)})
        (cap,) = pq.read_table(out / "captures").to_pylist()
        assert cap["status"] == "ok"
        assert cap["ranges"] == 1 if given == gz else cap["ranges"] >= 8


@pytest.mark.parametrize("pick", sorted(PICKS))
def test_default_shares_one_large_capture_between_the_cores(
    pick: str,
    captures: Path,
    tmp_path: Path,
    spark,  # noqa: ANN001
) -> None:
    """Default settings (no --shards): one capture larger than --split-size, alone in the job,
    is shared by both cores of `local[2]`; the rows are the local export's. The capture is
    also given gzip-compressed (read whole by each share), whose rows must be the same."""
    from wiredump.spark.export import cores

    assert cores(spark.sparkContext) == 2
    path = captures / PICKS[pick]
    gz, local = _gzip_copy_and_local_export(path, tmp_path)
    for given in (path, gz):
        out = tmp_path / f"spark-{given.suffix}"
        res = _cli(["spark", "export", str(given), "-o", str(out), "--values", "--split-size", "1k"])
        assert res.exit_code == 0, res.output
        assert pick in _assert_tables_equal(out, local, {str(gz): str(path)})
        (cap,) = pq.read_table(out / "captures").to_pylist()
        assert (cap["status"], cap["ranges"]) == ("ok", 2)


def test_a_share_that_looks_up_a_topic_id_is_dissected_again_observing(
    captures: Path,
    tmp_path: Path,
    spark,  # noqa: ANN001
) -> None:
    """Shares are first dissected without observing each other (`export._dissect`). The capture
    of test_shares_topics whose consumer (stream 6, share 0) fetches by a topic id whose name
    only stream 5 (share 1) teaches: share 0 looks the id up, so its task starts again observing;
    its rows, and those of the capture sharing its task (no topic ids), are the local export's,
    the Fetch's records named by the topic, not by its id."""
    from tests.test_shares_topics import OTHER_ANSWERS, TOPIC, blanked

    path, real = blanked(tmp_path, OTHER_ANSWERS, "taught-by-stream-5.pcap")
    other = captures / PICKS["kafka"]
    local = tmp_path / "local"
    _local_export([str(path), str(other)], local)
    out = tmp_path / "spark"
    res = _cli(["spark", "export", str(path), str(other), "-o", str(out), "--values", "--shards", "2"])
    assert res.exit_code == 0, res.output
    assert "kafka" in _assert_tables_equal(out, local, {})
    topics = {m["topic"] for m in pq.read_table(out / "messages").to_pylist() if m["capture"] == str(path)}
    assert TOPIC in topics and real not in topics
    assert {c["ranges"] for c in pq.read_table(out / "captures").to_pylist()} == {2}


def test_plan_shards_shares_a_capture_only_with_idle_cores() -> None:
    """Hand-computed: the share of the job's bytes times the cores, rounded, at most one share
    per split size, at least one; --shards N as given."""
    from wiredump.spark.export import plan_shards

    mb = 1 << 20
    assert plan_shards([1024 * mb], 2, 128 * mb) == [2]
    assert plan_shards([1024 * mb], 16, 128 * mb) == [8]  # one share per 128 MB at most
    assert plan_shards([100 * mb], 2, 128 * mb) == [1]  # smaller than one split
    assert plan_shards([1024 * mb, 1024 * mb], 2, 128 * mb) == [1, 1]  # the cores are busy anyway
    assert plan_shards([3000 * mb, 1000 * mb], 8, 128 * mb) == [6, 2]
    assert plan_shards([1024 * mb, *[mb] * 50], 2, 128 * mb) == [2, *[1] * 50]
    assert plan_shards([0], 2, 128 * mb) == [1]
    assert plan_shards([mb, 1024 * mb], 2, 128 * mb, shards=3) == [3, 3]


def _linear(values: pd.Series, q: float) -> float:
    """Linear interpolation between the nearest ranks (numpy's default), computed here
    independently of Spark and DuckDB."""
    return float(np.percentile(values.to_numpy(), q * 100, method="linear"))


def test_report_numbers_equal_pandas_on_the_local_tables(
    exports: dict[str, object], spark, tmp_path: Path
) -> None:  # noqa: ANN001
    from wiredump.spark.report import run_reports, write_reports

    local = exports["local"]
    frames = pq.read_table(local / "frames.parquet").to_pandas()  # type: ignore[operator]
    exchanges = pq.read_table(local / "exchanges.parquet").to_pandas()  # type: ignore[operator]
    messages = pq.read_table(local / "messages.parquet").to_pandas()  # type: ignore[operator]
    anomalies = pq.read_table(local / "anomalies.parquet").to_pandas()  # type: ignore[operator]

    # Reports over the Spark-written layout; the local layout gives the same numbers (a few
    # reports, to keep the Spark jobs few).
    results = run_reports(spark, str(exports["spark"]), top=5)
    again = run_reports(spark, str(local), top=5, names=("latency", "errors", "topics_by_bytes"))
    for name, table in again.items():
        assert table.to_pylist() == results[name].to_pylist(), name

    # latency
    lat = {(r["protocol"], r["type"]): r for r in results["latency"].to_pylist()}
    assert len(lat) == exchanges.groupby(["protocol", "type"]).ngroups
    for (proto, typ), grp in exchanges.groupby(["protocol", "type"]):
        r = lat[(proto, typ)]
        answered = grp["latency_us"].dropna()
        assert r["exchanges"] == len(grp) and r["answered"] == len(answered)
        if len(answered):
            assert r["p50_us"] == pytest.approx(_linear(answered, 0.5))
            assert r["p90_us"] == pytest.approx(_linear(answered, 0.9))
            assert r["p99_us"] == pytest.approx(_linear(answered, 0.99))
            assert r["max_us"] == answered.max()
        else:
            assert r["p50_us"] is None

    # errors
    responses = frames[frames["kind"] == "response"]
    errs = responses[responses["error"].notna()]
    want = {
        (p, e): (len(g), len(g) / (responses["protocol"] == p).sum())
        for (p, e), g in errs.groupby(["protocol", "error"])
    }
    got = {(r["protocol"], r["error"]): (r["errors"], r["rate"]) for r in results["errors"].to_pylist()}
    assert got.keys() == want.keys() and len(want) >= 4  # pravega and tank captures hold errors
    for k, (n, rate) in want.items():
        assert got[k][0] == n and got[k][1] == pytest.approx(rate)

    # error rate by topic, over the partitions table (issue 18 item 7)
    parts = pq.read_table(local / "partitions.parquet").to_pandas()  # type: ignore[operator]
    presp = parts[parts["kind"] == "response"]
    want_t = {
        (p, t): (len(g), int(g["error"].notna().sum()), ",".join(sorted(set(g["error"].dropna()))))
        for (p, t), g in presp.groupby(["protocol", "topic"], dropna=False)
    }
    got_t = {
        (r["protocol"], r["topic"]): (r["results"], r["errors"], r["error_names"])
        for r in results["topic_errors"].to_pylist()
    }
    assert got_t == want_t and any(e for _, e, _ in want_t.values())

    # throughput per second
    f = frames.assign(second=frames["ts"].dt.floor("s"))
    per_sec = f.groupby(["protocol", "second"]).agg(frames=("packet", "size"), bytes=("length", "sum"))
    pts = frames[["capture", "packet", "ts"]].drop_duplicates()
    m = messages.merge(pts, on=["capture", "packet"])
    m_sec = m.assign(second=m["ts"].dt.floor("s")).groupby(["protocol", "second"]).size()
    tp = results["throughput"].to_pandas()
    assert len(tp) == len(per_sec)
    for r in tp.itertuples():
        key = (
            r.protocol,
            pd.Timestamp(r.second).tz_convert("UTC")
            if pd.Timestamp(r.second).tzinfo
            else pd.Timestamp(r.second, tz="UTC"),
        )
        assert (r.frames, r.bytes) == tuple(per_sec.loc[key])
        assert r.messages == m_sec.get(key, 0)
    assert tp["messages"].sum() == len(messages)

    # top topics
    topics = (
        messages[messages["topic"].notna()]
        .groupby(["protocol", "topic"])
        .agg(messages=("packet", "size"), bytes=("value_size", "sum"))
    )
    top = results["topics_by_messages"].to_pylist()
    assert len(top) == min(5, len(topics))
    assert [r["messages"] for r in top] == sorted(topics["messages"], reverse=True)[: len(top)]
    for r in top:
        assert (r["messages"], r["bytes"]) == tuple(topics.loc[(r["protocol"], r["topic"])])
    by_bytes = results["topics_by_bytes"].to_pylist()
    assert [r["bytes"] for r in by_bytes] == sorted(topics["bytes"], reverse=True)[: len(by_bytes)]

    # unanswered, anomalies, slowest
    un = exchanges[exchanges["status"] == "unanswered"]
    assert sorted(results["unanswered"]["request_packet"].to_pylist()) == sorted(
        un["request_packet"].tolist()
    )
    an = anomalies.groupby(["protocol", "kind"], dropna=False).size()
    assert sum(r["count"] for r in results["anomalies"].to_pylist()) == len(anomalies) == an.sum()
    slow = results["slowest"].to_pylist()
    assert [r["latency_us"] for r in slow] == sorted(exchanges["latency_us"].dropna(), reverse=True)[:5]

    written = write_reports(results, tmp_path / "rep")
    assert (tmp_path / "rep" / "latency.csv").read_text().startswith('"protocol","type","exchanges"')
    assert pq.read_table(tmp_path / "rep" / "slowest.parquet").num_rows == len(slow)
    assert len(written) == 2 * len(results)


def test_cli_spark_report_prints_and_writes(exports: dict[str, object], spark, tmp_path: Path) -> None:  # noqa: ANN001
    from typer.testing import CliRunner

    from wiredump.cli.app import _load_commands, app

    _load_commands()
    res = CliRunner().invoke(
        app, ["spark", "report", str(exports["local"]), "--out", str(tmp_path), "--top", "3"]
    )
    assert res.exit_code == 0, res.output
    assert "Latency per protocol and type" in res.output and "Slowest exchanges" in res.output
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == sorted(
        f"{n}.csv"
        for n in (
            "latency",
            "errors",
            "throughput",
            "topics_by_messages",
            "topics_by_bytes",
            "topic_errors",
            "unanswered",
            "anomalies",
            "slowest",
        )
    )
    bad = subprocess.run(
        [sys.executable, "-m", "wiredump", "spark", "report", str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("wiredump: ") and "Traceback" not in bad.stderr


def test_the_documented_duckdb_query_gives_the_report_percentiles(exports: dict[str, object], spark) -> None:  # noqa: ANN001
    """docs/tables.md's DuckDB latency query (quantile_cont) and `spark report` agree exactly."""
    duckdb = pytest.importorskip("duckdb")
    from wiredump.spark.report import run_reports

    latency = run_reports(spark, str(exports["spark"]), top=5, names=("latency",))["latency"].to_pylist()
    path = exports["local"] / "exchanges.parquet"  # type: ignore[operator]
    rows = duckdb.sql(
        f"SELECT protocol, type, quantile_cont(latency_us, 0.5), quantile_cont(latency_us, 0.99) "
        f"FROM '{path}' WHERE status = 'answered' GROUP BY ALL"
    ).fetchall()
    got = {(r["protocol"], r["type"]): (r["p50_us"], r["p99_us"]) for r in latency if r["answered"]}
    assert len(rows) == len(got) >= 10
    for proto, typ, p50, p99 in rows:
        assert got[(proto, typ)] == pytest.approx((p50, p99), abs=1e-6)


@pytest.mark.parametrize("route", ["shares", "ranges"])
def test_failures_become_rows_a_summary_and_with_strict_exit_2(
    route: str,
    tmp_path: Path,
    captures: Path,
    spark,  # noqa: ANN001
) -> None:
    """With either route (a compressed non-capture is found when a task opens it: the one that
    dissects it with shares, the one that counts its range with ranges)."""
    (tmp_path / "empty.pcap").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("not a capture\n")
    (tmp_path / "junk.pcap.gz").write_bytes(gzip.compress(b"not a capture either"))
    good = captures / "tank" / "t01-basic.pcap"
    inputs = [
        str(good),
        str(tmp_path / "empty.pcap"),
        (tmp_path / "empty.pcap").as_uri(),
        str(tmp_path / "notes.txt"),
        str(tmp_path / "junk.pcap.gz"),
        str(tmp_path / "missing.pcap"),
        (tmp_path / "missing2.pcap").as_uri(),
        str(tmp_path / "nothing-*.pcap"),
    ]
    out = tmp_path / "out"
    strict = subprocess.run(
        [sys.executable, "-m", "wiredump", "spark", "export", *inputs, "-o", str(out), "--strict"],
        capture_output=True,
        text=True,
    )
    assert strict.returncode == 2 and "Traceback" not in strict.stderr and not out.exists()
    assert "7 of 8 inputs cannot be read (--strict)" in strict.stderr

    res = _cli(["spark", "export", *inputs, "-o", str(out), "--route", route])
    assert res.exit_code == 0, res.output
    assert "1 of 8 captures exported (run 0), 7 skipped" in res.stderr
    caps = {c["capture"]: c for c in pq.read_table(out / "captures").to_pylist()}
    assert list(caps) == inputs  # every input, named as given
    want = ["ok", "empty", "empty", "not_a_capture", "not_a_capture", "missing", "missing", "missing"]
    assert [caps[i]["status"] for i in inputs] == want
    for i in inputs[1:]:
        assert caps[i]["reason"].startswith(i) and f"skipped: {caps[i]['reason']}" in res.stderr
    anomalies = pq.read_table(out / "anomalies").to_pylist()
    assert {a["capture"] for a in anomalies if a["kind"] == "unreadable_capture"} == set(inputs[1:])

    # A second export into the same directory needs --mode; append keeps the first run's rows,
    # overwrite replaces what wiredump wrote and nothing else.
    again = subprocess.run(
        [sys.executable, "-m", "wiredump", "spark", "export", str(good), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert again.returncode == 2 and "--mode append" in again.stderr and "Traceback" not in again.stderr
    foreign = out / "frames" / "mine.parquet"
    pq.write_table(pq.read_table(out / "frames" / "part-00000-00000.parquet"), foreign)
    first = pq.read_table(out / "frames" / "part-00000-00000.parquet").num_rows
    assert _cli(["spark", "export", str(good), "-o", str(out), "--mode", "append"]).exit_code == 0
    files = sorted(p.name for p in (out / "frames").iterdir())
    assert files == ["mine.parquet", "part-00000-00000.parquet", "part-00001-00000.parquet"]
    assert pq.read_table(out / "frames").num_rows == 3 * first
    assert _cli(["spark", "export", str(good), "-o", str(out), "--mode", "overwrite"]).exit_code == 0
    assert sorted(p.name for p in (out / "frames").iterdir()) == ["mine.parquet", "part-00002-00000.parquet"]
    assert sorted(p.name for p in (out / "captures").iterdir()) == ["part-00002.parquet"]


def test_every_reader_reads_both_layouts_and_a_mix_of_empty_and_busy(
    exports: dict[str, object], tmp_path: Path
) -> None:
    """The documented one-liners (docs/spark.md, docs/tables.md): pandas, polars, DuckDB, pyarrow."""
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    spark_dir, local = exports["spark"], exports["local"]
    # A mix: the busy export plus a run that wrote only empty files.
    mix = tmp_path / "mix"
    shutil.copytree(spark_dir, mix)  # type: ignore[arg-type]
    for name in TABLES:
        pq.write_table(
            pq.read_table(mix / name).schema.empty_table(), mix / name / "part-00001-empty.parquet"
        )
    readers = {
        "pandas": lambda p: pa.Table.from_pandas(pd.read_parquet(p), preserve_index=False),
        "pyarrow": lambda p: pq.read_table(p),
        "polars": lambda p: pl.read_parquet(p if p.suffix else f"{p}/*.parquet").to_arrow(),
        "duckdb": lambda p: duckdb.sql(
            f"SELECT * FROM read_parquet('{p if p.suffix else f'{p}/*.parquet'}')"
        ).arrow(),
    }
    for name in TABLES:
        n = pq.read_metadata(local / f"{name}.parquet").num_rows  # type: ignore[operator]
        for reader, read in readers.items():
            lt = read(local / f"{name}.parquet")  # type: ignore[operator]
            lt = lt.read_all() if hasattr(lt, "read_all") else lt
            for d in (spark_dir / name, mix / name):  # type: ignore[operator]
                t = read(d)
                t = t.read_all() if hasattr(t, "read_all") else t
                assert t.num_rows == lt.num_rows == n, (reader, name, d)
                assert t.column_names == [*lt.column_names, "capture_date"], (reader, name)
                # The same types and units as this reader gives for the local layout.
                assert t.select(lt.column_names).schema.remove_metadata() == lt.schema.remove_metadata(), (
                    reader,
                    name,
                )


def test_spark_read_format_wiredump_gives_the_local_rows(captures: Path, spark, tmp_path: Path) -> None:  # noqa: ANN001
    """`spark.read.format("wiredump")` (PySpark's Python data source API) equals the local export."""
    from wiredump.spark.source import register

    register(spark)
    path = str(captures / "tank" / "t07-errors.pcap")
    local = tmp_path / "local"
    _local_export([path], local, values=False)
    for name in ("frames", "messages"):
        df = spark.read.format("wiredump").option("table", name).load(path)
        got = pa.Table.from_pylist([r.asDict() for r in df.collect()])
        lt = pq.read_table(local / f"{name}.parquet")
        assert df.columns == [*lt.column_names, "capture_date"]
        assert _sorted_rows(_normal(got.select(lt.column_names).cast(lt.schema))) == _sorted_rows(_normal(lt))
