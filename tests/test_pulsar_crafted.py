"""The Pulsar decoder on crafted streams: damage, limits, codecs, chunks, pairing, secrets.

Frames are built here from the wire layout in the reference notes (sizes, magics, CRC32C
over metadataSize + metadata + payload) with protobuf's own serialiser, then fed through
the framing engine exactly as the pipeline does.
"""

from __future__ import annotations

import random
import struct
import zlib
from typing import Any

import cramjam
import crc32c
import lz4.block
import pytest
import zstandard
from conversation import Out, Stream

from wiredump.dissect.limits import Limits
from wiredump.proto import PulsarApi_pb2 as pb

T = pb.BaseCommand


# -- building frames ------------------------------------------------------------------------
def command(type_name: str, **fields: Any) -> pb.BaseCommand:
    code = T.Type.Value(type_name)
    base = pb.BaseCommand(type=code)
    field = next(f.name for f in pb.BaseCommand.DESCRIPTOR.fields if f.number == code)
    getattr(base, field).SetInParent()
    sub = getattr(base, field)
    for k, v in fields.items():
        if isinstance(v, dict):
            getattr(sub, k).CopyFrom(v["_msg"])
        elif isinstance(v, list) and v and hasattr(v[0], "SerializeToString"):
            getattr(sub, k).extend(v)
        else:
            setattr(sub, k, v)
    return base


def simple(base: pb.BaseCommand) -> bytes:
    cmd = base.SerializePartialToString()
    return struct.pack(">II", 4 + len(cmd), len(cmd)) + cmd


def with_payload(
    base: pb.BaseCommand,
    meta: pb.MessageMetadata,
    body: bytes,
    checksum: bool = True,
    bem: pb.BrokerEntryMetadata | None = None,
) -> bytes:
    cmd = base.SerializePartialToString()
    m = meta.SerializeToString()
    tail = struct.pack(">I", len(m)) + m + body
    section = b""
    if bem is not None:
        b = bem.SerializeToString()
        section += struct.pack(">HI", 0x0E02, len(b)) + b
    if checksum:
        section += struct.pack(">HI", 0x0E01, crc32c.crc32c(tail))
    section += tail
    return struct.pack(">II", 4 + len(cmd) + len(section), len(cmd)) + cmd + section


def meta(seq: int = 0, **fields: Any) -> pb.MessageMetadata:
    m = pb.MessageMetadata(producer_name="p-1", sequence_id=seq, publish_time=1_700_000_000_000 + seq)
    for k, v in fields.items():
        if k == "properties":
            m.properties.extend(pb.KeyValue(key=a, value=b) for a, b in v)
        else:
            setattr(m, k, v)
    return m


def batch(entries: list[tuple[bytes, str | None]]) -> bytes:
    out = b""
    for value, key in entries:
        s = pb.SingleMessageMetadata(payload_size=len(value))
        if key is not None:
            s.partition_key = key
        raw = s.SerializeToString()
        out += struct.pack(">I", len(raw)) + raw + value
    return out


def send(producer_id: int, seq: int, m: pb.MessageMetadata, body: bytes, **kw: Any) -> bytes:
    return with_payload(command("SEND", producer_id=producer_id, sequence_id=seq), m, body, **kw)


def receipt(producer_id: int, seq: int, ledger: int, entry: int) -> bytes:
    mid = pb.MessageIdData(ledgerId=ledger, entryId=entry)
    return simple(command("SEND_RECEIPT", producer_id=producer_id, sequence_id=seq, message_id={"_msg": mid}))


CONNECT = simple(command("CONNECT", client_version="test", protocol_version=20))
CONNECTED = simple(
    command("CONNECTED", server_version="stub", protocol_version=20, max_message_size=5 * 1024 * 1024)
)
PRODUCER = simple(
    command("PRODUCER", topic="persistent://t/ns/orders-partition-2", producer_id=7, request_id=1)
)
PRODUCER_SUCCESS = simple(command("PRODUCER_SUCCESS", request_id=1, producer_name="p-1"))


