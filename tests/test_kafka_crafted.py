"""Kafka: crafted frames for what the real captures do not show.

Frames are built by hand here from the layouts in the reference NOTES (§2 headers,
§4 types, §6 record batch v2, §7 legacy messages), with checksums computed by the
crc32c package and zlib, and compressed by the codec libraries themselves. The engine
dissects them as the packets of one connection to port 9092 (tests/conversation.py).
"""

from __future__ import annotations

import gzip as gzip_mod
import random
import struct
import zlib

import cramjam
import crc32c
import lz4.frame
import pytest
import zstandard
from conversation import Out, Session, Stream

from wiredump.dissect.limits import Limits
from wiredump.dissect.model import Frame

# -- encoders (NOTES §4, §6, §7) ------------------------------------------------------------


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def varint(n: int) -> bytes:
    return uvarint((n << 1) ^ (n >> 63))


def string(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def cstring(s: str | None) -> bytes:
    if s is None:
        return uvarint(0)
    b = s.encode()
    return uvarint(len(b) + 1) + b


def record(offset_delta: int, key: bytes | None, value: bytes | None, ts_delta: int = 0, headers=()) -> bytes:
    body = b"\x00" + varint(ts_delta) + varint(offset_delta)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(-1) if value is None else varint(len(value)) + value
    body += varint(len(headers))
    for hk, hv in headers:
        body += varint(len(hk)) + hk.encode()
        body += varint(-1) if hv is None else varint(len(hv)) + hv
    return varint(len(body)) + body


def batch_v2(
    base_offset: int,
    records: list[bytes],
    codec: int = 0,
    compress=None,
    base_ts: int = 1_700_000_000_000,
    attributes_extra: int = 0,
    count: int | None = None,
) -> bytes:
    payload = b"".join(records)
    if codec:
        payload = compress(payload)
    attrs = codec | attributes_extra
    after_crc = struct.pack(
        ">hiqqqhii",
        attrs,
        len(records) - 1,
        base_ts,
        base_ts + 10,
        4242,
        0,
        0,
        len(records) if count is None else count,
    )
    after_crc += payload
    crc = crc32c.crc32c(after_crc)
    tail = struct.pack(">ibI", 0, 2, crc) + after_crc  # leader epoch, magic, crc
    return struct.pack(">qi", base_offset, len(tail)) + tail


def legacy(
    offset: int,
    key: bytes | None,
    value: bytes | None,
    magic: int = 1,
    codec: int = 0,
    ts: int = 1_700_000_000_000,
) -> bytes:
    body = struct.pack(">bb", magic, codec)
    if magic == 1:
        body += struct.pack(">q", ts)
    body += struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    body += struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
    msg = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(msg)) + msg


def produce_v3(
    corr: int, topic: str, partition: int, records: bytes, acks: int = -1, api_version: int = 3
) -> bytes:
    body = (string(None) if api_version >= 3 else b"") + struct.pack(">hi", acks, 30000)
    body += struct.pack(">i", 1) + string(topic) + struct.pack(">i", 1) + struct.pack(">i", partition)
    body += struct.pack(">i", len(records)) + records
    header = struct.pack(">hhi", 0, api_version, corr) + string("crafted")
    return struct.pack(">i", len(header) + len(body)) + header + body


def produce_v9(corr: int, topic: str, partition: int, records: bytes) -> bytes:
    body = cstring(None) + struct.pack(">hi", -1, 30000)
    body += uvarint(2) + cstring(topic) + uvarint(2) + struct.pack(">i", partition)
    body += uvarint(len(records) + 1) + records + b"\x00" + b"\x00" + b"\x00"
    header = struct.pack(">hhi", 0, 9, corr) + string("crafted") + b"\x00"
    return struct.pack(">i", len(header) + len(body)) + header + body


def produce_v0(corr: int, topic: str, partition: int, records: bytes) -> bytes:
    body = struct.pack(">hi", 1, 30000)
    body += struct.pack(">i", 1) + string(topic) + struct.pack(">i", 1) + struct.pack(">i", partition)
    body += struct.pack(">i", len(records)) + records
    header = struct.pack(">hhi", 0, 0, corr) + string("crafted")
    return struct.pack(">i", len(header) + len(body)) + header + body


def fetch_v4_request(corr: int, topic: str) -> bytes:
    body = struct.pack(">iiiib", -1, 500, 1, 1 << 20, 0)
    body += struct.pack(">i", 1) + string(topic) + struct.pack(">i", 1) + struct.pack(">iqi", 0, 0, 1 << 20)
    header = struct.pack(">hhi", 1, 4, corr) + string("crafted")
    return struct.pack(">i", len(header) + len(body)) + header + body


def fetch_v4_response(corr: int, topic: str, records: bytes) -> bytes:
    body = struct.pack(">i", 0) + struct.pack(">i", 1) + string(topic) + struct.pack(">i", 1)
    body += struct.pack(">ihqq", 0, 0, 100, 100) + struct.pack(">i", -1)  # aborted: null
    body += struct.pack(">i", len(records)) + records
    return struct.pack(">ii", len(body) + 4, corr) + body


# -- harness -----------------------------------------------------------------------------------


def new_session(limits: Limits | None = None, **options: object) -> tuple[Session, None]:
    return Session(9092, limits, **options), None


def one(session: Session, data: bytes, role: str = "client") -> Frame:
    return session.one(data, role)


