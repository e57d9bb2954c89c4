"""Random Kafka bodies encoded from wiredump's compiled plans, with the value each must decode to.

Shared by the kafka-python round trip (`test_kafka_kafkapython.py`) and the compiled-vs-walker
equivalence tests (`test_kafka_compiled.py`). With `records=True`, RECORDS fields get random
bytes (the records hook sees them) instead of null.
"""

from __future__ import annotations

import random
import struct
import uuid
from typing import Any

from wiredump.dissect.protocols.kafka import schema

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


def gen_fixed(ch: str, rnd: random.Random) -> Any:
    """A random value for one `struct` format character, edges included."""
    if ch == "?":
        return rnd.random() < 0.5
    if ch == "d":
        return rnd.choice([0.0, 1.5, -2.25])
    lo, hi = RANGES[ch]
    return rnd.choice([lo, hi, 0, -1 if lo < 0 else 1, rnd.randint(lo, hi)])


def gen(op: Any, rnd: random.Random, depth: int, records: bool = False) -> tuple[Any, bytes]:
    """A random value for a compiled field and its encoding."""
    c = op.code
    if c == schema.FIXED:
        ch = op.fmt.format[-1]
        v = gen_fixed(ch, rnd)
        return v, struct.pack(">" + ch, v)
    if c == schema.BOOL:
        v = rnd.random() < 0.5
        return v, bytes([v])
    if c == schema.UUID:
        v = str(uuid.UUID(bytes=rnd.randbytes(16)))
        return v, uuid.UUID(v).bytes
    if c == schema.STRING:
        if op.nullable and rnd.random() < 0.3:
            return None, enc_len(-1, op.compact, False)
        v = "".join(rnd.choice("abcxyz-_.") for _ in range(rnd.randint(0, 8)))
        return v, enc_len(len(v), op.compact, False) + v.encode()
    if c == schema.BYTES:
        if op.nullable and rnd.random() < 0.3:
            return None, enc_len(-1, op.compact, True)
        v = rnd.randbytes(rnd.randint(0, 6))
        return v, enc_len(len(v), op.compact, True) + v
    if c == schema.RECORDS:
        if records and rnd.random() < 0.8:
            v = rnd.randbytes(rnd.randint(0, 40))
            return v, enc_len(len(v), op.compact, True) + v
        return None, enc_len(-1, op.compact, True)
    if c == schema.ARRAY:
        if op.nullable and rnd.random() < 0.2:
            return None, enc_len(-1, op.compact, True)
        n = rnd.randint(0, 2) if depth < 4 else 0
        items = [gen(op.elem, rnd, depth + 1, records) for _ in range(n)]
        return [v for v, _ in items], enc_len(n, op.compact, True) + b"".join(b for _, b in items)
    if c == schema.STRUCT:
        if op.nullable and rnd.random() < 0.3:
            return None, b"\xff"
        v, b = gen_struct(op.struct, rnd, depth + 1, records)
        return v, (b"\x01" if op.nullable else b"") + b
    raise ValueError(c)


def gen_struct(
    plan: Any, rnd: random.Random, depth: int, records: bool = False
) -> tuple[dict[str, Any], bytes]:
    """A random struct (known tags included at random) and its encoding."""
    out: dict[str, Any] = {}
    data = b""
    for op in plan.ops:
        if op.code == schema.FIXED_RUN:
            chars = op.fmt.format[1:]
            vals = [gen_fixed(ch, rnd) for ch in chars]
            out.update(zip(op.names, vals, strict=True))
            data += op.fmt.pack(*vals)
        else:
            v, b = gen(op, rnd, depth, records)
            out[op.name] = v
            data += b
    if plan.flexible:
        tags = sorted(plan.tags.items())
        chosen = [(t, o) for t, o in tags if rnd.random() < 0.7]
        data += uv(len(chosen))
        for t, o in chosen:
            v, b = gen(o, rnd, depth, records)
            out[o.name] = v
            data += uv(t) + uv(len(b)) + b
    return out, data
