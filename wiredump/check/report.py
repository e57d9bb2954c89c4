"""Rendering outcomes: a text report (colour in a terminal, plain in logs), JSON, JUnit XML.

The JUnit file follows the shape every CI system reads (testsuites > testsuite >
testcase > failure): one testsuite per capture (rules) and one for the baseline, one
testcase per rule or baseline connection, with the offending packets in the failure
text, so a CI page shows which rule broke and where without opening the log.
"""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET
from collections import OrderedDict
from typing import IO, Any

from rich.console import Console
from rich.markup import escape

from wiredump.check.outcome import Outcome
from wiredump.cli.escape import escape as printable


def _suites(outcomes: list[Outcome]) -> OrderedDict[str, list[Outcome]]:
    out: OrderedDict[str, list[Outcome]] = OrderedDict()
    for o in outcomes:
        out.setdefault(o.suite, []).append(o)
    return out


def _where(o: Outcome) -> str:
    if o.source and o.line:
        return f"{o.source}:{o.line}"
    return o.source or ""


TEXT_LISTED = 10
"""Places listed per rule in the text report (JSON and JUnit list up to MAX_OFFENDERS)."""


def failure_lines(o: Outcome, limit: int | None = None) -> list[str]:
    """What broke, one line each: the diff when there is one, else the offending places."""
    if o.details:
        return list(o.details)
    shown = o.offenders if limit is None else o.offenders[:limit]
    lines = [f"{off.where()}: {off.detail}" if off.detail else off.where() for off in shown]
    rest = o.violations - len(shown)
    if rest:
        lines.append(f"… and {rest} more")
    return lines


def console_for(stream: IO[str], color: bool | None) -> Console:
    """A rich console: colour on a terminal (or with --color), plain text in a pipe or CI log."""
    if color is None:
        color = not os.environ.get("NO_COLOR") and _isatty(stream)
    return Console(
        file=stream,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        soft_wrap=True,
        emoji=False,
    )


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def text(outcomes: list[Outcome], console: Console, verbose: bool = True) -> None:
    """The human report: every suite, every rule (passing ones too unless not `verbose`)."""
    for suite, items in _suites(outcomes).items():
        console.print(f"[bold]{escape(printable(suite))}[/bold]")
        for o in items:
            if o.passed and not verbose:
                continue
            tag = "[green]PASS[/green]" if o.passed else "[bold red]FAIL[/bold red]"
            where = f" [dim]({escape(_where(o))})[/dim]" if _where(o) else ""
            # Messages quote topics, client ids and errors from the wire: escaped for the terminal.
            console.print(f"  {tag} {escape(printable(o.rule))}: {escape(printable(o.message))}{where}")
            if not o.passed:
                for line in failure_lines(o, TEXT_LISTED):
                    console.print(f"       {escape(printable(line))}")
    failed = [o for o in outcomes if not o.passed]
    total = len(outcomes)
    if failed:
        console.print(f"[bold red]FAILED[/bold red]: {len(failed)} of {total} checks broken")
    else:
        console.print(f"[bold green]PASSED[/bold green]: all {total} checks hold")


def to_json(outcomes: list[Outcome], extra: dict[str, Any] | None = None) -> str:
    failed = sum(1 for o in outcomes if not o.passed)
    doc: dict[str, Any] = {
        "passed": failed == 0,
        "checks": len(outcomes),
        "failed": failed,
        **(extra or {}),
        "suites": [
            {
                "name": suite,
                "passed": all(o.passed for o in items),
                "checks": [o.to_json() for o in items],
            }
            for suite, items in _suites(outcomes).items()
        ],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"


def _clean(s: str) -> str:
    """XML 1.0 cannot hold most control characters; replace them."""
    return "".join(c if c in "\t\n\r" or ord(c) >= 0x20 else "\ufffd" for c in s)


def junit(outcomes: list[Outcome], name: str = "wiredump check") -> bytes:
    """JUnit XML: testsuites > testsuite (per capture / baseline) > testcase (per rule) > failure."""
    failed = sum(1 for o in outcomes if not o.passed)
    root = ET.Element(
        "testsuites", name=name, tests=str(len(outcomes)), failures=str(failed), errors="0", time="0"
    )
    for i, (suite, items) in enumerate(_suites(outcomes).items()):
        f = sum(1 for o in items if not o.passed)
        ts = ET.SubElement(
            root,
            "testsuite",
            name=_clean(suite),
            id=str(i),
            tests=str(len(items)),
            failures=str(f),
            errors="0",
            skipped="0",
            time="0",
        )
        for o in items:
            tc = ET.SubElement(ts, "testcase", name=_clean(o.rule), classname=_clean(suite), time="0")
            if not o.passed:
                fail = ET.SubElement(tc, "failure", message=_clean(o.message), type=o.section or "check")
                body = [o.message]
                if _where(o):
                    body.append(f"rule at {_where(o)}")
                body += failure_lines(o)
                fail.text = _clean("\n".join(body))
            else:
                out = ET.SubElement(tc, "system-out")
                out.text = _clean(o.message)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def stdout_console(color: bool | None) -> Console:
    return console_for(sys.stdout, color)
