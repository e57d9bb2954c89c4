"""`wiredump check` and `wiredump baseline`: regression checks of captured traffic for CI.

Exit codes are the contract CI relies on: 0 every check holds, 1 a check broke, 2 the
input is wrong (rules or baseline file, with its line and reason; unreadable capture;
bad option). The rules file and the baseline are read and validated before any capture
is, so a typo fails fast. Captures are read once, whatever is checked.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from wiredump.cli.app import EXIT_INPUT, Captures, DecodeAs, app
from wiredump.cli.entry import UsageError
from wiredump.cli.options import make_options
from wiredump.cli.source import Progress, Run
from wiredump.cli.timeline import Color, ProgressOpt
from wiredump.cli.words import plural
from wiredump.dissect.pipeline import CAPTURE_END

EXIT_FAIL = 1

FieldsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--ignore",
        help="Leave a transcript field out (repeatable or comma-separated), e.g. --ignore topics,version. "
        "Fields: type kind version status error topics batch partitions compression id producer offsets "
        "length repeat messages port state (default: type version status error topics repeat messages).",
    ),
]
IncludeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--include",
        help="Keep a transcript field that is left out by default, e.g. --include compression,partitions.",
    ),
]
SkipOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--skip",
        help="Frame types left out of the transcript (besides keep-alives), e.g. --skip 'kafka.Metadata'.",
    ),
]


TopicPatternOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--topic-pattern",
        help="Regular expression; topics matching it whole are recorded as the expression, so names "
        "with a run id compare equal (repeatable), e.g. --topic-pattern 'orders-[0-9a-f]+'.",
    ),
]


def _topic_patterns(base: tuple[str, ...], extra: list[str] | None) -> tuple[str, ...]:
    import re

    out = list(base)
    for p in extra or []:
        try:
            re.compile(p)
        except re.error as e:
            raise UsageError(f"--topic-pattern {p!r}: bad regular expression: {e}") from None
        if p not in out:
            out.append(p)
    return tuple(out)


def _split(items: list[str] | None) -> list[str]:
    out: list[str] = []
    for item in items or []:
        out.extend(x.strip() for x in item.split(",") if x.strip())
    return out


def _fields(base: frozenset[str], ignore: list[str] | None, include: list[str] | None) -> frozenset[str]:
    from wiredump.check.transcript import FIELDS

    fields = set(base)
    for name in _split(include):
        if name not in FIELDS:
            raise UsageError(f"--include: unknown field {name!r} (fields: {', '.join(FIELDS)})")
        fields.add(name)
    for name in _split(ignore):
        if name not in FIELDS:
            raise UsageError(f"--ignore: unknown field {name!r} (fields: {', '.join(FIELDS)})")
        if name == "type":
            raise UsageError("--ignore: the type of a frame is always kept")
        fields.discard(name)
    return frozenset(fields)


def _skip_patterns(base: tuple[str, ...], extra: list[str] | None) -> tuple[str, ...]:
    from wiredump.check import names
    from wiredump.check.spec import Loc, SpecError

    out = list(base)
    for s in _split(extra):
        try:
            names.parse(Loc(None, 0, 0, "--skip"), s, 0)
        except SpecError as e:
            raise UsageError(f"--skip: {e.reason}") from None
        if s not in out:
            out.append(s)
    return tuple(out)


def _spec_error(e: Exception) -> typer.Exit:
    typer.echo(f"wiredump: {e}", err=True)
    return typer.Exit(EXIT_INPUT)


def _warn_truncated(ev: object) -> None:
    obj = ev.obj  # type: ignore[attr-defined]
    if obj.truncated:
        typer.echo(
            f"wiredump: warning: {obj.name}: capture is truncated ({obj.truncated}); checked what was read",
            err=True,
        )


@app.command(
    "check",
    help="Check captures against rules (--rules) and/or a golden baseline (--baseline) for CI.\n\n"
    "Exit 0 when every check holds, 1 when one breaks, 2 for a bad rules/baseline file or an unreadable "
    "capture.\n\nExample: wiredump check run/*.pcap --rules ci/rules.yaml --baseline ci/baseline.yaml "
    "--junit report.xml",
)
def check(
    captures: Captures,
    rules: Annotated[
        Path | None,
        typer.Option("--rules", help="YAML rules file (see docs/check.md), e.g. --rules rules.yaml."),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline", help="Baseline written by `wiredump baseline`, e.g. --baseline golden.yaml."
        ),
    ] = None,
    junit: Annotated[
        Path | None, typer.Option("--junit", help="Also write a JUnit XML report, e.g. --junit report.xml.")
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the report as JSON on stdout instead of text.")
    ] = False,
    ignore: FieldsOpt = None,
    include: IncludeOpt = None,
    skip: SkipOpt = None,
    topic_pattern: TopicPatternOpt = None,
    combined: Annotated[
        bool,
        typer.Option(
            "--combined", help="Judge the rules over all captures together instead of capture by capture."
        ),
    ] = False,
    failures_only: Annotated[
        bool, typer.Option("-q", "--failures-only", help="List only the checks that broke.")
    ] = False,
    color: Color = None,
    decode_as: DecodeAs = None,
    progress: ProgressOpt = True,
) -> None:
    from wiredump.check import baseline as baseline_file
    from wiredump.check import diff, report
    from wiredump.check import rules as rules_file
    from wiredump.check.evaluate import SuiteEvaluator
    from wiredump.check.spec import SpecError
    from wiredump.check.transcript import Config, TranscriptBuilder, project

    if rules is None and baseline is None:
        raise UsageError("check needs --rules FILE, --baseline FILE or both")
    options = make_options(decode_as)
    try:
        ruleset = rules_file.load(str(rules)) if rules is not None else None
        expected, recorded = baseline_file.load(str(baseline)) if baseline is not None else ([], None)
    except SpecError as e:
        raise _spec_error(e) from None

    if ruleset is not None:
        for w in rules_file.typo_warnings(ruleset):
            typer.echo(w, err=True)
    builder = None
    if recorded is not None:
        fields = _fields(recorded.fields, ignore, None)
        _fields(frozenset(), None, include)  # unknown names
        missing = set(_split(include)) - recorded.fields
        if missing:
            raise UsageError(
                f"--include {', '.join(sorted(missing))}: the baseline was recorded without "
                f"{'these fields' if len(missing) > 1 else 'this field'}; re-create it with "
                "`wiredump baseline … --include …`"
            )
        config = Config(
            fields,
            _skip_patterns(recorded.skip, skip),
            _topic_patterns(recorded.topic_patterns, topic_pattern),
        )
        builder = TranscriptBuilder(config)
        expected = [
            t for t in (project(t, fields, config) for t in expected) if t.client or t.server or t.totals
        ]
    elif ignore or include or skip or topic_pattern:
        raise UsageError("--ignore, --include, --skip and --topic-pattern apply to --baseline")

    suites: dict[object, SuiteEvaluator] = {}
    capture_no = 0  # a capture given twice is judged twice, as two suites

    def suite_for(capture: str) -> SuiteEvaluator:
        assert ruleset is not None
        key: object = "all captures" if combined else capture_no
        s = suites.get(key)
        if s is None:
            name = "all captures" if combined else capture
            if any(x.suite == name for x in suites.values()):
                name = f"{name} (#{capture_no + 1})"
            s = suites[key] = SuiteEvaluator(ruleset, name)
        return s

    for ev in Run(list(captures), options, progress=progress and Progress.wanted(), times=False).events():
        if builder is not None:
            builder.feed(ev)
        if ev.kind == CAPTURE_END:
            _warn_truncated(ev)
            if ruleset is not None:
                suite_for(ev.capture)  # a capture without any frame is judged too
            capture_no += 1
        elif ruleset is not None:
            suite_for(ev.capture).feed(ev)

    outcomes = []
    for s in suites.values():
        outcomes.extend(s.outcomes())
    if builder is not None and recorded is not None:
        outcomes.extend(
            diff.compare(
                expected,
                builder.transcripts(),
                builder.config.repeat,
                f"baseline {baseline}",
                str(baseline),
            )
        )

    if junit is not None:
        try:
            junit.write_bytes(report.junit(outcomes))
        except OSError as e:
            raise UsageError(f"cannot write --junit {junit}: {e.strerror or e}") from None
    if json_out:
        sys.stdout.write(
            report.to_json(
                outcomes,
                {"rules": str(rules) if rules else None, "baseline": str(baseline) if baseline else None},
            )
        )
    else:
        report.text(outcomes, report.stdout_console(color), verbose=not failures_only)
    if any(not o.passed for o in outcomes):
        raise typer.Exit(EXIT_FAIL)


@app.command(
    "baseline",
    help="Write the golden protocol-level transcript that `check --baseline` compares against.\n\n"
    "YAML, or JSON when FILE ends in .json. Example: wiredump baseline good-run.pcap -o ci/baseline.yaml",
)
def baseline_cmd(
    captures: Captures,
    out: Annotated[
        str, typer.Option("-o", "--out", help="Baseline file to write (- for stdout), e.g. -o golden.yaml.")
    ],
    ignore: FieldsOpt = None,
    include: IncludeOpt = None,
    skip: SkipOpt = None,
    topic_pattern: TopicPatternOpt = None,
    no_default_skip: Annotated[
        bool,
        typer.Option(
            "--no-default-skip",
            help="Keep keep-alive frames (the types each protocol declares as keep-alives, skipped by default).",
        ),
    ] = False,
    fmt: Annotated[
        str | None, typer.Option("--format", help="yaml or json (default: from the file name).")
    ] = None,
    decode_as: DecodeAs = None,
    progress: ProgressOpt = True,
) -> None:
    from wiredump.check import baseline as baseline_file
    from wiredump.check.transcript import DEFAULT_FIELDS, Config, TranscriptBuilder, default_skip

    fmt = fmt or baseline_file.fmt_for(out)
    if fmt not in ("yaml", "json"):
        raise UsageError(f"--format is yaml or json, not {fmt!r}")
    options = make_options(decode_as)
    fields = _fields(frozenset(DEFAULT_FIELDS), ignore, include)
    config = Config(
        fields,
        _skip_patterns(() if no_default_skip else default_skip(), skip),
        _topic_patterns((), topic_pattern),
    )
    builder = TranscriptBuilder(config)
    for ev in Run(list(captures), options, progress=progress and Progress.wanted(), times=False).events():
        if ev.kind == CAPTURE_END:
            _warn_truncated(ev)
        builder.feed(ev)
    conns = builder.transcripts()
    text = baseline_file.dumps(baseline_file.document(conns, config), fmt)
    if out == "-":
        sys.stdout.write(text)
    else:
        try:
            Path(out).write_text(text, encoding="utf-8")
        except OSError as e:
            raise UsageError(f"cannot write {out}: {e.strerror or e}") from None
        n = sum(len(t.client) + len(t.server) for t in conns)
        typer.echo(f"{out}: {plural(len(conns), 'connection')}, {plural(n, 'entry', 'entries')}", err=True)
