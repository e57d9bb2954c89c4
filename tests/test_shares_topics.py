"""Shares of one capture (`Options.shard`, how `spark export` spreads a large capture over
idle cores) name topics as the whole capture does, when the name is learnt on a connection
another share decodes.

A share decodes the connections whose stream number is k modulo n and *observes* the other
Kafka connections: their responses that can name topic ids (Metadata v10+ …) are read so that
the run's id -> name map is the whole capture's; nothing else of them is decoded. The capture:
ck-compress-gzip (confluent-kafka, a real broker), whose consumer connection (stream 6)
fetches topic `ck-gzip` by id (Fetch v16) after Metadata v12 answers on streams 2, 4, 5 and 6
listed that id with its name (its pdus.tsv; scenario.json: `create_topics ck-gzip`). The id is
blanked (0x5a bytes) in the answers of streams 2, 4 and 6, so the only answers naming it are on
stream 5 (packets 93 and 116); with two shares, stream 5 is share 1's and stream 6 share 0's.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from tests import variants as V
from tests.conftest import CAPTURES

_engine = pytest.importorskip("wiredump._engine")

GZIP = CAPTURES / "kafka" / "ck-compress-gzip.pcap"
TOPIC = "ck-gzip"
"""The topic of the capture's scenario.json (`create_topics ck-gzip`)."""
OTHER_ANSWERS = (35, 78, 108)
"""Metadata v12 responses of streams 2, 4 and 6 that name the topic (pdus.tsv)."""
STREAM5_ANSWERS = (93, 116)
"""Metadata v12 responses of stream 5 that name the topic (pdus.tsv)."""
FETCHER, TEACHER = 6, 5

pytestmark = pytest.mark.skipif(not GZIP.exists(), reason="ck-compress-gzip capture not available")


def blanked(tmp_path: Path, packets: tuple[int, ...], name: str) -> tuple[Path, str]:
    """ck-compress-gzip with the 16-byte topic id after the compact string "ck-gzip" (length
    byte 8) replaced by 0x5a bytes in the given packets; the path and the real id (read from
    the bytes of packet 93, by hand: Metadata v12 lists a topic as name then topic_id)."""
    cap = V.read(GZIP)
    recs = list(cap.recs)

    def id_at(n: int) -> tuple[bytearray, int]:
        t = recs[n - 1].tcp()
        assert t is not None
        data = bytearray(t.payload)
        return data, bytes(data).index(b"\x08" + TOPIC.encode()) + 1 + len(TOPIC)

    data, at = id_at(STREAM5_ANSWERS[0])
    real = str(uuid.UUID(bytes=bytes(data[at : at + 16])))
    for n in packets:
        data, at = id_at(n)
        assert str(uuid.UUID(bytes=bytes(data[at : at + 16]))) == real  # the same topic id
        data[at : at + 16] = b"\x5a" * 16
        t = recs[n - 1].tcp()
        assert t is not None
        recs[n - 1] = V.rebuild(recs[n - 1], t.seq, bytes(data))
    return V.write(cap, recs, tmp_path / name), real


def tables(path: Path, shard: tuple[int, int] | None = None) -> dict[str, pa.Table]:
    """Every table the native engine builds for the capture (or one share of it), as
    `spark export` builds them in a task (`TableFeed`)."""
    return _tables(path, shard, observe=True)[0]


def _tables(path: Path, shard: tuple[int, int] | None, observe: bool) -> tuple[dict[str, pa.Table], bool]:
    """`tables`, and whether the engine looked run state up (`Dissector.run_state_consulted`);
    `observe` off: the share drops the other shares' connections instead of observing them."""
    from wiredump._engine import Dissector, TableFeed

    from wiredump.dissect.pipeline import Options

    dissector = Dissector(str(path), Options(shard=shard, observe_others=observe))
    feed = TableFeed(True)
    batches: dict[str, list[pa.RecordBatch]] = {}
    while (ready := feed.pump(dissector)) is not None:
        for name, stream in ready:
            batches.setdefault(name, []).extend(pa.RecordBatchReader.from_stream(stream))
    for name, stream in feed.finish():
        batches.setdefault(name, []).extend(pa.RecordBatchReader.from_stream(stream))
    out = {name: pa.Table.from_batches(b) for name, b in batches.items() if b}
    return out, dissector.run_state_consulted


def rows(t: pa.Table | None) -> list[tuple]:
    """A table's rows as a sorted list (a multiset), every column."""
    if t is None:
        return []
    return sorted((tuple(repr(v) for v in r.values()) for r in t.to_pylist()), key=repr)


def fetch_topics(t: dict[str, pa.Table], table: str) -> set[str]:
    """The topics of `table`'s rows that belong to the fetching connection's Fetch frames."""
    frames = t["frames"].to_pylist()
    fetch = {f["packet"] for f in frames if f["stream"] == FETCHER and f["type"] == "Fetch"}
    return {r["topic"] for r in t[table].to_pylist() if r["stream"] == FETCHER and r["packet"] in fetch}