# -- driving the engine ---------------------------------------------------------------------
class Conn:
    """One connection to port 6650: feed (role, bytes) packets; packet numbers count from 1."""

    def __init__(self, limits: Limits | None = None, **options: Any) -> None:
        self.stream = Stream(6650, limits, keep_bytes=True, **options)
        self.packet = 0
        """The last packet sent."""

    def feed(self, role: str, data: bytes) -> Conn:
        self.packet = self.stream.feed(role, data)
        return self

    def client(self, *frames: bytes) -> Conn:
        return self.feed("client", b"".join(frames))

    def server(self, *frames: bytes) -> Conn:
        return self.feed("server", b"".join(frames))

    def finish(self) -> Out:
        return self.stream.finish()


def opened(**kw: Any) -> Conn:
    return Conn(**kw).client(CONNECT).server(CONNECTED).client(PRODUCER).server(PRODUCER_SUCCESS)


# -- damage ---------------------------------------------------------------------------------
def test_flipped_payload_byte_fails_checksum_and_the_stream_goes_on() -> None:
    good = send(7, 0, meta(0), b"hello world")
    bad = bytearray(send(7, 1, meta(1), b"hello world"))
    bad[-3] ^= 0x01  # inside the payload, covered by the CRC32C
    out = opened().client(bytes(bad), good).server(receipt(7, 1, 5, 0), receipt(7, 0, 5, 1)).finish()
    assert out.types()[4:] == ["SEND", "SEND", "SEND_RECEIPT", "SEND_RECEIPT"]
    flipped, fine = out.frames[4], out.frames[5]
    assert flipped.status == "bad_checksum"
    assert [a.kind for a in flipped.anomalies] == ["bad_checksum"]
    assert flipped.fields["checksum_ok"] is False
    assert (
        flipped.fields["checksum"]
        == f"{crc32c.crc32c(bytes(send(7, 1, meta(1), b'hello world')[-(len(meta(1).SerializeToString()) + 4 + 11) :])):08x}"
    )
    assert flipped.messages[0].checksum_ok is False
    assert fine.status == "ok" and fine.messages[0].checksum_ok is True
    assert fine.messages[0].value == b"hello world"
    # Both still pair with their receipts and take their message ids from them.
    assert flipped.messages[0].message_id == "5:0:2:-1"
    assert fine.messages[0].message_id == "5:1:2:-1"
    assert all(f.status == "ok" for f in out.frames[6:])


def test_missing_checksum_block_is_accepted_unchecked() -> None:
    out = opened().client(send(7, 0, meta(0), b"abc", checksum=False)).finish()
    f = out.frames[-1]
    assert f.status == "ok"
    assert f.fields["checksum_ok"] is None and "checksum" not in f.fields
    assert f.messages[0].checksum_ok is None and f.messages[0].value == b"abc"


def test_frame_over_the_default_maximum() -> None:
    # totalSize one byte past 5 MiB + 10 KiB: reported from the header alone, nothing buffered.
    huge = struct.pack(">II", 5 * 1024 * 1024 + 10 * 1024 + 1, 10) + b"\x08\x06" + b"\x00" * 64
    out = Conn().client(CONNECT).server(CONNECTED).client(huge).client(PRODUCER).finish()
    kinds = [a.kind for a in out.all_anomalies()]
    assert "oversize_frame" in kinds
    assert out.types() == ["CONNECT", "CONNECTED", "PRODUCER"]


def test_frame_over_the_size_the_broker_advertised() -> None:
    small = simple(command("CONNECTED", server_version="stub", protocol_version=20, max_message_size=1000))
    big = send(7, 0, meta(0), b"x" * 20_000)  # under 5 MiB, over 1000 + 10 KiB
    ok = send(7, 1, meta(1), b"y" * 2_000)  # over 1000 bytes of payload, within the padding
    c = Conn().client(CONNECT).server(small).client(PRODUCER).server(PRODUCER_SUCCESS)
    out = c.client(big).client(ok).finish()
    assert [a.kind for a in out.all_anomalies()].count("oversize_frame") == 1
    assert out.frames[1].fields["max_frame"] == 4 + 1000 + 10 * 1024
    assert out.frames[-1].type == "SEND" and out.frames[-1].messages[0].value == b"y" * 2_000


