"""Hostile rules and baseline files: refused with file:line and exit 2, by mechanism, never by luck.

Each case asserts the exit code, the `file:line` of the offence (lines counted here from the text
the test writes) and the mechanism that keeps it cheap: the alias bomb is refused before a single
alias is expanded (values built are counted), the big file is refused after reading only the size
limit (the loader is never called), deep nesting after the first levels (parser events counted),
and tags are never constructed (a marker file a `!!python/object/apply` would create stays absent).
Wall time and peak memory are measured in benchmarks/hostile_yaml.py, not here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.cli_support import run_cli
from tests.conftest import CAPTURES
from wiredump.check import spec
from wiredump.check.spec import SpecError

CAPTURE = CAPTURES / "kafka" / "go-sniffer-kafka.pcap"
pytestmark = pytest.mark.skipif(not CAPTURE.exists(), reason="real captures not found")


def _check(capsys: pytest.CaptureFixture[str], option: str, path: Path) -> tuple[int, str]:
    r = run_cli(capsys, "check", str(CAPTURE), option, str(path))
    assert "Traceback" not in r.err + r.out
    return r.code, r.err


def _where(err: str, path: Path) -> tuple[int, str]:
    """(line, reason) of the one error line `wiredump: FILE:LINE[:COL]: reason`."""
    m = re.search(re.escape(str(path)) + r":(\d+)(?::\d+)?: (.*)", err)
    assert m, err
    return int(m.group(1)), m.group(2)


def billion_laughs() -> tuple[str, int]:
    """The classic bomb (9 levels of 9 aliases: 9^9 strings) and the line of its first alias
    that stands for more than MAX_ALIAS_VALUES values."""
    lines = ["wiredump_baseline: 1", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    sizes = {"a": 10}
    prev, first_bad = "a", 0
    for c in "bcdefghi":
        lines.append(f"{c}: &{c} [" + ",".join(["*" + prev] * 9) + "]")
        if not first_bad and sizes[prev] > spec.MAX_ALIAS_VALUES:
            first_bad = len(lines)
        sizes[c] = 1 + 9 * sizes[prev]
        prev = c
    return "\n".join(lines) + "\n", first_bad


@pytest.mark.parametrize("option", ["--baseline", "--rules"])
def test_billion_laughs_refused_before_expanding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    text, bad_line = billion_laughs()
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    built = [0]
    real_loc = spec.Loc

    def counting_loc(*a: object, **k: object) -> spec.Loc:
        built[0] += 1
        return real_loc(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(spec, "Loc", counting_loc)
    code, err = _check(capsys, option, path)
    assert code == 2
    line, reason = _where(err, path)
    assert line == bad_line == 6  # `d: &d [*c, …]`: *c stands for 1 + 9 * 91 = 820, *d would be 7381
    assert "alias *" in reason and "stands for" in reason
    # Fewer values built than the file spells out (9 + 8 lists of 9 aliases, 11 keys): nothing expanded.
    assert built[0] < 9 * 10 + 20


def test_aliases_within_the_bound_still_work(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(
        "allowed_errors:\n"
        "  kafka.JoinGroup: &join [MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS]\n"
        "  kafka.SyncGroup: *join\n"
    )
    loc = spec.read(str(path), spec.MAX_RULES_BYTES)[0]
    assert loc is not None
    assert loc.plain() == yaml.safe_load(path.read_text())


def test_million_line_rules_refused_at_the_size_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "forbid:\n" + "".join(f"  - gap{i}\n" for i in range(1_000_000))
    path = tmp_path / "million.yaml"
    path.write_text(text)

    def never(*a: object, **k: object) -> None:
        raise AssertionError("a file over the size limit must not be parsed")

    monkeypatch.setattr(spec, "_build", never)
    code, err = _check(capsys, "--rules", path)
    assert code == 2
    line, reason = _where(err, path)
    # The line where byte 256 KiB falls.
    assert line == text.encode()[: 256 << 10].count(b"\n") + 1
    assert "larger than 256 KiB" in reason
    code, err = _check(capsys, "--baseline", path)
    assert code == 2
    line, reason = _where(err, path)
    assert line == text.encode()[: 2 << 20].count(b"\n") + 1
    assert "larger than 2 MiB" in reason


def test_value_count_limit_under_the_byte_limit(tmp_path: Path) -> None:
    """100,001 one-character values fit in 2 MiB but not in MAX_VALUES: refused where the count passes."""
    n = spec.MAX_VALUES + 1
    path = tmp_path / "many.yaml"
    path.write_text("x: [" + ",".join("1" * n) + "]\n")
    assert path.stat().st_size < spec.MAX_BASELINE_BYTES
    with pytest.raises(SpecError) as e:
        spec.read(str(path), spec.MAX_BASELINE_BYTES)
    # Values: the root mapping, `x`, the list, then the ones: the limit is passed at one number
    # `MAX_VALUES - 3` past the first, at column 5 + 2 * that.
    assert e.value.line == 1 and e.value.column == 5 + 2 * (spec.MAX_VALUES - 3)
    assert f"more than {spec.MAX_VALUES} values" in e.value.reason


@pytest.mark.parametrize(
    "tag",
    [
        "!!python/object/apply:os.system",
        "!!python/object/new:os.system",
        "!!python/name:os.system",
        "!!set",
        "!local",
    ],
)
def test_tags_are_refused_never_constructed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tag: str
) -> None:
    marker = tmp_path / "PWNED"
    path = tmp_path / "tagged.yaml"
    path.write_text(f'forbid: [gap]\nlatency_ms: {tag} ["touch {marker}"]\n')
    for option in ("--rules", "--baseline"):
        code, err = _check(capsys, option, path)
        assert code == 2
        line, reason = _where(err, path)
        assert line == 2 and f"tag {tag}" in reason and "not allowed" in reason
    assert not marker.exists()


def test_scalar_tag_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("forbid:\n  - gap\n  - !!python/name:os.system ''\n")
    with pytest.raises(SpecError) as e:
        spec.read(str(path), spec.MAX_RULES_BYTES)
    assert e.value.line == 3 and "!!python/name:os.system" in e.value.reason


@pytest.mark.parametrize("form", ["flow", "block"])
def test_deep_nesting_refused_after_the_first_levels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    if form == "flow":
        text = "forbid: " + "[" * 100_000 + "]" * 100_000 + "\n"
        want_line = 1
    else:
        text = "forbid:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 1500))
        want_line = spec.MAX_DEPTH + 1  # the mapping that opens level 65 starts on that line
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    assert path.stat().st_size < spec.MAX_BASELINE_BYTES
    events = [0]
    real_parse = yaml.parse

    def counting_parse(*a: object, **k: object):  # type: ignore[no-untyped-def]
        for ev in real_parse(*a, **k):  # type: ignore[arg-type]
            events[0] += 1
            yield ev

    monkeypatch.setattr(yaml, "parse", counting_parse)
    code, err = _check(capsys, "--baseline", path)
    assert code == 2
    line, reason = _where(err, path)
    assert line == want_line and f"nesting deeper than {spec.MAX_DEPTH} levels" in reason
    assert events[0] < 3 * spec.MAX_DEPTH + 10  # stopped at the offence, not after the whole file


def test_loader_matches_safe_load_on_real_style_documents(tmp_path: Path) -> None:
    """The event builder gives the values PyYAML's own safe_load gives (an independent reader)."""
    docs = [
        "a: 1\nb: [1, 2.5, true, null, ~, 'x', \"y\", 0x1f, 1e3, .inf]\nc: {d: e, f: [g, {h: i}]}\n",
        '{"wiredump_baseline": 1, "connections": [{"protocol": "kafka", "client": [], "server": []}]}',
        "k: 2024-01-02\nl: |\n  two\n  lines\nm: -7\n",
    ]
    for d in docs:
        loc = spec.load(d, "t.yaml")
        assert loc is not None and loc.plain() == yaml.safe_load(d)