class _Engine(Stream):
    def finish(self) -> Out:  # type: ignore[override]
        out = super().finish()
        self.result.__dict__.update(out.__dict__)
        return out


def engine(limits: Limits | None = None) -> tuple[_Engine, Out]:
    fr = _Engine(9092, limits)
    fr.result = Out()
    return fr, fr.result


RECS = [
    record(0, b"k0", b"value-0", 0, [("h", b"x")]),
    record(1, None, b"value-1", 5),
    record(2, b"k2", None, 9),
]

# -- record batches v2 -----------------------------------------------------------------------


def test_v2_batch_records_headers_and_offsets() -> None:
    s, _ = new_session()
    f = one(s, produce_v3(1, "orders", 3, batch_v2(100, RECS)))
    assert f.status == "ok" and f.type == "Produce" and f.version == 3
    # Unanswered: the broker's offsets are unknown; the place in the partition's records is kept (the
    # batch's own base offset, 100 here, is the producer's and the broker ignores it).
    assert [(m.topic, m.partition, m.offset, m.offset_delta) for m in f.messages] == [
        ("orders", 3, None, 0),
        ("orders", 3, None, 1),
        ("orders", 3, None, 2),
    ]
    assert [m.key for m in f.messages] == [b"k0", None, b"k2"]
    assert [m.value for m in f.messages] == [b"value-0", b"value-1", None]
    assert [m.value_size for m in f.messages] == [7, 7, 0]
    assert f.messages[0].headers == [("h", b"x")]
    assert [m.timestamp_ms for m in f.messages] == [1_700_000_000_000, 1_700_000_000_005, 1_700_000_000_009]
    assert all(m.checksum_ok and m.direction == "produce" and m.compression is None for m in f.messages)
    b = f.fields["body"]["topic_data"][0]["partition_data"][0]["records"]["batches"][0]
    assert (
        b["crc_ok"] and b["producer_id"] == 4242 and b["records_count"] == 3 and b["last_offset_delta"] == 2
    )
    assert "orders[3] 3 records" in f.summary and "acks=-1" in f.summary
    assert f.messages[0].detail == {
        "batch_base_offset": 100,
        "producer_id": 4242,
        "producer_epoch": 0,
        "base_sequence": 0,
        "transactional": False,
        "magic": 2,
    }


def test_v2_flipped_byte_fails_crc32c() -> None:
    raw = bytearray(produce_v3(1, "orders", 0, batch_v2(0, RECS)))
    raw[-3] ^= 0x01  # inside the last record's value: covered by the CRC
    s, _ = new_session()
    f = one(s, bytes(raw))
    assert f.status == "bad_checksum"
    assert [a.kind for a in f.anomalies] == ["bad_checksum"]
    assert f.anomalies[0].offset is not None
    assert len(f.messages) == 3 and not any(m.checksum_ok for m in f.messages)


def test_v2_leader_epoch_is_outside_the_crc() -> None:
    raw = bytearray(produce_v3(1, "orders", 0, batch_v2(0, RECS)))
    records_at = len(raw) - len(batch_v2(0, RECS))
    raw[records_at + 12 : records_at + 16] = struct.pack(">i", 77)  # partitionLeaderEpoch rewritten
    s, _ = new_session()
    f = one(s, bytes(raw))
    assert f.status == "ok"
    assert (
        f.fields["body"]["topic_data"][0]["partition_data"][0]["records"]["batches"][0][
            "partition_leader_epoch"
        ]
        == 77
    )


@pytest.mark.parametrize(
    "codec,name,compress",
    [
        (1, "gzip", gzip_mod.compress),
        (2, "snappy", lambda b: bytes(cramjam.snappy.compress_raw(b))),
        (3, "lz4", lz4.frame.compress),
        (4, "zstd", lambda b: zstandard.ZstdCompressor().compress(b)),
    ],
)
def test_v2_each_codec(codec: int, name: str, compress) -> None:
    s, _ = new_session()
    f = one(s, produce_v9(7, "zipped", 1, batch_v2(50, RECS, codec, compress)))
    assert f.status == "ok", f.anomalies
    assert f.version == 9
    assert [m.value for m in f.messages] == [b"value-0", b"value-1", None]
    assert [(m.offset, m.offset_delta) for m in f.messages] == [(None, 0), (None, 1), (None, 2)]
    assert {m.compression for m in f.messages} == {name}


def test_v2_snappy_xerial_framing() -> None:
    payload = b"".join(RECS)
    block = bytes(cramjam.snappy.compress_raw(payload))
    xerial = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(block)) + block
    s, _ = new_session()
    f = one(s, produce_v3(1, "x", 0, batch_v2(0, RECS, 2, lambda _: xerial)))
    assert f.status == "ok" and [m.value for m in f.messages] == [b"value-0", b"value-1", None]


def test_control_batch_commit_marker() -> None:
    key = struct.pack(">hh", 0, 1)  # version 0, COMMIT
    value = struct.pack(">hi", 0, 5)  # version 0, coordinator epoch 5
    batch = batch_v2(9, [record(0, key, value)], attributes_extra=0x10 | 0x20)
    s, _ = new_session()
    f = one(s, produce_v3(1, "t", 0, batch))
    b = f.fields["body"]["topic_data"][0]["partition_data"][0]["records"]["batches"][0]
    assert b["is_control"] and b["is_transactional"]
    assert b["control_records"] == [
        {"version": 0, "type": "COMMIT", "marker_version": 0, "coordinator_epoch": 5}
    ]
    assert f.messages == []  # markers are not application records


