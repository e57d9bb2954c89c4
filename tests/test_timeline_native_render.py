"""The plain timeline rendered by the engine (`wiredump._engine.TimelineFeed`) against the Python
renderer (`TimelinePrinter`), byte for byte.

`wiredump CAPTURE > file` renders its lines natively (`timeline.native_wanted`); the Python
renderer stays for colour, -V, -x, -Y, JSON and fields, and remains the reference: both render
the same engine records, so any difference on stdout, stderr or the exit code is a bug of the
port. `WIREDUMP_TIMELINE=python` forces the Python renderer for the same command line. Every
capture under the shared captures and tests/data is run with each -t format, -A, -c, -l,
several captures at once, decode-as of the wrong protocol, and crafted captures (escapes in
wire strings and in a capture's name, IPv6, snap-length notes, no broker traffic, a truncated
file).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import Result, run_cli
from conftest import CAPTURES, ROOT
from crafted import Conn, Rec, write_pcap
from test_cli_trust import HOSTILE, metadata_v1, one_request, port80

from wiredump.cli.plain import RENDERER_ENV

PATTERNS = ("*.pcap", "*.pcapng", "*.pcap.gz", "*.cap")
CAPTURE_FILES = sorted(
    {p for root in (CAPTURES, ROOT / "tests" / "data") for pat in PATTERNS for p in root.rglob(pat)}
)
"""Every capture of the shared folder and of tests/data."""


def ids(paths: list[Path]) -> list[str]:
    return [f"{p.parent.name}/{p.name}" for p in paths]


def both(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    """The command run with the native renderer and with the Python one; asserts they agree and
    that the native one was used; returns the native run's result."""
    from wiredump import _engine

    made: list[object] = []
    real = _engine.TimelineFeed

    def counting(**kw: object) -> object:
        feed = real(**kw)
        made.append(feed)
        return feed

    monkeypatch.setattr(_engine, "TimelineFeed", counting)
    monkeypatch.delenv(RENDERER_ENV, raising=False)
    native = run_cli(capsys, *args)
    assert len(made) == 1 or ("-c" in args and args[args.index("-c") + 1] == "0"), "native path not taken"
    monkeypatch.setenv(RENDERER_ENV, "python")
    python = run_cli(capsys, *args)
    assert len(made) <= 1, "the Python renderer was asked for and the native one was used"
    monkeypatch.delenv(RENDERER_ENV)
    assert native.err == python.err
    assert native.code == python.code
    if native.out != python.out:  # show the first line that differs, not two walls of text
        a, b = native.out.splitlines(), python.out.splitlines()
        first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        pytest.fail(
            f"line {first + 1} differs (native {len(a)} lines, python {len(b)}):\n"
            f"native: {a[first] if first < len(a) else '<end>'!r}\n"
            f"python: {b[first] if first < len(b) else '<end>'!r}"
        )
    return native


def test_every_capture_is_found() -> None:
    """The globs find the shared captures of all four protocols (a vacuous list would pass)."""
    if not CAPTURES.is_dir():
        pytest.skip(f"real captures not found at {CAPTURES}")
    assert {p.parent.name for p in CAPTURE_FILES} >= {"kafka", "pulsar", "pravega", "tank"}
    assert len(CAPTURE_FILES) >= 20


VARIANTS = [
    [],
    ["-t", "d"],
    ["-t", "a"],
    ["-t", "ad"],
    ["-t", "e"],
    ["-A"],
    ["-A", "-t", "d"],
    ["-c", "7"],
    ["-l"],
]


@pytest.mark.parametrize("variant", VARIANTS, ids=[" ".join(v) or "default" for v in VARIANTS])
@pytest.mark.parametrize("path", CAPTURE_FILES, ids=ids(CAPTURE_FILES))
def test_every_capture_same_bytes(capsys, monkeypatch, path: Path, variant: list[str]) -> None:
    res = both(capsys, monkeypatch, str(path), *variant)
    assert res.code == 0
    if "-c" in variant:
        assert len(res.out.splitlines()) <= 7


def by_protocol() -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for p in CAPTURE_FILES:
        out.setdefault(p.parent.name, []).append(p)
    return out


@pytest.mark.parametrize(
    "variant", [[], ["-t", "d"], ["-A", "-t", "ad"], ["-c", "40"], ["-l", "-c", "300"]], ids=str
)
def test_several_captures_at_once(capsys, monkeypatch, variant: list[str]) -> None:
    """Every capture in one run: a `==> name <==` head each, relative times from each one's first
    packet, -c across captures."""
    if not CAPTURE_FILES:
        pytest.skip("no captures")
    res = both(capsys, monkeypatch, *map(str, CAPTURE_FILES), *variant)
    if "-c" not in variant:
        assert res.out.count("==> ") == len(CAPTURE_FILES)


@pytest.mark.parametrize("proto", ["kafka", "pulsar", "pravega", "tank"])
def test_decoded_as_the_wrong_protocol(capsys, monkeypatch, proto: str) -> None:
    """Each protocol's first capture decoded as each other protocol on its server ports
    (`--decode-as`, as test_engine_native does): malformed and undecodable frames, resyncs,
    oversize frames — the badges and anomaly lines."""
    from wiredump._engine import Dissector

    from wiredump.dissect.pipeline import Options

    groups = by_protocol()
    if proto not in groups:
        pytest.skip(f"no {proto} capture")
    for other, paths in sorted(groups.items()):
        if other == proto or other not in ("kafka", "pulsar", "pravega", "tank"):
            continue
        path = paths[0]
        ports = {e.obj.server_port for e in Dissector(str(path), Options()) if e.kind == "connection"}
        assert ports
        args = [a for port in sorted(ports) for a in ("-d", f"{port}={proto}")]
        both(capsys, monkeypatch, str(path), *args)
        both(capsys, monkeypatch, str(path), *args, "-A", "-t", "d")


