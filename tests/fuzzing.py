"""Helpers shared by the property-based tests and the long fuzzing script.

Real traffic is the best seed: `seed_streams` pulls the reassembled bytes of each
direction of every connection out of the real captures, and `drive` pushes
(mutated) bytes through a protocol's session exactly as the pipeline does, in
arbitrary chunks, collecting what comes out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from wiredump.dissect.capture import open_capture
from wiredump.dissect.correlation import Correlator
from wiredump.dissect.framing import ConnectionFramer
from wiredump.dissect.limits import Limits
from wiredump.dissect.model import STATUSES, Anomaly, Exchange, Frame
from wiredump.dissect.packet import parse_tcp
from wiredump.dissect.protocols import all_protocols
from wiredump.dissect.protocols.base import ConnContext
from wiredump.dissect.tcp import TcpReassembler


@dataclass
class Collected:
    frames: list[Frame] = field(default_factory=list)
    anomalies: list[Anomaly] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)

    def frame(self, frame: Frame) -> None:
        self.frames.append(frame)

    def anomaly(self, anomaly: Anomaly) -> None:
        self.anomalies.append(anomaly)

    def exchange(self, exchange: Exchange) -> None:
        self.exchanges.append(exchange)


def drive(
    protocol: str,
    chunks: Iterable[tuple[str, bytes]],
    limits: Limits | None = None,
) -> Collected:
    """Feed (role, bytes) chunks to a fresh session of `protocol`; return what it produced."""
    spec = all_protocols()[protocol]
    out = Collected()
    limits = limits or Limits()
    ctx = ConnContext(
        capture="fuzz",
        stream=0,
        client="10.0.0.1",
        client_port=40000,
        server="10.0.0.2",
        server_port=spec.ports[0] if spec.ports else 1,
        correlator=Correlator(0, protocol),
        limits=limits,
    )
    framer = ConnectionFramer(spec, spec.new_session(ctx), ctx, out)
    for packet, (role, data) in enumerate(chunks, start=1):
        framer.feed(role, data, packet, packet * 1000)
    framer.finish()
    for f in out.frames:
        assert f.status in STATUSES, f.status
        assert f.protocol == protocol
    return out


class _StreamGrabber:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.streams: dict[tuple[int, str], bytearray] = {}
        self.order: dict[int, list[tuple[str, bytes]]] = {}

    def on_data(self, conn, role, data, packet, ts_us):  # noqa: ANN001
        buf = self.streams.setdefault((conn.stream, role), bytearray())
        if len(buf) < self.cap:
            buf.extend(data)
            self.order.setdefault(conn.stream, []).append((role, bytes(data[: self.cap])))

    def on_gap(self, *args: object) -> None:
        pass

    def on_close(self, conn: object) -> None:
        pass

    def on_anomaly(self, anomaly: Anomaly) -> None:
        pass


def seed_streams(path: Path, cap: int = 65536) -> list[list[tuple[str, bytes]]]:
    """Per connection: the (role, bytes) chunks in arrival order, each direction capped at `cap` bytes."""
    grab = _StreamGrabber(cap)
    tcp = TcpReassembler(grab, Limits())
    for rec in open_capture(str(path)):
        seg = parse_tcp(rec.linktype, rec.data)
        if seg is not None:
            tcp.segment(seg, rec.number, rec.ts_us)
    tcp.finish()
    return [grab.order[s] for s in sorted(grab.order)]
