"""Protocol detection on ports that are not a protocol's own (issue 14, items 1 and 4).

Every capture here is a real one from ../shared/captures rewritten by record surgery
(`tests/variants.py`): the server moved to another port, client ports moved below it,
the first packets cut away (a capture begun mid-connection), payloads replaced by noise.
Expected frames come from the independent decodes beside the captures (`X.pdus.tsv`,
made without wiredump), with packet numbers mapped through the records kept.
"""

from __future__ import annotations

import random
import re
import struct
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests import variants as V
from tests.conftest import CAPTURES, tsv_rows
from wiredump.dissect.model import Anomaly, ConnectionSummary, Frame
from wiredump.dissect.pipeline import Options, dissect

KAFKA, TANK = 9092, 11011
ODD = 36333
"""The server port of DeepFlow's Kafka test captures: no protocol's own."""

pytestmark = pytest.mark.skipif(not CAPTURES.is_dir(), reason="real captures not available")


def capture(proto: str, name: str) -> V.Capture:
    path = CAPTURES / proto / f"{name}.pcap"
    if not path.exists():
        pytest.skip(f"{path} not available")
    return V.read(path)


def ports(recs: list[V.Rec], new: Callable[[int], int]) -> list[V.Rec]:
    """The records with every TCP port p replaced by new(p) (IPv4 header untouched: no checksum change)."""
    out = []
    for r in recs:
        t = r.tcp()
        if t is not None:
            data = bytearray(r.data)
            at = V.ETH + (data[V.ETH] & 0x0F) * 4
            sport, dport = struct.unpack_from(">HH", data, at)
            struct.pack_into(">HH", data, at, new(sport), new(dport))
            r = V.replace(r, data=bytes(data))
        out.append(r)
    return out


def decode(path: Path, **options: object) -> tuple[list[Frame], list[Anomaly], list[ConnectionSummary]]:
    frames, anomalies, conns = [], [], []
    for ev in dissect([str(path)], Options(**options)):  # type: ignore[arg-type]
        if ev.kind == "frame":
            frames.append(ev.obj)
        elif ev.kind == "anomaly":
            anomalies.append(ev.obj)
        elif ev.kind == "connection":
            conns.append(ev.obj)
    assert not [a for a in anomalies if a.kind == "internal_error"]
    return frames, anomalies, conns


def role(direction: str) -> str:
    return "client" if direction in ("req", "c>s") else "server"


# -- item 1: TANK beside its default port is TANK, not Kafka ------------------------------------------
@pytest.mark.parametrize("port", [11012, 21011])
@pytest.mark.parametrize("name", ["t01-basic", "t02-bundles"])
def test_tank_on_another_port_is_tank_and_never_kafka(tmp_path: Path, name: str, port: int) -> None:
    cap = capture("tank", name)
    var = V.write(cap, ports(cap.recs, lambda p: port if p == TANK else p), tmp_path / "moved.pcap")
    frames, anomalies, conns = decode(var)
    rows = tsv_rows(CAPTURES / "tank" / f"{name}.pdus.tsv")
    want = sorted(
        (
            int(r["stream"]),
            role(r["dir"]),
            int(r["first_frame"]),
            int(r["last_frame"]),
            r["msg_name"],
            int(r["request_id"]) if r["request_id"] else None,
            int(r["length"]) + 5,  # the TSV gives the payload; frames count the 5-byte header
        )
        for r in rows
    )
    got = sorted(
        (f.stream, f.role, f.first_packet, f.packet, f.type, f.correlation_id, f.length) for f in frames
    )
    assert got == want
    assert {f.protocol for f in frames} == {"tank"}
    assert {f.status for f in frames} == {"ok"}
    assert not [a for a in anomalies if a.protocol == "kafka" or a.kind in ("malformed", "resync")]
    talking = [c for c in conns if c.bytes_client or c.bytes_server]
    assert {(c.protocol, c.server_port) for c in talking} == {("tank", port)}


