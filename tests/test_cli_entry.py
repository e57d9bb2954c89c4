"""`wiredump CAPTURE…` with no option, the main job, runs without the command-line framework
(`entry.main` → `plain.default_timeline`): the same stdout, stderr and exit code as the same
timeline parsed by typer, and none of typer, rich, pydantic or pyarrow loaded.

The typer run of the same timeline is `wiredump timeline --no-progress CAPTURE…`: an option
sends it through the parser, and `--no-progress` changes nothing where stderr is not a terminal
(as here), so any difference between the two runs is a difference of the two ways in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import Result, run_cli

from wiredump.cli import entry, plain, tty

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = sorted((ROOT / "samples").glob("*.pcap"))


def test_samples_are_found() -> None:
    assert len(SAMPLES) == 4, SAMPLES


def parses(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The command lines typer's parser is given from now on (`app.dispatch`, which still runs)."""
    from wiredump.cli import app

    parsed: list[list[str]] = []
    real = app.dispatch

    def counting(args: list[str]) -> None:
        parsed.append(args)
        real(args)

    monkeypatch.setattr(app, "dispatch", counting)
    return parsed


def both(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *paths: str) -> Result:
    """`wiredump PATHS…` by the short way and by typer; asserts they agree and that the short way
    was taken (typer's parser was never called); returns its result."""
    parsed = parses(monkeypatch)
    short = run_cli(capsys, *paths)
    assert parsed == [], "the plain timeline went through typer"
    full = run_cli(capsys, "timeline", "--no-progress", *paths)
    assert parsed == [["timeline", "--no-progress", *paths]]
    assert (short.code, short.err) == (full.code, full.err)
    assert short.out == full.out
    return short


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_each_sample(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    r = both(capsys, monkeypatch, str(path))
    assert r.code == 0 and r.err == ""
    # The first line of each sample, read from its bytes independently elsewhere
    # (tests/test_cli_timeline.py); here: one line per frame, every line numbered by its packet.
    lines = r.out.splitlines()
    assert len(lines) > 5
    assert all(line.split()[0].isdigit() for line in lines)


def test_kafka_sample_first_lines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first request and its response, as the capture holds them: packets 4 and 6 of
    kafka-basic are ApiVersions v4 with correlation id 1 (bytes 4-11 of the TCP payloads:
    key 0x0012, version 0x0004, id 0x00000001), the request from kafka-python 3.0.12."""
    r = both(capsys, monkeypatch, str(ROOT / "samples" / "kafka-basic.pcap"))
    first, second = r.out.splitlines()[:2]
    assert first.split()[0] == "4" and "ApiVersions v4 id=1 → #6" in first and "kafka-python 3.0.12" in first
    assert second.split()[0] == "6" and "ApiVersions v4 id=1 ← #4" in second


def test_several_captures(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    r = both(capsys, monkeypatch, *map(str, SAMPLES[:2]))
    assert r.out.count("==> ") == 2


def test_missing_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    r = both(capsys, monkeypatch, str(tmp_path / "nope.pcap"))
    assert r.code == 2 and r.out == ""
    assert r.err.startswith("wiredump: ") and "nope.pcap" in r.err and "\n" == r.err[-1]
    assert r.err.count("\n") == 1


def test_not_a_capture(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("this is not a capture\n")
    r = both(capsys, monkeypatch, str(bad))
    assert r.code == 2 and r.err.startswith("wiredump: ") and "Traceback" not in r.err


def test_truncated_capture(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A capture cut inside its last record: the frames before it, the truncation on stderr, exit 2."""
    data = (ROOT / "samples" / "kafka-basic.pcap").read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:-7])
    r = both(capsys, monkeypatch, str(cut))
    assert r.code == 2 and "truncated" in r.err and r.out.splitlines()[0].split()[0] == "4"


