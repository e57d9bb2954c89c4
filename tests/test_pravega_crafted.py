"""Pravega: crafted frames, built by hand from the facts in WIRE.md, for what the captures lack.

Each frame is laid out here byte by byte (§2 header, §3 primitives, §5 fields in wire
order, §6 append blocks) and fed to the framing engine with a Pravega session, as
TCP payload chunks, one chunk per "packet".
"""

from __future__ import annotations

import struct
import uuid

from conversation import Out, Stream, dissect_sends

WRITER = uuid.UUID("6b448a4b-5e23-f695-780a-6d600040581e")
SEG = "scope/stream/0.#epoch.0"
LONG_MIN = -(2**63)


# -- encoders (WIRE.md §3) ----------------------------------------------------------------
def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">H", len(raw)) + raw


def blob(b: bytes) -> bytes:
    return i32(len(b)) + b


def u(v: uuid.UUID = WRITER) -> bytes:
    return v.bytes  # most-significant long then least-significant long, both big-endian


def cmd(code: int, payload: bytes) -> bytes:
    return i32(code) + i32(len(payload)) + payload


def record(payload: bytes) -> bytes:
    """§6.1 event record."""
    return i32(0) + i32(len(payload)) + payload


HELLO_C = cmd(-127, i32(17) + i32(5))
HELLO_S = cmd(-127, i32(17) + i32(5))


def setup_append(rid: int, writer: uuid.UUID = WRITER, segment: str = SEG) -> bytes:
    return cmd(1, i64(rid) + u(writer) + s(segment) + s(""))


def append_setup(rid: int, writer: uuid.UUID = WRITER, segment: str = SEG) -> bytes:
    return cmd(2, i64(rid) + s(segment) + u(writer) + i64(LONG_MIN))


def block_end(
    size_whole: int, data: bytes, num: int, last: int, rid: int, writer: uuid.UUID = WRITER
) -> bytes:
    return cmd(4, u(writer) + i32(size_whole) + blob(data) + i32(num) + i64(last) + i64(rid))


def data_appended(event: int, previous: int, rid: int, offset: int, writer: uuid.UUID = WRITER) -> bytes:
    return cmd(7, u(writer) + i64(event) + i64(previous) + i64(rid) + i64(offset))


def read_segment(rid: int, offset: int, segment: str = SEG) -> bytes:
    return cmd(9, s(segment) + i64(offset) + i32(1 << 20) + s("") + i64(rid))


def segment_read(rid: int, offset: int, data: bytes, segment: str = SEG, tail: bool = False) -> bytes:
    return cmd(10, s(segment) + i64(offset) + bytes([tail, 0]) + blob(data) + i64(rid))


# -- harness --------------------------------------------------------------------------------
def run(*chunks: tuple[str, bytes]) -> Out:
    """The events of (role, bytes) chunks sent to port 12345, packets 1, 2, …, 1 ms apart."""
    return dissect_sends(chunks, 12345)


def c(data: bytes) -> tuple[str, bytes]:
    return ("client", data)


def sv(data: bytes) -> tuple[str, bytes]:
    return ("server", data)


# -- errors and replies the captures lack ---------------------------------------------------------
def test_wrong_host_answers_setup_append_with_flow_request_id() -> None:
    rid = (7 << 32) | 3  # Flow.asLong(): flow id 7, sequence 3
    out = run(
        c(HELLO_C),
        sv(HELLO_S),
        c(setup_append(rid)),
        sv(cmd(50, i64(rid) + s(SEG) + s("10.1.2.3:12345") + s("java.lang.Exception"))),
    )
    req, rep = out.one("SetupAppend"), out.one("WrongHost")
    assert rep.type_code == 50 and rep.kind == "response"
    assert rep.correlation_id == rid == req.correlation_id
    assert rep.error == "WrongHost" and rep.error_code == 50
    assert rep.fields["correct_host"] == "10.1.2.3:12345"
    assert rep.fields["segment"] == SEG
    assert rep.fields["flow"] == {"flow_id": 7, "sequence": 3}
    assert rep.peer_packet == 3 and req.peer_packet == 4 and rep.latency_us == 1000
    ex = [e for e in out.exchanges if e.type == "SetupAppend"]
    assert len(ex) == 1 and ex[0].status == "answered" and ex[0].error_code == 50
    assert "10.1.2.3:12345" in rep.summary


