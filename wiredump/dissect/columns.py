"""The columns of the output tables, read from their one declaration (`wiredump/tables.json`).

Why a data file: the tables are built in two languages (from events in `tables.py`, the
Rust engine's `arrow_out`), documented in docs/tables.md and filtered by `-Y`; declaring each
column once (name, Arrow type, whether it may be null, unit, meaning) and deriving the pyarrow
schemas, the Rust column builders (`engine/build.rs`) and the docs' column lists from it means a
column cannot be added in one place and forgotten in another.

`python -m wiredump.dissect.columns` prints the docs' column lists; `--write` puts them into
docs/tables.md between the `<!-- columns:TABLE:begin/end -->` markers (a test keeps them equal).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import pyarrow as pa

DECLARATION = "tables.json"
"""The declaration, a data file of the `wiredump` package (engine/build.rs reads it too)."""

TS_US = pa.timestamp("us", tz="UTC")
TS_MS = pa.timestamp("ms", tz="UTC")

ARROW_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int64": pa.int64(),
    "int32": pa.int32(),
    "bool": pa.bool_(),
    "binary": pa.binary(),
    "timestamp[us, UTC]": TS_US,
    "timestamp[ms, UTC]": TS_MS,
    "map<string, binary>": pa.map_(pa.string(), pa.binary()),
}
"""The declared type names (as the docs write them) → Arrow types. engine/build.rs maps the same names."""


@dataclass(frozen=True, slots=True)
class ColumnDecl:
    """One column of one table, as declared."""

    name: str
    type: str
    """The Arrow type as the docs write it (`int64`, `timestamp[us, UTC]`, …): a key of ARROW_TYPES."""
    null: bool
    """Whether the column may hold nulls (`int32, null` in the docs); the Arrow field is nullable anyway."""
    unit: str | None
    meaning: str

    @property
    def arrow_type(self) -> pa.DataType:
        return ARROW_TYPES[self.type]


@dataclass(frozen=True, slots=True)
class TableDecl:
    name: str
    one_row_per: str
    columns: tuple[ColumnDecl, ...]


@cache
def declared() -> dict[str, TableDecl]:
    """Every table in declaration order (read once: the file is part of the installed package)."""
    text = resources.files("wiredump").joinpath(DECLARATION).read_text(encoding="utf-8")
    doc = json.loads(text)
    out: dict[str, TableDecl] = {}
    for t in doc["tables"]:
        name = t["name"]
        cols = tuple(
            ColumnDecl(c["name"], c["type"], bool(c["null"]), c.get("unit"), c["meaning"])
            for c in t["columns"]
        )
        for c in cols:
            if c.type not in ARROW_TYPES:
                raise ValueError(f"{DECLARATION}: {name}.{c.name} has unknown type {c.type!r}")
        if len({c.name for c in cols}) != len(cols):
            raise ValueError(f"{DECLARATION}: {name} declares a column twice")
        out[name] = TableDecl(name, t["one_row_per"], cols)
    return out


def schema(table: str) -> pa.Schema:
    """The pyarrow schema of one table: every field nullable (Parquet OPTIONAL), as always written."""
    return pa.schema([(c.name, c.arrow_type) for c in declared()[table].columns])


# -- docs -------------------------------------------------------------------------------------------
def markdown_table(table: str) -> str:
    """One table's column list as docs/tables.md holds it."""
    lines = ["| column | type | unit | meaning |", "|---|---|---|---|"]
    for c in declared()[table].columns:
        typ = f"{c.type}, null" if c.null else c.type
        lines.append(f"| `{c.name}` | {typ} | {c.unit or ''} | {c.meaning} |")
    return "\n".join(lines) + "\n"


def _block(table: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- columns:{table}:begin -->\n)(.*?)(<!-- columns:{table}:end -->)", re.S)


def docs_blocks(text: str) -> dict[str, str | None]:
    """The column lists found in a docs text, by table (None where the markers are missing)."""
    out: dict[str, str | None] = {}
    for table in declared():
        m = _block(table).search(text)
        out[table] = m.group(2) if m else None
    return out


def render_docs(text: str) -> str:
    """The docs text with every table's column list replaced by the declared one."""
    for table in declared():
        pattern = _block(table)
        if not pattern.search(text):
            raise ValueError(f"no <!-- columns:{table}:begin/end --> markers")
        text = pattern.sub(lambda m, t=table: m.group(1) + markdown_table(t) + m.group(3), text)
    return text


def main(argv: list[str]) -> int:
    if argv[:1] == ["--write"]:
        path = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2] / "docs" / "tables.md"
        path.write_text(render_docs(path.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    for table in declared():
        sys.stdout.write(f"## {table}\n\n{markdown_table(table)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