def test_decode_as_still_wins(tmp_path: Path) -> None:
    """`-d PORT=PROTO` is obeyed even where the bytes say otherwise (the user decides)."""
    cap = capture("tank", "t01-basic")
    var = V.write(cap, ports(cap.recs, lambda p: 11012 if p == TANK else p), tmp_path / "moved.pcap")
    frames, _, conns = decode(var, decode_as={11012: "kafka"})
    assert {c.protocol for c in conns} == {"kafka"}
    assert frames and {f.protocol for f in frames} == {"kafka"}


# -- item 4: mid-stream, the client's port below the server's -----------------------------------------
def low(p: int) -> int:
    """A client port below ODD (ephemeral ports of the original captures are 33000–61000)."""
    return p % 30000 + 1024


@pytest.mark.parametrize(
    ("name", "fraction"),
    [
        ("kafka-python-basic", 0.3),
        ("kafka-python-basic", 0.6),
        ("admin-kafka-python", 0.5),
        ("kafka-python-pinned-2.5", 0.7),
        ("kafka-python-legacy-msgset", 0.5),
        ("ck-compress-zstd", 0.5),
    ],
)
def test_kafka_mid_stream_with_the_client_port_below_the_server(
    tmp_path: Path, name: str, fraction: float
) -> None:
    cap = capture("kafka", name)
    cut = int(len(cap.recs) * fraction)
    kept = cap.recs[cut:]
    var = V.write(cap, ports(kept, lambda p: ODD if p == KAFKA else low(p)), tmp_path / "mid.pcap")
    # The variant really is the hard case: connections seen without their SYN, carrying data,
    # whose client port is below the server's.
    seen: dict[frozenset, tuple[bool, int]] = {}
    for r in V.read(var).recs:
        t = r.tcp()
        if t is not None:
            syn, n = seen.get(t.conn, (False, 0))
            seen[t.conn] = (syn or bool(t.flags & V.SYN), n + len(t.payload))
    hard = [c for c, (syn, n) in seen.items() if not syn and n and max(p for _, p in c) == ODD]
    assert hard and all(min(p for _, p in c) < ODD for c in hard)

    frames, _, conns = decode(var)
    rows = [r for r in tsv_rows(CAPTURES / "kafka" / f"{name}.pdus.tsv") if int(r["first_frame"]) > cut]
    requests_kept = {int(r["first_frame"]) for r in rows if r["dir"] == "req"}

    def expected(r: dict[str, str]) -> tuple:
        # A response whose request was cut away keeps its place, length and id; its API is a guess.
        named = r["dir"] == "req" or int(r["peer_frame"] or 0) in requests_kept
        return (
            role(r["dir"]),
            int(r["first_frame"]) - cut,
            int(r["last_frame"]) - cut,
            int(r["length"]) + 4,  # the TSV gives the length after the 4-byte size prefix
            int(r["correlation_id"]),
            r["api_name"] if named else None,
        )

    def actual(f: Frame) -> tuple:
        named = f.role == "client" or (f.peer_packet or 0) + cut in requests_kept
        return (f.role, f.first_packet, f.packet, f.length, f.correlation_id, f.type if named else None)

    assert rows
    assert sorted(map(actual, frames)) == sorted(map(expected, rows))
    assert {f.protocol for f in frames} == {"kafka"}
    for c in conns:
        if c.bytes_client or c.bytes_server:
            assert (c.protocol, c.server_port) == ("kafka", ODD), c
            assert c.client_port < ODD