def test_truncated_batch_in_produce_is_malformed() -> None:
    batch = batch_v2(0, RECS)
    s, _ = new_session()
    f = one(s, produce_v3(1, "t", 0, batch[:-10]))
    assert f.status == "malformed"
    assert any("truncated record set" in a.detail for a in f.anomalies)


def test_partial_trailing_batch_in_fetch_response_is_normal() -> None:
    s, corr = new_session()
    one(s, fetch_v4_request(5, "t"))
    whole = batch_v2(0, RECS)
    f = one(s, fetch_v4_response(5, "t", whole + batch_v2(3, RECS)[:40]), "server")
    assert f.status == "ok" and f.anomalies == []
    assert f.type == "Fetch" and f.version == 4 and f.kind == "response"
    assert [m.offset for m in f.messages] == [0, 1, 2]
    assert all(m.direction == "deliver" and m.topic == "t" for m in f.messages)
    rec = f.fields["body"]["responses"][0]["partitions"][0]["records"]
    assert rec["partial_trailing_bytes"] == 40


def test_record_count_beyond_batch() -> None:
    s, _ = new_session()
    f = one(s, produce_v3(1, "t", 0, batch_v2(0, RECS, count=1_000_000)))
    assert f.status == "malformed"


# -- legacy message sets -----------------------------------------------------------------------


def test_legacy_magic1_flipped_byte_fails_crc32() -> None:
    raw = bytearray(
        produce_v3(1, "old", 0, legacy(0, b"k", b"hello") + legacy(1, None, b"world"), api_version=2)
    )
    raw[-2] ^= 0x20
    s, _ = new_session()
    f = one(s, bytes(raw))
    assert f.status == "bad_checksum"
    assert [m.checksum_ok for m in f.messages] == [True, False]
    assert [m.value for m in f.messages] == [b"hello", b"worLd"]


@pytest.mark.parametrize(
    "codec,compress",
    [
        (1, gzip_mod.compress),
        (2, lambda b: bytes(cramjam.snappy.compress_raw(b))),
        (3, lambda b: lz4.frame.compress(b, content_checksum=False, store_size=False)),
    ],
)
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_compressed_wrapper(codec: int, compress, magic: int) -> None:
    inner_offsets = (0, 1, 2) if magic == 1 else (40, 41, 42)  # v1: relative; v0: absolute
    inner = b"".join(legacy(o, None, f"m{i}".encode(), magic) for i, o in enumerate(inner_offsets))
    packed = compress(inner)
    if codec == 3 and magic == 0:
        # Kafka's magic-0 LZ4 writer computed the header checksum over the magic too (NOTES §8).
        import xxhash

        flg_end = 6
        packed = (
            packed[:flg_end]
            + bytes([(xxhash.xxh32_intdigest(packed[0:flg_end], 0) >> 8) & 0xFF])
            + packed[flg_end + 1 :]
        )
    wrapper = legacy(42, None, packed, magic, codec)
    s, _ = new_session()
    f = one(s, produce_v3(1, "old", 0, wrapper, api_version=2))
    assert f.status == "ok", f.anomalies
    assert [m.value for m in f.messages] == [b"m0", b"m1", b"m2"]
    assert [(m.offset, m.offset_delta) for m in f.messages] == [(None, 0), (None, 1), (None, 2)]
    assert all(m.checksum_ok for m in f.messages)


def test_legacy_magic0_in_produce_v0() -> None:
    s, _ = new_session()
    f = one(s, produce_v0(3, "v0", 2, legacy(0, b"a", b"b", magic=0)))
    assert f.status == "ok" and f.version == 0
    assert [(m.topic, m.partition, m.key, m.value, m.timestamp_ms) for m in f.messages] == [
        ("v0", 2, b"a", b"b", None)
    ]


# -- limits and bad counts -------------------------------------------------------------------


def test_gzip_bomb_hits_the_decompression_limit() -> None:
    # 300 MiB of zeros as 75 gzip members of 4 MiB each (gzip allows members back to back).
    member = gzip_mod.compress(b"\0" * (4 << 20), 1)
    bomb = member * 75
    s, _ = new_session(Limits(max_decompressed=16 << 20))
    f = one(s, produce_v3(1, "bomb", 0, batch_v2(0, [b""], 1, lambda _: bomb, count=1)))
    kinds = [a.kind for a in f.anomalies]
    assert "decompression_limit" in kinds
    assert f.messages == []


def test_gzip_bomb_single_stream() -> None:
    c = zlib.compressobj(1, zlib.DEFLATED, 31)
    zeros = b"\0" * (1 << 20)
    bomb = b"".join(c.compress(zeros) for _ in range(40)) + c.flush()
    s, _ = new_session(Limits(max_decompressed=8 << 20))
    f = one(s, produce_v3(1, "bomb", 0, batch_v2(0, [b""], 1, lambda _: bomb, count=1)))
    assert "decompression_limit" in [a.kind for a in f.anomalies]


def test_corrupt_compressed_payload() -> None:
    s, _ = new_session()
    f = one(s, produce_v3(1, "t", 0, batch_v2(0, RECS, 4, lambda _: b"\x28\xb5\x2f\xfd garbage")))
    assert "decompression_failed" in [a.kind for a in f.anomalies]
    assert f.status == "malformed"


