"""The per-kind anomaly cap of a frame (`Frame.flag`/`note`/`add`, `MAX_ANOMALIES_PER_KIND`) and
`PendingAnomalies`, which holds a decoder's problems until it puts them on the frame.

The reference for `PendingAnomalies` is flagging each problem on the frame at once, one call per
problem: whatever came before on the frame, putting the pending ones on it must give the same
anomalies (kinds, details, offsets, order) and status, while holding at most 64 problems of a
kind. The counts of the cap itself are checked by hand (64 listed, the rest in one
`anomaly_limit` at the first one left out)."""

from __future__ import annotations

import random

from wiredump.dissect.internal import internal_error
from wiredump.dissect.model import MAX_ANOMALIES_PER_KIND, Frame, PendingAnomalies

KINDS = ("malformed", "bad_checksum", "message_limit", "trailing_bytes")


def status_of(kind: str) -> str | None:
    return None if kind in ("message_limit", "trailing_bytes") else kind


def as_rows(f: Frame) -> list[tuple[str, str, int | None]]:
    return [(a.kind, a.detail, a.offset) for a in f.anomalies]


def test_add_caps_anomalies_built_elsewhere_and_keeps_them_whole() -> None:
    # 100 internal errors on one frame: the first 64 are listed as built (with their protocol),
    # the other 36 counted in one anomaly_limit at the 65th's offset (64).
    f = Frame("kafka", "Produce", 0)
    for i in range(100):
        f.add(internal_error(ValueError(f"boom {i}"), "decode", "kafka", "a frame", i))
    assert [a.kind for a in f.anomalies] == ["internal_error"] * 64 + ["anomaly_limit"]
    assert all(a.protocol == "kafka" for a in f.anomalies[:64])
    assert (f.anomalies[-1].offset, f.anomalies[-1].detail) == (
        64,
        "36 more internal_error anomalies in this frame past the first 64 (counted, not listed)",
    )


def test_pending_anomalies_hold_64_of_a_kind() -> None:
    p = PendingAnomalies()
    for i in range(1_000_000):
        p.append(("malformed", f"problem {i}", i))
    assert len(p.items) == MAX_ANOMALIES_PER_KIND + 1
    assert p.items[-1] == ["malformed", None, 64, 1_000_000 - 64]
    f = Frame("tank", "Consume", 2)
    p.put_on(f, status_of)
    assert f.status == "malformed"
    assert as_rows(f)[-1] == (
        "anomaly_limit",
        "999936 more malformed anomalies in this frame past the first 64 (counted, not listed)",
        64,
    )


def test_pending_anomalies_give_what_flagging_at_once_gives() -> None:
    rng = random.Random(17)
    for _ in range(300):
        before = [
            (rng.choice(KINDS), f"before {i}", rng.randrange(1000)) for i in range(rng.choice((0, 1, 5, 70)))
        ]
        problems = [
            (rng.choice(KINDS[: rng.randint(1, 4)]), f"p {i}", rng.choice((None, rng.randrange(1000))))
            for i in range(rng.choice((0, 3, 64, 65, 66, 130, 400)))
        ]
        direct, pended = Frame("x", "t", 0), Frame("x", "t", 0)
        for f in (direct, pended):
            for kind, detail, off in before:
                f.flag("malformed", kind, detail, off)
        for kind, detail, off in problems:
            s = status_of(kind)
            if s is None:
                direct.note(kind, detail, off)
            else:
                direct.flag(s, kind, detail, off)
        pending = PendingAnomalies()
        pending.extend(problems)
        assert all(sum(1 for it in pending.items if it[0] == k) <= 65 for k in KINDS)
        pending.put_on(pended, status_of)
        assert as_rows(pended) == as_rows(direct)
        assert pended.status == direct.status
        # And the frames go on counting the same way after.
        for f in (direct, pended):
            f.note("malformed", "after", 1)
        assert as_rows(pended) == as_rows(direct)