def test_command_size_larger_than_total_size_is_malformed() -> None:
    cmd = command("FLOW", consumer_id=1, messagePermits=10).SerializeToString()
    broken = struct.pack(">II", 4 + len(cmd), len(cmd) + 50) + cmd
    out = opened().client(broken, PRODUCER).finish()
    f = out.frames[4]
    assert f.status == "malformed" and f.type == "FLOW"
    assert "commandSize" in f.anomalies[0].detail
    assert out.frames[5].type == "PRODUCER" and out.frames[5].status == "ok"


def test_protobuf_garbage_inside_a_well_framed_command() -> None:
    garbage = b"\x08\x0b\x5a\xff\xff\xff\xff\x0f\x01"  # FLOW, then a length far past the end
    framed = struct.pack(">II", 4 + len(garbage), len(garbage)) + garbage
    out = opened().client(framed, simple(command("PING"))).server(simple(command("PONG"))).finish()
    f = out.frames[4]
    assert f.status == "malformed" and f.type == "FLOW" and f.type_code == 11
    assert out.frames[5].type == "PING" and out.frames[6].type == "PONG"
    assert out.frames[5].peer_packet == out.frames[6].packet


def test_deeply_nested_garbage_does_not_raise() -> None:
    # Group start tags nested far beyond protobuf's recursion limit.
    garbage = b"\x08\x0b" + b"\x0b" * 5000
    framed = struct.pack(">II", 4 + len(garbage), len(garbage)) + garbage
    out = opened().client(framed, PRODUCER).finish()
    assert out.frames[4].status == "malformed"
    assert out.frames[5].type == "PRODUCER"


def test_unknown_command_type() -> None:
    cmd = b"\x08\x45"  # type 69: unused in the schema
    out = opened().client(struct.pack(">II", 4 + len(cmd), len(cmd)) + cmd, PRODUCER).finish()
    f = out.frames[4]
    assert (f.status, f.type_code, f.type) == ("unknown_type", 69, "UNKNOWN_69")
    assert [a.kind for a in f.anomalies] == ["unknown_type"]
    assert out.frames[5].status == "ok"


def test_zlib_bomb_hits_the_decompression_limit() -> None:
    bomb = zlib.compress(b"\x00" * (8 * 1024 * 1024), 9)
    m = meta(0, compression=pb.ZLIB, uncompressed_size=8 * 1024 * 1024)
    limits = Limits(max_decompressed=1024 * 1024, ratio_floor=64 * 1024)
    out = opened(limits=limits).client(send(7, 0, m, bomb), send(7, 1, meta(1), b"after")).finish()
    f = out.frames[4]
    assert "decompression_limit" in [a.kind for a in f.anomalies]
    assert len(f.messages) == 1 and f.messages[0].detail.get("decompressed") is False
    assert out.frames[5].messages[0].value == b"after"


def test_zlib_with_default_limits_stops_a_bomb_at_the_ratio() -> None:
    c = zlib.compressobj(9)
    zeros = b"\x00" * (1024 * 1024)
    bomb = b"".join(c.compress(zeros) for _ in range(80)) + c.flush()  # ~80 KB in, 80 MiB out: past 64 MiB
    m = meta(0, compression=pb.ZLIB, uncompressed_size=1000)
    out = opened().client(send(7, 0, m, bomb)).finish()
    assert "decompression_limit" in [a.kind for a in out.frames[4].anomalies]


def test_the_capture_budget_is_shared_across_decompressions() -> None:
    # Four sends of 100,000 bytes each, zlib-compressed, under a 250,000-byte budget for the whole
    # capture: the first two are decompressed, the fourth is past the budget.
    data = zlib.compress(b"a" * 100_000)
    m = [meta(i, compression=pb.ZLIB, uncompressed_size=100_000) for i in range(4)]
    limits = Limits(max_decompressed_total=250_000)
    out = opened(limits=limits).client(*(send(7, i, m[i], data) for i in range(4))).finish()
    sends = out.frames[4:]
    assert [f.type for f in sends] == ["SEND"] * 4
    assert [("decompression_limit" in [a.kind for a in f.anomalies]) for f in sends[:2]] == [False, False]
    assert "decompression_limit" in [a.kind for a in sends[3].anomalies]
    assert [m.value for m in sends[0].messages] == [b"a" * 100_000]


