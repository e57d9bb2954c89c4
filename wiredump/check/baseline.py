"""The baseline file: a golden transcript, written by `wiredump baseline`, read by `check --baseline`.

YAML by default, JSON when the file name ends in `.json`. The output is stable (same
input, same bytes): connections in a content-defined order, one entry per line, keys in
a fixed order. The file is meant to be read in code review and edited by hand: `fields`
says what each entry keeps, `skip` which frame types are left out; both can be changed
(e.g. drop `version` from `fields` and from the entries to stop checking versions).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import yaml

from wiredump.check import names, spec
from wiredump.check.spec import Loc, SpecError
from wiredump.check.transcript import (
    CONNECTION_FIELDS,
    FIELDS,
    Config,
    ConnTranscript,
    Entry,
    entry_key,
)

FORMAT_VERSION = 1
HEADER = (
    "# wiredump baseline: the protocol-level transcript of a known-good run.\n"
    "# Re-create with `wiredump baseline CAPTURE… -o FILE`; compare with `wiredump check CAPTURE… --baseline FILE`.\n"
    "# `fields` lists what each entry keeps, `skip` the frame types left out (see docs/check.md).\n"
)
TOP_KEYS = ("wiredump_baseline", "fields", "skip", "topic_patterns", "connections")
CONN_KEYS = ("protocol", "opens_with", "port", "state", "messages", "client", "server")
DIRECTIONS = ("produce", "deliver")


# -- writing ------------------------------------------------------------------------------------
def document(conns: Iterable[ConnTranscript], config: Config) -> dict[str, Any]:
    """The baseline as plain data, keys in the order they are written."""
    out_conns = []
    for t in conns:
        c: dict[str, Any] = {"protocol": t.protocol, "opens_with": t.opens_with()}
        if "port" in config.fields and t.port is not None:
            c["port"] = t.port
        if "state" in config.fields and t.state is not None:
            c["state"] = t.state
        if t.totals:
            c["messages"] = {d: dict(sorted(t.totals[d].items())) for d in sorted(t.totals)}
        c["client"] = [e.as_dict(config.repeat) for e in t.client]
        c["server"] = [e.as_dict(config.repeat) for e in t.server]
        out_conns.append(c)
    return {
        "wiredump_baseline": FORMAT_VERSION,
        "fields": [f for f in FIELDS if f in config.fields],
        "skip": list(config.skip),
        **({"topic_patterns": list(config.topic_patterns)} if config.topic_patterns else {}),
        "connections": out_conns,
    }


class _Flow(dict):
    """An entry: written on one line."""


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _flow(dumper: yaml.SafeDumper, data: _Flow) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", list(data.items()), flow_style=True)


def _block(dumper: yaml.SafeDumper, data: dict[str, Any]) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", list(data.items()))


_Dumper.add_representer(_Flow, _flow)
_Dumper.add_representer(dict, _block)


def dumps(doc: dict[str, Any], fmt: str) -> str:
    """Render the document as YAML (entries one per line) or JSON (same)."""
    if fmt == "json":
        return _json(doc)
    d = dict(doc)
    d["fields"] = list(doc["fields"])
    conns = []
    for c in doc["connections"]:
        c = dict(c)
        c["client"] = [_Flow(e) for e in c["client"]]
        c["server"] = [_Flow(e) for e in c["server"]]
        if "messages" in c:
            c["messages"] = {k: _Flow(v) for k, v in c["messages"].items()}
        conns.append(c)
    d["connections"] = conns
    body = yaml.dump(
        d, Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=4096, allow_unicode=True
    )
    return HEADER + body


def _json(doc: dict[str, Any]) -> str:
    def one(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False, separators=(", ", ": "))

    lines = ["{"]
    lines.append(f'  "wiredump_baseline": {one(doc["wiredump_baseline"])},')
    lines.append(f'  "fields": {one(doc["fields"])},')
    lines.append(f'  "skip": {one(doc["skip"])},')
    if "topic_patterns" in doc:
        lines.append(f'  "topic_patterns": {one(doc["topic_patterns"])},')
    lines.append('  "connections": [')
    for ci, c in enumerate(doc["connections"]):
        lines.append("    {")
        items = list(c.items())
        for ki, (k, v) in enumerate(items):
            comma = "," if ki < len(items) - 1 else ""
            if k in ("client", "server"):
                if not v:
                    lines.append(f'      "{k}": []{comma}')
                    continue
                lines.append(f'      "{k}": [')
                for ei, e in enumerate(v):
                    lines.append(f"        {one(e)}{',' if ei < len(v) - 1 else ''}")
                lines.append(f"      ]{comma}")
            else:
                lines.append(f'      "{k}": {one(v)}{comma}')
        lines.append("    }" + ("," if ci < len(doc["connections"]) - 1 else ""))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def fmt_for(path: str) -> str:
    return "json" if path.lower().endswith(".json") else "yaml"


# -- reading ------------------------------------------------------------------------------------
_ENTRY_TYPES: dict[str, tuple[str, ...]] = {
    "type": ("str",),
    "kind": ("str",),
    "version": ("int",),
    "status": ("str",),
    "error": ("str", "int"),
    "topics": ("list_str",),
    "batch": ("int",),
    "repeat": ("int",),
    "partitions": ("list_int",),
    "compression": ("list_str",),
    "id": ("int",),
    "producer": ("list_str",),
    "offsets": ("list_any",),
    "length": ("int",),
}


def load(path: str) -> tuple[list[ConnTranscript], Config]:
    """Read and validate a baseline file; raises `SpecError` with the line of the mistake."""
    root, _ = spec.read(path, spec.MAX_BASELINE_BYTES)
    return parse(root, path)


def parse(root: Loc | None, source: str) -> tuple[list[ConnTranscript], Config]:
    if root is None:
        raise SpecError(source, None, "the baseline file is empty (write one with `wiredump baseline`)")
    top = spec.mapping(root, "a baseline file")
    spec.known_keys(root, TOP_KEYS, "a baseline file")
    if "wiredump_baseline" not in top:
        raise SpecError(source, root.line, "not a wiredump baseline: `wiredump_baseline: 1` is missing")
    ver = spec.integer(top["wiredump_baseline"], "wiredump_baseline")
    if ver != FORMAT_VERSION:
        raise top["wiredump_baseline"].error(
            f"baseline format {ver} is not supported (this wiredump reads {FORMAT_VERSION})"
        )
    fields: list[str] = ["type"]
    if "fields" in top:
        for f in spec.sequence(top["fields"], "fields"):
            name = spec.text(f, "a field name")
            if name not in FIELDS:
                raise f.error(f"unknown field {name!r} (known: {', '.join(FIELDS)})")
            fields.append(name)
    skip: list[str] = []
    if "skip" in top:
        for i, s in enumerate(spec.sequence(top["skip"], "skip")):
            text = spec.text(s, "a frame name to skip")
            names.parse(s, text, i)
            skip.append(text)
    patterns: list[str] = []
    if "topic_patterns" in top:
        import re

        for x in spec.sequence(top["topic_patterns"], "topic_patterns"):
            text = spec.text(x, "a topic pattern (regular expression)")
            try:
                re.compile(text)
            except re.error as e:
                raise x.error(f"bad regular expression {text!r}: {e}") from None
            patterns.append(text)
    config = Config(frozenset(fields), tuple(skip), tuple(patterns))
    conns: list[ConnTranscript] = []
    if "connections" not in top:
        raise SpecError(source, root.line, "the baseline has no `connections` list")
    for i, c in enumerate(spec.sequence(top["connections"], "connections"), 1):
        conns.append(_connection(c, i, config))
    return conns, config


def _connection(loc: Loc, number: int, config: Config) -> ConnTranscript:
    what = f"connection {number}"
    m = spec.mapping(loc, what)
    spec.known_keys(loc, CONN_KEYS, what)
    if "protocol" not in m:
        raise loc.error(f"{what} has no protocol")
    proto = spec.text(m["protocol"], f"{what}: protocol")
    if proto not in names.protocols():
        raise m["protocol"].error(
            f"{what}: unknown protocol {proto!r} (known: {', '.join(names.protocols())})"
        )
    if "opens_with" in m:
        for x in spec.sequence(m["opens_with"], f"{what}: opens_with"):
            spec.text(x, f"{what}: opens_with entry")
    t = ConnTranscript(proto, label=f"{what} (line {loc.line})", line=loc.line)
    for k in CONNECTION_FIELDS:
        if k in m:
            if k not in config.fields:
                raise SpecError(
                    loc.source, loc.key_line(k), f"{what} has {k!r} but `fields` does not list it"
                )
            t.port = spec.integer(m[k], f"{what}: port") if k == "port" else t.port
            t.state = spec.text(m[k], f"{what}: state") if k == "state" else t.state
    if "messages" in m:
        if "messages" not in config.fields:
            raise SpecError(
                loc.source,
                loc.key_line("messages"),
                f"{what} has message totals but `fields` does not list messages",
            )
        mm = spec.mapping(m["messages"], f"{what}: messages")
        spec.known_keys(m["messages"], DIRECTIONS, f"{what}: messages")
        for d, per in mm.items():
            t.totals[d] = {
                k: spec.integer(v, f"{what}: messages {d} {k}")
                for k, v in spec.mapping(per, f"{what}: messages {d}").items()
            }
    for role in ("client", "server"):
        if role in m:
            side = t.side(role)
            for j, e in enumerate(spec.sequence(m[role], f"{what}: {role}"), 1):
                side.append(_entry(e, f"{what}, {role} entry {j}", config))
    return t


def _entry(loc: Loc, what: str, config: Config) -> Entry:
    m = spec.mapping(loc, what)
    allowed = [k for k in FIELDS if k in _ENTRY_TYPES]
    if "messages" in m and "messages" not in allowed:
        raise SpecError(
            loc.source,
            loc.key_line("messages"),
            f"{what}: per-frame message counts are written `batch: N` (`messages` is the per-connection total)",
        )
    spec.known_keys(loc, allowed, what)
    if "type" not in m:
        raise loc.error(f"{what} has no type")
    data: dict[str, Any] = {}
    count = 1
    for k, v in m.items():
        if k not in config.fields:
            raise SpecError(loc.source, loc.key_line(k), f"{what} has {k!r} but `fields` does not list it")
        val = _typed(v, _ENTRY_TYPES[k], f"{what}: {k}")
        if k == "repeat":
            if val < 1:
                raise v.error(f"{what}: repeat must be at least 1")
            count = val
        else:
            data[k] = val
    # Keep the entry's keys in the writer's order so keys compare the same.
    ordered = {k: data[k] for k in FIELDS if k in data}
    return Entry(ordered, entry_key(ordered), count, None, 0)


def _typed(v: Loc, kinds: tuple[str, ...], what: str) -> Any:
    x = v.value
    for k in kinds:
        if k == "str" and isinstance(x, str):
            return x
        if k == "int" and isinstance(x, int) and not isinstance(x, bool):
            return x
        if k == "list_str" and isinstance(x, list) and all(isinstance(i.value, str) for i in x):
            return [i.value for i in x]
        if k == "list_int" and isinstance(x, list) and all(isinstance(i.value, int) for i in x):
            return [i.value for i in x]
        if k == "list_any" and isinstance(x, list) and all(isinstance(i.value, (int, str)) for i in x):
            return [i.value for i in x]
    want = {
        "str": "text",
        "int": "a whole number",
        "list_str": "a list of text",
        "list_int": "a list of numbers",
        "list_any": "a list",
    }
    raise v.error(f"{what} must be {' or '.join(want[k] for k in kinds)}, not {spec.type_name(x)}")