def test_wrong_host_short_form_without_stack_trace() -> None:
    out = run(c(read_segment(5, 0)), sv(cmd(50, i64(5) + s(SEG) + s("host:1"))))
    rep = out.one("WrongHost")
    assert rep.status == "ok"
    assert rep.fields["server_stack_trace"] == ""
    assert rep.fields["absent_optional_fields"] == ["server_stack_trace"]
    assert rep.peer_packet == 1


def test_auth_token_check_failed() -> None:
    out = run(
        c(read_segment(9, 0)),
        sv(cmd(60, i64(9) + s("") + i32(1))),  # errorCode 1 = TOKEN_EXPIRED
    )
    rep = out.one("AuthTokenCheckFailed")
    assert rep.type_code == 60 and rep.error == "AuthTokenCheckFailed" and rep.error_code == 60
    assert rep.fields["error_code"] == 1
    assert "TOKEN_EXPIRED" in rep.summary
    assert rep.peer_packet == 1
    assert out.exchanges[0].status == "answered" and out.exchanges[0].type == "ReadSegment"


def test_auth_token_check_failed_oldest_form() -> None:
    out = run(c(read_segment(9, 0)), sv(cmd(60, i64(9))))
    rep = out.one("AuthTokenCheckFailed")
    assert rep.status == "ok" and rep.fields["error_code"] == -1 and rep.peer_packet == 1


def test_keep_alive_both_ways_is_an_event() -> None:
    out = run(c(HELLO_C), sv(HELLO_S), c(cmd(100, b"")), sv(cmd(100, b"")))
    kas = out.of("KeepAlive")
    assert [(f.role, f.type_code, f.kind, f.length, f.correlation_id) for f in kas] == [
        ("client", 100, "event", 8, None),
        ("server", 100, "event", 8, None),
    ]
    assert all(f.status == "ok" for f in kas)
    assert {e.type for e in out.exchanges} == {"Hello"}


def test_errors_pair_with_their_request_by_request_id() -> None:
    out = run(
        c(cmd(28, i64(1) + s(SEG) + s(""))),  # SealSegment
        c(cmd(30, i64(2) + s(SEG) + s(""))),  # DeleteSegment
        c(
            cmd(20, i64(3) + s(SEG) + i32(100) + bytes([1]) + s("") + i64(1 << 20))
        ),  # CreateSegment, long form
        sv(cmd(52, i64(3) + s(SEG))),  # SegmentAlreadyExists answers #3
        sv(cmd(53, i64(2) + s(SEG) + s("") + i64(-1))),  # NoSuchSegment answers #2
        sv(cmd(29, i64(1) + s(SEG))),  # SegmentSealed answers #1
    )
    pairs = {f.type: f.peer_packet for f in out.frames if f.role == "server"}
    assert pairs == {"SegmentAlreadyExists": 3, "NoSuchSegment": 2, "SegmentSealed": 1}
    create = out.one("CreateSegment")
    assert create.fields["target_rate"] == 100 and create.fields["scale_type"] == 1
    assert create.fields["rollover_size_bytes"] == 1 << 20
    assert "scale Throughput" in create.summary
    assert out.one("SegmentSealed").error is None
    assert sorted((e.type, e.status, e.error_code) for e in out.exchanges) == [
        ("CreateSegment", "answered", 52),
        ("DeleteSegment", "answered", 53),
        ("SealSegment", "answered", None),
    ]


def test_reply_without_request() -> None:
    out = run(sv(cmd(21, i64(44) + s(SEG))))
    assert out.one("SegmentCreated").peer_packet is None
    assert [(e.status, e.type) for e in out.exchanges] == [("no_request", "SegmentCreated")]


