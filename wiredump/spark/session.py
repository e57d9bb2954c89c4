"""The Spark session wiredump's jobs run in: local by default, a cluster when asked.

Local mode is the embedded default (`local[*]`, a 1 GiB driver, a few shuffle
partitions, no web UI, no progress bars, errors-only logs) so `wiredump spark …`
works on a laptop with nothing but Java 17 and PySpark. `--master URL` (or running
under `spark-submit`, which sets the master itself) points the same job at a cluster;
any other standard Spark setting can be passed as `--conf KEY=VALUE` or through
`spark-defaults.conf` / `PYSPARK_SUBMIT_ARGS`.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wiredump.spark.cache import kept_dir

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

LOCAL_MASTER = "local[*]"

LOG4J2 = """\
# wiredump's Spark logging: errors only, on stderr, so the terminal shows the tool's output
# rather than Spark's chatter. PySpark counts as a shell: Spark sets the root level to the level
# of its own (org.apache.spark) loggers, announcing it when they differ, so both are ERROR here.
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.sparkproject.name = org.sparkproject
logger.sparkproject.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
logger.netty.name = io.netty
logger.netty.level = error
logger.nativecode.name = org.apache.hadoop.util.NativeCodeLoader
logger.nativecode.level = off
"""

LOCAL_DEFAULTS: dict[str, str] = {
    "spark.driver.memory": "1g",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.ui.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
}
"""Settings for the embedded local mode only (a cluster keeps its own)."""

ALWAYS: dict[str, str] = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "65536",
    "spark.sql.parquet.compression.codec": "zstd",
    # One task is one single-threaded Python worker: OpenBLAS's spinning threads (numpy, imported
    # by pyarrow) would only take CPU from it (`wiredump.cli.entry.BLAS_THREADS`).
    "spark.executorEnv.OPENBLAS_NUM_THREADS": "1",
}
"""Settings every wiredump job needs: UTC everywhere, standard Parquet timestamps, quiet output,
no idle BLAS threads in the workers."""


class SparkUnavailable(Exception):
    """PySpark or Java is missing; one sentence for the user."""


def _log4j_file() -> Path:
    path = kept_dir() / "spark-log4j2.properties"
    if not path.exists() or path.read_text() != LOG4J2:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(LOG4J2)
        tmp.replace(path)
    return path


def under_spark_submit() -> bool:
    """True when spark-submit started this Python (it then owns the master and the JVM)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def session_config(
    master: str | None, conf: Mapping[str, str] | None = None, jvm_options: str = ""
) -> dict[str, str]:
    """Every setting the session is built with (the master under `spark.master`); `jvm_options`
    are added to the local driver JVM's (`wiredump.spark.jvm`)."""
    out: dict[str, str] = {}
    if master is None and not under_spark_submit():
        master = os.environ.get("WIREDUMP_SPARK_MASTER") or LOCAL_MASTER
    if master is not None:
        out["spark.master"] = master
    local = master is not None and master.startswith("local")
    if local:
        out.update(LOCAL_DEFAULTS)
        # Executors are threads of this machine: give their Python workers this interpreter,
        # and a daemon that imports its installed PySpark (`wiredump.spark.daemon`).
        out["spark.pyspark.python"] = sys.executable
        out["spark.pyspark.driver.python"] = sys.executable
        out["spark.python.daemon.module"] = "wiredump.spark.daemon"
    out.update(ALWAYS)
    log = f"-Dlog4j2.configurationFile=file:{_log4j_file()}"
    out["spark.driver.extraJavaOptions"] = f"{log} {jvm_options}" if local and jvm_options else log
    if local:
        out["spark.executor.extraJavaOptions"] = log
    out.update(conf or {})
    return out


SHIPPED_AS = "wiredump_pkg"
"""The folder the package archive is unpacked to in each executor's working directory."""


