"""Anomaly kinds are declared once (wiredump.dissect.anomalies and each protocol's anomalies.py).

The code is read (not wiredump's output) for every kind it can report. The engine's Rust sources
(engine/src): the kind given to `Anomaly::new(kind, …)`, `frame.flag(status, kind, …)`,
`frame.note(kind, …)`, `anomaly([conn,] kind, …)` and `problem(status, kind, …)`, as a literal or
a `const NAME: &str` of the crate. The Python face's syntax tree: the first argument of
`Anomaly(...)`, the kind of `frame.flag(status, kind, ...)`, the first item of a
`problems.append((kind, ...))` tuple, string values given to a variable named `kind`, and module
constants used in those places. Each must be declared, so that a new kind cannot be forgotten by
`check`, the timeline or the docs; and each declared kind must occur in the code, so that the
list holds no kind that is never reported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from wiredump.check import rules
from wiredump.cli import timeline
from wiredump.dissect import anomalies
from wiredump.dissect.model import STATUSES
from wiredump.dissect.protocols import all_protocols

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "wiredump"
ENGINE = ROOT / "engine" / "src"
KIND = r'(?:"([a-z][a-z0-9_]+)"|([A-Z][A-Z0-9_]+)\b)'
"""A kind in Rust: a literal, or a constant's name."""
RUST_CALLS = [
    re.compile(p.replace("KIND", KIND))
    for p in (
        r"Anomaly::new\(\s*KIND",
        r"\.flag\(\s*[^,()]+(?:\([^()]*\))?,\s*KIND",
        r"\.note\(\s*KIND",
        r"\banomaly\(\s*(?:[a-z_.&]+,\s*)?KIND",
        r"\bproblem\(\s*(?:None|Some\([^()]*\)|[^,()]+),\s*KIND",
    )
]
RUST_CONST = re.compile(r'const ([A-Z][A-Z0-9_]+): &(?:\'static )?str = "([a-z][a-z0-9_]*)";')
KIND_ARG = {"Anomaly": 0, "flag": 1, "_problem": 2}
"""Callee name -> position of the kind argument."""


def _sources() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "proto" not in p.relative_to(PACKAGE).parts[:1]]


def _is_declaration(p: Path) -> bool:
    return p.name == "anomalies.py"


def _constants(paths: list[Path]) -> dict[str, set[str]]:
    """Module-level `NAME = "text"` of every module: name -> the texts it is given somewhere."""
    out: dict[str, set[str]] = {}
    for p in paths:
        for node in ast.parse(p.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                if isinstance(node.value.value, str):
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            out.setdefault(t.id, set()).add(node.value.value)
    return out


def _strings(node: ast.AST | None, consts: dict[str, set[str]]) -> set[str]:
    """The kind names an expression can be: literals, conditional literals, known constants."""
    if node is None:
        return set()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _strings(node.body, consts) | _strings(node.orelse, consts)
    if isinstance(node, ast.Name) and node.id.isupper():
        return consts.get(node.id, set())
    if isinstance(node, ast.Attribute) and node.attr.isupper():
        return consts.get(node.attr, set())
    return set()


def reported_kinds(sources: dict[str, str]) -> dict[str, set[str]]:
    """kind -> where (file:line) for every kind the given sources (path -> text) can report."""
    consts = _constants([Path(p) for p in sources]) if all(Path(p).exists() for p in sources) else {}
    for text in sources.values():
        for node in ast.parse(text).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                for t in node.targets:
                    if isinstance(t, ast.Name) and isinstance(node.value.value, str):
                        consts.setdefault(t.id, set()).add(node.value.value)
    found: dict[str, set[str]] = {}

    def add(names: set[str], where: str) -> None:
        for n in names:
            found.setdefault(n, set()).add(where)

    def kind_arg(node: ast.Call) -> ast.AST | None:
        """The kind argument of a call that reports one, else None."""
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        if name in KIND_ARG:
            i = KIND_ARG[name]
            arg = node.args[i] if len(node.args) > i else None
            for kw in node.keywords:
                if kw.arg == "kind":
                    arg = kw.value
            return arg
        if name == "append" and isinstance(f, ast.Attribute):
            target = f.value
            owner = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            if owner == "problems" and node.args and isinstance(node.args[0], ast.Tuple):
                return node.args[0].elts[0]
        return None

    for path, text in sources.items():
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                add(_strings(kind_arg(node), consts), f"{path}:{node.lineno}")
            elif (
                isinstance(node, ast.Tuple)
                and len(node.elts) in (2, 3)
                and isinstance(node.elts[0], ast.Name | ast.Attribute)
                and (
                    isinstance(node.elts[1], ast.JoinedStr)
                    or (isinstance(node.elts[1], ast.Constant) and isinstance(node.elts[1].value, str))
                )
            ):
                # A problem handed back as (KIND, detail) for the caller to report (codecs, limits).
                add(_strings(node.elts[0], consts), f"{path}:{node.lineno}")
        # A variable named `kind` given to one of those calls: the values it is given in that function.
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)]
            if not any(isinstance(a := kind_arg(c), ast.Name) and a.id == "kind" for c in calls):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, ast.Assign):
                    continue
                where = f"{path}:{node.lineno}"
                for t in node.targets:
                    if isinstance(t, ast.Name) and t.id == "kind":
                        add(_strings(node.value, consts), where)
                    elif isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        for te, ve in zip(t.elts, node.value.elts, strict=False):
                            if isinstance(te, ast.Name) and te.id == "kind":
                                add(_strings(ve, consts), where)
    return found