def test_reply_of_an_unexpected_type_pairs_by_request_id_and_is_flagged() -> None:
    """Request ids are unique per flow: SegmentSealed with a ReadSegment's id answers it, oddly."""
    out = run(c(read_segment(4, 0)), sv(cmd(29, i64(4) + s(SEG))))
    rep = out.one("SegmentSealed")
    assert rep.peer_packet == 1
    assert [a.kind for a in rep.anomalies] == ["unexpected_reply"]
    assert [(e.type, e.status) for e in out.exchanges] == [("ReadSegment", "answered")]


def test_append_ack_never_pairs_by_request_id_alone() -> None:
    """A DataAppended for an append never seen does not take the SetupAppend sharing its id."""
    out = run(c(setup_append(1)), sv(data_appended(9, 8, 1, 100)))
    assert out.one("DataAppended").peer_packet is None
    assert sorted(e.status for e in out.exchanges) == ["no_request", "unanswered"]


# -- appends ------------------------------------------------------------------------------------
def test_partial_event_across_block_boundary() -> None:
    """§6.3: block = whole records + PARTIAL_EVENT(head of the next record); its tail in APPEND_BLOCK_END."""
    e1, e2, e3 = b"first event", b"second", b"third event, split across the block end" * 3
    r3 = record(e3)
    head, tail = r3[:20], r3[20:]
    whole = record(e1) + record(e2)
    block_data = whole + cmd(-2, head)
    block = cmd(3, u() + block_data)
    end = block_end(len(whole), tail, 3, 3, 2)
    out = run(
        c(setup_append(1)),
        sv(append_setup(1)),
        c(block[:30]),  # the block arrives over three packets
        c(block[30:70]),
        c(block[70:] + end),
        sv(data_appended(3, LONG_MIN, 2, len(whole) + len(r3))),
    )
    blk, bend = out.one("AppendBlock"), out.one("AppendBlockEnd")
    assert blk.first_packet == 3 and blk.packet == 5 and blk.length == len(block)
    assert blk.fields["whole_events"] == 2 and blk.fields["trailer"] == "PartialEvent"
    assert blk.fields["trailer_length"] == 20
    assert bend.fields["block_trailer"] == "PartialEvent"
    assert [m.value for m in bend.messages] == [e1, e2, e3]
    assert [m.offset for m in bend.messages] == [1, 2, 3]
    assert all(m.direction == "produce" and m.topic == SEG for m in bend.messages)
    assert [m.detail for m in bend.messages] == [
        {"writer_id": str(WRITER), "event_number": n} for n in (1, 2, 3)
    ]
    assert [m.value_size for m in bend.messages] == [len(e1), len(e2), len(e3)]
    assert not [a for f in out.frames for a in f.anomalies] and not out.anomalies
    ack = out.one("DataAppended")
    assert ack.peer_packet == 5 and ack.latency_us == 1000
    assert [e.type for e in out.exchanges if e.status == "answered"] == ["SetupAppend", "AppendBlockEnd"]
    assert [e.status for e in out.exchanges if e.type == "AppendBlock"] == ["no_response_expected"]


def test_padding_closes_a_block() -> None:
    e1, e2 = b"a" * 10, b"b" * 20
    whole = record(e1) + record(e2)
    block = cmd(3, u() + whole + cmd(-1, bytes(50)))
    out = run(c(setup_append(1)), c(block), c(block_end(len(whole), b"", 2, 7, 1)))
    blk, bend = out.one("AppendBlock"), out.one("AppendBlockEnd")
    assert blk.fields["trailer"] == "Padding" and blk.fields["trailer_length"] == 50
    assert [(m.offset, m.value) for m in bend.messages] == [(6, e1), (7, e2)]
    assert "events 6..7" in bend.summary
    assert not [a for f in out.frames for a in f.anomalies]


def test_padding_then_data_is_reported() -> None:
    whole = record(b"x")
    block = cmd(3, u() + whole + cmd(-1, bytes(4)))
    out = run(c(block), c(block_end(len(whole), b"junk", 1, 1, 1)))
    kinds = [a.kind for a in out.one("AppendBlockEnd").anomalies]
    assert "append_block" in kinds