def test_array_count_far_beyond_the_frame() -> None:
    header = struct.pack(">hhi", 3, 1, 9) + string("c")
    body = struct.pack(">i", 0x7FFFFFF0)  # Metadata v1 topics: two billion names in four bytes
    frame = struct.pack(">i", len(header) + len(body)) + header + body
    s, _ = new_session()
    f = one(s, frame)
    assert f.status == "malformed"
    assert f.anomalies[0].offset == 4 + len(header) + 4
    assert "cannot fit" in f.anomalies[0].detail


def test_trailing_bytes_after_body_are_malformed() -> None:
    header = struct.pack(">hhi", 3, 1, 9) + string("c")
    body = struct.pack(">i", 0) + b"\x01\x02"
    s, _ = new_session()
    f = one(s, struct.pack(">i", len(header) + len(body)) + header + body)
    assert f.status == "malformed" and f.anomalies[0].offset == 4 + len(header) + 4


# -- headers, pairing, unknowns ----------------------------------------------------------------


def test_acks_zero_expects_no_response() -> None:
    fr, out = engine()
    fr.feed("client", produce_v3(1, "t", 0, batch_v2(0, RECS), acks=0), 1, 1000)
    fr.finish()
    assert [e.status for e in out.exchanges] == ["no_response_expected"]


def test_pairing_and_latency_through_the_engine() -> None:
    fr, out = engine()
    p1 = fr.feed("client", fetch_v4_request(11, "t"), 1, 1_000)
    p2 = fr.feed("server", fetch_v4_response(11, "t", batch_v2(0, RECS)), 2, 4_500)
    fr.finish()
    req, resp = out.frames
    assert (req.peer_packet, resp.peer_packet, resp.latency_us) == (p2, p1, 3_500)
    assert [e.status for e in out.exchanges] == ["answered"]


def test_unknown_key_and_version_keep_the_stream() -> None:
    unknown_key = struct.pack(">hhi", 250, 0, 1) + string("c") + b"\x00\x01"
    newer = struct.pack(">hhi", 3, 99, 2) + string("c") + b"\x00"
    good = produce_v3(3, "t", 0, batch_v2(0, RECS))
    first = produce_v3(1, "t", 0, batch_v2(0, RECS))
    data = first + b"".join(struct.pack(">i", len(x)) + x for x in (unknown_key, newer)) + good
    fr, out = engine()
    fr.feed("client", data, 1, 1)
    fr.finish()
    assert [(f.type, f.status) for f in out.frames] == [
        ("Produce", "ok"),
        ("Unknown", "unknown_type"),
        ("Metadata", "unsupported_version"),
        ("Produce", "ok"),
    ]
    assert len(out.frames[3].messages) == 3
    assert not out.anomalies or {a.kind for a in out.anomalies} <= {"unknown_type", "unsupported_version"}


def test_resync_after_garbage() -> None:
    good = produce_v3(3, "t", 0, batch_v2(0, RECS))
    fr, out = engine()
    fr.feed("client", b"\xff\xfe" * 7 + good, 1, 1)
    fr.finish()
    assert [(f.type, f.status) for f in out.frames] == [("Produce", "ok")]
    assert [a.kind for a in out.anomalies] == ["resync"]
    assert "skipped 14" in out.anomalies[0].detail


def test_implausible_frames_are_skipped_not_decoded() -> None:
    # Framing refuses what cannot start a frame (a client id longer than the frame, a size below
    # a request header, a negative API key; a response to no pending request, or one whose body
    # is not its request's): those bytes are skipped as one `resync`, never decoded as a frame,
    # and the good frame after them is.
    good = produce_v3(3, "t", 0, batch_v2(0, RECS))
    for bad in (
        struct.pack(">ihhi", 100, 3, 1, 0) + b"\xff\xf0" + b"\0" * 94,
        struct.pack(">ihhi", 2, 0, 0, 0),
        struct.pack(">ihhi", 100, -5, 0, 0) + b"\0" * 94,
    ):
        fr, out = engine()
        fr.feed("client", bad + good)
        fr.finish()
        assert [(f.type, f.correlation_id, f.status) for f in out.frames] == [("Produce", 3, "ok")], bad
        assert [a.kind for a in out.anomalies] == ["resync"]
    resp = fetch_v4_response(9, "t", b"")
    for bad in (struct.pack(">ii", 6, 11) + b"\0" * 2, struct.pack(">ii", 6, 9) + b"\0" * 2):
        s, _ = new_session()
        one(s, fetch_v4_request(9, "t"))
        (f,) = s.decode(bad + resp, "server")
        assert (f.kind, f.type, f.correlation_id, f.status) == ("response", "Fetch", 9, "ok"), bad
        assert [a.kind for a in s.out.anomalies] == ["resync"]


def test_capture_starting_mid_stream() -> None:
    # Both directions start in the middle of a frame (the capture began mid-connection).
    req1 = produce_v3(40, "t", 0, batch_v2(0, RECS))
    req2 = fetch_v4_request(41, "t")
    resp0 = fetch_v4_response(39, "t", batch_v2(0, RECS))  # answers a request never captured
    resp2 = fetch_v4_response(41, "t", batch_v2(3, RECS))
    fr, out = engine()
    p1 = fr.feed("client", req1[30:] + req2, 1, 1)
    fr.feed("server", resp0[25:] + resp2, 2, 2)
    fr.finish()
    assert [(f.kind, f.type, f.correlation_id, f.status) for f in out.frames] == [
        ("request", "Fetch", 41, "ok"),
        ("response", "Fetch", 41, "ok"),
    ]
    assert out.frames[1].peer_packet == p1
    assert [m.offset for m in out.frames[1].messages] == [3, 4, 5]
    assert sorted(a.kind for a in out.anomalies) == ["resync", "resync"]


