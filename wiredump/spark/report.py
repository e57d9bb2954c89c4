"""`wiredump spark report`: Spark SQL over the tables of an export directory.

Each report is one SQL query over the tables (registered as temporary views
`frames`, `exchanges`, `messages`, `anomalies`, `connections`, `partitions`), so the same queries
can be pasted into a notebook. Definitions:

- latency: per protocol and type, over `exchanges`: how many, how many answered,
  latency p50/p90/p99 (µs) and max, over answered exchanges. The percentiles are exact and
  interpolate linearly between the two nearest values (Spark's `percentile`, DuckDB's
  `quantile_cont`, numpy's and pandas' default): the same numbers as the DuckDB query in
  docs/tables.md, not the nearest-rank estimate of `percentile_approx`.
- errors: per protocol and error name, over response frames (`frames.kind = 'response'`)
  whose `error` is set; `rate` = those responses / all responses of the protocol.
- throughput: per protocol and second (UTC, from `frames.ts`): frames, bytes (frame
  lengths on the wire) and messages (by the packet that carried them).
- topics: per protocol and topic: messages and value bytes (produced + delivered),
  the top N by messages and the top N by bytes.
- topic_errors: per protocol and topic, over the per-topic/partition results of responses
  (`partitions.kind = 'response'`): results, those with an error, the share, and the error
  names; one row per result, so a Produce response for three partitions counts three.
- unanswered: every request that expected a response and got none.
- anomalies: per protocol and kind: count, captures, first packet.
- slowest: the N exchanges with the highest latency.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from wiredump.dissect.tables import TABLES
from wiredump.spark.tables import read_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True, slots=True)
class Report:
    name: str
    title: str
    sql: str
    top: bool = False
    """The query takes the top-N limit (`{top}`)."""


REPORTS: tuple[Report, ...] = (
    Report(
        "latency",
        "Latency per protocol and type (µs)",
        """
        SELECT protocol, type,
               count(*) AS exchanges,
               count(latency_us) AS answered,
               percentile(latency_us, 0.5) AS p50_us,
               percentile(latency_us, 0.9) AS p90_us,
               percentile(latency_us, 0.99) AS p99_us,
               max(latency_us) AS max_us
        FROM exchanges
        GROUP BY protocol, type
        ORDER BY protocol, type
        """,
    ),
    Report(
        "errors",
        "Errors by name (share of the protocol's responses)",
        """
        WITH responses AS (
            SELECT protocol, count(*) AS responses FROM frames WHERE kind = 'response' GROUP BY protocol
        )
        SELECT f.protocol, f.error,
               count(*) AS errors,
               r.responses,
               count(*) / r.responses AS rate,
               array_join(array_sort(collect_set(f.type)), ',') AS types,
               array_join(array_sort(collect_set(CAST(f.error_code AS STRING))), ',') AS codes
        FROM frames f JOIN responses r ON f.protocol = r.protocol
        WHERE f.kind = 'response' AND f.error IS NOT NULL
        GROUP BY f.protocol, f.error, r.responses
        ORDER BY errors DESC, f.protocol, f.error
        """,
    ),
    Report(
        "throughput",
        "Throughput per second",
        """
        WITH per_frame AS (
            SELECT protocol, date_trunc('second', ts) AS second, count(*) AS frames, sum(length) AS bytes
            FROM frames GROUP BY protocol, date_trunc('second', ts)
        ),
        packet_ts AS (SELECT DISTINCT capture, packet, ts FROM frames),
        per_message AS (
            SELECT m.protocol, date_trunc('second', p.ts) AS second, count(*) AS messages
            FROM messages m JOIN packet_ts p ON m.capture = p.capture AND m.packet = p.packet
            GROUP BY m.protocol, date_trunc('second', p.ts)
        )
        SELECT f.protocol, f.second, f.frames, f.bytes, coalesce(m.messages, 0) AS messages
        FROM per_frame f LEFT JOIN per_message m ON f.protocol = m.protocol AND f.second = m.second
        ORDER BY f.second, f.protocol
        """,
    ),
    Report(
        "topics_by_messages",
        "Top topics by messages",
        """
        SELECT protocol, topic, count(*) AS messages, sum(value_size) AS bytes,
               count_if(direction = 'produce') AS produced, count_if(direction = 'deliver') AS delivered
        FROM messages WHERE topic IS NOT NULL
        GROUP BY protocol, topic
        ORDER BY messages DESC, bytes DESC, protocol, topic
        LIMIT {top}
        """,
        top=True,
    ),
    Report(
        "topics_by_bytes",
        "Top topics by bytes",
        """
        SELECT protocol, topic, sum(value_size) AS bytes, count(*) AS messages,
               count_if(direction = 'produce') AS produced, count_if(direction = 'deliver') AS delivered
        FROM messages WHERE topic IS NOT NULL
        GROUP BY protocol, topic
        ORDER BY bytes DESC, messages DESC, protocol, topic
        LIMIT {top}
        """,
        top=True,
    ),
    Report(
        "topic_errors",
        "Error rate by topic (per-partition results of responses)",
        """
        SELECT protocol, topic,
               count(*) AS results,
               count_if(error IS NOT NULL) AS errors,
               count_if(error IS NOT NULL) / count(*) AS rate,
               array_join(array_sort(collect_set(error)), ',') AS error_names
        FROM partitions
        WHERE kind = 'response'
        GROUP BY protocol, topic
        ORDER BY errors DESC, rate DESC, protocol, topic
        """,
    ),
    Report(
        "unanswered",
        "Unanswered requests",
        """
        SELECT capture, stream, protocol, type, correlation_id, request_packet, request_ts
        FROM exchanges WHERE status = 'unanswered'
        ORDER BY capture, request_packet, stream
        """,
    ),
    Report(
        "anomalies",
        "Anomalies by kind",
        """
        SELECT protocol, kind, count(*) AS count, count(DISTINCT capture) AS captures,
               min(packet) AS first_packet
        FROM anomalies
        GROUP BY protocol, kind
        ORDER BY count DESC, protocol, kind
        """,
    ),
    Report(
        "slowest",
        "Slowest exchanges",
        """
        SELECT capture, stream, protocol, type, correlation_id, request_packet, response_packet, latency_us
        FROM exchanges WHERE latency_us IS NOT NULL
        ORDER BY latency_us DESC, capture, request_packet
        LIMIT {top}
        """,
        top=True,
    ),
)
REPORT_NAMES = tuple(r.name for r in REPORTS)


def register_views(spark: SparkSession, root: str) -> None:
    """The tables of `root` as temporary views named after them."""
    for name in TABLES:
        read_table(spark, root, name).createOrReplaceTempView(name)


def report_frame(spark: SparkSession, report: Report, top: int = 20) -> DataFrame:
    return spark.sql(report.sql.format(top=int(top)) if report.top else report.sql)


def run_reports(
    spark: SparkSession, root: str, top: int = 20, names: Sequence[str] = REPORT_NAMES
) -> dict[str, pa.Table]:
    """Every report as an Arrow table (reports are small: they are collected to the driver)."""
    register_views(spark, root)
    out: dict[str, pa.Table] = {}
    for report in REPORTS:
        if report.name in names:
            out[report.name] = report_frame(spark, report, top).toArrow()
    return out


def write_reports(results: dict[str, pa.Table], out_dir: Path) -> list[Path]:
    """Each report as `<name>.parquet` and `<name>.csv` (timestamps in UTC ISO-8601)."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    from wiredump.dissect.tables import PARQUET_OPTIONS

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, table in results.items():
        table = _utc(table)
        pq.write_table(table, out_dir / f"{name}.parquet", **PARQUET_OPTIONS)
        pcsv.write_csv(table, out_dir / f"{name}.csv")
        written += [out_dir / f"{name}.parquet", out_dir / f"{name}.csv"]
    return written