def test_block_followed_by_another_command_is_reported() -> None:
    """§6.4: the command after APPEND_BLOCK must be its APPEND_BLOCK_END."""
    out = run(c(cmd(3, u() + record(b"x"))), c(read_segment(3, 0)))
    assert [a.kind for a in out.one("ReadSegment").anomalies] == ["append_block"]


def test_one_data_appended_acks_several_blocks() -> None:
    """DATA_APPENDED acknowledges every event in (previousEventNumber, eventNumber] (§4)."""
    out = run(
        c(setup_append(1)),
        sv(append_setup(1)),
        c(block_end(0, record(b"a") + record(b"b"), 2, 2, 1)),  # Java: blocks carry SetupAppend's request id
        c(block_end(0, record(b"c") + record(b"d") + record(b"e"), 3, 5, 1)),
        sv(data_appended(5, 0, 1, 100)),
        c(block_end(0, record(b"f"), 1, 6, 1)),
        sv(data_appended(6, 5, 1, 120)),
    )
    ends = out.of("AppendBlockEnd")
    acks = out.of("DataAppended")
    assert [f.packet for f in ends] == [3, 4, 6]
    assert [m.offset for f in ends for m in f.messages] == [1, 2, 3, 4, 5, 6]
    assert acks[0].peer_packet == 4 and acks[0].fields["acknowledges"] == [2, 5]
    assert acks[1].peer_packet == 6
    rows = sorted(
        (e.request_packet, e.response_packet, e.latency_us)
        for e in out.exchanges
        if e.type == "AppendBlockEnd"
    )
    assert rows == [(3, 5, 2000), (4, 5, 1000), (6, 7, 1000)]
    assert ends[0].peer_packet == 5 and ends[1].peer_packet == 5


def test_conditional_append_and_check_failed() -> None:
    out = run(
        c(setup_append(1)),
        c(cmd(5, u() + i64(4) + i64(1000) + record(b"conditional") + i64(8))),
        sv(cmd(8, u() + i64(4) + i64(8))),
    )
    ca, ccf = out.one("ConditionalAppend"), out.one("ConditionalCheckFailed")
    assert ca.fields["expected_offset"] == 1000 and ca.correlation_id == 8
    assert [(m.offset, m.value, m.topic) for m in ca.messages] == [(4, b"conditional", SEG)]
    assert ccf.peer_packet == 2 and ccf.error is None


def test_conditional_block_end_raw_bytes_and_events() -> None:
    raw = b"Hello, Pravega byte stream! "
    events = record(b"e1") + record(b"e2")
    out = run(
        c(cmd(89, u() + i64(1) + i64(0) + blob(raw) + i64(3))),
        sv(data_appended(1, LONG_MIN, 3, len(raw))),
        c(cmd(89, u() + i64(3) + i64(len(raw)) + blob(events) + i64(4))),
        sv(cmd(55, u() + i64(4) + s("") + i64(3))),  # InvalidEventNumber
    )
    cbe = out.of("ConditionalBlockEnd")
    assert cbe[0].fields["data_kind"] == "raw" and cbe[0].messages == []
    assert [(m.offset, m.value) for m in cbe[1].messages] == [(2, b"e1"), (3, b"e2")]
    assert out.one("DataAppended").peer_packet == 1
    inv = out.one("InvalidEventNumber")
    assert inv.peer_packet == 3 and inv.error == "InvalidEventNumber" and inv.error_code == 55


def test_segment_is_sealed_answers_an_append() -> None:
    out = run(
        c(setup_append(1)),
        c(block_end(0, record(b"x"), 1, 1, 28)),
        sv(cmd(51, i64(28) + s(SEG) + s("") + i64(63))),
    )
    rep = out.one("SegmentIsSealed")
    assert rep.peer_packet == 2 and rep.fields["offset"] == 63 and rep.error_code == 51


