"""Kafka: never invent a frame, never drop one silently (issue 14, items 2, 3, 5, 7, 8).

Expected values come from outside wiredump: the independent decodes beside the real
captures (`X.pdus.tsv`), tshark's Kafka dissector on the same bytes, and bytes crafted
here by hand (their meaning is the hand computation written beside them).
"""

from __future__ import annotations

import csv
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import crc32c
import pyarrow.parquet as pq
import pytest

from tests import variants as V
from tests.cli_support import run_cli
from tests.conftest import CAPTURES
from tests.crafted import ETHERNET, Rec, link, tcp, write_pcap
from wiredump.dissect.model import Anomaly, Frame
from wiredump.dissect.pipeline import Options, dissect

KAFKA = CAPTURES / "kafka"
BASIC = KAFKA / "kafka-python-basic.pcap"
needs_captures = pytest.mark.skipif(not BASIC.exists(), reason="Kafka captures not available")
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


# -- helpers ---------------------------------------------------------------------------------------
def s16(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def request(key: int, version: int, corr: int, client_id: str, body: bytes = b"") -> bytes:
    """[int32 size][int16 key][int16 version][int32 correlation id][int16 client id length][id] body."""
    inner = struct.pack(">hhi", key, version, corr) + s16(client_id) + body
    return struct.pack(">i", len(inner)) + inner


def response(corr: int, body: bytes) -> bytes:
    return struct.pack(">ii", 4 + len(body), corr) + body


API_VERSIONS_V0 = struct.pack(">hi", 0, 2) + struct.pack(">hhh", 18, 0, 3) + struct.pack(">hhh", 3, 0, 12)
"""ApiVersions v0 response body: error 0, 2 entries: (18, 0..3), (3, 0..12)."""


@dataclass
class Decoded:
    frames: list[Frame]
    anomalies: list[Anomaly]


def decode(path: Path, **options: object) -> Decoded:
    frames, anomalies = [], []
    for ev in dissect([str(path)], Options(**options)):  # type: ignore[arg-type]
        if ev.kind == "frame":
            frames.append(ev.obj)
        elif ev.kind == "anomaly":
            anomalies.append(ev.obj)
    return Decoded(frames, anomalies)


def conversation(
    exchanges: list[tuple[bytes, bytes]], port: int, t0: int, segment: int | None = None
) -> list[Rec]:
    """A whole TCP connection 10.9.0.1:port -> 10.9.0.2:9092: handshake, then each request and its
    answer (in segments of at most `segment` bytes when given, else one segment each)."""
    c, s = "10.9.0.1", "10.9.0.2"
    cseq, sseq = 1000, 5000
    recs = [
        Rec(link(ETHERNET, tcp(c, s, port, 9092, seq=cseq, ack=0, flags="S")), ts_us=t0),
        Rec(link(ETHERNET, tcp(s, c, 9092, port, seq=sseq, ack=cseq + 1, flags="SA")), ts_us=t0 + 10),
        Rec(link(ETHERNET, tcp(c, s, port, 9092, seq=cseq + 1, ack=sseq + 1, flags="A")), ts_us=t0 + 20),
    ]
    cseq, sseq, t = cseq + 1, sseq + 1, t0 + 1000
    for req, resp in exchanges:
        recs.append(Rec(link(ETHERNET, tcp(c, s, port, 9092, seq=cseq, ack=sseq, payload=req)), ts_us=t))
        cseq += len(req)
        pieces = (
            [resp] if segment is None else [resp[at : at + segment] for at in range(0, len(resp), segment)]
        )
        for seg in pieces:
            recs.append(
                Rec(link(ETHERNET, tcp(s, c, 9092, port, seq=sseq, ack=cseq, payload=seg)), ts_us=t + 700)
            )
            sseq += len(seg)
        t += 10_000
    return recs


def tshark_fields(path: Path, *fields: str) -> list[list[str]]:
    out = subprocess.run(
        [
            "tshark",
            "-r",
            str(path),
            "-d",
            "tcp.port==9092,kafka",
            "-T",
            "fields",
            *sum((["-e", f] for f in fields), []),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split("\t") for line in out.splitlines()]


# -- item 2: a frame with valid framing is a Kafka frame --------------------------------------------
# (name, request bytes, response bytes, request status, response status)
CASES = [
    # librdkafka's ApiVersions v0: an empty int32 array (4 zero bytes) after the empty v0 body.
    ("librdkafka", request(18, 0, 1, "rdkafka", b"\0\0\0\0"), response(1, API_VERSIONS_V0), "ok", "ok"),
    ("unknown-key", request(999, 0, 2, "cli"), response(2, b"\0\0"), "unknown_type", "unknown_type"),
    # A version newer than the specs; header v2 (flexible ApiVersions): client id then an empty
    # tag section. The broker answers with a v0 body: error 35 UNSUPPORTED_VERSION.
    (
        "api-versions-v99",
        request(18, 99, 3, "cli", b"\0"),
        response(3, struct.pack(">hi", 35, 1) + struct.pack(">hhh", 18, 0, 3)),
        "unsupported_version",
        "ok",
    ),
    (
        "metadata-v99",
        request(3, 99, 4, "cli", b"\0\0\0"),
        response(4, b"\0\1\2"),
        "unsupported_version",
        "unsupported_version",
    ),
    ("tab-client-id", request(18, 0, 5, "a\tb"), response(5, API_VERSIONS_V0), "ok", "ok"),
    # Metadata v0: topics array count 2^31-1 and nothing after it. Answer: 0 brokers, 0 topics.
    (
        "huge-topic-count",
        request(3, 0, 6, "cli", struct.pack(">i", 2**31 - 1)),
        response(6, struct.pack(">ii", 0, 0)),
        "malformed",
        "ok",
    ),
]


def _item2_capture(tmp_path: Path) -> Path:
    """Each case on its own connection, then the real kafka-python-basic capture after them."""
    recs: list[Rec] = []
    t = 1_600_000_000_000_000
    for i, (_, req, resp, *_) in enumerate(CASES):
        recs += conversation([(req, resp)], 41000 + i, t)
        t += 100_000
    if BASIC.exists():
        cap = V.read(BASIC)
        for r in cap.recs:
            sec, frac = struct.unpack(cap.endian + "II", r.ts)
            recs.append(Rec(r.data, ts_us=sec * 1_000_000 + frac, orig_len=r.orig_len))
    return write_pcap(tmp_path / "item2.pcap", recs)


@needs_captures
def test_valid_framing_is_a_kafka_frame_with_its_status(tmp_path: Path) -> None:
    path = _item2_capture(tmp_path)
    got = decode(path)
    crafted_packets = 5 * len(CASES)  # handshake (3) + request + response per connection
    for i, (name, req, _resp, req_status, resp_status) in enumerate(CASES):
        first = 5 * i + 4  # the request's packet; its answer is the next one
        frames = [f for f in got.frames if f.first_packet in (first, first + 1)]
        assert [f.kind for f in frames] == ["request", "response"], name
        rq, rs = frames
        key, version, corr = struct.unpack_from(">hhi", req, 4)
        assert (rq.type_code, rq.version, rq.correlation_id, rq.status) == (key, version, corr, req_status), (
            name
        )
        assert (rs.correlation_id, rs.status) == (corr, resp_status), name
        assert rq.peer_packet == first + 1 and rs.peer_packet == first, name  # paired by correlation id
        assert rs.latency_us == 700, name  # the answer was written 700 µs after the request
        assert not rs.fields.get("no_request") and "layout guessed" not in rs.summary, name
    resyncs = [a for a in got.anomalies if a.kind == "resync" and a.packet <= crafted_packets]
    assert resyncs == []
    by = {f.first_packet: f for f in got.frames}
    # librdkafka: the extra bytes are noted, the frame is fine, the answer decoded as v0.
    rq, rs = by[4], by[5]
    assert rq.fields["header"]["client_id"] == "rdkafka"
    assert [a.kind for a in rq.anomalies] == ["trailing_bytes"] and rq.anomalies[0].offset == 4 + 8 + 9
    assert [(k["api_key"], k["min_version"], k["max_version"]) for k in rs.fields["body"]["api_keys"]] == [
        (18, 0, 3),
        (3, 0, 12),
    ]
    assert by[9].type == "Unknown" and by[10].fields["body_length"] == 2
    assert by[15].error == "UNSUPPORTED_VERSION" and by[15].error_code == 35
    assert by[24].fields["header"]["client_id"] == "a\tb"
    assert "2147483647" in by[29].anomalies[0].detail and by[29].anomalies[0].kind == "malformed"
    # The real capture after them decodes as its independent decode says.
    rows = list(csv.DictReader((KAFKA / "kafka-python-basic.pdus.tsv").open(), delimiter="\t"))
    real = {
        (
            "req" if f.kind == "request" else "resp",
            f.first_packet - crafted_packets,
            f.correlation_id,
            f.type_code,
        )
        for f in got.frames
        if f.first_packet > crafted_packets
    }
    assert real == {
        (r["dir"], int(r["first_frame"]), int(r["correlation_id"]), int(r["api_key"])) for r in rows
    }


@needs_captures
@needs_tshark
def test_valid_framing_matches_tshark(tmp_path: Path) -> None:
    """tshark reads the same api key, version, correlation id and client id in each crafted request."""
    path = _item2_capture(tmp_path)
    got = {f.first_packet: f for f in decode(path).frames if f.kind == "request"}
    rows = tshark_fields(
        path, "frame.number", "kafka.api_key", "kafka.api_version", "kafka.correlation_id", "kafka.client_id"
    )
    seen = 0
    for number, key, version, corr, client in rows:
        if int(number) > 5 * len(CASES) or not key or not version:
            continue
        f = got[int(number)]
        assert (f.type_code, f.version, f.correlation_id) == (int(key), int(version), int(corr))
        assert f.fields["header"]["client_id"] == client.replace("\\t", "\t")
        seen += 1
    assert seen == len(CASES)


# -- item 3: a capture cut mid-connection invents nothing --------------------------------------------
def cut_mid_stream(
    name: str, out: Path, fraction: float = 0.4, cut: int = 3
) -> tuple[V.Capture, list[V.Rec]]:
    """The capture without its first `fraction` of packets, and `cut` bytes cut from the first data
    segment of each direction of each connection left (the capture starts inside a frame)."""
    cap = V.read(KAFKA / f"{name}.pcap")
    recs = cap.recs[int(len(cap.recs) * fraction) :]
    seen: set[tuple] = set()
    new = []
    for r in recs:
        t = r.tcp()
        if t is not None and t.payload and (t.src, t.dst) not in seen:
            seen.add((t.src, t.dst))
            r = V.rebuild(r, t.seq + cut, t.payload[cut:])
        new.append(r)
    V.write(cap, new, out)
    return cap, new


MID = [
    n
    for n in (
        "kafka-python-basic",
        "kafka-python-pinned-2.5",
        "ck-compress-gzip",
        "kafka-python-legacy-msgset",
    )
    if (KAFKA / f"{n}.pcap").exists()
]


@pytest.mark.parametrize("name", MID)
def test_mid_stream_cut_inside_frames_invents_nothing(tmp_path: Path, name: str) -> None:
    cap, recs = cut_mid_stream(name, tmp_path / "mid.pcap")
    orig = [r.orig for r in recs]  # variant packet n -> original packet orig[n - 1]
    ts = {}
    for r in cap.recs:
        sec, frac = struct.unpack(cap.endian + "II", r.ts)
        ts[r.orig] = sec * 1_000_000 + frac
    rows = list(csv.DictReader((KAFKA / f"{name}.pdus.tsv").open(), delimiter="\t"))
    index = {
        (r["dir"], int(r["first_frame"]), int(r["last_frame"]), int(r["correlation_id"])): r for r in rows
    }
    by_first = {(r["dir"], int(r["first_frame"]), r["correlation_id"]): r for r in rows}
    got = decode(tmp_path / "mid.pcap")
    paired = 0
    for f in got.frames:
        d = "req" if f.kind == "request" else "resp"
        r = index.get((d, orig[f.first_packet - 1], orig[f.packet - 1], f.correlation_id))
        assert r is not None, (
            "invented frame",
            d,
            f.type,
            f.correlation_id,
            orig[f.first_packet - 1],
            f.summary,
        )
        assert (f.type_code, f.version) == (int(r["api_key"]), int(r["api_version"])), r
        if f.peer_packet is not None:
            peer = by_first[("resp" if d == "req" else "req", int(r["peer_frame"]), r["correlation_id"])]
            assert orig[f.peer_packet - 1] == int(peer["last_frame"]), r
        if f.latency_us is not None:
            # The latency the independent decode implies: last packet of each, original times.
            assert f.latency_us == ts[int(r["last_frame"])] - ts[int(peer["last_frame"])], r
            paired += 1
    assert paired > 0
    # No false boundary shows up as a broken frame either.
    assert "malformed" not in {f.status for f in got.frames}
    # And nothing real is lost beyond the frame each direction starts inside: every PDU after
    # the first one of its direction in the cut capture is decoded.
    cut = recs[0].orig - 1
    have = {
        ("req" if f.kind == "request" else "resp", orig[f.first_packet - 1], f.correlation_id)
        for f in got.frames
    }
    firsts: set[tuple[str, str]] = set()
    missing = []
    for r in rows:
        if int(r["first_frame"]) <= cut:
            continue
        if (r["stream"], r["dir"]) not in firsts:
            firsts.add((r["stream"], r["dir"]))
            continue
        if (r["dir"], int(r["first_frame"]), int(r["correlation_id"])) not in have:
            missing.append(r)
    assert missing == []


def test_resync_skips_an_unconfirmed_response_boundary() -> None:
    """Inside a cut response, 8 bytes that read as a header with a pending id are not a frame
    unless what follows them reads as that request's answer and the next frame starts after it."""
    from tests.conversation import Stream

    fr = Stream(9092)
    # FindCoordinator v0 request, correlation id 7 (key 10, version 0, key "g").
    fr.feed("client", request(10, 0, 7, "c", s16("g")), 1, 1000)
    # Server: the tail of an earlier answer whose bytes hold [size 0x40][id 7] and NULs (the
    # issue's false JoinGroup), then the real answer: error 0, node 1, host "h", port 9092.
    real = response(7, struct.pack(">hi", 0, 1) + s16("h") + struct.pack(">i", 9092))
    fr.feed("server", b"\x01\x02\x03" + struct.pack(">ii", 0x40, 7) + b"\0" * 20, 2, 2000)
    fr.feed("server", real, 3, 3000)
    out = fr.finish()
    assert [(f.kind, f.type, f.correlation_id, f.status, f.first_packet, f.packet) for f in out.frames] == [
        ("request", "FindCoordinator", 7, "ok", 1, 1),
        ("response", "FindCoordinator", 7, "ok", 3, 3),
    ]
    assert out.frames[1].fields["body"]["port"] == 9092
    assert [a.detail.split(";")[0] for a in out.anomalies if a.kind == "resync"] == [
        "skipped 31 server bytes that are not kafka frames"
    ]


# -- item 5: the answer to an acks=0 Produce ---------------------------------------------------------
def produce_v3_acks0(corr: int) -> bytes:
    """Produce v3, acks 0: null transactional id, acks, timeout, 1 topic "t", partition 0, no records."""
    body = struct.pack(">h", -1) + struct.pack(">hi", 0, 30000)
    body += struct.pack(">i", 1) + s16("t") + struct.pack(">i", 1) + struct.pack(">ii", 0, -1)
    return request(0, 3, corr, "cli", body)


def produce_v3_response(corr: int) -> bytes:
    """1 topic "t", partition 0, error 0, base offset 42, log append time -1; throttle 0."""
    body = struct.pack(">i", 1) + s16("t") + struct.pack(">i", 1) + struct.pack(">ihqq", 0, 0, 42, -1)
    return response(corr, body + struct.pack(">i", 0))


def test_acks0_produce_answered_is_paired_and_flagged(tmp_path: Path) -> None:
    recs = conversation([(produce_v3_acks0(11), produce_v3_response(11))], 42000, 1_600_000_000_000_000)
    path = write_pcap(tmp_path / "acks0.pcap", recs)
    got = decode(path)
    rq, rs = got.frames
    assert (rq.type, rq.version, rq.correlation_id, rq.fields["body"]["acks"]) == ("Produce", 3, 11, 0)
    assert (rs.kind, rs.type, rs.version, rs.correlation_id, rs.status) == (
        "response",
        "Produce",
        3,
        11,
        "ok",
    )
    assert rs.peer_packet == 4 and rs.latency_us == 700
    assert not rs.fields.get("no_request") and "guessed" not in rs.summary
    assert rs.fields["body"]["responses"][0]["partition_responses"][0]["base_offset"] == 42
    flagged = [a for a in rs.anomalies if a.kind == "unexpected_response"]
    assert len(flagged) == 1 and "acks=0" in flagged[0].detail and "packet 4" in flagged[0].detail


@needs_tshark
def test_acks0_pairing_matches_tshark(tmp_path: Path) -> None:
    recs = conversation([(produce_v3_acks0(11), produce_v3_response(11))], 42000, 1_600_000_000_000_000)
    path = write_pcap(tmp_path / "acks0.pcap", recs)
    rows = [r for r in tshark_fields(path, "frame.number", "kafka.api_key", "kafka.correlation_id") if r[2]]
    assert rows == [["4", "0", "11"], ["5", "", "11"]]  # a Produce and an answer with its correlation id
    rq, rs = decode(path).frames
    assert (rq.packet, rq.type_code, rq.correlation_id) == (4, 0, 11)
    assert (rs.packet, rs.correlation_id, rs.peer_packet) == (5, 11, 4)


# -- item 8: record-level validation does not depend on the command or filter ------------------------
def header_lacking_capture(tmp_path: Path) -> tuple[Path, int]:
    """kafka-python-basic with its first single-segment Produce's last record declaring a header
    it does not carry (header count 2 -> 3), the batch CRC-32C recomputed."""
    rows = list(csv.DictReader((KAFKA / "kafka-python-basic.pdus.tsv").open(), delimiter="\t"))
    produce = next(
        r for r in rows if r["api_name"] == "Produce" and r["dir"] == "req" and r["segments"] == "1"
    )
    packet, length = int(produce["last_frame"]), int(produce["length"])
    cap = V.read(BASIC)
    rec = cap.recs[packet - 1]
    t = rec.tcp()
    assert t is not None and len(t.payload) == 4 + length  # exactly this PDU (independent decode)
    data = bytearray(t.payload)
    # Produce v9 (flexible): the request ends with the batch, then 3 tagged-field bytes (partition,
    # topic, request). The last record ends with 2 headers: trace-id (8 bytes) and seq (2 bytes).
    assert int(produce["api_version"]) >= 9 and data[-3:] == b"\0\0\0"
    batch_end = len(data) - 3
    count_at = bytes(data).rindex(b"\x04\x10trace-id")  # zig-zag varint 2, then key length 8
    assert batch_end - count_at == 1 + 1 + 8 + 1 + 8 + 1 + 3 + 1 + 2
    start = next(
        b
        for b in range(batch_end - 61, 0, -1)
        if struct.unpack_from(">i", data, b + 8)[0] == batch_end - b - 12 and data[b + 16] == 2
    )
    data[count_at] = 6  # zig-zag varint 3: a third header the record does not carry
    struct.pack_into(">I", data, start + 17, crc32c.crc32c(bytes(data[start + 21 : batch_end])))
    recs = list(cap.recs)
    recs[packet - 1] = V.rebuild(rec, t.seq, bytes(data))
    return V.write(cap, recs, tmp_path / "header-lacking.pcap"), packet


@needs_captures
def test_record_errors_give_the_same_status_in_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, packet = header_lacking_capture(tmp_path)
    for messages in (True, False):
        f = next(f for f in decode(path, messages=messages).frames if f.packet == packet)
        assert (f.type, f.status) == ("Produce", "malformed"), messages
        assert any(a.kind == "malformed" and "record" in a.detail for a in f.anomalies), messages
    # The plain timeline, a filter that does not mention messages, export and check agree.
    line = next(
        ln for ln in run_cli(capsys, path).out.splitlines() if ln.split() and ln.split()[0] == str(packet)
    )
    assert "malformed" in line
    filtered = run_cli(capsys, path, "-Y", "status == malformed").out
    assert [ln.split()[0] for ln in filtered.splitlines() if ln.strip() and ln.split()[0].isdigit()] == [
        str(packet)
    ]
    r = run_cli(capsys, "export", path, "-o", tmp_path / "out")
    assert r.code == 0, r.err
    frames = pq.read_table(tmp_path / "out" / "frames.parquet").to_pylist()
    assert [f["status"] for f in frames if f["packet"] == packet] == ["malformed"]
    rules = tmp_path / "rules.yaml"
    rules.write_text("forbid: [malformed]\n")
    r = run_cli(capsys, "check", path, "--rules", rules)
    assert r.code == 1 and f"packet {packet} " in r.out


# -- item 7: topic names belong to the run, the same whatever ran before and however many workers ----
GZIP = KAFKA / "ck-compress-gzip.pcap"
METADATA_RESPONSES = (35, 78, 93, 108, 116)
"""Packets of ck-compress-gzip holding the Metadata v12 responses that list ck-gzip with its id
(streams 2, 4, 5, 6, 5 in its pdus.tsv); stream 6 then fetches it by id (Fetch v16)."""
needs_gzip = pytest.mark.skipif(not GZIP.exists(), reason="ck-compress-gzip capture not available")


def topic_ids_replaced(tmp_path: Path, packets: tuple[int, ...], name: str) -> tuple[Path, str]:
    """ck-compress-gzip with the topic id after the compact string "ck-gzip" (varint 8, 7 bytes)
    replaced by 0x5a bytes in the given Metadata responses; returns the path and the real id."""
    import uuid

    cap = V.read(GZIP)
    recs = list(cap.recs)
    real = ""
    for n in packets:
        t = recs[n - 1].tcp()
        assert t is not None
        data = bytearray(t.payload)
        at = bytes(data).index(b"\x08ck-gzip") + 8
        real = str(uuid.UUID(bytes=bytes(data[at : at + 16])))
        data[at : at + 16] = b"\x5a" * 16
        recs[n - 1] = V.rebuild(recs[n - 1], t.seq, bytes(data))
    return V.write(cap, recs, tmp_path / name), real


def fetch_view(path: Path, shard: tuple[int, int] | None = None) -> list[tuple]:
    """(packet, summary, topics of its messages) of every Fetch frame."""
    out = []
    for ev in dissect([str(path)], Options(shard=shard)):
        if ev.kind == "frame" and ev.obj.type == "Fetch":
            f = ev.obj
            out.append((f.packet, f.summary, tuple(sorted({m.topic for m in f.messages}))))
    return sorted(out)


@needs_gzip
def test_topic_names_do_not_leak_between_captures(tmp_path: Path) -> None:
    unnamed, real = topic_ids_replaced(tmp_path, METADATA_RESPONSES, "unnamed.pcap")
    before = fetch_view(unnamed)
    assert before and {t for _, _, ts in before for t in ts} == {real}  # no response names the id
    named = fetch_view(GZIP)  # teaches real id -> ck-gzip, in the old process-wide map
    assert {t for _, _, ts in named for t in ts} == {"ck-gzip"}  # the topic of scenario.json
    assert fetch_view(unnamed) == before


@needs_gzip
def test_topic_names_learnt_on_other_connections_whatever_the_workers(tmp_path: Path) -> None:
    # Stream 6's own Metadata answer no longer names the id: its Fetch v16 frames learn it from
    # the answers on streams 2, 4 and 5, earlier in the capture.
    path, _ = topic_ids_replaced(tmp_path, (108,), "other-connections.pcap")
    serial = fetch_view(path)
    assert serial and {t for _, _, ts in serial for t in ts} == {"ck-gzip"}
    assert all("ck-gzip" in summary for _, summary, _ in serial)
    for n in (2, 3, 7):  # with 7 workers every stream is decoded by a worker of its own
        merged = sorted(sum((fetch_view(path, (k, n)) for k in range(n)), []))
        assert merged == serial, n


@needs_gzip
def test_parallel_export_resolves_the_same_topics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = topic_ids_replaced(tmp_path, (108,), "other-connections.pcap")
    tables = {}
    for workers in (1, 3):
        r = run_cli(capsys, "export", path, "-o", tmp_path / f"w{workers}", "--workers", str(workers))
        assert r.code == 0, r.err
        tables[workers] = pq.read_table(tmp_path / f"w{workers}" / "messages.parquet")
    assert tables[1].equals(tables[3])
    assert set(tables[1].column("topic").to_pylist()) == {"ck-gzip"}
