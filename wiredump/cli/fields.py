"""`wiredump fields [PROTOCOL]`: every field a filter or `-e` may name, as `tshark -G fields` lists them.

One line per field, tab-separated: name, type, protocol, description. The names
come from the declarations (`ProtocolSpec.fields()`, the frame fields), so this list,
the filters and `-e` can never disagree. The frame columns (`type`, `latency_us`…)
follow with protocol `column`.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from wiredump.cli.app import app
from wiredump.cli.entry import UsageError


@app.command(
    "fields",
    help="List the fields display filters (-Y) and -T fields -e can name, like tshark -G fields: "
    "name, type, protocol and description, tab-separated.\n\n"
    "Examples:\n\n"
    "  wiredump fields kafka | grep topic\n\n"
    "  wiredump fields frame",
)
def fields(
    protocol: Annotated[
        str | None,
        typer.Argument(help="Only this protocol's fields (kafka, pulsar, pravega, tank, frame, column)."),
    ] = None,
) -> None:
    from wiredump.dissect.fields import protocol_fields
    from wiredump.dissect.filter import COLUMNS
    from wiredump.dissect.protocols import all_protocols

    known = ["frame", *all_protocols(), "column"]
    if protocol is not None and protocol.lower() not in known:
        raise UsageError(f"unknown protocol {protocol!r} (known: {', '.join(known)})")
    want = protocol.lower() if protocol else None
    out = sys.stdout
    if want != "column":
        for d in protocol_fields(want):
            proto = d.name.split(".", 1)[0] if "." in d.name else d.name
            if proto in ("tcp", "ip"):
                proto = "frame"
            out.write(f"{d.name}\t{d.type}\t{proto}\t{d.description}\n")
    if want in (None, "column"):
        for name in sorted(COLUMNS):
            col = COLUMNS[name]
            extra = " (several values)" if col.multi else ""
            out.write(f"{name}\t{col.type}\tcolumn\t{col.help or 'frames table column ' + name}{extra}\n")
