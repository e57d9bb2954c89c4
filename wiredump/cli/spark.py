"""`wiredump spark export|report`: the tables built on Spark, and reports computed on Spark.

Local mode (`local[*]`) by default; `--master URL` or `--conf KEY=VALUE` for a
cluster (see docs/spark.md). PySpark is imported only when a command runs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from wiredump.cli.app import DecodeAs, app
from wiredump.cli.entry import UsageError
from wiredump.cli.options import parse_decode_as

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


def _size(text: str) -> int:
    """Bytes from `4096`, `64k`, `128m`, `1g`."""
    t = text.strip().lower()
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(t[-1:], 1)
    digits = t[:-1] if scale > 1 else t
    if not digits.isdigit() or int(digits) * scale < 1:
        raise UsageError(f"--split-size takes a size such as 128m or 65536, not {text!r}")
    return int(digits) * scale


def _session(master: str | None, conf: list[str] | None, context_only: bool = False):  # noqa: ANN202 - SparkSession, imported lazily
    """The command's session (or only a context: `context_only`, for the export's RDD job, whose
    JVM is then also the light one); it makes the local JVM's class archive if there is none
    (`wiredump.spark.jvm`: the command ends with `jvm.finish`)."""
    return _start_session(master, conf, context_only)()


def _start_session(master: str | None, conf: list[str] | None, context_only: bool = False):  # noqa: ANN202 - a function giving the session
    """`_session` in two steps: the JVM is launched now, the returned function gives the session."""
    from wiredump.spark.session import SparkUnavailable, get_session, start_context

    settings = _conf(conf)

    def made(pending):  # noqa: ANN001, ANN202
        try:
            return pending()
        except SparkUnavailable as e:
            raise UsageError(str(e)) from e

    if not context_only:
        return lambda: made(lambda: get_session(master, settings, make_archive=True))
    try:
        pending = start_context(master, settings, make_archive=True, quick_jvm=True)
    except SparkUnavailable as e:
        raise UsageError(str(e)) from e
    return lambda: made(pending)


@spark_app.command(
    "export",
    help="Write the tables with Spark: DIR/<table>/part-RRRRR-PPPPP.parquet (the local export's columns "
    "plus capture_date), and DIR/captures/ (one row per input: status and reason). Each task "
    "reads whole captures, a large one shared by several tasks (or, with --route ranges, byte "
    "ranges of them). Globs and directories expand to files.\n\n"
    "Example: wiredump spark export captures/*.pcap -o tables/",
)
def spark_export(
    captures: Annotated[
        list[str],
        typer.Argument(
            help="Capture files, globs or directories readable by the executors (local paths, or "
            "file://, hdfs://, s3a://… URIs)."
        ),
    ],
    out: Annotated[str, typer.Option("-o", "--out", help="Output directory (or URI), e.g. -o tables/.")],
    master: Master = None,
    conf: Conf = None,
    values: Annotated[
        bool, typer.Option("--values", help="Include message values in the messages table.")
    ] = False,
    decode_as: DecodeAs = None,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode",
            help="append: add this run's files to an existing export; overwrite: replace what earlier "
            "wiredump runs wrote there (nothing else is deleted). Without it, a directory that already "
            "holds tables is refused.",
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Exit 2 (writing nothing) when an input is missing, empty, unreadable or not a capture.",
        ),
    ] = False,
    split_size: Annotated[
        str,
        typer.Option(
            "--split-size",
            help="Capture bytes per task sharing a large capture, at most; with --route ranges, bytes "
            "per range (k, m, g suffixes): e.g. 128m (default), 1g.",
        ),
    ] = "128m",
    shards: Annotated[
        int,
        typer.Option(
            "--shards",
            help="Tasks that share the connections of one capture (each reads every packet, decodes "
            "its share). 0 (default): a capture larger than --split-size is shared by the cores the "
            "other captures leave idle (with --route ranges: 1).",
        ),
    ] = 0,
    route: Annotated[
        str,
        typer.Option(
            "--route",
            help="shares (default): each task reads whole captures, a large one shared by several "
            "tasks that each read all of it. ranges: captures cut into --split-size byte ranges, each "
            "read once, the records shuffled to the tasks that dissect them (for many cores on one "
            "huge capture).",
        ),
    ] = "shares",
) -> None:
    from wiredump.cli.options import make_options

    make_options(decode_as)  # validates the protocol names
    if "-" in captures:
        raise UsageError("spark export reads capture files, not stdin")
    if mode not in (None, "append", "overwrite"):
        raise UsageError(f"--mode must be append or overwrite, not {mode!r}")
    if shards < 0:
        raise UsageError("--shards must be 0 (chosen per capture) or more")
    size = _size(split_size)
    owned = _no_context_yet()

    # The JVM starts now, while the inputs are planned below (`session.start_context`), unless a
    # plain path is missing (the run may stop at planning then: no JVM for a usage error). On
    # the shares route it only schedules the tasks: no SQL session, the light JVM.
    def start():  # noqa: ANN202 - a function giving the context
        return _start_session(master, conf, context_only=route == "shares")

    plain = [c for c in captures if "://" not in c and not set("*?[") & set(c)]
    pending = start() if all(os.path.exists(c) for c in plain) else None
    from wiredump.spark.export import ROUTES, ExportError, JobOptions, has_export, plan_inputs, run_export

    if route not in ROUTES:
        raise UsageError(f"--route must be {' or '.join(ROUTES)}, not {route!r}")
    options = JobOptions(
        values=values,
        decode_as=parse_decode_as(decode_as),
        split_size=size,
        shards=shards,
        route=route,
    )
    try:
        if mode is None and has_export(out):
            raise UsageError(
                f"{out} already holds an export: add to it with --mode append, or --mode overwrite"
            )
    except OSError as e:
        raise UsageError(f"{out}: cannot be used as the output ({e})") from e
    from wiredump.spark import timing

    timing.mark("CLI started")
    planned = plan_inputs(captures, options)
    skipped = [r for r in planned[1] if r.status != "ok"]
    if len(skipped) == len(planned[1]):
        more = f" (and {len(skipped) - 1} more inputs)" if len(skipped) > 1 else ""
        raise UsageError(f"nothing to export: {skipped[0].reason}{more}")
    for r in skipped:
        typer.echo(f"skipped: {r.reason}", err=True)
    if strict and skipped:
        raise UsageError(
            f"{len(skipped)} of {len(planned[1])} inputs cannot be read (--strict): nothing written"
        )
    timing.mark("inputs probed")
    from wiredump.spark import jvm

    spark = (pending or start())()
    timing.mark("Spark session ready")
    try:
        try:
            result = run_export(spark, captures, out, options, mode or "error", planned=planned)
        except ExportError as e:
            raise UsageError(str(e)) from e
        late = [r for r in result.skipped if r not in skipped]  # found unreadable while reading
        for r in late:
            typer.echo(f"skipped: {r.reason}", err=True)
        skipped = result.skipped
        truncated = [r for r in result.captures if r.status == "truncated"]
        for r in truncated:
            typer.echo(f"truncated: {r.reason}", err=True)
        ok = sum(r.status in ("ok", "truncated") for r in result.captures)
        typer.echo(
            f"{ok} of {len(result.captures)} captures exported (run {result.run}), "
            f"{len(skipped)} skipped, {len(truncated)} truncated: see {out.rstrip('/')}/captures/",
            err=True,
        )
        typer.echo(", ".join(f"{n}: {c}" for n, c in result.counts.items()), err=True)
        timing.mark("summary printed")
    finally:
        jvm.finish(spark)
        if owned:
            _before_exit()


def _no_context_yet() -> bool:
    """No Spark context in this process yet: the command starts (and owns) its own."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return True
    return SparkContext._active_spark_context is None  # noqa: SLF001 - PySpark's own record of it


def _before_exit() -> None:
    """The command is done and the process is about to end: spare it the interpreter's last
    garbage collections over everything PySpark, pandas and pyarrow imported (~0.1-0.2 s of a
    single core, measured; serial time on every run). Frozen objects are still finalized
    normally; only cycles among them are left to the process's end. Not in a process that had a
    context before the command (a notebook, a test), which lives on."""
    import gc

    gc.freeze()


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
    from wiredump.spark import jvm

    spark = _session(master, conf)
    try:
        results = run_reports(spark, directory, top=top)
        # In a pipe there is no width to fit: use a wide one rather than fold every column.
        width = None if sys.stdout.isatty() else 200
        print_reports(results, top=top, console=Console(file=sys.stdout, width=width))
        if out is not None:
            write_reports(results, out)
            typer.echo(f"reports written to {out}/", err=True)
    finally:
        jvm.finish(spark)