def test_truncated_frame_at_end_of_stream() -> None:
    frame = send(7, 0, meta(0), b"z" * 500)
    out = opened().client(frame[:300]).finish()
    f = out.frames[-1]
    assert f.type == "SEND" and f.status == "truncated"


def test_tls_is_undecodable() -> None:
    hello = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 100
    out = Conn().client(hello).finish()
    assert out.frames == []
    assert [a.kind for a in out.anomalies] == ["undecodable"]


def test_resync_after_garbage_finds_the_next_frame() -> None:
    out = opened().client(b"\xff" * 37 + PRODUCER).finish()
    assert out.frames[-1].type == "PRODUCER"
    assert "resync" in [a.kind for a in out.anomalies]


# -- payloads -------------------------------------------------------------------------------
def _java_zlib(data: bytes) -> bytes:
    """Pulsar's Java ZLIB codec: Deflater with SYNC_FLUSH, never finished (no final block, no Adler-32)."""
    c = zlib.compressobj()
    return c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH)


CODECS = {
    "LZ4": (pb.LZ4, lambda d: lz4.block.compress(d, store_size=False)),
    "ZLIB": (pb.ZLIB, _java_zlib),
    "ZSTD": (pb.ZSTD, lambda d: zstandard.ZstdCompressor(level=3).compress(d)),
    "SNAPPY": (pb.SNAPPY, lambda d: bytes(cramjam.snappy.compress_raw(d))),
}


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_compressed_batch_is_decompressed_and_split(codec: str) -> None:
    code, compress = CODECS[codec]
    entries = [(f"value-{i}-".encode() * (i + 1), f"k{i % 2}") for i in range(5)]
    raw = batch(entries)
    body = compress(raw)
    assert body != raw
    m = meta(
        10, compression=code, uncompressed_size=len(raw), num_messages_in_batch=5, highest_sequence_id=14
    )
    out = opened().client(send(7, 10, m, body)).server(receipt(7, 10, 3, 9)).finish()
    f = out.frames[4]
    assert f.status == "ok" and f.anomalies == []
    assert [(m.value, m.key) for m in f.messages] == [(v, k.encode()) for v, k in entries]
    assert {m.compression for m in f.messages} == {codec}
    assert f.fields["decompressed_size"] == len(raw)
    assert [m.message_id for m in f.messages] == [f"3:9:2:{i}" for i in range(5)]
    assert [m.detail["sequence_id"] for m in f.messages] == [10, 11, 12, 13, 14]
    assert {m.topic for m in f.messages} == {"persistent://t/ns/orders-partition-2"}
    assert {m.partition for m in f.messages} == {2}
    assert f.peer_packet == out.frames[5].packet


def test_corrupt_lz4_is_reported_not_raised() -> None:
    m = meta(0, compression=pb.LZ4, uncompressed_size=100)
    out = opened().client(send(7, 0, m, b"\xff" * 20)).finish()
    assert "decompression_failed" in [a.kind for a in out.frames[4].anomalies]
    assert len(out.frames[4].messages) == 1


def test_message_delivery_with_broker_entry_metadata_and_properties() -> None:
    sub = simple(
        command(
            "SUBSCRIBE",
            topic="persistent://t/ns/audit",
            subscription="s",
            subType=pb.CommandSubscribe.Shared,
            consumer_id=3,
            request_id=2,
        )
    )
    flow = simple(command("FLOW", consumer_id=3, messagePermits=100))
    mid = pb.MessageIdData(ledgerId=11, entryId=4)
    msg = with_payload(
        command("MESSAGE", consumer_id=3, message_id={"_msg": mid}, redelivery_count=2),
        meta(5, properties=[("h", "v")], partition_key="user-1", event_time=1234),
        b"payload",
        bem=pb.BrokerEntryMetadata(broker_timestamp=1_700_000_000_123, index=41),
    )
    out = (
        Conn().client(CONNECT).server(CONNECTED).client(sub).server(simple(command("SUCCESS", request_id=2)))
    )
    out = out.client(flow).server(msg).finish()
    f = out.frames[-1]
    assert f.kind == "event" and f.status == "ok"
    assert f.fields["broker_entry_metadata"] == {"broker_timestamp": 1_700_000_000_123, "index": 41}
    m = f.messages[0]
    assert (m.direction, m.topic, m.message_id, m.key, m.value) == (
        "deliver",
        "persistent://t/ns/audit",
        "11:4:-1:-1",
        b"user-1",
        b"payload",
    )
    assert m.headers == [("h", b"v")]
    assert m.timestamp_ms == 1_700_000_000_005 and m.detail["event_time"] == 1234
    assert m.detail["redelivery_count"] == 2
    assert f.fields["consumer"]["permits_granted"] == 100 and f.fields["consumer"]["messages_delivered"] == 1