def test_kafka_mid_stream_same_result_whatever_workers_and_whatever_came_before(tmp_path: Path) -> None:
    """Detection state belongs to one capture: other captures first, or two workers, change nothing."""
    from wiredump.cli.entry import main

    cap = capture("kafka", "kafka-python-basic")
    kept = cap.recs[int(len(cap.recs) * 0.3) :]
    var = V.write(cap, ports(kept, lambda p: ODD if p == KAFKA else low(p)), tmp_path / "mid.pcap")
    tank = capture("tank", "t01-basic")
    other = V.write(tank, ports(tank.recs, lambda p: ODD if p == TANK else p), tmp_path / "tank.pcap")

    def rows(paths: list[Path]) -> list[tuple]:
        return [
            (ev.obj.stream, ev.obj.role, ev.obj.packet, ev.obj.type, ev.obj.protocol, ev.obj.correlation_id)
            for ev in dissect([str(p) for p in paths], Options())
            if ev.kind == "frame" and ev.capture == str(var)
        ]

    alone = rows([var])
    assert alone and rows([other, var]) == alone  # port ODD was TANK's in the capture before: no matter

    for workers in (1, 2):
        with pytest.raises(SystemExit) as e:
            main(["export", str(var), "-o", str(tmp_path / f"w{workers}"), "--workers", str(workers)])
        assert e.value.code == 0
    for table in ("frames", "connections", "exchanges", "anomalies"):
        a = pq.read_table(tmp_path / "w1" / f"{table}.parquet")
        b = pq.read_table(tmp_path / "w2" / f"{table}.parquet")
        assert a.num_rows == b.num_rows, table
        if table in ("frames", "connections"):
            assert a.equals(b), table
    assert pq.read_table(tmp_path / "w2" / "frames.parquet").num_rows == len(alone)


@pytest.mark.parametrize(
    ("proto", "name", "port", "cut"),
    [
        # Packet 78 falls inside the consumer connection: what is left starts with the broker's
        # MESSAGE/SUCCESS frames on the client port's side; Pulsar frames look the same either way,
        # only their commands say who sends them.
        ("pulsar", "s04-consumer", 6650, 78),
        ("pulsar", "s01-producer-nobatch", 6650, 85),
        ("pravega", "p02-batching-multi-segment", 12345, 48),
        ("pravega", "p06-seal-and-errors", 12345, 31),
    ],
)
def test_symmetric_framing_mid_stream_roles_from_the_commands(
    tmp_path: Path, proto: str, name: str, port: int, cut: int
) -> None:
    """Pulsar and Pravega mid-stream on ODD with lower client ports: every frame after the cut, each
    on the side that sent it (independent decodes: X.summary.json frames, X.frames.tsv)."""
    cap = capture(proto, name)
    var = V.write(cap, ports(cap.recs[cut:], lambda p: ODD if p == port else low(p)), tmp_path / "mid.pcap")
    frames, _, conns = decode(var)
    if proto == "pulsar":
        import json

        ref = json.loads((CAPTURES / proto / f"{name}.summary.json").read_text())["frames"]
        rows = [
            ("client" if f["dir"] == "c2s" else "server", f["first_packet"], f["last_packet"], f["type"])
            for f in ref
        ]
    else:
        ref = tsv_rows(CAPTURES / proto / f"{name}.frames.tsv")
        rows = [(role(r["dir"]), int(r["first_frame"]), int(r["last_frame"]), r["type"]) for r in ref]
    want = sorted((r, first - cut, last - cut, t) for r, first, last, t in rows if first > cut)
    assert want
    assert sorted((f.role, f.first_packet, f.packet, f.type) for f in frames) == want
    talking = [c for c in conns if c.bytes_client or c.bytes_server]
    assert {(c.protocol, c.server_port) for c in talking} == {(proto, ODD)}


# -- a port detected on one connection is that protocol's on the others -------------------------------
def lone_request(name: str, stream_first: int) -> tuple[list[V.Rec], dict[str, str]]:
    """The handshake and first request of the connection whose SYN is packet `stream_first`, and its TSV row."""
    cap = capture("kafka", name)
    conn = cap.recs[stream_first - 1].tcp().conn  # type: ignore[union-attr]
    mine = [r for r in cap.recs if (t := r.tcp()) is not None and t.conn == conn]
    first = next(r for r in mine if r.tcp().payload)  # type: ignore[union-attr]
    recs = [r for r in mine if r.orig <= first.orig]
    row = next(
        r for r in tsv_rows(CAPTURES / "kafka" / f"{name}.pdus.tsv") if int(r["first_frame"]) == first.orig
    )
    return recs, row