def test_lines_of_keys_and_values(tmp_path: Path) -> None:
    loc = spec.load("a:\n  b: 1\n  c:\n    - x\n", "t.yaml")
    assert loc is not None
    a = loc.value["a"]
    assert (a.key_line("b"), a.key_line("c"), a.value["c"].line, a.value["c"].value[0].line) == (2, 3, 4, 4)


def test_merge_keys_duplicates_and_several_documents(tmp_path: Path) -> None:
    for text, line, reason in [
        ("a: &x {b: 1}\nc:\n  <<: *x\n", 3, "merge keys"),
        ("a: 1\nb: 2\na: 3\n", 3, "duplicate key 'a' (first on line 1)"),
        ("a: 1\n---\nb: 2\n", 2, "more than one YAML document"),
        ("a: *nothing\n", 1, "names no anchor"),
        ("a: &x [1, *x]\n", 1, "refers to a value that contains it"),
    ]:
        with pytest.raises(SpecError) as e:
            spec.load(text, "t.yaml")
        assert e.value.line == line and reason in e.value.reason, (text, e.value)


@pytest.mark.parametrize(
    ("raw", "line", "reason"),
    [
        (b"forbid:\n  - gap\n  - a\x00b\n", 3, "character U+0000 is not allowed"),
        (b"forbid:\n  - gap\x07\n", 2, "character U+0007 is not allowed"),
        (b"forbid:\n  - gap\n  - \xff\xfe\n", 3, "not UTF-8 text (byte 0xff)"),
    ],
)
def test_bytes_yaml_forbids_have_a_line(tmp_path: Path, raw: bytes, line: int, reason: str) -> None:
    path = tmp_path / "r.yaml"
    path.write_bytes(raw)
    with pytest.raises(SpecError) as e:
        spec.read(str(path), spec.MAX_RULES_BYTES)
    assert e.value.line == line and reason in e.value.reason


def test_libyamls_own_nesting_refusal_is_reported_as_too_deep() -> None:
    """PyYAML 6.0.4's libyaml refuses 1,000 levels in its scanner, ahead of the events the
    loader counts: the message is the loader's own, at libyaml's line and column (1-based)."""
    mark = yaml.Mark("deep.yaml", 0, 2, 7, None, None)  # 0-based line 2, column 7
    e = yaml.scanner.ScannerError("while increasing flow level", mark, "exceeded maximum nesting depth", mark)
    err = spec._yaml_error(e, "deep.yaml", "")
    assert (err.line, err.column) == (3, 8)
    assert err.reason == f"nesting deeper than {spec.MAX_DEPTH} levels"