def test_flexible_request_header_and_tagged_fields() -> None:
    # ApiVersions v3 request (NOTES §5): header v2, compact client software name/version, tags.
    body = cstring("wiredump-test") + cstring("1.0") + uvarint(1) + uvarint(9) + uvarint(2) + b"\xab\xcd"
    header = struct.pack(">hhi", 18, 3, 21) + string("cid") + b"\x00"
    s, _ = new_session()
    f = one(s, struct.pack(">i", len(header) + len(body)) + header + body)
    assert f.status == "ok"
    assert f.fields["header"]["client_id"] == "cid"
    assert f.fields["body"]["client_software_name"] == "wiredump-test"
    assert f.fields["body"]["_unknown_tags"] == {"9": b"\xab\xcd"}
    assert f.summary == "client wiredump-test 1.0"


def test_api_versions_unsupported_answered_with_v0_body() -> None:
    header = struct.pack(">hhi", 18, 3, 4) + string("c") + b"\x00"
    body = cstring("x") + cstring("1") + b"\x00"
    s, _ = new_session()
    one(s, struct.pack(">i", len(header) + len(body)) + header + body)
    v0 = struct.pack(">h", 35) + struct.pack(">i", 1) + struct.pack(">hhh", 18, 0, 2)
    f = one(s, struct.pack(">ii", len(v0) + 4, 4) + v0, "server")
    assert f.status == "ok" and f.error_code == 35 and f.error == "UNSUPPORTED_VERSION"
    assert f.fields["body"]["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 2}]


def test_api_versions_from_the_future_answered_with_v0() -> None:
    header = struct.pack(">hhi", 18, 9, 4) + string("c") + b"\x00"
    s, _ = new_session()
    req = one(s, struct.pack(">i", len(header) + 3) + header + b"\x01\x01\x00")
    assert req.status == "unsupported_version"
    v0 = struct.pack(">h", 35) + struct.pack(">i", 1) + struct.pack(">hhh", 18, 0, 4)
    f = one(s, struct.pack(">ii", len(v0) + 4, 4) + v0, "server")
    assert f.status == "ok" and f.error == "UNSUPPORTED_VERSION" and f.version == 9
    assert f.fields["header"]["body_version"] == 0
    assert f.fields["body"]["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 4}]


def test_response_error_codes_first_non_zero_and_all_listed() -> None:
    s, _ = new_session()
    one(s, produce_v3(8, "t", 0, batch_v2(0, RECS)))
    # Produce v3 response: [topic [partition, error, base_offset, log_append_time]], throttle.
    parts = struct.pack(">ihqq", 0, 0, 5, -1) + struct.pack(">ihqq", 1, 6, -1, -1)
    body = struct.pack(">i", 1) + string("t") + struct.pack(">i", 2) + parts + struct.pack(">i", 0)
    f = one(s, struct.pack(">ii", len(body) + 4, 8) + body, "server")
    assert f.status == "ok"
    assert (f.error_code, f.error) == (6, "NOT_LEADER_OR_FOLLOWER")
    assert f.fields["_errors"] == [
        {
            "path": "responses[0].partition_responses[1].error_code",
            "error_code": 6,
            "error": "NOT_LEADER_OR_FOLLOWER",
        }
    ]
    assert "NOT_LEADER_OR_FOLLOWER" in f.summary


def test_response_without_request_is_guessed() -> None:
    s, corr = new_session()
    # A Metadata v1 request seen earlier on this connection teaches the layout in use.
    header = struct.pack(">hhi", 3, 1, 1) + string("c")
    body = struct.pack(">i", -1)
    one(s, struct.pack(">i", len(header) + len(body)) + header + body)
    one(s, struct.pack(">ii", 4 + len(_metadata_v1_body()), 1) + _metadata_v1_body(), "server")
    orphan = one(s, struct.pack(">ii", 4 + len(_metadata_v1_body()), 2) + _metadata_v1_body(), "server")
    assert orphan.kind == "response" and orphan.status == "ok"
    assert (orphan.type, orphan.version) == ("Metadata", 1)
    assert orphan.fields["no_request"] and orphan.fields["guessed"]
    assert [e.status for e in s.out.exchanges] == ["answered", "no_request"]


def _metadata_v1_body() -> bytes:
    # brokers [1: node 1 "h":9092 rack null], controller 1, topics []
    return (
        struct.pack(">i", 1)
        + struct.pack(">i", 1)
        + string("h")
        + struct.pack(">i", 9092)
        + string(None)[:0]
        + struct.pack(">h", -1)
        + struct.pack(">i", 1)
        + struct.pack(">i", 0)
    )


def test_controlled_shutdown_v0_has_no_client_id() -> None:
    header = struct.pack(">hhi", 7, 0, 3)
    body = struct.pack(">i", 12)  # broker id
    s, _ = new_session()
    f = one(s, struct.pack(">i", len(header) + len(body)) + header + body)
    assert f.status == "ok" and f.fields["body"] == {"broker_id": 12}
    assert "client_id" not in f.fields["header"]


# -- TLS and SASL ------------------------------------------------------------------------------


def test_tls_is_reported_as_encrypted() -> None:
    hello = b"\x16\x03\x01" + struct.pack(">H", 40) + b"\x01" + b"\x00" * 39
    app = b"\x17\x03\x03" + struct.pack(">H", 20) + b"\x99" * 20
    fr, out = engine()
    fr.feed("client", hello + app, 1, 1)
    fr.finish()
    assert [(f.type, f.status) for f in out.frames] == [("TLS", "undecodable"), ("TLS", "undecodable")]
    assert "encrypted" in out.frames[0].summary
    assert not [a for a in out.anomalies if a.kind == "resync"]


def test_tls_picked_up_mid_stream() -> None:
    # The capture starts inside an encrypted connection: application-data records only.
    rec = b"\x17\x03\x03" + struct.pack(">H", 30) + b"\x42" * 30
    fr, out = engine()
    fr.feed("client", rec[7:] + rec + rec, 1, 1)
    fr.feed("server", rec, 2, 2)
    fr.finish()
    assert [(f.role, f.type, f.status) for f in out.frames] == [
        ("client", "TLS", "undecodable"),
        ("client", "TLS", "undecodable"),
        ("server", "TLS", "undecodable"),
    ]
    assert [a.kind for a in out.anomalies if a.kind == "resync"] == ["resync"]


def _sasl_handshake(corr: int) -> tuple[bytes, bytes]:
    header = struct.pack(">hhi", 17, 0, corr) + string("c")
    body = string("PLAIN")
    req = struct.pack(">i", len(header) + len(body)) + header + body
    rbody = struct.pack(">h", 0) + struct.pack(">i", 1) + string("PLAIN")
    resp = struct.pack(">ii", len(rbody) + 4, corr) + rbody
    return req, resp


@pytest.mark.parametrize("show", [False, True])
def test_sasl_v0_plain_token_masked(show: bool) -> None:
    s, _ = new_session(show_secrets=show)
    req, resp = _sasl_handshake(1)
    assert one(s, req).fields["body"] == {"mechanism": "PLAIN"}
    assert one(s, resp, "server").status == "ok"
    token = b"\x00alice\x00s3cret"
    f = one(s, struct.pack(">i", len(token)) + token)
    assert f.type == "SaslToken" and f.status == "ok"
    if show:
        assert f.fields["token"] == token
    else:
        assert f.fields["username"] == "alice" and f.fields["password"] == "<masked>"
        assert b"s3cret" not in repr(f.fields).encode() and "s3cret" not in f.summary
    assert one(s, struct.pack(">i", 0), "server").type == "SaslToken"
    # Authentication over: Kafka requests again.
    again = produce_v3(2, "t", 0, batch_v2(0, RECS))
    assert one(s, again).type == "Produce"


def test_sasl_authenticate_bytes_masked() -> None:
    header = struct.pack(">hhi", 36, 1, 5) + string("c")
    body = struct.pack(">i", 12) + b"\x00bob\x00hunter2"
    s, _ = new_session()
    hs = struct.pack(">hhi", 17, 1, 4) + string("c") + string("PLAIN")
    one(s, struct.pack(">i", len(hs)) + hs)
    f = one(s, struct.pack(">i", len(header) + len(body)) + header + body)
    assert f.status == "ok" and f.fields["body"]["auth_bytes"] == "<12 bytes masked>"
    assert f.fields["body"]["username"] == "bob" and f.summary == "mechanism PLAIN user bob"
    assert "hunter2" not in repr(f.fields)


def test_tagged_struct_by_name_in_fetch_v12() -> None:
    # FetchResponse v12 (FetchResponse.json): per partition, tag 1 = CurrentLeader {LeaderId, LeaderEpoch}.
    req_header = struct.pack(">hhi", 1, 12, 77) + string("c") + b"\x00"
    req_body = struct.pack(
        ">iiiibii", -1, 500, 1, 1 << 20, 0, 0, -1
    )  # replica, wait, min, max, iso, session, epoch
    req_body += uvarint(2) + cstring("t") + uvarint(2)
    req_body += (
        struct.pack(">iiqiqi", 0, -1, 0, -1, 0, 1 << 20) + b"\x00" + b"\x00"
    )  # partition + tags, topic tags
    req_body += uvarint(1) + cstring("") + b"\x00"  # forgotten topics (empty), rack id, tags
    s, _ = new_session()
    req = one(s, struct.pack(">i", len(req_header) + len(req_body)) + req_header + req_body)
    assert req.status == "ok", req.anomalies
    records = batch_v2(0, RECS)
    leader = struct.pack(">ii", 3, 9) + b"\x00"
    part = struct.pack(">ihqqq", 0, 6, 10, 10, 0) + uvarint(0) + struct.pack(">i", -1)
    part += uvarint(len(records) + 1) + records
    part += uvarint(1) + uvarint(1) + uvarint(len(leader)) + leader
    body = struct.pack(">ihi", 0, 0, 0) + uvarint(2) + cstring("t") + uvarint(2) + part + b"\x00" + b"\x00"
    f = one(s, struct.pack(">ii", len(body) + 5, 77) + b"\x00" + body, "server")
    assert f.status == "ok", f.anomalies
    p = f.fields["body"]["responses"][0]["partitions"][0]
    assert p["current_leader"] == {"leader_id": 3, "leader_epoch": 9}
    assert p["aborted_transactions"] is None
    assert (f.error_code, f.error) == (6, "NOT_LEADER_OR_FOLLOWER")
    assert [m.offset for m in f.messages] == [0, 1, 2] and {m.topic for m in f.messages} == {"t"}


def test_frame_cut_by_the_end_of_the_stream_keeps_what_was_read() -> None:
    whole = produce_v3(1, "orders", 2, batch_v2(0, RECS))
    fr, out = engine()
    fr.feed("client", whole[:60], 1, 1)
    fr.finish()
    (f,) = out.frames
    assert f.status == "truncated" and f.type == "Produce"
    body = f.fields["body"]
    assert body["acks"] == -1 and body["topic_data"][0]["name"] == "orders"
    assert "orders" in f.summary


def test_one_byte_segments() -> None:
    # Every byte in its own segment: framing must wait, never guess, and find the same frames.
    fr, out = engine()
    packet = 0
    convo = [
        ("client", fetch_v4_request(1, "t")),
        ("server", fetch_v4_response(1, "t", batch_v2(0, RECS))),
        ("client", produce_v3(2, "t", 0, batch_v2(3, RECS))),
        ("client", produce_v3(3, "t", 1, batch_v2(3, RECS), acks=0)),
    ]
    for role, data in convo:
        for i in range(len(data)):
            packet += 1
            fr.feed(role, data[i : i + 1], packet, packet)
    fr.finish()
    assert [(f.kind, f.type, f.correlation_id, f.status) for f in out.frames] == [
        ("request", "Fetch", 1, "ok"),
        ("response", "Fetch", 1, "ok"),
        ("request", "Produce", 2, "ok"),
        ("request", "Produce", 3, "ok"),
    ]
    assert out.anomalies == []
    assert sum(len(f.messages) for f in out.frames) == 9
    first = out.frames[0]
    assert (first.first_packet, first.packet) == (1, len(convo[0][1]))


def test_kraft_leader_change_control_record() -> None:
    # LeaderChangeMessage v0 (flexible): Version int16, LeaderId int32, Voters [VoterId], GrantingVoters [VoterId], tags.
    value = (
        struct.pack(">hi", 0, 1)
        + uvarint(2)
        + struct.pack(">i", 1)
        + b"\x00"
        + uvarint(2)
        + struct.pack(">i", 1)
        + b"\x00"
        + b"\x00"
    )
    key = struct.pack(">hh", 0, 2)  # LEADER_CHANGE
    s, _ = new_session()
    f = one(
        s, produce_v3(1, "__cluster_metadata", 0, batch_v2(0, [record(0, key, value)], attributes_extra=0x20))
    )
    b = f.fields["body"]["topic_data"][0]["partition_data"][0]["records"]["batches"][0]
    (ctrl,) = b["control_records"]
    assert ctrl["type"] == "LEADER_CHANGE"
    assert ctrl["value_decoded"] == {
        "version": 0,
        "leader_id": 1,
        "voters": [{"voter_id": 1}],
        "granting_voters": [{"voter_id": 1}],
    }


def test_flexible_response_sent_with_header_v0_is_decoded_and_reported() -> None:
    # A DescribeUserScramCredentials v0 response without the header's tag byte (seen from a real broker).
    header = struct.pack(">hhi", 50, 0, 4) + string("c") + b"\x00"
    body = uvarint(0) + b"\x00"  # users: null, tags
    s, _ = new_session()
    one(s, struct.pack(">i", len(header) + len(body)) + header + body)
    resp_body = struct.pack(">ih", 0, 0) + uvarint(0) + uvarint(0) + b"\x00"
    f = one(s, struct.pack(">ii", len(resp_body) + 4, 4) + resp_body, "server")
    assert f.status == "ok"
    assert [a.kind for a in f.anomalies] == ["header_version"]
    assert f.fields["body"]["throttle_time_ms"] == 0 and f.fields["body"]["results"] is None


def test_first_request_of_a_newer_version_is_kept() -> None:
    # A client newer than our tables opens with ApiVersions v5: framed, reported unsupported_version.
    header = struct.pack(">hhi", 18, 5, 1) + string("future-client") + b"\x00"
    body = cstring("x") + cstring("9") + b"\x00"
    fr, out = engine()
    fr.feed("client", struct.pack(">i", len(header) + len(body)) + header + body, 1, 1)
    fr.feed("server", struct.pack(">ii", 4 + 2 + 4, 1) + struct.pack(">hi", 35, 0), 2, 2)
    fr.finish()
    assert [(f.type, f.version, f.status) for f in out.frames] == [
        ("ApiVersions", 5, "unsupported_version"),
        ("ApiVersions", 5, "ok"),
    ]
    assert out.frames[1].error == "UNSUPPORTED_VERSION"


# -- robustness ------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SEED_FRAMES = [
    produce_v3(1, "t", 0, batch_v2(0, RECS)),
    produce_v9(2, "t", 1, batch_v2(0, RECS, 1, gzip_mod.compress)),
    produce_v3(3, "old", 0, legacy(0, None, gzip_mod.compress(legacy(0, b"k", b"v")), 1, 1), api_version=2),
    fetch_v4_request(4, "t"),
]


@settings(max_examples=300, deadline=None)
@given(
    which=st.integers(0, len(SEED_FRAMES) - 1),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=6),
    cut=st.integers(0, 10_000),
    role=st.sampled_from(["client", "server"]),
)
def test_mutated_frames_never_raise(which: int, flips: list[tuple[int, int]], cut: int, role: str) -> None:
    data = bytearray(SEED_FRAMES[which])
    for at, value in flips:
        data[at % len(data)] = value
    data = data[: max(1, cut % (len(data) + 1))]
    s, _ = new_session()
    s.decode(bytes(data), role)  # the fixture fails the test on any internal_error


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_through_the_engine(data: bytes) -> None:
    fr, out = engine()
    fr.feed("client", data, 1, 1)
    fr.feed("server", data[::-1], 2, 2)
    fr.finish()
    assert all(f.type != "?" for f in out.frames)  # "?" would be a decoder exception caught by the engine