def whole(name: str, stream_first: int) -> list[V.Rec]:
    cap = capture("kafka", name)
    conn = cap.recs[stream_first - 1].tcp().conn  # type: ignore[union-attr]
    return [r for r in cap.recs if (t := r.tcp()) is not None and t.conn == conn]


@pytest.mark.parametrize("taught", ["before", "after"])
def test_a_port_detected_on_one_connection_decides_an_ambiguous_one(tmp_path: Path, taught: str) -> None:
    """kafka-python-basic: stream 0 opens at packet 1, stream 2 at packet 24 (each an ApiVersions
    exchange, then more). A connection reduced to its handshake and one request, with no answer,
    is too little to call Kafka on its own; beside a connection on the same port that is
    clearly Kafka, it is Kafka, whether that connection came before it or after."""
    cap = capture("kafka", "kafka-python-basic")
    lone_at, full_at = (24, 1) if taught == "before" else (1, 24)
    lone, row = lone_request("kafka-python-basic", lone_at)
    moved = lambda recs: ports(recs, lambda p: ODD if p == KAFKA else p)  # noqa: E731

    alone = V.write(cap, moved(lone), tmp_path / "alone.pcap")
    frames, anomalies, conns = decode(alone)
    assert frames == [] and [c.protocol for c in conns] == [None]
    assert [a.kind for a in anomalies] == ["undecoded"]  # something partly matched: said, not guessed

    recs = sorted(lone + whole("kafka-python-basic", full_at), key=lambda r: r.orig)
    both = V.write(cap, moved(recs), tmp_path / "both.pcap")
    frames, anomalies, conns = decode(both)
    packet = next(i for i, r in enumerate(recs, 1) if r.orig == int(row["first_frame"]))
    mine = [f for f in frames if f.first_packet == packet]
    assert [(f.protocol, f.role, f.type, f.version, f.correlation_id, f.length) for f in mine] == [
        (
            "kafka",
            "client",
            row["api_name"],
            int(row["api_version"]),
            int(row["correlation_id"]),
            int(row["length"]) + 4,
        )
    ]
    assert {c.protocol for c in conns} == {"kafka"}
    assert "undecoded" not in {a.kind for a in anomalies}
    # Frames still leave in packet order although the lone request waited for its port.
    assert [f.packet for f in frames] == sorted(f.packet for f in frames)


# -- the scores themselves ----------------------------------------------------------------------------
OWN_PORTS = {"kafka": KAFKA, "pulsar": 6650, "pravega": 12345, "tank": TANK}


@pytest.mark.parametrize("proto", sorted(OWN_PORTS))
def test_each_protocol_is_recognised_off_its_port(proto: str, tmp_path: Path) -> None:
    """Every connection of every real capture that carried data both ways, its server port moved
    off every known port: detection by the first bytes gives the protocol the capture was recorded
    for (its folder), never another one, never none."""
    paths = sorted((CAPTURES / proto).glob("*.pcap"))
    moved_to = 2000 + OWN_PORTS[proto] % 1000
    checked = 0
    for path in paths:
        try:
            cap = V.read(path)
        except ValueError:
            continue  # not Ethernet (go-sniffer-kafka is Linux cooked)
        var = V.write(
            cap, ports(cap.recs, lambda p: moved_to if p == OWN_PORTS[proto] else p), tmp_path / path.name
        )
        _, _, conns = decode(var)
        both = [c for c in conns if c.bytes_client and c.bytes_server]
        assert both, path.name
        assert {c.protocol for c in both} == {proto}, (path.name, [(c.stream, c.protocol) for c in both])
        checked += 1
    assert checked >= len(paths) - 1