def test_encrypted_payload_is_reported_as_encrypted() -> None:
    m = meta(0, compression=pb.LZ4, uncompressed_size=50, num_messages_in_batch=3)
    m.encryption_keys.add(key="k", value=b"\x01\x02")
    m.encryption_algo = "AES-GCM"
    out = opened().client(send(7, 0, m, b"\x9a" * 40)).finish()
    f = out.frames[4]
    assert f.status == "ok" and f.fields["encrypted"] is True
    assert len(f.messages) == 1 and f.messages[0].detail["encrypted"] is True
    assert f.messages[0].value_size == 40


def test_chunked_message_is_joined_into_one() -> None:
    whole = bytes(range(256)) * 40  # 10,240 bytes
    parts = [whole[i : i + 4000] for i in range(0, len(whole), 4000)]
    frames = []
    for i, part in enumerate(parts):
        m = meta(
            3,
            uuid="p-1-3",
            chunk_id=i,
            num_chunks_from_msg=len(parts),
            total_chunk_msg_size=len(whole),
            partition_key="big",
        )
        base = command("SEND", producer_id=7, sequence_id=3, is_chunk=True)
        frames.append(with_payload(base, m, part))
    c = opened()
    for fr in frames:
        c.client(fr)
    out = c.server(receipt(7, 3, 8, 0), receipt(7, 3, 8, 1), receipt(7, 3, 8, 2)).finish()
    sends = [f for f in out.frames if f.type == "SEND"]
    assert [len(f.messages) for f in sends] == [0, 0, 1]
    m = sends[-1].messages[0]
    assert m.value == whole and m.value_size == len(whole) and m.key == b"big"
    assert m.detail["chunks"] == 3 and m.detail["chunk_packets"] == [sends[0].packet, sends[1].packet]
    assert m.message_id == "8:2:2:-1"  # the last chunk's receipt, partition 2 from the topic
    assert [f.peer_packet for f in sends] == [f.packet for f in out.frames if f.type == "SEND_RECEIPT"]
    assert all(f.status == "ok" for f in sends)


def test_incomplete_chunked_message_is_reported() -> None:
    m = meta(3, uuid="u", chunk_id=0, num_chunks_from_msg=2, total_chunk_msg_size=10)
    out = opened().client(send(7, 3, m, b"12345")).finish()
    assert out.frames[-1].messages == []
    assert "chunk_incomplete" in [a.kind for a in out.all_anomalies()]


def test_a_send_over_a_hundred_segments() -> None:
    body = bytes(i % 251 for i in range(300 * 1024))
    frame = send(7, 0, meta(0), body)
    c = opened()
    first = c.packet + 1
    step = len(frame) // 100 + 1
    for i in range(0, len(frame), step):
        c.client(frame[i : i + step])
    out = c.finish()
    f = out.frames[-1]
    assert f.type == "SEND" and f.status == "ok"
    assert (f.first_packet, f.packet) == (first, c.packet)
    assert c.packet - first + 1 == 100
    assert f.messages[0].value == body and f.messages[0].checksum_ok is True


# -- pairing --------------------------------------------------------------------------------
def test_request_id_reuse_pairs_by_fitting_type() -> None:
    lookup = simple(command("LOOKUP", topic="persistent://t/ns/a", request_id=1))
    producer = simple(command("PRODUCER", topic="persistent://t/ns/a", producer_id=1, request_id=1))
    redirect = simple(
        command(
            "LOOKUP_RESPONSE",
            request_id=1,
            response=pb.CommandLookupTopicResponse.Redirect,
            brokerServiceUrl="pulsar://b2:6650",
            authoritative=True,
        )
    )
    ok = simple(command("PRODUCER_SUCCESS", request_id=1, producer_name="x"))
    out = (
        Conn().client(CONNECT).server(CONNECTED).client(lookup, producer).server(ok).server(redirect).finish()
    )
    lk, pr, psucc, lresp = out.frames[2:]
    assert psucc.peer_packet == pr.packet and pr.peer_packet == psucc.packet
    assert lresp.peer_packet == lk.packet and lk.peer_packet == lresp.packet
    assert "Redirect" in lresp.summary and "pulsar://b2:6650" in lresp.summary
    assert {e.status for e in out.exchanges} == {"answered"}


