"""The Pulsar decoder against real captures and their independent decodes (`X.summary.json`).

The summaries beside each capture were made without wiredump: every frame with its type,
packets and command fields, every payload frame with its checksum verdict, compression and
batch entries, the request/response pairs. These tests check that wiredump's decode says
the same, frame by frame.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CAPTURES as SHARED_CAPTURES
from wiredump.dissect.model import Anomaly, Exchange, Frame
from wiredump.dissect.pipeline import Options, dissect

CAPTURES = SHARED_CAPTURES / "pulsar"
PCAPS = sorted(CAPTURES.glob("*.pcap")) if CAPTURES.exists() else []
pytestmark = pytest.mark.skipif(not PCAPS, reason="shared Pulsar captures not available")


class Decoded:
    def __init__(self, path: Path) -> None:
        self.frames: list[Frame] = []
        self.anomalies: list[Anomaly] = []
        self.exchanges: list[Exchange] = []
        for ev in dissect([str(path)], Options()):
            if ev.kind == "frame":
                self.frames.append(ev.obj)
            elif ev.kind == "anomaly":
                self.anomalies.append(ev.obj)
            elif ev.kind == "exchange":
                self.exchanges.append(ev.obj)
        self.summary: dict[str, Any] = json.loads(path.with_suffix(".summary.json").read_text())

    def by_dir(self, d: str) -> list[Frame]:
        role = "client" if d == "c2s" else "server"
        return [f for f in self.frames if f.role == role and f.protocol == "pulsar"]

    def ref_by_dir(self, d: str) -> list[dict[str, Any]]:
        return sorted((x for x in self.summary["frames"] if x["dir"] == d), key=lambda x: x["offset"])


@cache
def decoded(name: str) -> Decoded:
    return Decoded(CAPTURES / name)


def norm(v: Any) -> Any:
    """Both decodes in one shape: the summaries write 64-bit ints as strings and bytes as base64."""
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, list):
        return [norm(x) for x in v]
    return v


NAMES = [p.name for p in PCAPS]


@pytest.mark.parametrize("name", NAMES)
def test_same_frames_at_same_packets(name: str) -> None:
    d = decoded(name)
    assert len([f for f in d.frames if f.protocol == "pulsar"]) == d.summary["frames_total"]
    for direction in ("c2s", "s2c"):
        mine = [(f.type, f.first_packet, f.packet) for f in d.by_dir(direction)]
        ref = [(x["type"], x["first_packet"], x["last_packet"]) for x in d.ref_by_dir(direction)]
        assert mine == ref, direction
    counts = Counter(f.type for f in d.frames)
    assert counts == Counter(d.summary["command_counts"])


@pytest.mark.parametrize("name", NAMES)
def test_command_fields_and_metadata_match(name: str) -> None:
    d = decoded(name)
    for direction in ("c2s", "s2c"):
        for f, ref in zip(d.by_dir(direction), d.ref_by_dir(direction), strict=True):
            assert f.fields["total_size"] == ref["total_size"]
            assert f.fields["command_size"] == ref["command_size"]
            assert norm(f.fields["command"]) == norm(ref["command"]), (f.type, f.packet)
            if "payload" in ref:
                p = ref["payload"]
                assert norm(f.fields["metadata"]) == norm(p["metadata"]), f.packet
                assert f.fields["payload_size"] == p["payload_size"]
                if "broker_entry_metadata" in p:
                    assert norm(f.fields["broker_entry_metadata"]) == norm(p["broker_entry_metadata"])
                else:
                    assert "broker_entry_metadata" not in f.fields


@pytest.mark.parametrize("name", NAMES)
def test_everything_ok_and_no_anomalies(name: str) -> None:
    d = decoded(name)
    assert d.summary["problems"] == []
    assert [f for f in d.frames if f.status != "ok"] == []
    assert d.anomalies == []


@pytest.mark.parametrize("name", NAMES)
def test_checksums_compression_batches(name: str) -> None:
    d = decoded(name)
    payload_frames = [f for f in d.frames if f.type in ("SEND", "MESSAGE")]
    refs = d.summary["payload_frames"]
    assert len(payload_frames) == len(refs)
    # Payload frames in the summary are listed per direction in stream order, like ours.
    for direction in ("c2s", "s2c"):
        mine = [f for f in payload_frames if f.role == ("client" if direction == "c2s" else "server")]
        ref = [r for r in refs if r["dir"] == direction]
        for f, r in zip(mine, ref, strict=True):
            assert [f.first_packet, f.packet] == r["packets"]
            assert f.fields["checksum_ok"] is r["checksum_ok"]
            assert f.fields["checksum"] == r["crc32c"]
            assert f.fields["checksum_computed"] == r["crc32c_computed"]
            assert ("broker_entry_metadata" in f.fields) is r["bem"]
            expected_compression = None if r["compression"] == "NONE" else r["compression"]
            n = r.get("batch_entries") or 1
            assert len(f.messages) == n, f.packet
            assert f.fields["batch_entries"] == r.get("batch_entries")
            for m in f.messages:
                assert m.compression == expected_compression
                assert m.checksum_ok is r["checksum_ok"]
                assert m.detail["producer_name"] == r["producer_name"]
            if r["type"] == "MESSAGE":
                ledger, entry = r["message_id"].split(":")
                batch = [f"{ledger}:{entry}:-1:{i}" for i in range(n)] if r.get("batch_entries") else None
                assert [m.message_id for m in f.messages] == (batch or [f"{ledger}:{entry}:-1:-1"])
                if "redelivery_count" in r:
                    assert f.messages[0].detail["redelivery_count"] == r["redelivery_count"]


@pytest.mark.parametrize("name", NAMES)
def test_batch_entries_match_the_independent_split(name: str) -> None:
    d = decoded(name)
    for direction in ("c2s", "s2c"):
        for f, ref in zip(d.by_dir(direction), d.ref_by_dir(direction), strict=True):
            entries = ref.get("payload", {}).get("batch_entries")
            if not entries:
                continue
            assert len(f.messages) == len(entries)
            # The frame's own detail holds each entry's SingleMessageMetadata, as the summary does.
            strip = [{k: v for k, v in e.items() if not k.startswith("_")} for e in entries]
            assert norm([x["single_metadata"] for x in f.fields["entries"]]) == norm(strip)
            for m, e in zip(f.messages, entries, strict=True):
                assert m.value_size == e["payload_size"]
                assert m.key == (e["partition_key"].encode() if "partition_key" in e else None)
                assert str(m.detail["sequence_id"]) == e.get("sequence_id", str(m.detail["sequence_id"]))


@pytest.mark.parametrize("name", [n for n in NAMES if "compression" in n])
def test_compressed_payloads_decompressed(name: str) -> None:
    d = decoded(name)
    sends = [f for f in d.frames if f.type == "SEND"]
    delivered = [f for f in d.frames if f.type == "MESSAGE"]
    for direction in ("c2s", "s2c"):
        for f, ref in zip(d.by_dir(direction), d.ref_by_dir(direction), strict=True):
            p = ref.get("payload")
            if not p or p["compression"] == "NONE":
                continue
            meta = p["metadata"]
            assert f.fields["decompressed_size"] == meta["uncompressed_size"]
            if "decompressed_size" in p:
                assert p["decompressed_size_matches"] is True
                assert f.fields["decompressed_size"] == p["decompressed_size"]
            if "num_messages_in_batch" not in meta:
                assert f.messages[0].value_size == p["decompressed_size"] == meta["uncompressed_size"]
            else:
                # A batch: every entry's header and payload adds up to the uncompressed size.
                assert sum(m.value_size for m in f.messages) < meta["uncompressed_size"]
                assert len(f.messages) == meta["num_messages_in_batch"]
    # The producer's compressed SEND and the broker's MESSAGE decode to the same values.
    assert [m.value for f in sends for m in f.messages] == [m.value for f in delivered for m in f.messages]
    assert all(m.value for f in sends for m in f.messages)


@pytest.mark.parametrize("name", NAMES)
def test_one_message_row_per_logical_message(name: str) -> None:
    d = decoded(name)
    expected = Counter()
    for r in d.summary["payload_frames"]:
        expected["produce" if r["type"] == "SEND" else "deliver"] += r.get("batch_entries") or 1
    got = Counter(m.direction for f in d.frames for m in f.messages)
    assert got == expected


@pytest.mark.parametrize("name", NAMES)
def test_request_pairs(name: str) -> None:
    d = decoded(name)
    at = {}
    for f in d.frames:
        at.setdefault((f.packet, f.type, f.correlation_id), f)
    for pair in d.summary["request_pairs"]:
        req = at[(pair["request_packet"], pair["request"], pair["request_id"])]
        assert req.peer_packet == pair["response_packet"], pair
        resp_type = pair["response"].split()[0]
        resp = at[(pair["response_packet"], resp_type, pair["request_id"])]
        assert resp.peer_packet == pair["request_packet"]
        assert resp.latency_us is not None and resp.latency_us >= 0
    sends = [f for f in d.frames if f.type == "SEND"]
    receipts = [f for f in d.frames if f.type == "SEND_RECEIPT"]
    assert sum(1 for f in sends if f.peer_packet) == d.summary["send_receipt_pairs"]["matched"]
    assert all(f.peer_packet for f in receipts)
    # Each SEND's messages took the id its receipt gave.
    by_packet_seq = {(f.packet, f.fields["command"]["sequence_id"]): f for f in receipts}
    for s in sends:
        receipt = by_packet_seq[(s.peer_packet, s.fields["command"]["sequence_id"])]
        mid = receipt.fields["command"]["message_id"]
        assert s.messages[0].message_id.startswith(f"{mid['ledgerId']}:{mid['entryId']}:")


def test_s04_ping_pong_and_consumer_events() -> None:
    d = decoded("s04-consumer.pcap")
    ping = next(f for f in d.frames if f.type == "PING")
    pong = next(f for f in d.frames if f.type == "PONG")
    assert (ping.packet, pong.packet) == (102, 103)  # summary frames list
    assert ping.peer_packet == 103 and pong.peer_packet == 102
    for f in d.frames:
        if f.type in ("MESSAGE", "FLOW", "REDELIVER_UNACKNOWLEDGED_MESSAGES", "ACTIVE_CONSUMER_CHANGE"):
            assert f.kind == "event"
    # No ACK in this capture asks for a receipt, so none is a request.
    assert all(f.kind == "event" for f in d.frames if f.type == "ACK")
    answered = Counter(e.status for e in d.exchanges)
    # 40 sends + PING + CONNECT + the summary's request/response pairs, all answered.
    assert answered == {"answered": 40 + 1 + 1 + len(d.summary["request_pairs"])}


def test_topics_on_messages() -> None:
    d = decoded("s02-producer-batching.pcap")
    topics = {m.topic for f in d.frames for m in f.messages}
    producers = {f.fields["command"]["topic"] for f in d.frames if f.type == "PRODUCER"}
    subscribed = {f.fields["command"]["topic"] for f in d.frames if f.type == "SUBSCRIBE"}
    assert topics == producers | subscribed == {"persistent://public/default/s02-telemetry"}


def test_acks_name_the_packets_that_delivered_the_messages() -> None:
    d = decoded("s04-consumer.pcap")
    ref = sorted(d.summary["frames"], key=lambda x: x["last_packet"])
    checked = 0
    for f in (f for f in d.frames if f.type == "ACK"):
        ack = next(r for r in ref if r["type"] == "ACK" and r["last_packet"] == f.packet)
        expected = []
        for mid in ack["command"]["message_id"]:
            deliveries = [
                r["last_packet"]
                for r in ref
                if r["type"] == "MESSAGE"
                and r["last_packet"] <= f.packet
                and r["command"]["consumer_id"] == ack["command"]["consumer_id"]
                and r["command"]["message_id"]["ledgerId"] == mid["ledgerId"]
                and r["command"]["message_id"]["entryId"] == mid["entryId"]
            ]
            if deliveries:
                expected.append(deliveries[-1])
        assert f.fields.get("delivered_in_packets", []) == expected
        checked += len(expected)
    assert checked >= 20
