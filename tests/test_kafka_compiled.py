"""Kafka: the compiled body decoders give exactly what the plan walker gives.

`compiled.py` turns each plan into generated Python; `body.walk_body` is the reference.
Both run on every body of every captured Kafka frame, on random bodies of every
(api key, version, direction) with tagged fields, nulls and record sets, and on those
bodies cut short and with bytes flipped. Compared: the decoded fields (repr, so key
order and bool/int types count), error codes with their paths, the end position, the
`Short`/`Bad` error (type, message, offset, partial decode, errors so far), and every
records-hook call (bytes, frame offset, the enclosing structs as they were then).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CAPTURES, ROOT
from tests.kafka_gen import gen_struct
from wiredump.dissect.pipeline import Options, dissect
from wiredump.dissect.protocols.kafka import compiled, schema, session
from wiredump.dissect.protocols.kafka.body import Bad, decode_body, walk_body
from wiredump.dissect.wire import Short

SECRETS = session.SECRET_FIELDS


def run(
    decoder: Any, data: bytes, start: int, plan: schema.Plan, secrets: frozenset[str], hooked: bool
) -> Any:
    """Everything a decoder does with one body, as comparable text."""
    calls: list[str] = []

    def hook(rec: bytes, at: int, stack: list[dict[str, Any]]) -> Any:
        calls.append(repr((rec, at, stack)))
        return {"hooked": len(calls)}

    try:
        out, errors, end = decoder(data, start, plan, hook if hooked else None, secrets)
    except (Short, Bad) as e:
        partial = getattr(e, "partial", None)
        return repr((type(e).__name__, str(e), e.offset, partial, getattr(e, "errors", None), calls))
    return repr((out, errors, end, calls))


def fast(data: bytes, start: int, plan: schema.Plan, hook: Any, secrets: frozenset[str]) -> Any:
    """`decode_body` once the plan's compiled function is in use."""
    for _ in range(compiled.COMPILE_AFTER):
        if compiled.compiled(plan) is not None:
            break
    assert compiled.compiled(plan) is not None, "every Kafka plan compiles"
    return decode_body(data, start, plan, hook, secrets)


def same(data: bytes, start: int, plan: schema.Plan, what: Any) -> None:
    for secrets in (frozenset(), SECRETS):
        for hooked in (True, False):
            ref = run(walk_body, data, start, plan, secrets, hooked)
            got = run(fast, data, start, plan, secrets, hooked)
            assert got == ref, (what, secrets, hooked)


def mutations(data: bytes, rnd: random.Random) -> list[bytes]:
    """The body cut at a few places, and with a few bytes changed."""
    out = [data[:cut] for cut in sorted({rnd.randrange(len(data) + 1) for _ in range(4)})] if data else []
    for _ in range(4):
        b = bytearray(data)
        for _ in range(rnd.randint(1, 3)):
            if b:
                b[rnd.randrange(len(b))] = rnd.choice([0x00, 0x01, 0x7F, 0x80, 0xFF, rnd.randrange(256)])
        out.append(bytes(b))
    return out


def every_plan() -> list[tuple[int, int, str]]:
    return [
        (key, v, kind)
        for key, versions in sorted(schema.api_versions().items())
        for v in sorted(versions)
        for kind in ("request", "response")
    ]


@pytest.mark.parametrize("kind", ["request", "response"])
def test_random_bodies_of_every_api_version_decode_the_same(kind: str) -> None:
    rnd = random.Random(11 if kind == "request" else 12)
    checked = 0
    for key, v, k in every_plan():
        if k != kind:
            continue
        plan = schema.plan(key, v, kind)
        assert plan is not None
        for _ in range(3):
            _, data = gen_struct(plan, rnd, 0, records=True)
            same(data, 0, plan, (key, v, kind))
            for m in mutations(data, rnd):
                same(m, 0, plan, (key, v, kind, m))
            checked += 1
    assert checked > 1000  # 338 (api, version) pairs per direction, three bodies each


def test_data_plans_decode_the_same() -> None:
    rnd = random.Random(5)
    for name, d in sorted(schema.schema()["data"].items()):
        for v in d["versions"]:
            plan = schema.data_plan(name, v)
            assert plan is not None
            for _ in range(3):
                _, data = gen_struct(plan, rnd, 0, records=True)
                for m in [data, *mutations(data, rnd)]:
                    same(m, 0, plan, (name, v))


def test_body_start_inside_the_buffer() -> None:
    """Offsets (errors, records hook) are frame offsets when the body starts after a header."""
    rnd = random.Random(3)
    plan = schema.plan(0, 9, "request")
    assert plan is not None
    for _ in range(20):
        _, data = gen_struct(plan, rnd, 0, records=True)
        head = rnd.randbytes(rnd.randint(1, 12))
        for m in [data, *mutations(data, rnd)]:
            same(head + m, len(head), plan, "offset")


def _captures() -> list[Path]:
    paths = sorted((CAPTURES / "kafka").glob("*.pcap")) if (CAPTURES / "kafka").is_dir() else []
    return [ROOT / "samples" / "kafka-basic.pcap", *paths]


@pytest.mark.parametrize("path", _captures(), ids=lambda p: p.stem)
def test_every_captured_body_decodes_the_same(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each body the session decodes (requests, responses, resync and guess attempts) goes through both."""
    seen = 0
    real = session.decode_body

    def checked(
        data: bytes,
        start: int,
        plan: schema.Plan,
        hook: Any,
        secrets: frozenset[str] = frozenset(),
        elements: Any = None,
    ):
        nonlocal seen
        seen += 1
        same(data, start, plan, (path.name, seen))
        return real(data, start, plan, hook, secrets, elements)

    monkeypatch.setattr(session, "decode_body", checked)
    for _ in dissect([str(path)], Options(engine="python")):  # the Python session calls decode_body
        pass
    assert seen > 0