def test_error_response_names_the_server_error() -> None:
    sub = simple(
        command(
            "SUBSCRIBE", topic="persistent://t/ns/x", subscription="s", subType=0, consumer_id=1, request_id=9
        )
    )
    err = simple(command("ERROR", request_id=9, error=pb.TopicNotFound, message="no such topic"))
    out = Conn().client(CONNECT).server(CONNECTED).client(sub).server(err).finish()
    e = out.frames[-1]
    assert (e.error_code, e.error, e.correlation_id, e.peer_packet) == (
        11,
        "TopicNotFound",
        9,
        out.frames[2].packet,
    )
    assert [x.error_code for x in out.exchanges if x.type == "SUBSCRIBE"] == [11]


def test_connect_error_with_request_id_minus_one() -> None:
    err = simple(
        command("ERROR", request_id=(1 << 64) - 1, error=pb.AuthenticationError, message="bad token")
    )
    out = Conn().client(CONNECT).server(err).finish()
    assert out.frames[1].correlation_id == -1
    assert out.frames[1].peer_packet == out.frames[0].packet
    assert out.frames[1].error == "AuthenticationError"


def test_ack_with_request_id_pairs_with_ack_response() -> None:
    mid = pb.MessageIdData(ledgerId=1, entryId=2)
    ack = simple(command("ACK", consumer_id=1, ack_type=0, message_id=[mid], request_id=77))
    plain = simple(command("ACK", consumer_id=1, ack_type=0, message_id=[mid]))
    resp = simple(command("ACK_RESPONSE", consumer_id=1, request_id=77))
    out = Conn().client(CONNECT).server(CONNECTED).client(plain, ack).server(resp).finish()
    assert out.frames[2].kind == "event" and out.frames[2].peer_packet is None
    assert out.frames[3].kind == "request" and out.frames[3].peer_packet == out.frames[4].packet


def test_batch_receipt_with_highest_sequence_id() -> None:
    m = meta(20, num_messages_in_batch=2, highest_sequence_id=21)
    body = batch([(b"a", None), (b"b", None)])
    r = simple(
        command(
            "SEND_RECEIPT",
            producer_id=7,
            sequence_id=20,
            highest_sequence_id=21,
            message_id={"_msg": pb.MessageIdData(ledgerId=1, entryId=1)},
        )
    )
    out = opened().client(send(7, 20, m, body)).server(r).finish()
    assert out.frames[4].peer_packet == out.frames[5].packet
    assert [x.message_id for x in out.frames[4].messages] == ["1:1:2:0", "1:1:2:1"]


# -- secrets --------------------------------------------------------------------------------
def test_auth_data_masked_by_default() -> None:
    conn = simple(command("CONNECT", client_version="c", auth_method_name="token", auth_data=b"s3cr3t-token"))
    out = Conn().client(conn).finish()
    f = out.frames[0]
    assert f.fields["command"]["auth_data"] == "<masked 12 bytes>"
    assert b"s3cr3t-token" not in f.data and b"\x1a\x0c" + b"*" * 12 in f.data  # field 3, 12 bytes
    shown = Conn(show_secrets=True).client(conn).finish().frames[0]
    assert shown.fields["command"]["auth_data"] == b"s3cr3t-token"


def test_auth_response_masked() -> None:
    data = pb.AuthData(auth_method_name="token", auth_data=b"refresh-me")
    resp = simple(command("AUTH_RESPONSE", response={"_msg": data}))
    f = Conn().client(CONNECT).client(resp).finish().frames[1]
    assert f.fields["command"]["response"]["auth_data"] == "<masked 10 bytes>"
    assert b"refresh-me" not in f.data


