"""How the embedded local mode starts its JVM: a class archive of Spark's classes, and the JIT.

Why: on one large capture, what two cores do not divide is mostly the JVM's start (launching it,
loading and verifying some thousands of Spark classes, compiling the code that runs once) and
that part alone kept `local[2]` from being much faster than `local[1]` (benchmarks/README.md).
Two standard HotSpot means cut it, for the local driver JVM only (a cluster's JVMs are the
cluster's business):

- **A class archive** (AppCDS, `-XX:SharedArchiveFile`): the classes Spark loads, already parsed
  and verified, mapped from one file. A run that finds no archive for this Java and this Spark
  makes it (`-XX:ArchiveClassesAtExit`, written by the JVM as it exits); `finish` waits for
  that, checks it and moves it into place, so later runs start about two seconds sooner. The
  file is named by a digest of the Java binary and of Spark's jars, so another Java or Spark
  never reads it; an archive that does not fit the JVM (other options, another class path) is
  ignored by it (`-Xshare:auto`), never an error; a damaged one is never kept (`_usable`). The
  JVM's archive messages are silenced (they are about this optimisation only).
- **A light JVM** (`quick=True`): C1 compiles only (`-XX:TieredStopAtLevel=1`), one GC thread
  (`-XX:+UseSerialGC`), no perf-data file (`-XX:-UsePerfData`). On the `shares` route the JVM
  only schedules tasks and carries their small results, so the optimising compiler would spend
  a core's seconds compiling code that runs once, on the cores the tasks need, and G1's threads
  have a near-empty heap to manage. Not for `spark report` or the `ranges` route, whose queries
  and shuffle run in the JVM.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wiredump.spark.cache import private_dir

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
"""The JVM reports classes it cannot archive (generated ones, old class files) as warnings on stdout."""
DUMP_FLAG = "-XX:ArchiveClassesAtExit="
WAIT_SECONDS = 120.0
"""At most this long to wait for the JVM to write the archive (it takes a few seconds)."""


def java_binary() -> Path | None:
    """The `java` spark-submit runs: `$JAVA_HOME/bin/java`, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found or not os.path.exists(found):
        return None
    return Path(found).resolve()


def archive_path() -> Path | None:
    """Where the class archive of this Java and this Spark is (whether or not it exists yet)."""
    java = java_binary()
    try:
        import pyspark
    except ImportError:
        return None
    if java is None:
        return None
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    h = hashlib.sha256()
    for p in [java, *sorted(jars.glob("*.jar"))]:
        try:
            st = p.stat()
        except OSError:
            return None
        h.update(f"{p}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    h.update(pyspark.__version__.encode())
    # Mapped into the JVM: only from a directory no other user can write (`cache`).
    kept = private_dir()
    if kept is None:
        return None
    return kept / f"spark-classes-{h.hexdigest()[:16]}.jsa"


def startup_options(make_archive: bool, quick: bool) -> str:
    """The driver JVM's options: use the class archive, or make it (`make_archive`, when the caller
    calls `finish` at the end), and the quick JIT (`quick`)."""
    opts = []
    if quick:
        opts += ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData"]
    path = archive_path()
    if path is not None and path.is_file():
        opts += [f"-XX:SharedArchiveFile={path}", "-Xshare:auto", QUIET]
    elif path is not None and make_archive:
        _sweep(path)
        opts += [f"{DUMP_FLAG}{path}.{os.getpid()}.tmp", QUIET]
    return " ".join(opts)


def _sweep(path: Path) -> None:
    """Removes the half-made archives of runs that ended without `finish` (a usage error after
    the JVM was launched, an interrupted run): their JVM still wrote one as the process exited,
    under the process's id, and nothing would ever check, keep or remove it (~35–120 MB each)."""
    for part in path.parent.glob(f"{path.name}.*.tmp"):
        pid = part.name[len(path.name) + 1 : -len(".tmp")]
        if pid.isdigit() and not _alive(int(pid)):
            part.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def finish(spark: SparkSession | SparkContext) -> None:
    """If the session's JVM is making the class archive: stop the session, let the JVM exit, keep the archive.

    The JVM writes the archive as it exits, and the local JVM exits when its standard input
    closes (PySpark's gateway). The archive is written under a name of its own (with the
    process id), checked (`_usable`), and only then renamed into place, so a run starting
    meanwhile never maps half a file, and a damaged one is never kept.
    """
    sc = getattr(spark, "sparkContext", spark)
    options = sc.getConf().get("spark.driver.extraJavaOptions", "") or ""
    tmp = next((o[len(DUMP_FLAG) :] for o in options.split() if o.startswith(DUMP_FLAG)), None)
    proc: Any = getattr(sc._gateway, "proc", None)  # noqa: SLF001 - PySpark keeps the JVM's Popen there
    if tmp is None or proc is None:
        return  # a session that is not making the archive is left as it is (it may be the caller's)
    runtime = sc._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()  # noqa: SLF001
    args = [str(a) for a in runtime.getInputArguments()]
    classpath = str(sc._jvm.java.lang.System.getProperty("java.class.path"))  # noqa: SLF001
    spark.stop()
    try:
        if proc.stdin is not None:
            proc.stdin.close()
        code = proc.wait(timeout=WAIT_SECONDS)
    except Exception:  # noqa: BLE001 - a JVM that will not exit: no archive, nothing else lost
        proc.kill()
        code = -1
    # PySpark would hand the exited JVM's gateway to the next context of this process.
    type(sc)._gateway = None  # noqa: SLF001
    type(sc)._jvm = None  # noqa: SLF001
    part, final = Path(tmp), tmp.removesuffix(f".{os.getpid()}.tmp")
    try:
        if code == 0 and final != tmp and _usable(part, args, classpath):
            part.replace(final)
        else:
            part.unlink(missing_ok=True)
    except OSError:
        pass


def _usable(archive: Path, args: list[str], classpath: str) -> bool:
    """The archive maps in a JVM started as the one that made it (`-Xshare:on`: a JVM that cannot
    use it fails). Checked once, before it is kept, because HotSpot 17 does not always refuse a
    damaged archive gracefully: a truncated one crashes the JVM (SIGBUS) even with `-Xshare:auto`."""
    java = java_binary()
    if java is None or not archive.is_file() or archive.stat().st_size == 0:
        return False
    keep = [a for a in args if not a.startswith((DUMP_FLAG, "-Xshare", "-XX:SharedArchiveFile", "-Xlog"))]
    cmd = [str(java), *keep, "-Xshare:on", f"-XX:SharedArchiveFile={archive}", *QUIET.split()]
    # A JVM that crashes on the archive would leave hs_err_pid*.log in the working directory.
    cmd += ["-XX:ErrorFile=/dev/null", "-XX:-CreateCoredumpOnCrash"]
    try:
        done = subprocess.run(
            [*cmd, "-cp", classpath, "-version"],
            capture_output=True,
            timeout=WAIT_SECONDS,
            check=False,
            cwd=archive.parent,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0
