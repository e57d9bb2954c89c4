"""Pravega's filter fields, derived from the wire-command table (`commands.py`).

Every field of every WireCommand is `pravega.<field name>`, as the table names it and
the decoder writes it: `pravega.segment`, `pravega.writer_id`, `pravega.request_id`,
`pravega.event_number`… Plus what the decoder adds (event counts of an append block)
and each event's payload (`pravega.event.*`).
"""

from __future__ import annotations

from wiredump.dissect.fielddecl import BOOL, BYTES, INT, NONE, STR, FieldDecl, message_fields
from wiredump.dissect.protocols.pravega.commands import COMMANDS

_KINDS = {
    "byte": INT,
    "bool": BOOL,
    "int": INT,
    "long": INT,
    "uuid": STR,
    "str": STR,
    "blob": BYTES,
    "rest": BYTES,
    "longs": INT,
    "strs": STR,
}

DECODER = (
    ("pravega.events", INT, "Events carried by an append block", ("events",)),
    ("pravega.data_length", INT, "Bytes of event data in an append block", ("data_length",)),
    ("pravega.key_text", STR, "A table key shown as text", ("key_text",)),
)


def declare() -> list[FieldDecl]:
    kinds: dict[str, set[str]] = {}
    uses: dict[str, list[str]] = {}
    for cmd in COMMANDS.values():
        for f in cmd.fields:
            kinds.setdefault(f.name, set()).add(_KINDS.get(f.kind, NONE))
            if cmd.name not in uses.setdefault(f.name, []):
                uses[f.name].append(cmd.name)
    out = [FieldDecl(n, t, d, keys=k) for n, t, d, k in DECODER]
    taken = {d.name for d in out}
    for name in sorted(kinds):
        full = f"pravega.{name}"
        if full in taken:
            continue
        found = kinds[name]
        typ = found.pop() if len(found) == 1 else STR
        where = uses[name]
        more = f" … ({len(where)} in all)" if len(where) > 3 else ""
        out.append(FieldDecl(full, typ, f"{name} in {', '.join(where[:3])}{more}", keys=(name,)))
    out += message_fields("pravega", "event", "Pravega event")
    return out
