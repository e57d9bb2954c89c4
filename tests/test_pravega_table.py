"""Pravega: the command table agrees with the fact table in WIRE.md §5.

WIRE.md (written from Pravega's WireCommands.java) is parsed here, independently of
the module's table: every type code must have the same constant and class name, and
the primitive fields the same names (camelCase → snake_case), types, order and
optionality. Composite fields (lists, table entries, embedded data) are checked by
the crafted-frame tests instead.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wiredump.dissect.protocols.pravega.commands import COMMANDS, TOP_LEVEL_CODES

WIRE_MD = Path(__file__).resolve().parents[2] / "shared" / "reference" / "pravega" / "WIRE.md"
_ROW = re.compile(r"^\|\s*([−-]?\d+)\s*\|\s*(\w+) \((\w+)\)\s*\|[^|]*\|([^|]*)\|")
_FIELD = re.compile(r"^`?(\w+)`?\s+(int|long|str|UUID|bool|byte|blob)\b(.*)$")
_KIND = {
    "int": "int",
    "long": "long",
    "str": "str",
    "UUID": "uuid",
    "bool": "bool",
    "byte": "byte",
    "blob": "blob",
}
# The module calls every segment-name field `segment`, whatever the Java class calls it.
_ALIAS = {"segment_name": "segment", "target_segment_id": "target"}
_PRIMITIVE = set(_KIND.values())


def _snake(name: str) -> str:
    return _ALIAS.get(
        re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower(), re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
    )


def _doc_rows() -> dict[int, tuple[str, str, list[tuple[str, str, bool]]]]:
    if not WIRE_MD.is_file():
        pytest.skip(f"{WIRE_MD} not found")
    text = WIRE_MD.read_text()
    table = text[text.index("## 5. Command table") : text.index("### 5.1")]
    rows = {}
    for line in table.splitlines():
        m = _ROW.match(line)
        if not m:
            continue
        code = int(m.group(1).replace("−", "-"))
        fields = []
        # split on commas outside parentheses and braces
        for part in re.split(r",\s*(?![^()]*\))(?![^{]*\})", m.group(4)):
            fm = _FIELD.match(part.strip())
            if fm and _snake(fm.group(1)) != "count":
                fields.append((_snake(fm.group(1)), _KIND[fm.group(2)], "**opt**" in fm.group(3)))
        rows[code] = (m.group(2), m.group(3), fields)
    return rows


def test_every_code_in_wire_md_is_in_the_table() -> None:
    rows = _doc_rows()
    assert len(rows) == 70
    assert {c: (r[0], r[1]) for c, r in rows.items()} == {
        c: (cmd.constant, cmd.name) for c, cmd in COMMANDS.items()
    }


def test_primitive_fields_in_wire_order() -> None:
    for code, (_, name, doc_fields) in _doc_rows().items():
        mine = [(f.name, f.kind, f.optional) for f in COMMANDS[code].fields if f.kind in _PRIMITIVE]
        assert mine == doc_fields, name


def test_inner_commands_never_start_a_frame() -> None:
    assert {0, -1, -2} & TOP_LEVEL_CODES == set()
    assert {-127, 100, 1, 4, 89, 91} <= TOP_LEVEL_CODES