def test_a_truncated_capture(capsys, monkeypatch, tmp_path) -> None:
    """A capture cut inside a record: the lines before, the note on stderr, exit 2 — alone and
    followed by another capture."""
    if not CAPTURE_FILES:
        pytest.skip("no captures")
    src = CAPTURES / "kafka" / "kafka-python-basic.pcap"
    data = src.read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[: len(data) * 2 // 3])
    res = both(capsys, monkeypatch, str(cut))
    assert res.code == 2 and "capture is truncated" in res.err and res.out
    both(capsys, monkeypatch, str(cut), str(src), "-A")


def test_crafted_captures(capsys, monkeypatch, tmp_path) -> None:
    """Escapes in wire strings and in a capture's name, IPv6 endpoints, snap-length notes (one
    line per capture; each line with -A), a capture with no broker traffic, an empty one."""
    hostile = one_request(tmp_path / "hostile.pcap", [HOSTILE, "orders"])
    v6 = one_request(tmp_path / "v6.pcap", ["orders"], host="::1")
    web = port80(tmp_path / "web.pcap", 6)
    recs: list[Rec] = []
    c = Conn(recs, 40000, 9092)
    c.client(metadata_v1(1, "c", ["orders"]))
    for r in recs:
        r.orig_len = len(r.data) + 4
    snap = write_pcap(tmp_path / "snap.pcap", recs)
    empty = write_pcap(tmp_path / "empty.pcap", [])
    named = tmp_path / "odd\x1bname.pcap"
    named.write_bytes(hostile.read_bytes())
    for args in ([hostile], [v6], [web], [snap], [snap, "-A"], [empty], [snap, web, v6], [named, web]):
        both(capsys, monkeypatch, *map(str, args))
    res = both(capsys, monkeypatch, str(hostile))
    assert "\x1b" not in res.out and "\\x1b" in res.out
    res = both(capsys, monkeypatch, str(named), str(web))
    assert "==> " in res.out and "\x1b" not in res.out


def test_count_zero_opens_nothing(capsys, monkeypatch, tmp_path) -> None:
    """-c 0 prints nothing and, as the Python printer, opens no capture (a missing file is no
    error then)."""
    res = both(capsys, monkeypatch, str(tmp_path / "missing.pcap"), "-c", "0")
    assert res == Result(0, "", "")


def test_missing_capture_after_a_good_one(capsys, monkeypatch, tmp_path) -> None:
    """The first capture's lines, then the error for the second and exit 2, from both."""
    if not CAPTURE_FILES:
        pytest.skip("no captures")
    res = both(capsys, monkeypatch, str(CAPTURE_FILES[0]), str(tmp_path / "missing.pcap"))
    assert res.code == 2 and res.out


def test_switch_chooses_the_renderer(capsys, monkeypatch, tmp_path) -> None:
    """The native renderer only for the plain timeline: not with colour, -V, -x, -Y, -T, or when
    the Python one is asked for."""
    from wiredump import _engine

    made: list[object] = []
    real = _engine.TimelineFeed

    def counting(**kw: object) -> object:
        made.append(kw)
        return real(**kw)

    monkeypatch.setattr(_engine, "TimelineFeed", counting)
    pcap = one_request(tmp_path / "one.pcap", ["orders"])
    monkeypatch.delenv(RENDERER_ENV, raising=False)
    for args, native in [
        ([], True),
        (["-t", "ad", "-A"], True),
        (["-l"], True),
        (["--color"], False),
        (["-V"], False),
        (["-x"], False),
        (["-Y", "protocol == kafka"], False),
        (["-T", "jsonl"], False),
        (["-T", "fields", "-e", "frame.number"], False),
    ]:
        before = len(made)
        res = run_cli(capsys, str(pcap), *args)
        assert res.code == 0, res.err
        assert len(made) - before == (1 if native else 0), args
    monkeypatch.setenv(RENDERER_ENV, "python")
    before = len(made)
    assert run_cli(capsys, str(pcap)).code == 0
    assert len(made) == before
    # What Python declares reaches the renderer from Python.
    from wiredump.cli import notes
    from wiredump.cli.plain import SHOWN_ANOMALIES

    kw = made[0]
    assert isinstance(kw, dict)
    assert kw["shown"] == set(SHOWN_ANOMALIES) and kw["titles"] == notes.protocol_titles()


def test_progress_every_1024_packets_on_both_paths(capsys, monkeypatch, tmp_path) -> None:
    """The progress bar is updated at every 1024th packet by the native timeline as by the
    Python one (`Run.events`' hook), and nothing of it reaches stdout."""
    from wiredump.cli import source

    pcap = port80(tmp_path / "web.pcap", 2100)
    seen: list[int] = []
    monkeypatch.setattr(source.Progress, "wanted", staticmethod(lambda: True))
    monkeypatch.setattr(source.Progress, "update", lambda self, pos, packets: seen.append(packets))
    both(capsys, monkeypatch, str(pcap))
    assert seen == [1024, 2048, 1024, 2048]  # native run, then Python run