def package_archive() -> Path:
    """A .tar.gz of the installed wiredump package (native engine included), made once per content.

    Executors unpack it (`spark.archives`) and find it on their PYTHONPATH: they need not have
    wiredump installed, only its dependencies (see docs/spark.md for shipping those too).
    """
    import hashlib
    import tarfile

    import wiredump

    pkg = Path(wiredump.__file__).resolve().parent
    files = sorted(
        p for p in pkg.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )
    h = hashlib.sha256()
    for p in files:
        st = p.stat()
        h.update(f"{p.relative_to(pkg)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    # Shipped to executors and imported there: kept only where no other user can write.
    path = kept_dir() / f"package-{h.hexdigest()[:16]}.tar.gz"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with tarfile.open(tmp, "w:gz") as tar:
            for p in files:
                tar.add(p, arcname=str(Path("wiredump") / p.relative_to(pkg)))
        tmp.replace(path)
    return path


def ship_package(settings: dict[str, str]) -> None:
    """Add the package archive to `spark.archives` and its folder to the executors' PYTHONPATH."""
    archive = f"{package_archive()}#{SHIPPED_AS}"
    have = settings.get("spark.archives")
    settings["spark.archives"] = f"{have},{archive}" if have else archive
    key = "spark.executorEnv.PYTHONPATH"
    settings[key] = f"{SHIPPED_AS}:{settings[key]}" if settings.get(key) else SHIPPED_AS


def get_session(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str = "wiredump",
    make_archive: bool = False,
    quick_jvm: bool = False,
) -> SparkSession:
    """The active session if there is one (tests, notebooks, spark-submit), else a new one
    (over `get_context`'s context: see there for the arguments)."""
    _import_pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    get_context(master, conf, app_name, make_archive, quick_jvm)
    return SparkSession.builder.getOrCreate()  # takes the context's settings


def get_context(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str = "wiredump",
    make_archive: bool = False,
    quick_jvm: bool = False,
) -> SparkContext:
    """The active SparkContext (a session's, spark-submit's) if there is one, else a new one.

    For jobs that use only the RDD API (`wiredump spark export`): a SparkSession on top of the
    context costs about a second of the JVM's start that such a job has no use for.
    A local context's JVM maps the class archive when there is one (`wiredump.spark.jvm`);
    `make_archive` makes it when there is none (the caller then ends with `jvm.finish`);
    `quick_jvm` starts the light JVM (C1 only, serial GC: for jobs whose work is all in the
    Python tasks).
    """
    return start_context(master, conf, app_name, make_archive, quick_jvm)()


def start_context(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str = "wiredump",
    make_archive: bool = False,
    quick_jvm: bool = False,
) -> Callable[[], SparkContext]:
    """`get_context` in two steps: the JVM is launched now, on a thread, and the returned function
    waits for it and makes the context (on the caller's thread, which keeps PySpark's Ctrl-C
    handler). The caller does its own work meanwhile: launching the JVM takes a second or so of
    waiting that nothing else in the run would fill. If the function is never called, the JVM
    exits with this process (PySpark's JVM ends when its standard input closes)."""
    _import_pyspark()
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return lambda: active.sparkContext
    if SparkContext._active_spark_context is not None:  # noqa: SLF001 - PySpark's own record of it
        sc = SparkContext._active_spark_context  # noqa: SLF001
        return lambda: sc
    from wiredump.spark import jvm

    local = (master or os.environ.get("WIREDUMP_SPARK_MASTER") or LOCAL_MASTER).startswith("local")
    options = jvm.startup_options(make_archive, quick_jvm) if local and not under_spark_submit() else ""
    settings = session_config(master, conf, options)
    if settings.get("spark.master", "").startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    elif "spark.master" in settings:
        ship_package(settings)
    if conf and conf.get("spark.pyspark.python"):
        # PySpark started from Python (not spark-submit) takes the executors' Python only from
        # PYSPARK_PYTHON and ignores this setting: make it count.
        os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"]
    spark_conf = SparkConf().setAppName(app_name)
    for key, value in settings.items():
        spark_conf.set(key, value)
    launched: dict[str, Any] = {}

    def launch() -> None:
        from pyspark.java_gateway import launch_gateway

        try:
            launched["gateway"] = None if under_spark_submit() else launch_gateway(spark_conf)
        except BaseException as e:  # noqa: BLE001 - raised on the caller's thread
            launched["error"] = e
        # What PySpark's context set-up imports next (`pyspark.testing.utils`, which imports
        # pandas: a quarter of a second), while the caller still has work of its own.
        _preimport()

    thread = threading.Thread(target=launch, name="wiredump-jvm-start", daemon=True)
    thread.start()

    def context() -> SparkContext:
        thread.join()
        try:
            if "error" in launched:
                raise launched["error"]
            sc = SparkContext(conf=spark_conf, gateway=launched["gateway"])
        except Exception as e:  # Java missing, bad master URL…
            if "JAVA_HOME" in str(e) or "Java gateway" in str(e):
                raise SparkUnavailable(f"cannot start Spark (is Java 17 installed?): {e}") from e
            raise
        sc.setLogLevel("ERROR")
        return sc

    return context


def _import_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise SparkUnavailable("PySpark is not installed: pip install 'wiredump[spark]' (and Java 17)") from e
    # PySpark warns that it has not been certified with the installed pandas; wiredump's jobs
    # exchange Arrow batches and do not depend on pandas, so the warning is noise here.
    warnings.filterwarnings(
        "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
    )


def _preimport() -> None:
    try:
        import pyspark.testing.utils  # noqa: F401
    except Exception:  # noqa: BLE001 - only a head start: the context imports it itself anyway
        pass
