"""`wiredump spark export|report`: the tables built on Spark, and reports computed on Spark.

Local mode (`local[*]`) by default; `--master URL` or `--conf KEY=VALUE` for a
cluster (see docs/spark.md). PySpark is imported only when a command runs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from wiredump.cli.app import DecodeAs, UsageError, app, parse_decode_as

spark_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="The tables built on Spark (local by default, --master URL for a cluster) and reports on them.",
)
app.add_typer(spark_app, name="spark")

Master = Annotated[
    str | None,
    typer.Option(
        "--master",
        help="Spark master URL, e.g. spark://host:7077 or yarn (default local[*]; "
        "spark-submit's own master when run under spark-submit).",
    ),
]
Conf = Annotated[
    list[str] | None,
    typer.Option(
        "--conf", help="A Spark setting KEY=VALUE (repeatable), e.g. --conf spark.executor.memory=4g."
    ),
]


def _conf(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--conf takes KEY=VALUE, not {item!r}")
        out[key.strip()] = value
    return out


def _session(master: str | None, conf: list[str] | None):  # noqa: ANN202 - SparkSession, imported lazily
    from wiredump.spark.session import SparkUnavailable, get_session

    try:
        return get_session(master, _conf(conf))
    except SparkUnavailable as e:
        raise UsageError(str(e)) from e


def _check_captures(captures: list[str]) -> None:
    """Fail early (exit 2) on a local path that is missing or not a capture."""
    from wiredump.dissect.capture import open_capture

    for c in captures:
        if c == "-":
            raise UsageError("spark export reads capture files, not stdin")
        if "://" in c:
            continue  # read by the executors through Spark
        open_capture(c).close()


@spark_app.command(
    "export",
    help="Write the five tables with Spark, partitioned by capture_date and protocol: "
    "DIR/<table>/capture_date=…/protocol=…/part-….parquet.\n\n"
    "Example: wiredump spark export captures/*.pcap -o tables/",
)
def spark_export(
    captures: Annotated[
        list[str],
        typer.Argument(
            help="Capture files readable by the executors (local paths, or hdfs://, s3a://… URIs)."
        ),
    ],
    out: Annotated[str, typer.Option("-o", "--out", help="Output directory (or URI), e.g. -o tables/.")],
    master: Master = None,
    conf: Conf = None,
    values: Annotated[
        bool, typer.Option("--values", help="Include message values in the messages table.")
    ] = False,
    decode_as: DecodeAs = None,
) -> None:
    from wiredump.cli.app import make_options
    from wiredump.spark.export import JobOptions, run_export

    make_options(decode_as)  # validates the protocol names
    _check_captures(captures)
    spark = _session(master, conf)
    counts = run_export(spark, captures, out, JobOptions(values=values, decode_as=parse_decode_as(decode_as)))
    typer.echo(", ".join(f"{n}: {c}" for n, c in counts.items()), err=True)


@spark_app.command(
    "report",
    help="Latency percentiles, error rates, throughput, top topics, unanswered requests, anomalies "
    "and the slowest exchanges, computed with Spark SQL over an export directory "
    "(written by `wiredump export` or `wiredump spark export`).\n\n"
    "Example: wiredump spark report tables/ --out reports/",
)
def spark_report(
    directory: Annotated[str, typer.Argument(help="Directory holding the tables.")],
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Also write each report as <name>.parquet and <name>.csv here."),
    ] = None,
    top: Annotated[int, typer.Option("--top", help="Rows in the top-N reports and on screen.")] = 20,
    master: Master = None,
    conf: Conf = None,
) -> None:
    from rich.console import Console

    from wiredump.spark.report import print_reports, run_reports, write_reports
    from wiredump.spark.tables import table_location

    if top < 1:
        raise UsageError("--top must be at least 1")
    try:
        table_location(directory, "frames")
    except FileNotFoundError as e:
        raise UsageError(f"{directory}: not an export directory ({e})") from e
    spark = _session(master, conf)
    results = run_reports(spark, directory, top=top)
    # In a pipe there is no width to fit: use a wide one rather than fold every column.
    width = None if sys.stdout.isatty() else 200
    print_reports(results, top=top, console=Console(file=sys.stdout, width=width))
    if out is not None:
        write_reports(results, out)
        typer.echo(f"reports written to {out}/", err=True)