def test_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`-` is standard input, not an option: the short way takes it."""
    import io

    data = (ROOT / "samples" / "tank-bundles.pcap").read_bytes()

    class Stdin:
        buffer = io.BytesIO(data)

    monkeypatch.setattr(sys, "stdin", Stdin())
    from wiredump.cli import app

    parsed: list[list[str]] = []
    monkeypatch.setattr(app, "dispatch", lambda args: parsed.append(args))
    from_stdin = run_cli(capsys, "-")
    assert parsed == [] and from_stdin.code == 0
    from_file = run_cli(capsys, str(ROOT / "samples" / "tank-bundles.pcap"))
    assert from_stdin.out == from_file.out and from_stdin.out


def test_what_takes_the_short_way() -> None:
    files = ["a.pcap", "b.pcap"]
    assert entry.plain_captures(["timeline", *files]) == files
    assert entry.plain_captures(["timeline", "-"]) == ["-"]
    assert entry.plain_captures(["timeline"]) is None  # typer says what is missing
    assert entry.plain_captures(["timeline", "a.pcap", "-V"]) is None
    assert entry.plain_captures(["timeline", "--", "a.pcap"]) is None
    assert entry.plain_captures(["export", "a.pcap"]) is None


def test_colour_terminal_takes_the_full_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a colour terminal the timeline is rich's, which the short way does not make: it declines
    before opening anything (the path does not exist, and no error is raised)."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(tty, "stdout_tty", lambda: True)
    assert plain.default_timeline(["/nonexistent.pcap"]) is None
    monkeypatch.setenv("NO_COLOR", "1")
    with pytest.raises(Exception, match="nonexistent"):
        plain.default_timeline(["/nonexistent.pcap"])


def test_python_renderer_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(plain.RENDERER_ENV, "python")
    assert plain.default_timeline(["/nonexistent.pcap"]) is None


def loaded_by(args: list[str], heavy: set[str]) -> tuple[list[str], str]:
    """`wiredump ARGS…` in a fresh interpreter: which of the `heavy` packages it loaded, its stdout."""
    code = (
        "import sys\n"
        "from wiredump.cli.entry import main\n"
        f"main({args!r})\n"
        f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({sorted(heavy)!r}))\n"
        "import json; print('LOADED', json.dumps(heavy), file=sys.stderr)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    line = next(x for x in p.stderr.splitlines() if x.startswith("LOADED "))
    return json.loads(line[len("LOADED ") :]), p.stdout


def test_short_way_loads_no_framework() -> None:
    """In a fresh interpreter, `wiredump X > pipe` loads none of typer, rich, pydantic, pyarrow."""
    heavy, out = loaded_by(
        [str(ROOT / "samples" / "kafka-basic.pcap")], {"typer", "rich", "pydantic", "pyarrow", "click"}
    )
    assert heavy == []
    assert "ApiVersions v4 id=1" in out.splitlines()[0]


# -- `wiredump export CAPTURE… -o DIR` ----------------------------------------------------------


def both_exports(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *args: str
) -> tuple[Result, Path]:
    """`wiredump export ARGS… -o DIR` by the short way and by typer (`--format parquet`, the
    default, sends it through the parser); asserts the short way was taken, that both say the
    same and exit alike, and that every file they wrote holds the same table (pyarrow reads them
    back equal). Returns the short way's result and directory."""
    import pyarrow.parquet as pq

    parsed = parses(monkeypatch)
    short_dir, full_dir = tmp_path / "short", tmp_path / "full"
    short = run_cli(capsys, "export", *args, "-o", str(short_dir))
    assert parsed == [], "the export went through typer"
    full = run_cli(capsys, "export", "--format", "parquet", *args, "-o", str(full_dir))
    assert len(parsed) == 1
    assert (short.code, short.out, short.err) == (full.code, full.out, full.err)
    short_files = sorted(p.name for p in short_dir.glob("*")) if short_dir.exists() else []
    full_files = sorted(p.name for p in full_dir.glob("*")) if full_dir.exists() else []
    assert short_files == full_files
    for name in short_files:
        assert pq.read_table(short_dir / name).equals(pq.read_table(full_dir / name)), name
    return short, short_dir


