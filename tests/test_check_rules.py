"""Rules and baseline files: validation with the line of the mistake, exit code 2, matching semantics."""

from __future__ import annotations

from pathlib import Path

import pytest

from wiredump.check import baseline as baseline_file
from wiredump.check import names
from wiredump.check import rules as rules_file
from wiredump.check.percentile import nearest_rank
from wiredump.check.spec import Loc, SpecError, load
from wiredump.cli.entry import main

DATA = Path(__file__).parent / "data" / "check"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    out, err = capsys.readouterr()
    return code, out, err


def rules_error(tmp_path: Path, text: str) -> SpecError:
    p = tmp_path / "rules.yaml"
    p.write_text(text)
    with pytest.raises(SpecError) as e:
        rules_file.load(str(p))
    return e.value


# -- rules file mistakes ---------------------------------------------------------------------------
def test_unknown_top_key_names_its_line_and_suggests(tmp_path: Path) -> None:
    e = rules_error(tmp_path, "max_unanswered: 0\nforbidd: [gap]\n")
    assert e.line == 2
    assert "unknown key 'forbidd'" in e.reason and "did you mean 'forbid'" in e.reason


def test_unknown_key_inside_expect(tmp_path: Path) -> None:
    e = rules_error(tmp_path, "expect:\n  kafka.Produce:\n    min: 1\n    maxx: 3\n")
    assert e.line == 4 and "'maxx'" in e.reason


def test_wrong_types(tmp_path: Path) -> None:
    e = rules_error(tmp_path, "forbid: [gap]\nmax_unanswered: lots\n")
    assert e.line == 2 and "whole number" in e.reason and "'lots'" in e.reason
    e = rules_error(tmp_path, "latency_ms:\n  kafka.Produce: {p99: fast}\n")
    assert e.line == 2 and "must be a number" in e.reason
    e = rules_error(tmp_path, "allowed_errors:\n  kafka.*: {a: 1}\n")
    assert e.line == 2 and "must be a list" in e.reason
    e = rules_error(tmp_path, "forbid: 3\n")
    assert e.line == 1 and "must be text" in e.reason
    e = rules_error(tmp_path, "versions:\n  kafka.Fetch: {min: 5, max: 2}\n")
    assert e.line == 2 and "above max" in e.reason


def test_bad_names_and_limits(tmp_path: Path) -> None:
    e = rules_error(tmp_path, "expect:\n  kafak.Produce: {min: 1}\n")
    assert e.line == 2 and "unknown protocol 'kafak'" in e.reason
    e = rules_error(tmp_path, "expect:\n  Produce: {min: 1}\n")
    assert e.line == 2 and "protocol.Type" in e.reason
    e = rules_error(tmp_path, "latency_ms:\n  kafka.*:\n    p99: 5\n    p101: 9\n")
    assert e.line == 4 and "p101" in e.reason


def test_bad_yaml_and_duplicates(tmp_path: Path) -> None:
    e = rules_error(tmp_path, "forbid: [gap\nmax_unanswered: 0\n")
    assert e.line is not None and e.line >= 2 and "not valid YAML" in e.reason
    e = rules_error(tmp_path, "forbid: [gap]\nmax_unanswered: 0\nforbid: [malformed]\n")
    assert e.line == 3 and "duplicate key 'forbid'" in e.reason and "line 1" in e.reason
    e = rules_error(tmp_path, "")
    assert "empty" in e.reason
    e = rules_error(tmp_path, "- forbid\n")
    assert e.line == 1 and "mapping" in e.reason


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("forbid: [gap]\nmax_unanswerd: 0\n", 2, "unknown key 'max_unanswerd'"),
        ("expect:\n  kafka.Produce: {min: many}\n", 2, "whole number"),
        ("forbid: [gap\n", 2, "not valid YAML"),
    ],
)
def test_cli_exits_2_with_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int, words: str
) -> None:
    p = tmp_path / "rules.yaml"
    p.write_text(text)
    # The capture does not exist: the rules file is judged first, before any capture is read.
    code, out, err = run(["check", str(tmp_path / "none.pcap"), "--rules", str(p)], capsys)
    assert code == 2
    assert f"{p}:{line}" in err and words in err
    assert "Traceback" not in err and out == ""


def test_cli_exit_2_for_missing_rules_or_capture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["check", "x.pcap", "--rules", str(tmp_path / "nope.yaml")], capsys)
    assert code == 2 and "cannot read" in err
    code, _, err = run(
        ["check", str(tmp_path / "none.pcap"), "--rules", str(DATA / "rules-clean.yaml")], capsys
    )
    assert code == 2 and "none.pcap" in err and "Traceback" not in err
    code, _, err = run(["check", "x.pcap"], capsys)
    assert code == 2 and "--rules" in err
    not_a_capture = str(DATA / "rules-clean.yaml")
    code, _, err = run(["check", not_a_capture, "--rules", not_a_capture], capsys)
    assert code == 2 and "not a pcap" in err and "Traceback" not in err


