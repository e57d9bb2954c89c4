"""`wiredump spark export` on a real standalone cluster: a master and a worker on 127.0.0.1,
started from the installed PySpark's jars, whose executors run a Python that cannot import
wiredump (so the CLI must ship it), on relative paths and a glob, with every capture shared by
two tasks (each decoding half of its connections), then through the ranges route with every
capture cut into small byte ranges (kafka-python-basic.pcap into at least 8).

Expected values: the local export (`wiredump.dissect.pipeline` + `TableSet`) of the same
captures. It is the reference only because the rest of the suite checks it against the
independent decodes beside the captures (tshark, client logs, the captures' .tsv/.json files);
here the Spark tables must equal it row for row, whatever the number of shares or ranges.
"""

from __future__ import annotations

import os
import re
import signal
import site
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from wiredump.dissect.pipeline import Options, dissect
from wiredump.dissect.tables import SCHEMAS, TABLES, TableSet

pytestmark = pytest.mark.spark

FIRST = [
    "kafka/kafka-python-basic.pcap",
    "pulsar/s04-consumer.pcap",
    "pravega/p06-*.pcap",
    "tank/t07-errors.pcap",
]
"""Relative to the captures folder (the CLI runs there), a glob among them."""
SECOND = ["tank/t01-basic.pcap"]
SPLIT = "8k"  # shares: at most one task per 8 KiB of a capture; ranges: kafka-python-basic.pcap (82 KB) in 11


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(path: Path, pattern: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and re.search(pattern, path.read_text(errors="replace")):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(f"{pattern!r} not seen in {path}:\n{path.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    pytest.importorskip("pyspark")
    import pyspark

    home = Path(pyspark.__file__).parent
    base = tmp_path_factory.mktemp("cluster")
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(base)}
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    cls = str(home / "bin" / "spark-class")
    procs = []
    try:
        mlog = base / "master.log"
        with open(mlog, "w") as out:
            master = subprocess.Popen(
                [cls, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                 "--webui-port", str(_free_port())],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )  # fmt: skip
        procs.append(master)
        _wait_for(mlog, r"I have been elected leader|Starting Spark master", master, 90)
        wlog = base / "worker.log"
        with open(wlog, "w") as out:
            worker = subprocess.Popen(
                [cls, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "2",
                 "--memory", "1g", "--work-dir", str(base / "work"), "--webui-port", str(_free_port())],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )  # fmt: skip
        procs.append(worker)
        _wait_for(wlog, r"Successfully registered with master", worker, 90)
        # The executors' Python: this interpreter with its site-packages on the path, but without
        # the site module, so the .pth that makes the editable wiredump importable is not read.
        py = base / "python-without-wiredump"
        paths = ":".join(site.getsitepackages())
        used = base / "python-used"
        py.write_text(
            f'#!/bin/sh\ntouch {used}\nPYTHONPATH="$PYTHONPATH:{paths}" exec {sys.executable} -S "$@"\n'
        )
        py.chmod(0o755)
        probe = subprocess.run(
            [str(py), "-c", "import pyarrow, orjson; import wiredump"], cwd=base, capture_output=True
        )
        assert probe.returncode != 0 and b"No module named 'wiredump'" in probe.stderr
        used.unlink()
        yield {"url": url, "python": py, "base": base, "env": env}
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(p.pid, signal.SIGKILL)


def _export(
    cluster: dict, captures: Path, inputs: list[str], out: Path, *extra: str
) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable, "-m", "wiredump", "spark", "export", *inputs, "-o", str(out), "--values",
        "--split-size", SPLIT, "--master", str(cluster["url"]),
        "--conf", f"spark.pyspark.python={cluster['python']}",
        "--conf", "spark.executor.memory=512m", "--conf", "spark.driver.memory=512m", *extra,
    ]  # fmt: skip
    env = {k: v for k, v in cluster["env"].items() if k != "PYSPARK_PYTHON"}  # type: ignore[union-attr]
    res = subprocess.run(cmd, cwd=captures, capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stderr[-5000:]
    return res


def _rows(table: pa.Table, names: list[str]) -> list[tuple]:
    table = table.select(names)
    cols = []
    for f in table.schema:
        col = table[f.name]
        if pa.types.is_timestamp(f.type):
            col = col.cast(pa.int64())
        vals = col.to_pylist()
        if pa.types.is_map(f.type):
            vals = [tuple(v) if v is not None else None for v in vals]
        cols.append(vals)
    return sorted(zip(*cols, strict=True), key=repr)


def _same(st: pa.Table, lt: pa.Table, name: str) -> None:
    """Row for row (as sorted lists), naming the first differing columns when they differ."""
    a, b = _rows(st, SCHEMAS[name].names), _rows(lt, SCHEMAS[name].names)
    if a != b:
        cols = SCHEMAS[name].names
        diff = next(((x, y) for x, y in zip(a, b, strict=False) if x != y), (None, None))
        what = [(c, u, v) for c, u, v in zip(cols, *diff, strict=True) if u != v] if diff[0] else []
        raise AssertionError(f"{name}: {len(a)} Spark rows vs {len(b)} local; first difference {what}")


def _local(captures: Path, names: list[str], monkeypatch: pytest.MonkeyPatch, out: Path) -> None:
    monkeypatch.chdir(captures)
    tables = TableSet(out, values=True)
    tables.add_events(dissect(names, Options()))
    tables.close()


def test_standalone_cluster_export_equals_local_and_append_keeps_the_first(
    cluster: dict, captures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "tables"
    t0 = time.monotonic()
    # Each task opens its captures itself and decodes a share of their connections (2 shares
    # each here; by default only a capture larger than --split-size is shared).
    res = _export(cluster, captures, FIRST, out, "--shards", "2")
    first_run_s = time.monotonic() - t0
    names = [str(p.relative_to(captures)) for g in FIRST for p in sorted(captures.glob(g))]
    assert len(names) == 4
    local = tmp_path / "local"
    _local(captures, names, monkeypatch, local)
    for name in TABLES:
        lt = pq.read_table(local / f"{name}.parquet")
        st = pq.read_table(out / name)
        assert st.schema.field("capture_date").type == pa.date32()
        assert st.select(SCHEMAS[name].names).schema == lt.schema  # same types and units
        _same(st, lt, name)
        assert lt.num_rows > 0 or name == "anomalies"
    caps = pq.read_table(out / "captures").to_pylist()
    assert {c["capture"] for c in caps} == set(names)
    assert {(c["status"], c["ranges"]) for c in caps} == {("ok", 2)} and len(caps) == 4
    assert "4 of 4 captures exported" in res.stderr
    # The executors ran the Python named by --conf spark.pyspark.python (which cannot import
    # wiredump by itself: the CLI shipped it).
    assert (Path(str(cluster["base"])) / "python-used").exists()

    # A second run appends: the first run's rows stay, the new capture's rows join them.
    _export(cluster, captures, SECOND, out, "--mode", "append")
    local2 = tmp_path / "local2"
    _local(captures, names + SECOND, monkeypatch, local2)
    for name in TABLES:
        lt = pq.read_table(local2 / f"{name}.parquet")
        st = pq.read_table(out / name)
        _same(st, lt, name)
    runs = sorted({c["run"] for c in pq.read_table(out / "captures").to_pylist()})
    assert runs == [0, 1]

    # The ranges route on the same cluster: every capture cut into 8 KiB ranges, counted and
    # read by separate tasks, the records shuffled to the tasks that dissect them. The rows are
    # the same.
    ranges = tmp_path / "ranges"
    res = _export(cluster, captures, FIRST, ranges, "--route", "ranges")
    for name in TABLES:
        _same(pq.read_table(ranges / name), pq.read_table(local / f"{name}.parquet"), name)
    caps = pq.read_table(ranges / "captures").to_pylist()
    assert {c["capture"] for c in caps} == set(names) and {c["status"] for c in caps} == {"ok"}
    kafka = next(c for c in caps if c["capture"] == "kafka/kafka-python-basic.pcap")
    assert kafka["ranges"] >= 8, kafka
    assert "4 of 4 captures exported" in res.stderr

    print(f"first cluster export: {first_run_s:.1f} s")