def test_resync_ignores_a_pending_id_inside_record_data() -> None:
    # A value holding bytes that read as [size][pending correlation id] must not pass for a response.
    s, _ = new_session()
    one(s, fetch_v4_request(5, "t"))
    decoy = struct.pack(">ii", 20, 5) + b"\x00" * 20
    real = fetch_v4_response(5, "t", batch_v2(0, RECS))
    (f,) = s.decode(b"\xaa" * 3 + decoy + real, "server")
    assert (f.kind, f.type, f.correlation_id, f.status) == ("response", "Fetch", 5, "ok")
    (r,) = [a for a in s.out.anomalies if a.kind == "resync"]
    assert f"skipped {3 + len(decoy)} server bytes" in r.detail


def test_anomalies_of_a_kind_past_64_are_counted_in_one() -> None:
    # 70 one-record batches whose CRC-32C is off by one: 70 `bad_checksum` anomalies of one kind
    # in one frame. The first 64 are listed; the other 6 are counted in one `anomaly_limit` placed
    # where the 65th was found (its batch's crc field, 17 bytes into the batch).
    good = [batch_v2(k, [record(0, None, b"v")]) for k in range(70)]
    bad = [b[:17] + ((int.from_bytes(b[17:21], "big") + 1) % 2**32).to_bytes(4, "big") + b[21:] for b in good]
    records = b"".join(bad)
    data = produce_v3(7, "caps", 0, records)
    fr, out = engine()
    fr.feed("client", data, 1, 1_000)
    fr.finish()
    (f,) = out.frames
    at = data.index(records)  # the record set's place in the frame
    crcs = [at + k * len(bad[0]) + 17 for k in range(70)]
    assert f.status == "bad_checksum"
    assert [a.kind for a in f.anomalies] == ["bad_checksum"] * 64 + ["anomaly_limit"]
    assert [a.offset for a in f.anomalies[:64]] == crcs[:64]
    assert f.anomalies[-1].offset == crcs[64]
    assert f.anomalies[-1].detail == (
        "6 more bad_checksum anomalies in this frame past the first 64 (counted, not listed)"
    )
    assert [m.value for m in f.messages] == [b"v"] * 70


