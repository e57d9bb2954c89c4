"""Kafka's API tables, compiled per (api key, version, direction) into decoding plans.

The tables come from `wiredump/proto/kafka_schema.json`, generated from Kafka's own
JSON message specs by `scripts/gen_kafka_schema.py`. A plan is a tree of small tuples
(one per field present in that version) so the body decoder walks data, not code, and
every version of every API shares the same decoder. Plans are built lazily and cached.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

# Operation codes of a compiled field.
FIXED, BOOL, UUID, STRING, BYTES, RECORDS, ARRAY, STRUCT, FIXED_RUN = range(9)

_FIXED = {
    "int8": (struct.Struct(">b"), 1),
    "int16": (struct.Struct(">h"), 2),
    "uint16": (struct.Struct(">H"), 2),
    "int32": (struct.Struct(">i"), 4),
    "uint32": (struct.Struct(">I"), 4),
    "int64": (struct.Struct(">q"), 8),
    "float64": (struct.Struct(">d"), 8),
}


@dataclass(frozen=True, slots=True)
class Op:
    """One field of a compiled struct (or the element type of an array when `name` is None)."""

    code: int
    name: str | None
    compact: bool = False
    nullable: bool = False
    fmt: struct.Struct | None = None
    size: int = 0
    elem: Op | None = None
    struct: Plan | None = None
    min_size: int = 1
    names: tuple[str, ...] = ()
    """FIXED_RUN: the names of consecutive fixed-width fields read with one unpack."""
    errors: tuple[int, ...] = ()
    """FIXED_RUN: positions in `names` of error-code fields."""


@dataclass(frozen=True, slots=True)
class Plan:
    """A struct as it is laid out in one version: its fields in order and its known tags."""

    ops: tuple[Op, ...]
    tags: dict[int, Op]
    flexible: bool
    min_size: int


@cache
def schema() -> dict[str, Any]:
    text = resources.files("wiredump.proto").joinpath("kafka_schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@cache
def api_names() -> dict[int, str]:
    return {int(k): v["name"] for k, v in schema()["apis"].items()}


@cache
def api_versions() -> dict[int, frozenset[int]]:
    return {int(k): frozenset(v["versions"]) for k, v in schema()["apis"].items()}


@cache
def error_names() -> dict[int, str]:
    return {int(k): v for k, v in schema()["errors"].items()}


def error_name(code: int) -> str:
    return error_names().get(code, f"UNKNOWN_ERROR_{code}")


def is_flexible(api_key: int, version: int) -> bool:
    api = schema()["apis"].get(str(api_key))
    if api is None or api["flexible"] is None:
        return False
    return version >= api["flexible"]


def request_header_version(api_key: int, version: int) -> int:
    """NOTES §2: 2 when flexible, else 1; ControlledShutdown v0 uses header v0."""
    if api_key == 7 and version == 0:
        return 0
    return 2 if is_flexible(api_key, version) else 1


def response_header_version(api_key: int, version: int) -> int:
    """NOTES §2: 1 when flexible, else 0; ApiVersions responses always use header v0 (KIP-511)."""
    if api_key == 18:
        return 0
    return 1 if is_flexible(api_key, version) else 0


def _in(r: list[int] | None, v: int) -> bool:
    return r is not None and r[0] <= v <= r[1]


def _compile_field(f: dict[str, Any], version: int, flexible: bool, name: str | None) -> Op:
    ftype: str = f["type"]
    if "flexible" in f:
        flexible = _in(f["flexible"], version)
    nullable = _in(f.get("nullable"), version)
    if ftype.startswith("[]"):
        base = ftype[2:]
        if "fields" in f:
            sub = _compile_struct(f["fields"], version, flexible)
            elem = Op(STRUCT, None, struct=sub, min_size=sub.min_size)
        else:
            elem = _compile_field({"type": base}, version, flexible, None)
        return Op(ARRAY, name, compact=flexible, nullable=nullable, elem=elem, min_size=1 if flexible else 4)
    if "fields" in f:
        sub = _compile_struct(f["fields"], version, flexible)
        return Op(STRUCT, name, nullable=nullable, struct=sub, min_size=1 if nullable else sub.min_size)
    if ftype in _FIXED:
        fmt, size = _FIXED[ftype]
        return Op(FIXED, name, fmt=fmt, size=size, min_size=size)
    if ftype == "bool":
        return Op(BOOL, name, min_size=1)
    if ftype == "uuid":
        return Op(UUID, name, min_size=16)
    if ftype == "string":
        return Op(STRING, name, compact=flexible, nullable=nullable, min_size=1 if flexible else 2)
    if ftype == "bytes":
        return Op(BYTES, name, compact=flexible, nullable=nullable, min_size=1 if flexible else 4)
    if ftype == "records":
        return Op(RECORDS, name, compact=flexible, nullable=nullable, min_size=1 if flexible else 4)
    raise ValueError(f"unknown Kafka field type {ftype}")


def _compile_struct(fields: list[dict[str, Any]], version: int, flexible: bool) -> Plan:
    ops: list[Op] = []
    tags: dict[int, Op] = {}
    for f in fields:
        if not _in(f["versions"], version):
            continue
        if "tag" in f and _in(f.get("tagged"), version):
            if flexible:
                tags[f["tag"]] = _compile_field(f, version, True, f["name"])
            continue
        ops.append(_compile_field(f, version, flexible, f["name"]))
    min_size = sum(o.min_size for o in ops) + (1 if flexible else 0)
    return Plan(_fuse(ops), tags, flexible, min_size)


_CODES = {">b": "b", ">h": "h", ">H": "H", ">i": "i", ">I": "I", ">q": "q", ">d": "d"}


def _fuse(ops: list[Op]) -> tuple[Op, ...]:
    """Merge runs of fixed-width fields (and bools) into one `struct` unpack each: fewer calls per struct."""
    out: list[Op] = []
    run: list[Op] = []

    def flush() -> None:
        if len(run) == 1 and run[0].code == FIXED:
            out.append(run[0])
        elif run:
            fmt = ">" + "".join("?" if o.code == BOOL else _CODES[o.fmt.format] for o in run)  # type: ignore[union-attr]
            names = tuple(o.name or "" for o in run)
            errors = tuple(i for i, n in enumerate(names) if n.endswith("error_code"))
            st = struct.Struct(fmt)
            out.append(
                Op(FIXED_RUN, None, fmt=st, size=st.size, min_size=st.size, names=names, errors=errors)
            )
        run.clear()

    for op in ops:
        if op.code in (FIXED, BOOL):
            run.append(op)
        else:
            flush()
            out.append(op)
    flush()
    return tuple(out)


@cache
def plan(api_key: int, version: int, kind: str) -> Plan | None:
    """The body plan of `kind` ("request"/"response") for this api key and version, or None."""
    api = schema()["apis"].get(str(api_key))
    if api is None:
        return None
    for entry in api[kind]:
        if version in entry["versions"]:
            flexible = api["flexible"] is not None and version >= api["flexible"]
            return _compile_struct(entry["fields"], version, flexible)
    return None


@cache
def data_plan(name: str, version: int) -> Plan | None:
    """Plan of a non-API structure (ConsumerProtocolSubscription, LeaderChangeMessage…)."""
    d = schema()["data"].get(name)
    if d is None or version not in d["versions"]:
        return None
    flexible = d["flexible"] is not None and version >= d["flexible"]
    return _compile_struct(d["fields"], version, flexible)
