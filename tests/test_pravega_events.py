"""Pravega: events survive the Java client's block layout, whatever the sizes and TCP chunking.

`java_blocks` lays events out the way WIRE.md §6.3 says the client encoder does
(block mode: whole records, then a PARTIAL_EVENT holding the head of the record that
does not fit, its tail in APPEND_BLOCK_END.data, or PADDING when the events run out;
a first event larger than the block goes alone, without trailer). Hypothesis picks the
events, the block size and the TCP segment boundaries; the writer's events must come
back in order, numbered consecutively, and every block must be acknowledged.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_pravega_crafted import (
    WRITER,
    append_setup,
    c,
    cmd,
    data_appended,
    i32,
    i64,
    record,
    run,
    setup_append,
    sv,
)


def java_blocks(events: list[bytes], block_size: int, first_number: int, rid: int) -> list[bytes]:
    """APPEND_BLOCK / APPEND_BLOCK_END pairs for `events` (§6.3 block mode)."""
    out: list[bytes] = []
    recs = [record(e) for e in events]
    i = 0
    number = first_number - 1
    while i < len(recs):
        first = recs[i]
        if block_size <= len(first):
            # Exactly one append, no trailer.
            out.append(cmd(3, WRITER.bytes + first))
            number += 1
            out.append(cmd(4, WRITER.bytes + i32(len(first)) + i32(0) + i32(1) + i64(number) + i64(rid)))
            i += 1
            continue
        whole = b""
        n = 0
        while i < len(recs) and len(whole) + len(recs[i]) <= block_size:
            whole += recs[i]
            i += 1
            n += 1
        room = block_size + 8 - len(whole)
        if i < len(recs):  # the next record does not fit: PARTIAL_EVENT with its head
            head, tail = recs[i][: room - 8], recs[i][room - 8 :]
            trailer = cmd(-2, head)
            end_data = tail
            i += 1
            n += 1
        else:  # events ran out (timeout): PADDING
            trailer = cmd(-1, bytes(room - 8))
            end_data = b""
        out.append(cmd(3, WRITER.bytes + whole + trailer))
        number += n
        out.append(
            cmd(
                4,
                WRITER.bytes
                + i32(len(whole))
                + i32(len(end_data))
                + end_data
                + i32(n)
                + i64(number)
                + i64(rid),
            )
        )
    return out


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=25),
    block_size=st.integers(min_value=1, max_value=1200),
    cuts=st.lists(st.integers(min_value=0, max_value=100_000), max_size=12),
)
def test_blocks_give_back_the_events(events: list[bytes], block_size: int, cuts: list[int]) -> None:
    frames = java_blocks(events, block_size, 1, 1)
    stream = b"".join(frames)
    last = len(events)
    out = run(
        c(setup_append(1)),
        sv(append_setup(1)),
        *[c(part) for part in chunked(stream, cuts)],
        sv(data_appended(last, 0, 1, sum(len(record(e)) for e in events))),
    )
    ends = out.of("AppendBlockEnd")
    got = [m.value for f in ends for m in f.messages]
    assert got == events
    assert [m.offset for f in ends for m in f.messages] == list(range(1, last + 1))
    assert not [a for f in out.frames for a in f.anomalies] and not out.anomalies
    ends_answered = [e for e in out.exchanges if e.type == "AppendBlockEnd"]
    assert len(ends_answered) == len(ends) and all(e.status == "answered" for e in ends_answered)


def test_layout_helper_uses_both_trailers() -> None:
    """The generator above does produce PARTIAL_EVENT and PADDING (so the property covers both)."""
    frames = java_blocks([b"a" * 10, b"b" * 30, b"c" * 5], 40, 1, 1)
    codes = [int.from_bytes(f[:4], "big", signed=True) for f in frames]
    assert codes == [3, 4, 3, 4]
    assert frames[0][-8 - 22 : -22][:4] == i32(-2)  # block 1 ends with PARTIAL_EVENT(22 bytes of b's record)
    out = run(*[c(f) for f in frames])
    blocks = out.of("AppendBlock")
    assert [b.fields["trailer"] for b in blocks] == ["PartialEvent", "Padding"]