def test_a_share_names_topics_learnt_on_a_connection_of_another_share(tmp_path: Path) -> None:
    path, real = blanked(tmp_path, OTHER_ANSWERS, "taught-by-stream-5.pcap")
    assert FETCHER % 2 == 0 and TEACHER % 2 == 1  # two shares: each connection in its own
    whole = tables(path)
    shares = [tables(path, (k, 2)) for k in range(2)]
    # The share that owns the Fetch has none of stream 5's frames: it observed them only.
    assert {f["stream"] for f in shares[0]["frames"].to_pylist()} == {0, 2, 4, 6}
    assert {f["stream"] for f in shares[1]["frames"].to_pylist()} == {1, 3, 5}
    # The Fetch's records and per-partition results name the topic, as in the capture.
    assert fetch_topics(shares[0], "messages") == {TOPIC}
    assert fetch_topics(shares[0], "partitions") == {TOPIC}
    assert fetch_topics(whole, "messages") == {TOPIC}
    assert real not in {r["topic"] for r in whole["messages"].to_pylist()}
    # Every table of the two shares together is the whole capture's, row for row.
    assert set(whole) >= {"frames", "messages", "partitions", "exchanges", "connections"}
    for name in sorted(set(whole) | set(shares[0]) | set(shares[1])):
        union = rows(shares[0].get(name)) + rows(shares[1].get(name))
        assert sorted(union, key=repr) == rows(whole.get(name)), name


def test_without_the_teaching_answers_the_id_stays_unnamed(tmp_path: Path) -> None:
    """The control: with stream 5's answers blanked too, nothing names the id, and the Fetch's
    records carry the id itself (so the name above came from observing stream 5)."""
    path, real = blanked(tmp_path, OTHER_ANSWERS + STREAM5_ANSWERS, "untaught.pcap")
    whole = tables(path)
    share = tables(path, (0, 2))
    assert fetch_topics(share, "messages") == fetch_topics(whole, "messages") == {real}


REAL = sorted(CAPTURES.glob("*/*.pcap"))


@pytest.mark.parametrize("path", REAL, ids=[f"{p.parent.name}/{p.stem}" for p in REAL])
def test_the_shares_of_every_capture_are_the_whole_capture(path: Path) -> None:
    """Every real capture of the four protocols, in 2 and in 3 shares: each table of the shares
    together is the whole capture's, row for row (the native engine against itself: sharing,
    and observing instead of decoding, must change nothing but which share writes a row)."""
    whole = tables(path)
    assert whole.get("frames") is not None and whole["frames"].num_rows > 0
    for n in (2, 3):
        shares = [tables(path, (k, n)) for k in range(n)]
        for name in sorted(set(whole).union(*shares)):
            union = sorted((r for s in shares for r in rows(s.get(name))), key=repr)
            assert union == rows(whole.get(name)), f"{name}, {n} shares"


def test_a_share_that_does_not_observe_knows_it_looked_up_a_topic_id(tmp_path: Path) -> None:
    """Speculative shares (`observe_others` off, what `spark export` tries first): the share
    owning the Fetch by id, without observing stream 5, cannot name the topic: its rows differ
    from the whole capture's, and it says so (`run_state_consulted`), so the export runs it
    again observing. The share owning stream 5 looked no id up: its rows are already exact."""
    path, real = blanked(tmp_path, OTHER_ANSWERS, "taught-by-stream-5.pcap")
    fetcher, consulted = _tables(path, (0, 2), observe=False)
    assert consulted
    assert fetch_topics(fetcher, "messages") == {real}  # the id: what the flag guards against
    teacher, consulted = _tables(path, (1, 2), observe=False)
    assert not consulted
    observed = tables(path, (1, 2))
    for name in sorted(set(teacher) | set(observed)):
        assert rows(teacher.get(name)) == rows(observed.get(name)), name


TOPIC_ID_APIS = {0: 13, 1: 13, 3: 10, 8: 10, 9: 10, 19: 7, 20: 6, 68: 0, 75: 0, 76: 0, 78: 0, 79: 0}
"""api_key -> first version whose request or response carries topic ids, from Kafka's message
specs (reference/kafka: Produce v13, Fetch v13, Metadata v10, OffsetCommit/OffsetFetch v10,
CreateTopics v7, DeleteTopics v6; ConsumerGroupHeartbeat, DescribeTopicPartitions,
ConsumerGroupDescribe, ShareFetch, ShareAcknowledge from their first version)."""


def _streams_with_topic_ids(path: Path) -> set[int] | None:
    """The streams of the capture's independent PDU list (tshark's stream numbers, the
    engine's) that carry an API version with topic ids; None without a list."""
    tsv = path.with_suffix(".pdus.tsv")
    if path.parent.name != "kafka" or not tsv.exists():
        return None
    out = set()
    lines = tsv.read_text().splitlines()
    head = lines[0].split("\t")
    for line in lines[1:]:
        r = dict(zip(head, line.split("\t"), strict=False))
        first = TOPIC_ID_APIS.get(int(r["api_key"]))
        if first is not None and int(r["api_version"]) >= first:
            out.add(int(r["stream"]))
    return out


@pytest.mark.parametrize("path", REAL, ids=[f"{p.parent.name}/{p.stem}" for p in REAL])
def test_speculative_shares_are_exact_unless_they_say_otherwise(path: Path) -> None:
    """Every real capture in 2 and 3 shares that do not observe each other: a share that looked
    no topic id up has exactly the rows of the share that observed; with the capture's own PDU
    list (independent of the engine), a share none of whose connections uses an API version
    with topic ids never looks one up (so the speculation pays), and one that owns a Fetch by
    id does."""
    with_ids = _streams_with_topic_ids(path)
    for n in (2, 3):
        for k in range(n):
            spec, consulted = _tables(path, (k, n), observe=False)
            if not consulted:
                exact = tables(path, (k, n))
                for name in sorted(set(spec) | set(exact)):
                    assert rows(spec.get(name)) == rows(exact.get(name)), f"{name}, share {k}/{n}"
            if with_ids is not None:
                mine = {s for s in with_ids if s % n == k}
                if not mine:
                    assert not consulted, f"share {k}/{n} looked up a topic id"
                if path == GZIP and FETCHER % n == k:
                    assert consulted, f"share {k}/{n} owns the Fetch by id"
