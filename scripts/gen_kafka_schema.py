#!/usr/bin/env python3
"""Generate wiredump's Kafka schema tables from Kafka's own JSON message specs.

Why: the dissector must decode every API key and version, and hand-written decoders
drift from the protocol. Kafka publishes its wire format as JSON specs; this script
turns two snapshots of them (trunk, which dropped old versions in 4.0, and the 3.9
branch, which still defines every version from 0) into one compact, project-owned
table that a single table-walking decoder reads. For each (api key, version) the trunk
definition is used when the version is valid there, otherwise the 3.9 one (NOTES §0).

Output (`wiredump/proto/kafka_schema.json`):
  apis:   api key -> {name, versions, flexible (first flexible version or null),
                      request/response: [{versions: [...], fields: [...]}]}
  data:   the non-API data structures (ConsumerProtocolSubscription, control record bodies…)
  errors: error code -> name (from errors.tsv)
Each field: {name (snake_case), type, versions [lo, hi], nullable [lo, hi]?, tag?, tagged [lo, hi]?,
flexible [lo, hi]? (a field-level override), struct: true? (a single struct), fields: [...]?}.
Common structs are inlined so the decoder never resolves names. `hi` 32767 means "and later".

Usage: python scripts/gen_kafka_schema.py [--ref DIR] [-o FILE]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

OPEN = 32767
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REF = Path(__file__).resolve().parents[2] / "shared" / "reference" / "kafka"
DEFAULT_OUT = ROOT / "wiredump" / "proto" / "kafka_schema.json"
PRIMITIVES = {
    "bool",
    "int8",
    "int16",
    "uint16",
    "uint32",
    "int32",
    "int64",
    "float64",
    "uuid",
    "string",
    "bytes",
    "records",
}


def load_spec(path: Path) -> dict[str, Any]:
    """Kafka's spec files are JSON with `//` line comments."""
    text = re.sub(r"^\s*//.*$", "", path.read_text(encoding="utf-8"), flags=re.M)
    return json.loads(text)


def parse_range(spec: str | None) -> list[int] | None:
    """'0+', '3-12', '5', 'none' -> [lo, hi] or None."""
    if spec is None or spec == "none":
        return None
    spec = spec.strip()
    if spec.endswith("+"):
        return [int(spec[:-1]), OPEN]
    if "-" in spec:
        lo, hi = spec.split("-")
        return [int(lo), int(hi)]
    return [int(spec), int(spec)]


def snake(name: str) -> str:
    name = name.replace("KRaft", "Kraft")  # one word: kraft_version, not k_raft_version
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def convert_fields(
    fields: list[dict[str, Any]], common: dict[str, list[dict[str, Any]]], depth: int = 0
) -> list:
    if depth > 32:
        raise ValueError("struct nesting too deep")
    out = []
    for f in fields:
        ftype: str = f["type"]
        g: dict[str, Any] = {"name": snake(f["name"]), "type": ftype, "versions": parse_range(f["versions"])}
        for key, short in (
            ("nullableVersions", "nullable"),
            ("taggedVersions", "tagged"),
            ("flexibleVersions", "flexible"),
        ):
            if key in f:
                r = parse_range(f[key])
                g[short] = r if r is not None else [OPEN + 1, OPEN + 1]
        if "tag" in f:
            g["tag"] = int(f["tag"])
        base = ftype[2:] if ftype.startswith("[]") else ftype
        if base not in PRIMITIVES:
            sub = f.get("fields")
            if sub is None:
                sub = common.get(base)
                if sub is None:
                    raise ValueError(f"unknown struct type {base}")
            g["fields"] = convert_fields(sub, common, depth + 1)
            if not ftype.startswith("[]"):
                g["struct"] = True
        out.append(g)
    return out


def convert_message(spec: dict[str, Any]) -> list:
    common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
    return convert_fields(spec.get("fields", []), common)


def versions_of(spec: dict[str, Any]) -> list[int]:
    r = parse_range(spec["validVersions"])
    return [] if r is None else list(range(r[0], r[1] + 1))


def build(ref: Path) -> dict[str, Any]:
    trunk_dir, old_dir = ref / "message", ref / "message-3.9"
    specs: dict[str, dict[str, dict[str, Any]]] = {"trunk": {}, "old": {}}
    for label, folder in (("trunk", trunk_dir), ("old", old_dir)):
        for p in sorted(folder.glob("*.json")):
            specs[label][p.stem] = load_spec(p)

    apis: dict[str, Any] = {}
    data: dict[str, Any] = {}
    names = sorted(set(specs["trunk"]) | set(specs["old"]))
    for stem in names:
        t, o = specs["trunk"].get(stem), specs["old"].get(stem)
        some = t or o
        assert some is not None
        kind = some["type"]
        if kind == "data":
            chosen = t or o
            assert chosen is not None
            data[chosen["name"]] = {
                "versions": versions_of(chosen),
                "flexible": (parse_range(chosen.get("flexibleVersions")) or [None])[0],
                "fields": convert_message(chosen),
            }
            continue
        if kind not in ("request", "response"):
            continue  # headers: decoded by hand per NOTES §2
        key = str(some["apiKey"])
        api = apis.setdefault(
            key, {"name": "", "versions": [], "flexible": None, "request": [], "response": []}
        )
        entries: list[dict[str, Any]] = []
        covered: set[int] = set()
        for spec in (t, o):
            if spec is None:
                continue
            vs = [v for v in versions_of(spec) if v not in covered]
            if not vs:
                continue
            covered.update(vs)
            fields = convert_message(spec)
            same = next((e for e in entries if e["fields"] == fields), None)
            if same is not None:
                same["versions"] = sorted(same["versions"] + vs)
            else:
                entries.append({"versions": vs, "fields": fields})
            flex = parse_range(spec.get("flexibleVersions"))
            if flex is not None:
                api["flexible"] = flex[0]
        api[kind] = entries
        name = some["name"]
        api["name"] = name[: -len("Request")] if kind == "request" else name[: -len("Response")]
        if kind == "request":
            api["versions"] = sorted(covered)

    errors: dict[str, str] = {}
    for line in (ref / "errors.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        if line.strip():
            code, name = line.split("\t")[:2]
            errors[str(int(code))] = name.strip()

    ordered = {k: apis[k] for k in sorted(apis, key=int)}
    return {
        "generator": "scripts/gen_kafka_schema.py",
        "sources": {
            "trunk": "message/ (apache/kafka trunk 2bbd258)",
            "old": "message-3.9/ (apache/kafka 3.9 c821449)",
        },
        "open": OPEN,
        "apis": ordered,
        "data": {k: data[k] for k in sorted(data)},
        "errors": errors,
    }


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, separators=(",", ":"), sort_keys=False) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--ref", type=Path, default=DEFAULT_REF, help="folder holding message/, message-3.9/, errors.tsv"
    )
    ap.add_argument("-o", "--output", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    args.output.write_text(render(build(args.ref)), encoding="utf-8")


if __name__ == "__main__":
    main()
