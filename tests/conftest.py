"""Shared test fixtures: where the real captures are."""

from __future__ import annotations

import csv
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
SHARED = Path(os.environ.get("WIREDUMP_SHARED", ROOT.parent / "shared"))
"""The workspace's shared folder (captures, protocol reference), beside the repository."""
CAPTURES = Path(os.environ.get("WIREDUMP_CAPTURES", SHARED / "captures"))
REFERENCE = SHARED / "reference"


@pytest.fixture(scope="session")
def captures() -> Path:
    """The folder of real captures with their independent decodes (../shared/captures)."""
    if not CAPTURES.is_dir():
        pytest.skip(f"real captures not found at {CAPTURES}")
    return CAPTURES


def tsv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of an independent decode (`X.pdus.tsv`, `X.frames.tsv`) as dicts by column."""
    with path.open() as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def dissect_lists(path: Path, protocol: str | None = None) -> tuple[list, list, list]:
    """(frames, anomalies, exchanges) of one capture; frames of `protocol` only when given."""
    from wiredump.dissect.pipeline import Options, dissect

    frames, anomalies, exchanges = [], [], []
    for ev in dissect([str(path)], Options()):
        if ev.kind == "frame" and (protocol is None or ev.obj.protocol == protocol):
            frames.append(ev.obj)
        elif ev.kind == "anomaly":
            anomalies.append(ev.obj)
        elif ev.kind == "exchange":
            exchanges.append(ev.obj)
    return frames, anomalies, exchanges


# -- no internal errors ------------------------------------------------------------------------------
INTERNAL_ERROR_MARK = "internal_error_expected"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{INTERNAL_ERROR_MARK}: the test injects a failing decoder on purpose; internal_error anomalies "
        "are allowed (and checked by the test itself)",
    )


@pytest.fixture(autouse=True)
def no_internal_errors(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path_factory):
    """Fail any test during which wiredump reported an `internal_error` (a decoder bug caught by the
    shield), whatever the capture: real, crafted, variant or fuzzed.

    Watched in two places: the events of `pipeline.dissect_capture` (and every module that
    imported that name), which `dissect`, the CLI, the tests' crafted conversations and the Spark
    data source all go through, and the anomalies batches the export's fast path writes (its rows
    never become pipeline events: `TableWriter.write_batch` is where they surface). What is seen
    is appended to a file, so that workers forked by `--workers` report to the test that started
    them.
    """
    if request.node.get_closest_marker(INTERNAL_ERROR_MARK):
        yield
        return
    from wiredump.dissect import internal, pipeline, tables

    log = tmp_path_factory.mktemp("internal_errors") / "seen.txt"

    def note(line: str) -> None:
        with open(log, "a") as fh:
            fh.write(line.replace("\n", " ") + "\n")

    real_dissect_capture = pipeline.dissect_capture

    def watched_dissect_capture(reader, options):
        for ev in real_dissect_capture(reader, options):
            if ev.kind == pipeline.ANOMALY and ev.obj.kind == internal.INTERNAL_ERROR:
                note(f"{ev.capture} packet {ev.obj.packet}: {ev.obj.detail}")
            yield ev

    real_write_batch = tables.TableWriter.write_batch

    def watched_write_batch(self, batch):
        if self.name == "anomalies" and batch.num_rows:
            rows = batch.select(["capture", "packet", "kind", "detail"]).to_pylist()
            for r in rows:
                if r["kind"] == internal.INTERNAL_ERROR:
                    note(f"{r['capture']} packet {r['packet']}: {r['detail']}")
        return real_write_batch(self, batch)

    monkeypatch.setattr(tables.TableWriter, "write_batch", watched_write_batch)
    monkeypatch.setattr(pipeline, "dissect_capture", watched_dissect_capture)
    import wiredump.cli.source  # noqa: F401  (binds dissect_capture at import: patched below too)

    for mod in list(sys.modules.values()):
        if getattr(mod, "dissect_capture", None) is real_dissect_capture:
            monkeypatch.setattr(mod, "dissect_capture", watched_dissect_capture)
    yield
    if log.exists():
        seen = log.read_text().splitlines()
        pytest.fail(
            f"{len(seen)} internal_error anomaly(ies) during this test (a wiredump bug, not bad input):\n"
            + "\n".join(seen[:10]),
            pytrace=False,
        )