# -- sniffing -------------------------------------------------------------------------------
def test_capture_begun_mid_frame_resynchronises() -> None:
    tail_of_a_send = send(7, 0, meta(0), b"q" * 300)[120:]
    out = Conn().client(tail_of_a_send + PRODUCER).server(PRODUCER_SUCCESS).finish()
    assert out.types() == ["PRODUCER", "PRODUCER_SUCCESS"]
    assert [a.kind for a in out.anomalies] == ["resync"]
    assert out.frames[1].peer_packet == out.frames[0].packet


def test_haproxy_header_before_the_first_frame() -> None:
    header = b"PROXY TCP4 192.0.2.1 192.0.2.2 51000 6650\r\n"
    out = Conn().client(header + CONNECT).server(CONNECTED).finish()
    assert out.types() == ["PROXY_PROTOCOL", "CONNECT", "CONNECTED"]
    assert out.frames[0].fields["header"] == header.decode().strip()
    assert out.frames[2].peer_packet == out.frames[1].packet


def test_connected_may_allow_frames_above_the_default() -> None:
    big = simple(
        command("CONNECTED", server_version="stub", protocol_version=20, max_message_size=8 * 1024 * 1024)
    )
    body = b"\x5a" * (6 * 1024 * 1024)
    out = Conn().client(CONNECT).server(big).client(PRODUCER).server(PRODUCER_SUCCESS)
    out = out.client(send(7, 0, meta(0), body)).finish()
    assert [a.kind for a in out.all_anomalies()] == []
    assert out.frames[-1].messages[0].value_size == len(body)


def test_non_utf8_strings_do_not_break_decoding() -> None:
    # proto2 does not validate UTF-8: the runtime hands such string fields back as bytes.
    bad_topic = simple(command("PRODUCER", topic="persistent://t/ns/x", producer_id=9, request_id=4))
    bad_topic = bad_topic.replace(b"persistent://t/ns/x", b"persistent://t/ns/\xff")
    m = meta(0, partition_key="k")
    frame = send(9, 0, pb.MessageMetadata.FromString(m.SerializeToString().replace(b"p-1", b"p\xfe1")), b"v")
    out = Conn().client(CONNECT).server(CONNECTED).client(bad_topic, frame).finish()
    f = out.frames[-1]
    assert f.status == "ok"
    assert f.messages[0].topic == "persistent://t/ns/\ufffd"
    assert f.messages[0].detail["producer_name"] == "p\ufffd1"


def test_mutated_streams_never_make_the_decoder_raise() -> None:
    rng = random.Random(1234)
    mid = pb.MessageIdData(ledgerId=1, entryId=2)
    pieces = [
        ("client", CONNECT),
        ("server", CONNECTED),
        ("client", PRODUCER),
        ("server", PRODUCER_SUCCESS),
        (
            "client",
            send(
                7,
                0,
                meta(0, compression=pb.LZ4, uncompressed_size=12),
                lz4.block.compress(b"x" * 12, store_size=False),
            ),
        ),
        ("client", send(7, 1, meta(1, num_messages_in_batch=2), batch([(b"a", "k"), (b"b", None)]))),
        (
            "client",
            send(7, 2, meta(2, uuid="u", chunk_id=0, num_chunks_from_msg=2, total_chunk_msg_size=4), b"ab"),
        ),
        (
            "client",
            send(7, 2, meta(2, uuid="u", chunk_id=1, num_chunks_from_msg=2, total_chunk_msg_size=4), b"cd"),
        ),
        ("server", receipt(7, 0, 1, 1)),
        (
            "server",
            with_payload(
                command("MESSAGE", consumer_id=1, message_id={"_msg": mid}),
                meta(3),
                b"zz",
                bem=pb.BrokerEntryMetadata(index=3),
            ),
        ),
    ]
    for _ in range(300):
        c = Conn()
        for role, data in pieces:
            d = bytearray(data)
            for _ in range(rng.randrange(0, 3)):
                d[rng.randrange(len(d))] = rng.randrange(256)
            if rng.random() < 0.2:
                d = d[: rng.randrange(1, len(d))]
            c.feed(role, bytes(d))
        out = c.finish()
        assert not [a for a in out.all_anomalies() if "decoder error" in a.detail]