def test_event_count_mismatch_is_reported() -> None:
    out = run(c(block_end(0, record(b"a") + record(b"b"), 3, 3, 1)))
    assert [a.kind for a in out.one("AppendBlockEnd").anomalies] == ["event_count_mismatch"]


# -- reads ---------------------------------------------------------------------------------------
def test_segment_read_event_split_across_two_reads() -> None:
    e1, e2, e3 = b"one", b"two-" * 50, b"three"
    data = record(e1) + record(e2) + record(e3)
    cut = len(record(e1)) + 30
    out = run(
        c(read_segment(11, 0)),
        sv(segment_read(11, 0, data[:cut])),
        sv(segment_read(11, cut, data[cut:], tail=True)),  # the store split the reply in two
    )
    r1, r2 = out.of("SegmentRead")
    assert [m.value for m in r1.messages] == [e1]
    assert r1.fields["incomplete_tail_bytes"] == 30
    assert [m.value for m in r2.messages] == [e2, e3]
    assert r2.fields["joined_from_previous_read"] == 30
    assert [m.detail["segment_offset"] for m in r1.messages + r2.messages] == [
        0,
        len(record(e1)),
        len(record(e1) + record(e2)),
    ]
    assert all(
        m.direction == "deliver" and m.topic == SEG and m.offset is None for m in r1.messages + r2.messages
    )
    assert r1.peer_packet == 1 and r2.peer_packet == 1
    assert [(e.type, e.status) for e in out.exchanges] == [("ReadSegment", "answered")]


def test_segment_read_raw_bytes() -> None:
    out = run(c(read_segment(1, 7)), sv(segment_read(1, 7, b"Pravega byte stream! \x00\x01\x02")))
    r = out.one("SegmentRead")
    assert r.messages == [] and r.fields["data_kind"] == "raw" and r.fields["data_length"] == 24
    assert "raw" in r.summary


def test_large_data_is_shown_by_its_head() -> None:
    big = record(b"z" * 5000)
    out = run(c(read_segment(1, 0)), sv(segment_read(1, 0, big)))
    r = out.one("SegmentRead")
    assert r.fields["data_length"] == len(big) and len(r.fields["data"]) == 1024
    assert r.messages[0].value == b"z" * 5000


# -- tables, forms, strings -----------------------------------------------------------------------
def test_create_table_segment_short_and_long_forms() -> None:
    short = cmd(70, i64(13) + s(SEG) + s(""))  # the Rust client's form
    long = cmd(70, i64(14) + s(SEG) + s("tok") + bytes([1]) + i32(16) + i64(1 << 30))
    out = run(c(short), c(long))
    a, b = out.of("CreateTableSegment")
    assert a.status == b.status == "ok"
    assert a.length == 8 + 8 + 2 + len(SEG) + 2
    assert (a.fields["sorted_deprecated"], a.fields["key_length"], a.fields["rollover_size_bytes"]) == (
        False,
        0,
        0,
    )
    assert (b.fields["sorted_deprecated"], b.fields["key_length"], b.fields["rollover_size_bytes"]) == (
        True,
        16,
        1 << 30,
    )
    assert b.fields["delegation_token"] == "tok" and "absent_optional_fields" not in b.fields