# -- noise is undecoded, never a guess ------------------------------------------------------------------
def noise(recs: list[V.Rec], seed: int, head: Callable[[int], bytes] | None = None) -> list[V.Rec]:
    """Every payload replaced by seeded random bytes of the same length (same sequence numbers);
    with `head`, client payloads start with head(len) instead."""
    rng = random.Random(seed)
    out = []
    for r in recs:
        t = r.tcp()
        if t is None or not t.payload:
            out.append(r)
            continue
        body = bytes(rng.randrange(256) for _ in range(len(t.payload)))
        if head is not None and t.dst[1] == ODD:
            h = head(len(body))
            body = (h + body[len(h) :])[: len(body)]
        out.append(V.rebuild(r, t.seq, body))
    return out


def kafka_header(n: int) -> bytes:
    """A Kafka request header that passes a header-only check: size = the segment's length − 4,
    Metadata v1 (key 3), correlation id 7, a text client id; what follows is noise."""
    return struct.pack(">ihhih", n - 4, 3, 1, 7, 6) + b"client"


@pytest.mark.parametrize("fraction", [0.0, 0.4])
@pytest.mark.parametrize("head", [None, kafka_header], ids=["noise", "kafka-header-then-noise"])
def test_noise_on_an_unknown_port_is_undecoded(
    tmp_path: Path, fraction: float, head: Callable[[int], bytes] | None
) -> None:
    """No frame at all: the connections are listed without a protocol. A plausible Kafka header on
    noise used to be enough (malformed "Metadata" frames); a frame must decode whole now."""
    cap = capture("kafka", "kafka-python-basic")
    kept = cap.recs[int(len(cap.recs) * fraction) :]
    recs = noise(ports(kept, lambda p: ODD if p == KAFKA else p), seed=14, head=head)
    var = V.write(cap, recs, tmp_path / "noise.pcap")
    frames, anomalies, conns = decode(var)
    assert frames == []
    assert conns and {c.protocol for c in conns} == {None}
    assert sum(c.bytes_client + c.bytes_server for c in conns) > 1000
    assert not {"malformed", "resync", "unknown_type"} & {a.kind for a in anomalies}


# -- mid-stream inside a frame larger than the detection window ----------------------------------------
PRAVEGA = 12345


def payload_bytes(recs: list[V.Rec], src_port: int, dst_port: int) -> int:
    """TCP payload bytes sent from `src_port` to `dst_port` in the records (counted here, not by wiredump)."""
    return sum(
        len(t.payload)
        for r in recs
        if (t := r.tcp()) is not None and (t.src[1], t.dst[1]) == (src_port, dst_port)
    )


def resegment(recs: list[V.Rec], mss: int) -> list[V.Rec]:
    """Every payload longer than `mss` sent as segments of `mss` bytes (a real network's, not loopback's)."""
    out = []
    for r in recs:
        t = r.tcp()
        if t is None or len(t.payload) <= mss:
            out.append(r)
            continue
        for off in range(0, len(t.payload), mss):
            out.append(V.rebuild(r, (t.seq + off) & 0xFFFFFFFF, t.payload[off : off + mss]))
    return out


