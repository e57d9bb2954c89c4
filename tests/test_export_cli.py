"""`wiredump export` on the command line: files, formats, --values, and errors as exit 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from wiredump.cli.entry import main
from wiredump.dissect.tables import SCHEMAS, TABLES


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(args)
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_export_writes_the_five_parquet_tables(
    captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap = captures / "pulsar" / "s02-producer-batching.pcap"
    summary = json.loads(cap.with_suffix(".summary.json").read_text())
    code, _, err = run(["export", str(cap), "-o", str(tmp_path / "out")], capsys)
    assert code == 0
    for name in TABLES:
        t = pq.read_table(tmp_path / "out" / f"{name}.parquet")
        assert t.schema.equals(SCHEMAS[name], check_metadata=False)
    frames = pq.read_table(tmp_path / "out" / "frames.parquet")
    # The independent decode lists every frame of the capture.
    assert frames.num_rows == len(summary["frames"])
    assert f"frames: {frames.num_rows}," in err
    msgs = pq.read_table(tmp_path / "out" / "messages.parquet")
    assert msgs["value"].null_count == msgs.num_rows  # no values without --values


def test_export_jsonl_and_values(captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cap = str(captures / "tank" / "t04-keys.pcap")
    code, _, _ = run(["export", cap, "-o", str(tmp_path), "--format", "jsonl", "--values"], capsys)
    assert code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.jsonl" for n in TABLES)
    rows = [json.loads(line) for line in (tmp_path / "messages.jsonl").read_text().splitlines()]
    assert rows and all(r["value"] is not None for r in rows)
    assert all(list(r) == SCHEMAS["messages"].names for r in rows)


@pytest.mark.parametrize(
    "args",
    [
        ["export", "/nonexistent/capture.pcap", "-o", "{tmp}/out"],
        ["export", "{cap}", "-o", "{tmp}/out", "--format", "csv"],
        ["export", "{cap}", "-o", "{tmp}/file"],
        ["export", "{tmp}/file", "-o", "{tmp}/out"],
        ["spark", "export", "/nonexistent/capture.pcap", "-o", "{tmp}/out"],
        ["spark", "export", "{tmp}/file", "-o", "{tmp}/out"],
        ["spark", "report", "{tmp}/nothing"],
        ["spark", "report", "{tmp}", "--top", "0"],
    ],
    ids=[
        "missing",
        "bad-format",
        "out-is-a-file",
        "not-a-capture",
        "spark-missing",
        "spark-not-a-capture",
        "spark-report-no-tables",
        "spark-report-bad-top",
    ],
)
def test_export_errors_are_one_line_and_exit_2(
    args: list[str], captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("not a capture, not a directory\n")
    cap = str(captures / "tank" / "t01-basic.pcap")
    code, out, err = run([a.format(tmp=tmp_path, cap=cap) for a in args], capsys)
    assert code == 2
    assert err.startswith("wiredump: ") and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and out == ""


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("3", "3")])
def test_the_command_keeps_openblas_from_starting_threads(
    given: str | None, expected: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """pyarrow imports numpy, whose OpenBLAS would start spinning threads nothing uses; a value
    the user chose is theirs."""
    if given is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", given)
    assert run(["--version"], capsys)[0] == 0
    assert os.environ["OPENBLAS_NUM_THREADS"] == expected
