"""-V / show print each message's key, value and headers (`--values none|short|full`), escaped.

Expected values come from tshark's kafka.message_value (capture pinned to versions tshark decodes)
and from a hand-built frame whose values the test chose.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli_support import run_cli
from wiredump.cli.render import VALUE_WIDTH, detail_lines, plain_tree_line
from wiredump.dissect.model import Frame, Message

PINNED = "kafka/kafka-python-pinned-2.5.pcap"


def tshark_values(path: Path, packet: int) -> list[bytes]:
    if shutil.which("tshark") is None:
        pytest.skip("tshark not installed")
    out = subprocess.run(
        [
            "tshark",
            "-r",
            str(path),
            "-Y",
            f"frame.number == {packet}",
            "-T",
            "fields",
            "-e",
            "kafka.message_value",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # tshark prints <MISSING> for a record whose value is empty (the producer sent b"")
    return [b"" if v == "<MISSING>" else bytes.fromhex(v) for v in out.split(",")]


def value_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("value:")]


def test_show_full_values_are_tsharks(capsys: pytest.CaptureFixture[str], captures: Path) -> None:
    path = captures / PINNED
    values = tshark_values(path, 45)
    assert len(values) > 10
    r = run_cli(capsys, "show", path, "-p", "45", "--values", "full")
    assert r.code == 0, r.err
    expected = [
        'value: "' + v.decode().replace("\\", "\\\\").replace('"', '\\"') + f'" (bytes[{len(v)}])'
        for v in values
    ]
    assert value_lines(r.out) == expected


def test_short_values_are_cut_with_the_full_length(
    capsys: pytest.CaptureFixture[str], captures: Path
) -> None:
    path = captures / PINNED
    values = tshark_values(path, 45)
    r = run_cli(capsys, path, "-V", "-Y", "packet == 45")
    assert r.code == 0, r.err
    lines = value_lines(r.out)
    assert len(lines) == len(values)
    for line, v in zip(lines, values, strict=True):
        text = v.decode()
        shown = text[:VALUE_WIDTH].replace("\\", "\\\\").replace('"', '\\"')
        assert line == f'value: "{shown}"' + ("…" if len(text) > VALUE_WIDTH else "") + f" (bytes[{len(v)}])"
    r = run_cli(capsys, path, "-V", "--values", "none", "-Y", "packet == 45")
    assert value_lines(r.out) == [] and "key_size: " in r.out


def test_hostile_and_binary_values_are_escaped() -> None:
    prefix = b"\x1b[31mred\x1b]0;pwned\x07\x1b[2J"
    hostile = prefix + b"A" * 100
    binary = bytes(range(200, 256)) + b"\x00"
    f = Frame(protocol="kafka", type="Produce", type_code=0, kind="request")
    f.messages = [
        Message(
            "produce",
            len(hostile),
            topic="t",
            key=b"k\x00ey",
            value=hostile,
            headers=[("h\x1b", b"\x00\x01")],
        ),
        Message("produce", len(binary), topic="t", value=binary),
    ]
    short = [plain_tree_line(t) for t in detail_lines(f, "short")]
    text = "\n".join(short)
    assert "\x1b" not in text and "\x00" not in text and "\x07" not in text
    kept = "A" * (VALUE_WIDTH - len(prefix))
    assert (
        f'            value: "\\x1b[31mred\\x1b]0;pwned\\a\\x1b[2J{kept}"… (bytes[{len(hostile)}])' in short
    )
    assert '            key: "k\\0ey" (bytes[4])' in short
    assert '                h\\x1b: "\\0\\x01" (bytes[2])' in short
    assert "            value: " + binary[:32].hex(" ") + " … (bytes[57])" in short
    full = [plain_tree_line(t) for t in detail_lines(f, "full")]
    assert "            value: " + binary.hex(" ") + " (bytes[57])" in full