def test_corrupted_metadata_is_first_of_all_a_bad_checksum() -> None:
    frame = bytearray(send(7, 0, meta(0), b"payload"))
    at = frame.index(b"p-1") - 2  # the MessageMetadata's first tag, inside the CRC32C's range
    frame[at] = 0xFF
    out = opened().client(bytes(frame), send(7, 1, meta(1), b"next")).finish()
    f = out.frames[4]
    assert f.status == "bad_checksum"
    assert [a.kind for a in f.anomalies] == ["bad_checksum", "malformed"]
    assert out.frames[5].status == "ok" and out.frames[5].messages[0].value == b"next"


def test_third_party_broker_message_without_checksum_is_split_and_unchecked() -> None:
    # pulsar-lite, for one, delivers MESSAGE frames without the 0x0e01 block.
    sub = simple(
        command(
            "SUBSCRIBE", topic="persistent://t/ns/q", subscription="s", subType=0, consumer_id=5, request_id=1
        )
    )
    mid = pb.MessageIdData(ledgerId=0, entryId=6)
    raw = batch([(b"one", "a"), (b"two", "b"), (b"three", None)])
    m = meta(0, num_messages_in_batch=3)
    msg = with_payload(command("MESSAGE", consumer_id=5, message_id={"_msg": mid}), m, raw, checksum=False)
    out = Conn().client(CONNECT).server(CONNECTED).client(sub).server(msg).finish()
    f = out.frames[-1]
    assert f.status == "ok" and f.fields["checksum_ok"] is None
    assert [(x.value, x.key, x.message_id, x.checksum_ok) for x in f.messages] == [
        (b"one", b"a", "0:6:-1:0", None),
        (b"two", b"b", "0:6:-1:1", None),
        (b"three", None, "0:6:-1:2", None),
    ]


def test_producer_success_not_ready_waits_for_the_ready_one() -> None:
    waiting = simple(command("PRODUCER_SUCCESS", request_id=1, producer_name="p-1", producer_ready=False))
    out = (
        Conn()
        .client(CONNECT)
        .server(CONNECTED)
        .client(PRODUCER)
        .server(waiting)
        .server(PRODUCER_SUCCESS)
        .finish()
    )
    producer, first, ready = out.frames[2:]
    assert first.peer_packet is None and "not ready" in first.summary
    assert producer.peer_packet == ready.packet and ready.peer_packet == producer.packet
    assert [e.status for e in out.exchanges if e.type == "PRODUCER"] == ["answered"]


def test_command_over_the_parse_limit_is_named_and_sized_not_decoded() -> None:
    # An ACK whose repeated message_id holds 400,000 six-byte entries (12 04 08 00 10 00:
    # ledgerId 0, entryId 0): a 2.4 MB command, over `Limits.max_command_bytes` (2 MiB). The
    # frame is typed (from the BaseCommand type field) and sized; its command is not parsed.
    head = pb.CommandAck(consumer_id=1, ack_type=0).SerializeToString()
    body = head + bytes.fromhex("120408001000") * 400_000
    field = pb.BaseCommand.DESCRIPTOR.fields_by_name["ack"].number
    assert field < 16
    cmd = pb.BaseCommand(type=pb.BaseCommand.ACK).SerializeToString()
    n = len(body)
    assert 1 << 21 <= n < 1 << 28  # a four-byte length varint
    length = bytes([n & 0x7F | 0x80, n >> 7 & 0x7F | 0x80, n >> 14 & 0x7F | 0x80, n >> 21])
    cmd += bytes([field << 3 | 2]) + length + body
    frame = struct.pack(">II", 4 + len(cmd), len(cmd)) + cmd
    big = simple(
        command("CONNECTED", server_version="stub", protocol_version=20, max_message_size=8 * 1024 * 1024)
    )
    out = Conn().client(CONNECT).server(big).client(frame).finish()
    f = out.frames[-1]
    assert (f.type, f.status) == ("ACK", "ok")
    assert [(a.kind, a.detail, a.offset) for a in f.anomalies] == [
        ("command_limit", f"ACK command of {len(cmd)} bytes is not decoded (limit 2097152 bytes)", 8)
    ]
    assert f.summary == f"{len(cmd)}-byte command, not decoded"
    assert "command" not in f.fields and f.fields["command_size"] == len(cmd)
