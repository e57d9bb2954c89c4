"""The engine options a command line asks for (`--decode-as`, bytes kept for `-x`).

Without the command line's framework: the full commands (parsed by typer, `app`) and the short
ways in (`plain.default_timeline`, `exporting.default_export`, which start without typer) make
their options here, so a run with no option is made the same way by both.
"""

from __future__ import annotations

from wiredump.cli.entry import UsageError
from wiredump.dissect.pipeline import Options


def parse_decode_as(items: list[str] | None) -> dict[int, str]:
    out: dict[int, str] = {}
    for item in items or []:
        port, sep, proto = item.partition("=")
        if not sep or not port.strip().isdigit() or not proto.strip():
            raise UsageError(f"--decode-as takes PORT=PROTOCOL (e.g. 9092=kafka), not {item!r}")
        out[int(port)] = proto.strip().lower()
    return out


def make_options(decode_as: list[str] | None, keep_bytes: bool = False) -> Options:
    from wiredump.dissect.protocols import all_protocols

    mapping = parse_decode_as(decode_as)
    known = all_protocols()
    for proto in mapping.values():
        if proto not in known:
            raise UsageError(f"unknown protocol {proto!r} in --decode-as (known: {', '.join(known)})")
    return Options(decode_as=mapping, keep_bytes=keep_bytes)