def test_table_entries_keys_and_iterator() -> None:
    key = i32(4 + 3 + 8) + i32(3) + b"k01" + i64(-1)
    value = i32(4 + 5) + i32(5) + b"hello"
    empty_key = i32(12) + i32(0)  # §5.1: an empty key is just the two ints
    out = run(
        c(cmd(74, i64(1) + s(SEG) + s("") + i32(1) + key + value + i64(500))),
        sv(cmd(75, i64(1) + i32(1) + i64(77))),
        c(cmd(78, i64(2) + s(SEG) + s("") + i32(2) + key + empty_key)),
        c(cmd(83, i64(3) + s(SEG) + s("") + i32(10) + blob(b"ct") + blob(b""))),  # last two blobs missing
        sv(cmd(84, i64(3) + s(SEG) + i32(1) + key + blob(b"next"))),
    )
    upd = out.one("UpdateTableEntries")
    assert upd.fields["entries"] == [
        {
            "key": {
                "payload_size": 15,
                "key": b"k01",
                "key_text": "k01",
                "key_version": -1,
                "key_version_meaning": "NOT_EXISTS",
            },
            "value": {"payload_size": 9, "value": b"hello"},
        }
    ]
    assert upd.fields["table_segment_offset"] == 500
    assert out.one("TableEntriesUpdated").fields["updated_versions"] == [77]
    assert out.one("TableEntriesUpdated").peer_packet == 1
    rt = out.one("ReadTable")
    assert rt.status == "ok" and rt.fields["keys"][1] == {"payload_size": 12, "key": b""}
    rtk = out.one("ReadTableKeys")
    assert rtk.status == "ok"
    assert rtk.fields["args"] == {
        "continuation_token": b"ct",
        "prefix_filter": b"",
        "from_key": b"",
        "to_key": b"",
    }
    tkr = out.one("TableKeysRead")
    assert tkr.fields["continuation_token"] == b"next" and tkr.peer_packet == 4


def test_merge_commands_and_storage_chunks() -> None:
    attr = uuid.UUID(int=5)
    out = run(
        c(cmd(58, i64(1) + s("t") + s("src") + s("") + i32(1) + attr.bytes + bytes([4]) + i64(9) + i64(8))),
        sv(cmd(59, i64(1) + s("t") + s("src") + i64(4096))),
        c(cmd(90, i64(2) + s("t") + i32(2) + s("a") + s("b") + s(""))),
        sv(cmd(91, i64(2) + s("t") + i32(2) + s("a") + i64(10) + s("b") + i64(20))),
        c(cmd(-5, s(SEG) + s("") + i64(3))),
        sv(cmd(-6, i64(3) + i32(1) + i64(1) + i64(2) + i64(3) + s("chunk-0") + bytes([1]))),
    )
    ms = out.one("MergeSegments")
    assert ms.fields["attribute_updates"] == [
        {"attribute_id": str(attr), "update_type": "ReplaceIfEquals", "new_value": 9, "old_value": 8}
    ]
    assert out.one("SegmentsMerged").fields["new_target_write_offset"] == 4096
    assert out.one("MergeSegmentsBatch").fields["sources"] == ["a", "b"]
    assert out.one("SegmentsBatchMerged").fields["merged"] == [
        {"source": "a", "new_target_write_offset": 10},
        {"source": "b", "new_target_write_offset": 20},
    ]
    chunks = out.one("StorageChunksListed")
    assert (
        chunks.fields["chunks"][0]["chunk_name"] == "chunk-0"
        and chunks.fields["chunks"][0]["exists_in_storage"]
    )
    assert all(f.peer_packet for f in out.frames)


def test_modified_utf8_strings() -> None:
    """§3: U+0000 as C0 80, a character beyond the BMP as two 3-byte surrogates."""
    raw = b"a\xc0\x80b" + b"\xed\xa0\xbd\xed\xb8\x80"  # "a\0b" + U+1F600 as CESU-8
    seg = struct.pack(">H", len(raw)) + raw
    out = run(c(cmd(11, i64(1) + seg + s(""))))
    f = out.one("GetStreamSegmentInfo")
    assert f.status == "ok" and f.fields["segment"] == "a\x00b\U0001f600"


def test_hello_incompatible_versions_are_flagged() -> None:
    out = run(c(cmd(-127, i32(17) + i32(16))), sv(cmd(-127, i32(15) + i32(5))))
    srv = [f for f in out.of("Hello") if f.role == "server"][0]
    assert srv.status == "unsupported_version"
    assert [a.kind for a in srv.anomalies] == ["version_mismatch"]
    assert srv.fields["peer_versions"] == {"high_version": 17, "low_version": 16}
    assert srv.peer_packet == 1


def test_hello_equal_versions() -> None:
    out = run(c(HELLO_C), sv(HELLO_S))
    srv = [f for f in out.of("Hello") if f.role == "server"][0]
    assert srv.status == "ok" and srv.fields["versions"] == "equal" and srv.version == 17