@pytest.mark.parametrize(("cut", "mss"), [(20, None), (30, None), (60, None), (60, 1448)])
def test_mid_stream_inside_a_frame_larger_than_the_window_is_found_on_a_later_window(
    tmp_path: Path, cut: int, mss: int | None
) -> None:
    """p08 (Pravega appends of 1 and 3 MiB) on ODD, cut inside one of those appends, with the client's port
    below the server's (with `mss`, re-segmented: a window then ends by its count of segments): the
    first 64 KiB window of the connection holds no frame start, and no other connection teaches ODD
    before it closes. Later windows are scored until the broker's replies are
    recognised: from each direction's first frame on, every frame is the independent decode's
    (p08-large-events.frames.tsv: packets, type, request id, length), none is invented, and every byte
    of the connection not in a frame is reported as skipped (undecoded or resync), counted from the
    variant's own TCP payloads."""
    cap = capture("pravega", "p08-large-events")
    kept = cap.recs[cut:]
    if mss is not None:
        kept = resegment(kept, mss)
    recs = ports(kept, lambda p: ODD if p == PRAVEGA else low(p))
    var = V.write(cap, recs, tmp_path / "mid.pcap")
    orig = {i + 1: r.orig for i, r in enumerate(kept)}  # variant packet → packet of the original capture
    frames, anomalies, conns = decode(var)

    rows = tsv_rows(CAPTURES / "pravega" / "p08-large-events.frames.tsv")
    want = {
        (role(r["dir"]), int(r["first_frame"]), int(r["last_frame"]), r["type"])
        + (int(r["request_id"]) if r["request_id"] else None, int(r["length"]) + 8)
        for r in rows
        if int(r["first_frame"]) > cut
    }
    got = [(f.role, orig[f.first_packet], orig[f.packet], f.type, f.correlation_id, f.length) for f in frames]
    assert len(got) == len(set(got)) and set(got) <= want  # nothing invented, nothing twice
    first_stream = {int(r["first_frame"]): int(r["stream"]) for r in rows}
    by_dir: dict[tuple[int, str], list[tuple]] = {}
    for g in got:
        by_dir.setdefault((first_stream[g[1]], g[0]), []).append(g)
    # The cut connection (tsv stream 0) is decoded: its broker's replies at least.
    assert by_dir.get((0, "server"))
    for (stream, side), found in by_dir.items():
        start = min(g[1] for g in found)
        rest = {w for w in want if first_stream[w[1]] == stream and w[0] == side and w[1] >= start}
        assert set(found) == rest, (stream, side)
    # The later connections are whole.
    assert {w for w in want if first_stream[w[1]] > 0} <= set(got)

    cut_conn = [c for c in conns if c.stream == 0]
    assert len(cut_conn) == 1 and (cut_conn[0].protocol, cut_conn[0].server_port) == ("pravega", ODD)
    sent = {
        "client": payload_bytes(recs, cut_conn[0].client_port, ODD),
        "server": payload_bytes(recs, ODD, cut_conn[0].client_port),
    }
    framed = {side: sum(g[5] for g in by_dir.get((0, side), [])) for side in sent}
    skipped = {"client": 0, "server": 0}
    for a in anomalies:
        if a.stream != 0:
            continue
        if a.kind == "undecoded":
            m = re.search(r"(\d+) client and (\d+) server bytes", a.detail)
            assert m, a.detail
            skipped["client"] += int(m[1])
            skipped["server"] += int(m[2])
        elif a.kind == "resync":
            m = re.search(r"skipped (\d+) (client|server) bytes", a.detail)
            assert m, a.detail
            skipped[m[2]] += int(m[1])
    assert skipped["client"] > 0
    for side in sent:
        assert framed[side] + skipped[side] == sent[side], side


def test_large_mid_stream_noise_on_an_unknown_port_stays_undecoded_and_bounded(tmp_path: Path) -> None:
    """The later windows cost no invented frame: p08's payloads replaced by noise, cut mid-stream on ODD,
    give no frame, no protocol, and no resync or malformed line (at most an undecoded one)."""
    cap = capture("pravega", "p08-large-events")
    recs = noise(ports(cap.recs[20:], lambda p: ODD if p == PRAVEGA else low(p)), seed=14)
    var = V.write(cap, recs, tmp_path / "noise.pcap")
    frames, anomalies, conns = decode(var)
    assert frames == []
    assert conns and {c.protocol for c in conns} == {None}
    assert sum(c.bytes_client + c.bytes_server for c in conns) > 4_000_000
    assert not {"malformed", "resync", "unknown_type"} & {a.kind for a in anomalies}
