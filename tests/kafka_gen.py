"""Random Kafka bodies encoded from Kafka's own JSON specs, with the value each must decode to.

Used by the kafka-python round trip (`test_kafka_kafkapython.py`): the bodies are built here from
`wiredump/proto/kafka_schema.json` (the field list of each API version, NOTES §4 for the
encodings), decoded by the engine and by kafka-python, and both must give the value built here.
With `records=True`, record-set fields get random bytes instead of null.
"""

from __future__ import annotations

import random
import struct
import uuid
from typing import Any

from wiredump.dissect.protocols.kafka import schema

FIXED = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q", "float64": "d"}
RANGES = {
    "b": (-128, 127),
    "h": (-32768, 32767),
    "H": (0, 65535),
    "i": (-(2**31), 2**31 - 1),
    "I": (0, 2**32 - 1),
    "q": (-(2**63), 2**63 - 1),
}


def uv(n: int) -> bytes:
    """Unsigned varint (NOTES §4)."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def enc_len(n: int, compact: bool, wide: bool) -> bytes:
    """A length or count: compact uvarint N+1, else int32 (wide) or int16."""
    if compact:
        return uv(n + 1)
    return struct.pack(">i" if wide else ">h", n)


def _in(r: list[int] | None, v: int) -> bool:
    return r is not None and r[0] <= v <= r[1]


def gen_fixed(ch: str, rnd: random.Random) -> Any:
    """A random value for one `struct` format character, edges included."""
    if ch == "d":
        return rnd.choice([0.0, 1.5, -2.25])
    lo, hi = RANGES[ch]
    return rnd.choice([lo, hi, 0, -1 if lo < 0 else 1, rnd.randint(lo, hi)])


def gen_field(
    f: dict[str, Any], version: int, flexible: bool, rnd: random.Random, depth: int, records: bool
) -> tuple[Any, bytes]:
    """A random value for one field of the spec (in `version`) and its encoding."""
    ftype: str = f["type"]
    if "flexible" in f:
        flexible = _in(f["flexible"], version)
    nullable = _in(f.get("nullable"), version)
    if ftype.startswith("[]"):
        if nullable and rnd.random() < 0.2:
            return None, enc_len(-1, flexible, True)
        n = rnd.randint(0, 2) if depth < 4 else 0
        if "fields" in f:
            items = [gen_fields(f["fields"], version, flexible, rnd, depth + 1, records) for _ in range(n)]
        else:
            elem = {"type": ftype[2:]}
            items = [gen_field(elem, version, flexible, rnd, depth + 1, records) for _ in range(n)]
        return [v for v, _ in items], enc_len(n, flexible, True) + b"".join(b for _, b in items)
    if "fields" in f:
        if nullable and rnd.random() < 0.3:
            return None, b"\xff"
        v, b = gen_fields(f["fields"], version, flexible, rnd, depth + 1, records)
        return v, (b"\x01" if nullable else b"") + b
    if ftype in FIXED:
        ch = FIXED[ftype]
        v = gen_fixed(ch, rnd)
        return v, struct.pack(">" + ch, v)
    if ftype == "bool":
        v = rnd.random() < 0.5
        return v, bytes([v])
    if ftype == "uuid":
        u = str(uuid.UUID(bytes=rnd.randbytes(16)))
        return u, uuid.UUID(u).bytes
    if ftype == "string":
        if nullable and rnd.random() < 0.3:
            return None, enc_len(-1, flexible, False)
        s = "".join(rnd.choice("abcxyz-_.") for _ in range(rnd.randint(0, 8)))
        return s, enc_len(len(s), flexible, False) + s.encode()
    if ftype == "bytes":
        if nullable and rnd.random() < 0.3:
            return None, enc_len(-1, flexible, True)
        raw = rnd.randbytes(rnd.randint(0, 6))
        return raw, enc_len(len(raw), flexible, True) + raw
    if ftype == "records":
        if records and rnd.random() < 0.8:
            raw = rnd.randbytes(rnd.randint(0, 40))
            return raw, enc_len(len(raw), flexible, True) + raw
        return None, enc_len(-1, flexible, True)
    raise ValueError(f"unknown Kafka field type {ftype}")


def gen_fields(
    fields: list[dict[str, Any]], version: int, flexible: bool, rnd: random.Random, depth: int, records: bool
) -> tuple[dict[str, Any], bytes]:
    """A random struct (known tags included at random) and its encoding."""
    out: dict[str, Any] = {}
    data = b""
    tags: dict[int, dict[str, Any]] = {}
    for f in fields:
        if not _in(f["versions"], version):
            continue
        if "tag" in f and _in(f.get("tagged"), version):
            if flexible:
                tags[f["tag"]] = f
            continue
        v, b = gen_field(f, version, flexible, rnd, depth, records)
        out[f["name"]] = v
        data += b
    if flexible:
        chosen = [(t, f) for t, f in sorted(tags.items()) if rnd.random() < 0.7]
        data += uv(len(chosen))
        for t, f in chosen:
            v, b = gen_field(f, version, True, rnd, depth, records)
            out[f["name"]] = v
            data += uv(t) + uv(len(b)) + b
    return out, data


def gen_body(
    api_key: int, version: int, kind: str, rnd: random.Random, records: bool = False
) -> tuple[dict[str, Any], bytes] | None:
    """A random `kind` ("request"/"response") body of this API version, or None when the spec has none."""
    api = schema.schema()["apis"].get(str(api_key))
    if api is None:
        return None
    for entry in api[kind]:
        if version in entry["versions"]:
            flexible = api["flexible"] is not None and version >= api["flexible"]
            return gen_fields(entry["fields"], version, flexible, rnd, 0, records)
    return None
