"""The Spark pipeline in local mode: the tables equal the local export row for row, and the
reports' numbers equal numbers computed independently from the local tables with pandas.

One SparkSession for the module (starting Spark is the slow part); marked `spark`
(`pytest -m "not spark"` skips them). Skipped when PySpark or Java is missing.
"""

from __future__ import annotations

import datetime as dt
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

from wiredump.dissect.pipeline import dissect
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
    """The same captures exported locally and on Spark."""
    base = tmp_path_factory.mktemp("spark")
    empty = base / "empty.pcap"
    empty.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    paths = [str(captures / p) for p in PICKS.values()] + [str(empty)]
    # One more capture given as a URI: read through Spark's binaryFile source, not by path.
    by_uri = captures / "tank" / "t02-bundles.pcap"
    local = base / "local"
    tables = TableSet(local, values=True)
    tables.add_events(dissect([*paths, str(by_uri)]))
    local_counts = tables.close()

    # Through the command line, in this process: the command finds the module's session.
    from typer.testing import CliRunner

    from wiredump.cli.app import _load_commands, app

    _load_commands()
    res = CliRunner().invoke(
        app, ["spark", "export", *paths, by_uri.as_uri(), "-o", str(base / "spark"), "--values"]
    )
    assert res.exit_code == 0, res.output
    counts = dict(item.split(": ") for item in res.stderr.strip().splitlines()[-1].split(", "))
    return {
        "paths": [*paths, str(by_uri)],
        "local": local,
        "spark": base / "spark",
        "counts": {k: int(v) for k, v in counts.items()},
        "local_counts": local_counts,
    }


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
    local, spark_dir = exports["local"], exports["spark"]
    by_uri = exports["paths"][-1]  # type: ignore[index]
    assert exports["counts"] == exports["local_counts"]
    protocols_seen = set()
    for name in TABLES:
        lt = pq.read_table(local / f"{name}.parquet")  # type: ignore[operator]
        st = pq.read_table(spark_dir / name, partitioning="hive")  # type: ignore[operator]
        # The binaryFile source names files by URI (file:/…): map back to the path.
        names = [c.removeprefix("file:") for c in st["capture"].to_pylist()]
        st = st.set_column(st.schema.get_field_index("capture"), "capture", pa.array(names, pa.string()))
        if st.num_rows:
            assert str(by_uri) in set(names) or name == "anomalies"
        # capture_date is the UTC date of each capture's first packet.
        first_ts = {}
        for p in exports["paths"]:  # type: ignore[union-attr]
            data = Path(p).read_bytes()
            if len(data) > 24:
                sec = struct.unpack_from("<I", data, 24)[0]
                first_ts[p] = dt.datetime.fromtimestamp(sec, tz=dt.timezone.utc).date()
        if st.num_rows:
            dates = {
                (c, str(d))
                for c, d in zip(st["capture"].to_pylist(), st["capture_date"].to_pylist(), strict=True)
            }
            assert dates == {(c, str(first_ts[c])) for c, _ in dates}
        st = st.drop_columns(["capture_date"])
        st = st.select(SCHEMAS[name].names)
        st = st.set_column(
            st.schema.get_field_index("protocol"), "protocol", st["protocol"].cast(pa.string())
        )
        assert st.num_rows == lt.num_rows > 0 or name == "anomalies"
        assert _sorted_rows(_normal(st)) == _sorted_rows(_normal(lt)), name
        protocols_seen |= set(lt["protocol"].to_pylist())
    assert {"kafka", "pulsar", "pravega", "tank"} <= protocols_seen


def _inverted_cdf(values: pd.Series, q: float) -> int:
    """The smallest value with at least q of the values at or below it (what percentile_approx
    returns when its accuracy exceeds the number of values)."""
    return int(np.percentile(values.to_numpy(), q * 100, method="inverted_cdf"))


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
            assert r["p50_us"] == _inverted_cdf(answered, 0.5)
            assert r["p90_us"] == _inverted_cdf(answered, 0.9)
            assert r["p99_us"] == _inverted_cdf(answered, 0.99)
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