def test_export_kafka_sample(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The Kafka sample's tables, by both ways: its first frame is packet 4, ApiVersions v4 with
    correlation id 1 (key 0x0012, version 0x0004, id 0x00000001 at bytes 4-11 of the payload)."""
    import pyarrow.parquet as pq

    r, out = both_exports(capsys, monkeypatch, tmp_path, str(ROOT / "samples" / "kafka-basic.pcap"))
    assert r.code == 0 and r.out == ""
    assert r.err.startswith("frames: ") and r.err.count("\n") == 1
    frames = pq.read_table(out / "frames.parquet").to_pylist()
    first = frames[0]
    assert (first["packet"], first["type"], first["version"], first["correlation_id"]) == (
        4,
        "ApiVersions",
        4,
        1,
    )
    assert f"frames: {len(frames)}," in r.err


def test_export_options_anywhere(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`-o DIR` before the captures, `--out=DIR`, two captures: the short way still."""
    from wiredump.cli import app

    monkeypatch.setattr(app, "dispatch", lambda argv: pytest.fail(f"typer parsed {argv}"))
    a, b = map(str, SAMPLES[:2])
    r1 = run_cli(capsys, "export", "-o", str(tmp_path / "one"), a, b)
    r2 = run_cli(capsys, "export", a, f"--out={tmp_path / 'two'}", b)
    assert r1.code == r2.code == 0 and r1.err == r2.err
    assert sorted(p.name for p in (tmp_path / "one").glob("*.parquet")) == sorted(
        p.name for p in (tmp_path / "two").glob("*.parquet")
    )


def test_export_missing_and_truncated(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    r, _ = both_exports(capsys, monkeypatch, tmp_path / "a", str(tmp_path / "nope.pcap"))
    assert r.code == 2 and r.err.startswith("wiredump: ") and "nope.pcap" in r.err and r.err.count("\n") == 1
    data = (ROOT / "samples" / "kafka-basic.pcap").read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:-7])
    r, _ = both_exports(capsys, monkeypatch, tmp_path / "b", str(cut))
    assert r.code == 2 and "capture is truncated" in r.err and "Traceback" not in r.err


def test_export_unwritable_directory(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`-o` under a regular file: one line, exit 2, by both ways (nothing is written)."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    sample = str(SAMPLES[0])
    short = run_cli(capsys, "export", sample, "-o", str(blocker))
    full = run_cli(capsys, "export", "--format", "parquet", sample, "-o", str(blocker))
    assert short.code == full.code == 2 and short.err == full.err
    assert short.err == f"wiredump: -o {blocker}: not a directory\n"


def test_what_export_takes_the_short_way() -> None:
    from wiredump.cli.exporting import plain_export

    assert plain_export(["export", "a.pcap", "-o", "d"]) == (["a.pcap"], Path("d"))
    assert plain_export(["export", "--out", "d", "a.pcap", "b.pcap"]) == (["a.pcap", "b.pcap"], Path("d"))
    assert plain_export(["export", "-", "--out=d"]) == (["-"], Path("d"))
    assert plain_export(["export", "a.pcap"]) is None  # typer says -o is missing
    assert plain_export(["export", "-o", "d"]) is None  # …and that a capture is
    assert plain_export(["export", "a.pcap", "-o", "d", "--values"]) is None
    assert plain_export(["export", "a.pcap", "-o", "d", "-o", "e"]) is None
    assert plain_export(["export", "a.pcap", "-o"]) is None
    assert plain_export(["export", "a.pcap", "-o", "--values"]) is None
    assert plain_export(["timeline", "a.pcap", "-o", "d"]) is None


def test_short_export_loads_no_framework(tmp_path: Path) -> None:
    """In a fresh interpreter, `wiredump export X -o DIR` loads none of typer, rich, pydantic,
    nor pyarrow (the engine writes the Parquet files)."""
    args = ["export", str(ROOT / "samples" / "kafka-basic.pcap"), "-o", str(tmp_path)]
    heavy, _ = loaded_by(args, {"typer", "rich", "pydantic", "click", "pyarrow", "numpy"})
    assert heavy == []
    assert (tmp_path / "frames.parquet").exists()