# -- framing: truncated, oversize, unknown, garbage -------------------------------------------------
def test_truncated_frame_at_end_of_stream() -> None:
    frame = segment_read(1, 0, record(b"q" * 100))
    out = run(c(read_segment(1, 0)), sv(frame[:60]))
    r = out.one("SegmentRead")
    assert r.status == "truncated" and r.type_code == 10
    assert "truncated" in [a.kind for a in r.anomalies]
    assert r.fields["segment"] == SEG and r.messages == []
    assert r.peer_packet is None


def test_truncated_header() -> None:
    out = run(c(HELLO_C), c(cmd(100, b"")[:5]))
    last = out.frames[-1]
    assert last.status == "truncated" and last.type == "KeepAlive"


def test_oversize_frame_then_resync() -> None:
    bad = i32(10) + i32(0x01000000)  # one byte above MAX_WIRECOMMAND_SIZE
    good = cmd(11, i64(6) + s(SEG) + s(""))
    out = run(c(HELLO_C), c(bad + good), c(cmd(100, b"")))
    kinds = [a.kind for a in out.anomalies]
    assert "oversize_frame" in kinds and "resync" in kinds
    assert [f.type for f in out.frames] == ["Hello", "GetStreamSegmentInfo", "KeepAlive"]
    assert out.one("GetStreamSegmentInfo").correlation_id == 6


def test_frame_at_the_maximum_is_not_oversize() -> None:
    # MAX_WIRECOMMAND_SIZE (0x00FFFFFF) bytes of payload: a frame of 0x00FFFFFF + 8 bytes is allowed
    # (cut here by the end of the stream), one byte more is `oversize_frame` (WIRE.md §2).
    cut = run(c(HELLO_C), sv(HELLO_S), sv(i32(10) + i32(0x00FFFFFF) + b"\0" * 16))
    assert [(f.type, f.status) for f in cut.frames][-1] == ("SegmentRead", "truncated")
    assert [a.kind for a in cut.all_anomalies()] == ["truncated"]
    over = run(c(HELLO_C), sv(HELLO_S), sv(i32(10) + i32(0x01000000) + b"\0" * 16))
    assert [a.kind for a in over.anomalies] == ["oversize_frame", "resync"]
    assert f"over the pravega maximum of {0x00FFFFFF + 8}" in over.anomalies[0].detail


def test_unknown_type_keeps_framing() -> None:
    out = run(c(HELLO_C), c(cmd(13, b"\x01\x02\x03\x04\x05") + cmd(100, b"")))
    unk = out.frames[1]
    assert (unk.type_code, unk.status, unk.length) == (13, "unknown_type", 13)
    assert [a.kind for a in unk.anomalies] == ["unknown_type"]
    assert out.frames[2].type == "KeepAlive"


def test_garbage_then_resync_to_a_frame() -> None:
    out = run(c(b"\x12\x34\x56\x78GARBAGE!" + cmd(100, b"") + read_segment(2, 0)))
    assert [f.type for f in out.frames] == ["KeepAlive", "ReadSegment"]
    assert [a.kind for a in out.anomalies] == ["resync"]


def test_negative_length_is_not_a_frame() -> None:
    out = run(c(i32(9) + i32(-5) + cmd(100, b"")))
    assert [f.type for f in out.frames] == ["KeepAlive"]
    assert "resync" in [a.kind for a in out.anomalies]


def test_malformed_payload_never_raises() -> None:
    out = run(
        c(HELLO_C),
        c(cmd(1, i64(1) + u())),  # SetupAppend cut before its segment
        c(cmd(74, i64(2) + s(SEG) + s("") + i32(1_000_000))),  # entry count far beyond the bytes
        c(cmd(9, s(SEG) + i64(0) + i32(1) + s("") + b"\x00\x00\x00")),  # half an optional requestId
        c(cmd(-1, b"")),  # PADDING outside a block
    )
    a, b, d, e = out.frames[1:]
    assert a.status == b.status == d.status == "malformed"
    assert a.fields["request_id"] == 1
    assert e.status == "ok" and [x.kind for x in e.anomalies] == ["unexpected_command"]