def rust_kinds(sources: dict[str, str]) -> dict[str, set[str]]:
    """kind -> where (file:line) for every kind the given Rust sources (path -> text) can report."""
    consts: dict[str, set[str]] = {}
    for text in sources.values():
        for name, value in RUST_CONST.findall(text):
            consts.setdefault(name, set()).add(value)
    found: dict[str, set[str]] = {}
    for path, text in sources.items():
        for call in RUST_CALLS:
            for m in call.finditer(text):
                literal, const = m.group(1), m.group(2)
                where = f"{path}:{text.count(chr(10), 0, m.start()) + 1}"
                for kind in {literal} if literal else consts.get(const, set()):
                    found.setdefault(kind, set()).add(where)
    return found


def _rust_sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted(ENGINE.rglob("*.rs"))}


@pytest.fixture(scope="module")
def in_code() -> dict[str, set[str]]:
    paths = [p for p in _sources() if not _is_declaration(p)]
    found = reported_kinds({str(p.relative_to(ROOT)): p.read_text() for p in paths})
    for kind, where in rust_kinds(_rust_sources()).items():
        found.setdefault(kind, set()).update(where)
    return found


def test_the_rust_scanner_finds_every_form_of_kind() -> None:
    src = """
const INTERNAL: &str = "k_const";
fn f(frame: &mut Frame, ctx: &mut ConnCtx) {
    frame.add(Anomaly::new("k_new", detail));
    frame.add(Anomaly::new(
        INTERNAL,
        detail,
    ));
    f.flag(Status::Malformed, "k_flag", d, Some(8));
    f.flag(
        status_of(x),
        "k_flag_split",
        d,
    );
    f.note("k_note", detail, Some(8));
    out.anomaly(conn, "k_anomaly", detail, packet);
    problem(None, "k_problem", detail);
    problem(Some("malformed"), "k_problem2", detail);
    let not_a_kind = "nothing";
}
"""
    assert set(rust_kinds({"snippet.rs": src})) == {
        "k_const", "k_new", "k_flag", "k_flag_split", "k_note", "k_anomaly", "k_problem", "k_problem2",
    }  # fmt: skip