def _utc(table: pa.Table) -> pa.Table:
    """Timestamps labelled UTC (Spark returns them in the session time zone, which wiredump sets to UTC)."""
    fields = []
    for f in table.schema:
        if pa.types.is_timestamp(f.type):
            fields.append(pa.field(f.name, pa.timestamp("us", tz="UTC")))
        else:
            fields.append(f)
    return table.cast(pa.schema(fields))


def print_reports(results: dict[str, pa.Table], top: int = 20, console: object | None = None) -> None:
    """Each report as a rich table (at most `top` rows each; the files hold every row)."""
    from rich.console import Console
    from rich.table import Table

    con = console if console is not None else Console()
    titles = {r.name: r.title for r in REPORTS}
    for name, table in results.items():
        shown = table.slice(0, top)
        extra = table.num_rows - shown.num_rows
        caption = f"{extra} more rows in the written files" if extra > 0 else None
        t = Table(title=f"{titles.get(name, name)} [{name}]", caption=caption, title_justify="left")
        numeric = []
        for f in table.schema:
            is_num = pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
            numeric.append(is_num)
            t.add_column(f.name, justify="right" if is_num else "left", overflow="fold")
        for row in shown.to_pylist():
            t.add_row(*(_cell(v) for v in row.values()))
        if table.num_rows == 0:
            t.add_row(*(["-"] + [""] * (len(table.schema) - 1)))
        con.print(t)  # type: ignore[attr-defined]


def _cell(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4f}"
    if hasattr(v, "isoformat"):
        return v.isoformat().replace("+00:00", "Z")  # type: ignore[union-attr]
    return str(v)