def test_sample_rules_file_is_valid() -> None:
    r = rules_file.load(str(DATA / "rules-clean.yaml"))
    sections = [x.section for x in r.rules]
    assert sections.count("forbid") == 5 and sections.count("latency_ms") == 3
    errs = [x for x in r.rules if x.section == "allowed_errors"]
    assert errs[1].codes == {0} and errs[1].error_names == {"member_id_required"}
    assert errs[1].line == 6


# -- baseline file mistakes ------------------------------------------------------------------------
BASE = """wiredump_baseline: 1
fields: [type, version, batch, repeat]
skip: [pulsar.PING]
connections:
- protocol: kafka
  client:
  - {type: Produce, version: 9, batch: 3, repeat: 2}
  server:
  - {type: Produce, version: 9}
"""


def test_baseline_loads(tmp_path: Path) -> None:
    p = tmp_path / "b.yaml"
    p.write_text(BASE)
    conns, config = baseline_file.load(str(p))
    assert config.fields == {"type", "version", "batch", "repeat"}
    assert conns[0].client[0].count == 2 and conns[0].client[0].data == {
        "type": "Produce",
        "version": 9,
        "batch": 3,
    }


@pytest.mark.parametrize(
    ("old", "new", "line", "words"),
    [
        ("batch: 3,", "bach: 3,", 7, "unknown key 'bach'"),
        ("batch: 3,", "messages: 3,", 7, "written `batch: N`"),
        ("version: 9, batch", "version: nine, batch", 7, "whole number"),
        ("- protocol: kafka", "- protocol: kafkaa", 5, "unknown protocol"),
        ("fields: [type, version, batch, repeat]", "fields: [type, messages, repeat]", 7, "'version'"),
        ("repeat: 2}", "repeat: 0}", 7, "at least 1"),
        ("wiredump_baseline: 1", "wiredump_baseline: 7", 1, "not supported"),
        (
            "skip: [pulsar.PING]",
            "skip: [pulsar.PING]\ntopic_patterns: ['orders-(']",
            4,
            "bad regular expression",
        ),
    ],
)
def test_baseline_mistakes_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, line: int, words: str
) -> None:
    assert old in BASE
    p = tmp_path / "b.yaml"
    p.write_text(BASE.replace(old, new))
    code, _, err = run(["check", str(tmp_path / "none.pcap"), "--baseline", str(p)], capsys)
    assert code == 2, err
    assert f"{p}:{line}" in err and words in err


def test_unknown_field_option_is_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "b.yaml"
    p.write_text(BASE)
    code, _, err = run(["check", "x.pcap", "--baseline", str(p), "--ignore", "topicz"], capsys)
    assert code == 2 and "unknown field 'topicz'" in err
    code, _, err = run(["check", "x.pcap", "--baseline", str(p), "--include", "compression"], capsys)
    assert code == 2 and "recorded without" in err


# -- semantics ---------------------------------------------------------------------------------------
def test_most_specific_name_wins() -> None:
    loc = Loc(None, 1, 1, "t")
    pats = [names.parse(loc, "*", 0), names.parse(loc, "kafka.*", 1), names.parse(loc, "kafka.Fetch", 2)]
    assert names.best(pats, "kafka", "Fetch").text == "kafka.Fetch"
    assert names.best(pats, "kafka", "Produce").text == "kafka.*"
    assert names.best(pats, "pulsar", "SEND").text == "*"
    assert names.parse(loc, "pulsar.send", 0).matches("pulsar", "SEND")  # case-insensitive
    assert not names.parse(loc, "kafka.Fetch", 0).matches("kafka", "FetchSnapshot")


def test_nearest_rank_percentile() -> None:
    # Nearest rank: value at rank ceil(p/100 * n); always a measured value.
    assert nearest_rank([1, 2, 3, 4], 50) == 2
    assert nearest_rank(list(range(1, 11)), 90) == 9
    assert nearest_rank(list(range(1, 11)), 99) == 10
    assert nearest_rank([7], 1) == 7
    assert nearest_rank([], 50) is None


def test_loader_keeps_lines() -> None:
    root = load("a:\n  b: [1, 2]\n  c: x\n", "t")
    assert root is not None
    assert root.value["a"].value["c"].line == 3
    assert root.value["a"].value["b"].value[1].line == 2


def test_colour_only_when_asked_or_on_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from wiredump.check.outcome import Offender, Outcome
    from wiredump.check.report import console_for, text

    outcomes = [
        Outcome("run.pcap", "forbid [gap]", False, "1 occurrence", 1, "r.yaml", [Offender("run.pcap", 7, 0)]),
        Outcome("run.pcap", "max_unanswered *", True, "0 unanswered", 2, "r.yaml"),
    ]
    plain = tmp_path / "plain.txt"
    with open(plain, "w") as fh:  # a file, as a CI log is: no escape codes
        text(outcomes, console_for(fh, None))
    body = plain.read_text()
    assert "\x1b[" not in body
    assert "  FAIL forbid [gap]: 1 occurrence (r.yaml:1)\n       packet 7 stream 0\n" in body
    assert "FAILED: 1 of 2 checks broken" in body
    forced = tmp_path / "colour.txt"
    with open(forced, "w") as fh:
        text(outcomes, console_for(fh, True))
    assert "\x1b[" in forced.read_text() and "forbid [gap]" in forced.read_text()