def test_trailing_bytes_are_noted() -> None:
    out = run(c(HELLO_C), c(cmd(100, b"\x00\x01")))
    f = out.one("KeepAlive")
    assert f.status == "ok" and f.fields["trailing_bytes"] == 2
    assert [a.kind for a in f.anomalies] == ["trailing_bytes"]


def test_tls_on_the_segment_store_port_is_undecodable() -> None:
    client_hello = bytes.fromhex("16030100c4010000c00303") + bytes(200)
    out = run(c(client_hello), c(bytes(100)))
    assert out.frames == []
    assert [a.kind for a in out.anomalies] == ["undecodable"]


def test_capture_starting_mid_frame_resyncs_instead_of_inventing_frames() -> None:
    """The first bytes are the end of an AppendBlockEnd: `00 00 00 2c 00 00 00 2c` would read as
    type 44 (unknown), length 44; the first frame of a direction must check out like a resync
    candidate, so the engine resynchronises on the next real frame instead."""
    tail_of_frame = i32(44) + i32(44) + record(b"order #1: 2 x widget")[:30] + i32(1) + i64(1) + i64(2)
    out = run(
        c(tail_of_frame + block_end(0, record(b"next"), 1, 2, 3)),
        sv(data_appended(2, 1, 3, 88)),
    )
    assert [f.type for f in out.frames] == ["AppendBlockEnd", "DataAppended"]
    assert [a.kind for a in out.anomalies] == ["resync"]
    assert [m.value for m in out.frames[0].messages] == [b"next"]
    assert out.frames[1].peer_packet == 1


def test_first_frame_must_decode() -> None:
    """A header that looks right but whose payload does not decode is not taken as the first frame."""
    bogus = cmd(21, i64(1) + b"\xff\xff")  # SegmentCreated whose string length overruns the frame
    out = run(sv(bogus + cmd(21, i64(1) + s(SEG))))
    assert [(f.type, f.status) for f in out.frames] == [("SegmentCreated", "ok")]
    assert [a.kind for a in out.anomalies] == ["resync"]


def test_block_end_of_another_writer_drops_the_open_block() -> None:
    other = uuid.UUID(int=7)
    out = run(
        c(HELLO_C),
        c(cmd(3, u() + record(b"lost"))),
        c(block_end(0, record(b"mine"), 1, 1, 2, writer=other)),
    )
    end = out.one("AppendBlockEnd")
    assert [a.kind for a in end.anomalies] == ["append_block"]
    assert [m.value for m in end.messages] == [b"mine"]


def test_gap_mid_frame_then_resync() -> None:
    """Bytes lost in the middle of an AppendBlockEnd: the cut frame is truncated, the next one decodes."""
    framer = Stream(12345)
    first = block_end(0, record(b"a" * 40), 1, 1, 2)
    second = block_end(0, record(b"b" * 40), 1, 2, 3)
    framer.feed("client", HELLO_C + setup_append(1) + first[:30], 1, 1000)
    framer.gap("client", len(first) - 60, 2, 2000)
    framer.feed("client", first[-30:] + second, 3, 3000)
    out = framer.finish()
    assert [(f.type, f.status) for f in out.frames] == [
        ("Hello", "ok"),
        ("SetupAppend", "ok"),
        ("AppendBlockEnd", "truncated"),
        ("AppendBlockEnd", "ok"),
    ]
    assert out.frames[2].messages == [] and [m.value for m in out.frames[3].messages] == [b"b" * 40]
    assert "resync" in [a.kind for a in out.anomalies]


def test_long_lists_are_read_whole_but_shown_in_part() -> None:
    n = 1500
    out = run(c(read_segment(1, 0)), sv(cmd(75, i64(1) + i32(n) + b"".join(i64(v) for v in range(n)))))
    f = out.one("TableEntriesUpdated")
    assert f.status == "ok" and f.fields["updated_versions_total"] == n
    assert f.fields["updated_versions"] == list(range(1000))
    assert f.summary == "1500 versions"