def test_batches_past_the_frame_cap_are_read_and_counted_not_listed() -> None:
    # 10,005 empty record batches (61 bytes each: the v2 header, no record): the frame lists the
    # first 10,000 (`Limits.max_batches`) in its record set's `batches`; the other 5 are read
    # and checked (their CRCs count in record_stats) and counted: `batches_not_listed` 5 and one
    # `batch_limit` note at the first of them (its first byte). The frame is fine.
    one = batch_v2(0, [])
    assert len(one) == 61
    records = one * 10_005
    data = produce_v3(8, "caps", 0, records)
    fr, out = engine()
    fr.feed("client", data, 1, 1_000)
    fr.finish()
    (f,) = out.frames
    at = data.index(records)
    assert f.status == "ok"
    assert [(a.kind, a.detail, a.offset) for a in f.anomalies] == [
        (
            "batch_limit",
            "caps[0]: 5 of the record set's 10005 batches are past the frame's 10000th: read and "
            "checked, not listed",
            at + 10_000 * 61,
        )
    ]
    rs = f.fields["body"]["topic_data"][0]["partition_data"][0]["records"]
    assert len(rs["batches"]) == 10_000 and rs["batches_not_listed"] == 5
    assert rs["record_count"] == 0
    assert f.fields["record_stats"]["batches"] == 10_005
    assert f.fields["record_stats"]["crc_ok"] == 10_005


def test_without_messages_batches_keep_their_fields_and_damage_is_still_reported() -> None:
    # The plain timeline decodes without messages (`Options.messages`): a valid batch's fields are
    # those of the full decode, its records counted, not listed; a damaged record still makes the
    # frame malformed.
    rnd = random.Random(4)
    for _ in range(20):
        recs = [record(i, b"k", b"v" * rnd.randint(0, 200), i) for i in range(rnd.randint(1, 8))]
        frame = produce_v3(1, "t", 0, batch_v2(rnd.randint(0, 1000), recs) + batch_v2(5, recs[:1]))
        full = Session(9092).one(frame)
        quick = Session(9092, messages=False).one(frame)
        assert full.status == quick.status == "ok" and len(full.messages) == len(recs) + 1
        assert quick.messages == [] and quick.fields == full.fields
    good = [record(i, b"k", b"v" * 10) for i in range(3)]
    bad = bytearray(good[1])
    bad[0] += 2  # the record claims two more bytes than it has
    quick = Session(9092, messages=False).one(
        produce_v3(1, "t", 0, batch_v2(0, [good[0], bytes(bad), good[2]]))
    )
    assert quick.status == "malformed" and quick.messages == []
