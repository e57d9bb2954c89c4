"""Local mode's start-up: the Python daemon that imports the installed PySpark, and the JVM's
class archive (made by the first run, checked, then mapped by later runs).

Why tested: both only change how fast a run starts, so a mistake in them would show as nothing
but a slower run, or (a damaged archive) as every later run crashing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from wiredump.spark.daemon import _installed_zips

CAPTURE = "kafka/kafka-python-basic.pcap"


def _package(root: Path, name: str = "pyspark") -> list[str]:
    """A fake installed package with Spark's two zips inside it, as pip installs PySpark."""
    lib = root / name / "python" / "lib"
    lib.mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    zips = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip")]
    for z in zips:
        zipfile.ZipFile(z, "w").close()
    return zips


def test_daemon_drops_only_the_zips_of_the_installed_pyspark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site-packages"
    zips = _package(site)
    elsewhere = _package(tmp_path / "spark-dist", "spark-3.5")  # a SPARK_HOME that is not the package
    monkeypatch.setattr(sys, "path", [*zips, *elsewhere, str(site), "/usr/lib/python3.11"])
    assert _installed_zips() == set(zips)
    # The installed copy is not importable by this interpreter: nothing is dropped.
    monkeypatch.setattr(sys, "path", [*zips, *elsewhere, "/usr/lib/python3.11"])
    assert _installed_zips() == set()


def _java() -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Java is not installed (scripts/test installs openjdk-17-jre-headless)")


@pytest.mark.spark
def test_local_workers_import_the_installed_pyspark(tmp_path: Path) -> None:
    """The workers' PySpark is the installed, compiled package, not Spark's source zip; and
    their OpenBLAS starts no threads (set by the session, not inherited: the driver here has no
    OPENBLAS_NUM_THREADS and does not go through the CLI)."""
    _java()
    code = (
        "from wiredump.spark.session import get_context\n"
        "sc = get_context('local[1]')\n"
        "def where(_):\n"
        "    import os, pyspark, pyspark.worker, sys\n"
        "    yield (pyspark.__file__, pyspark.worker.__file__, [p for p in sys.path if p.endswith('.zip')],\n"
        "           os.environ.get('OPENBLAS_NUM_THREADS'))\n"
        "print(repr(sc.parallelize([0], 1).mapPartitions(where).collect()[0]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path, env=env
    )
    package, worker, zips, blas = eval(out.stdout.strip().splitlines()[-1])  # noqa: S307 - our own repr
    assert blas == "1"
    import pyspark

    installed = str(Path(pyspark.__file__).parent)
    assert package.startswith(installed) and ".zip" not in package
    assert worker.startswith(installed) and ".zip" not in worker
    assert not any(z.startswith(installed) for z in zips)


@pytest.mark.spark
def test_first_run_makes_the_class_archive_later_runs_map_it(
    captures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _java()
    from wiredump.spark import jvm

    env = {**os.environ, "WIREDUMP_CACHE_DIR": str(tmp_path / "tmp")}

    def export(out: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "wiredump", "spark", "export", str(captures / CAPTURE), "-o", out]
        return subprocess.run([*cmd, "--master", "local[1]"], capture_output=True, text=True, env=env)

    first = export(str(tmp_path / "a"))
    assert first.returncode == 0, first.stderr
    made = sorted((tmp_path / "tmp").glob("spark-classes-*"))
    assert [p.suffix for p in made] == [".jsa"], made  # kept, and no half-written .tmp left
    assert made[0].stat().st_size > 1 << 20
    # Where later runs look is where the first one put it, and they map it.
    monkeypatch.setenv("WIREDUMP_CACHE_DIR", str(tmp_path / "tmp"))
    assert jvm.archive_path() == made[0]
    assert f"-XX:SharedArchiveFile={made[0]}" in jvm.startup_options(make_archive=True, quick=True)
    second = export(str(tmp_path / "b"))
    assert second.returncode == 0, second.stderr
    assert second.stderr.splitlines()[-1] == first.stderr.splitlines()[-1]  # the same row counts
    assert sorted((tmp_path / "tmp").glob("spark-classes-*")) == made
    # The archive was kept because it passed the check; a truncated copy of it does not (HotSpot
    # 17 crashes on one even with -Xshare:auto, so such a file must never be kept).
    cut = tmp_path / "cut.jsa"
    with open(made[0], "rb") as f:
        cut.write_bytes(f.read(1 << 20))
    before = set(Path.cwd().glob("hs_err_pid*.log"))
    assert not jvm._usable(cut, [], "")
    assert not jvm._usable(tmp_path / "missing.jsa", [], "")
    # The JVM that crashed on it left no crash report behind (in the archive's folder or here).
    assert not list(tmp_path.glob("hs_err_pid*.log"))
    assert set(Path.cwd().glob("hs_err_pid*.log")) == before


def test_kept_files_only_in_a_directory_no_other_user_can_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wiredump.spark import cache, jvm

    own = tmp_path / "own"
    monkeypatch.setenv("WIREDUMP_CACHE_DIR", str(own))
    assert cache.private_dir() == own  # made on first use, this user's only
    assert own.stat().st_mode & 0o777 == 0o700
    # A directory others may write to (a planted or shared one) is not used: nothing kept there.
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("WIREDUMP_CACHE_DIR", str(shared))
    assert cache.private_dir() is None
    if jvm.java_binary() is not None:
        assert jvm.archive_path() is None
    fresh = cache.kept_dir()  # made anew, private, outside it
    assert fresh.parent != shared and fresh.stat().st_mode & 0o777 == 0o700
    # Without WIREDUMP_CACHE_DIR: XDG_CACHE_HOME/wiredump.
    monkeypatch.delenv("WIREDUMP_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.private_dir() == tmp_path / "xdg" / "wiredump"


def test_half_made_archives_of_ended_runs_are_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wiredump.spark import jvm

    if jvm.java_binary() is None:
        pytest.skip("no Java")
    monkeypatch.setenv("WIREDUMP_CACHE_DIR", str(tmp_path))
    path = jvm.archive_path()
    assert path is not None
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    ended = path.with_name(f"{path.name}.{int(dead.stdout)}.tmp")  # its process has exited
    running = path.with_name(f"{path.name}.{os.getppid()}.tmp")  # its process is alive
    for p in (ended, running):
        p.write_bytes(b"half")
    options = jvm.startup_options(make_archive=True, quick=False)
    assert f"-XX:ArchiveClassesAtExit={path}.{os.getpid()}.tmp" in options
    assert not ended.exists() and running.exists()