def test_the_scanner_finds_every_form_of_kind() -> None:
    src = """
FAILED = "k_const"
FAILED2 = "k_returned"
def f(frame, rc, cond, problems, st):
    frame.anomalies.append(Anomaly("k_literal", "x"))
    frame.flag(MALFORMED, "k_flag", "x")
    _problem(rc, None, FAILED, "x", 0)
    kind = "k_a" if cond else "k_b"
    frame.anomalies.append(Anomaly(kind, "x"))
    problems.append(("k_problem", "x", 0))
    st.problems.append(("k_problem2", "x", 0))
    Anomaly(kind="k_keyword", detail="x")
def g(frame, conflict):
    if conflict:
        kind, what = ("k_tuple", "x")
    else:
        kind = "k_c"
    frame.flag(MALFORMED, kind, what)
def decompress(data):
    return None, (FAILED2, f"bad {data}")
def not_a_report(out):
    kind = "not_a_kind"
    out.append(Token(kind, "x"))
"""
    got = reported_kinds({"snippet.py": src})
    assert set(got) == {
        "k_const", "k_literal", "k_flag", "k_a", "k_b", "k_tuple", "k_c", "k_problem", "k_problem2", "k_keyword", "k_returned",
    }  # fmt: skip


def test_every_kind_in_the_code_is_declared(in_code: dict[str, set[str]]) -> None:
    declared = set(anomalies.declared())
    # Frame statuses are passed where kinds go too (`f.flag(req.status, req.status, …)`).
    missing = {k: sorted(w) for k, w in in_code.items() if k not in declared and k not in STATUSES}
    assert missing == {}
    # The scan does see the code: the kinds of the engine, of the shields and of the protocols.
    for kind in (
        "gap",
        "resync",
        "anomaly_limit",
        "malformed",
        "oversize_frame",
        "unexpected_response",
        "append_block",
    ):
        assert kind in in_code, kind


def test_every_declared_kind_occurs_in_the_code() -> None:
    texts = "\n".join(p.read_text() for p in _sources() if not _is_declaration(p))
    texts += "\n".join(_rust_sources().values())
    literals = set(re.findall(r"""["']([a-z][a-z0-9_]*)["']""", texts))
    assert sorted(set(anomalies.declared()) - literals) == []


def test_protocol_kinds_are_declared_by_their_protocol_only() -> None:
    engine = {k.name for k in anomalies.ENGINE_KINDS}
    names = set(all_protocols())
    for k in anomalies.ENGINE_KINDS:
        assert k.protocol is None
        for word in re.findall(r"[a-z]+", k.meaning.lower()):
            assert word not in names, (k.name, word)  # nothing outside a protocol names it
    for spec in all_protocols().values():
        for k in spec.anomaly_kinds():
            assert k.name not in engine
            assert anomalies.declared()[k.name].protocol == spec.name
    text = (PACKAGE / "dissect" / "anomalies.py").read_text().lower()
    assert not [n for n in names if re.search(rf"\b{n}\b", text)]


def test_every_kind_has_a_severity_and_a_meaning() -> None:
    for k in anomalies.declared().values():
        assert k.severity in anomalies.SEVERITIES
        assert len(k.meaning) > 20 and "|" not in k.meaning


def test_check_knows_exactly_the_statuses_and_declared_kinds() -> None:
    assert set(rules.known_kinds()) == set(STATUSES) | set(anomalies.declared())
    for kind in ("internal_error", "trailing_bytes", "unexpected_response", "bad_timestamp", "undecoded"):
        assert kind in rules.known_kinds()


def test_timeline_shows_errors_and_warnings_by_default() -> None:
    declared = anomalies.declared()
    assert timeline.SHOWN_ANOMALIES == {k for k, d in declared.items() if d.severity in ("error", "warning")}
    assert "internal_error" in timeline.SHOWN_ANOMALIES and "gap" in timeline.SHOWN_ANOMALIES
    assert not {"retransmission", "out_of_order"} & timeline.SHOWN_ANOMALIES


def test_docs_list_exactly_the_declared_kinds() -> None:
    doc = (ROOT / "docs" / "tables.md").read_text()
    m = re.search(r"<!-- anomaly-kinds:begin -->\n(.*?)<!-- anomaly-kinds:end -->", doc, re.S)
    assert m is not None
    assert m.group(1) == anomalies.markdown_table()  # `python -m wiredump.dissect.anomalies` prints it
    listed = re.findall(r"^\| `([a-z_]+)` \|", m.group(1), re.M)
    assert sorted(listed) == sorted(anomalies.declared())
