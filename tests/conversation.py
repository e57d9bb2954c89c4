"""Crafted conversations dissected by the engine: the bytes each side sends, as one TCP connection.

The crafted-frame tests build frames by hand from the protocols' references and check what the
engine makes of them. Here those bytes become the packets of one loopback connection (handshake
first, so roles come from the SYN; one packet per send, numbered 1, 2, … (the handshake is packet 0), 1 ms apart, cut
into segments of at most `SEGMENT` bytes) handed to the engine as records (`Dissector.from_records`, no file), and the
events come back sorted by kind.

`Session` keeps the sends of one connection: each `decode(data, role)` adds a send and dissects
the conversation so far, returning the frames the new send completed (a request's pairing, which
its response completes, is then on the frames of the later call).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from wiredump.dissect.capture import Record
from wiredump.dissect.limits import Limits
from wiredump.dissect.model import Anomaly, ConnectionSummary, Exchange, Frame
from wiredump.dissect.pipeline import Options, dissect_capture

CLIENT_PORT = 40000
HOST = "127.0.0.1"
T0 = 1_700_000_000_000_000
SEGMENT = 60_000
"""Payload bytes per packet at most (an IPv4 packet holds 65,535 bytes in all)."""
ETHERNET = 1
FLAGS = {"S": 0x02, "SA": 0x12, "A": 0x10, "PA": 0x18}
_ETHER = bytes(6) + bytes(5) + b"\x01" + b"\x08\x00"
_LOOPBACK = bytes([127, 0, 0, 1])


def _packet(ports: tuple[int, int], seq: int, ack: int, flags: int, payload: bytes) -> bytes:
    """Ethernet + IPv4 + TCP between 127.0.0.1 ports, by hand (layouts: RFC 791, RFC 793); the
    checksums are left zero, as offloading leaves them in real captures."""
    tcp = struct.pack(
        ">HHIIBBHHH", ports[0], ports[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0
    )
    ip = struct.pack(">BBHHHBBH", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0x4000, 64, 6, 0)
    return _ETHER + ip + _LOOPBACK + _LOOPBACK + tcp + payload


@dataclass
class Out:
    """What the engine made of one conversation, by kind, in the order it came."""

    frames: list[Frame] = field(default_factory=list)
    anomalies: list[Anomaly] = field(default_factory=list)
    """The anomalies that belong to no frame (gaps, resyncs…); a frame's are in its `anomalies`."""
    exchanges: list[Exchange] = field(default_factory=list)
    connections: list[ConnectionSummary] = field(default_factory=list)

    def of(self, type_: str, kind: str | None = None) -> list[Frame]:
        """The frames of type `type_` (and `kind`: request, response… when given)."""
        return [f for f in self.frames if f.type == type_ and (kind is None or f.kind == kind)]

    def one(self, type_: str) -> Frame:
        """The one frame of type `type_`."""
        found = self.of(type_)
        assert len(found) == 1, [f.type for f in self.frames]
        return found[0]

    def all_anomalies(self) -> list[Anomaly]:
        """Every anomaly: those of no frame, then those of the frames."""
        return self.anomalies + [a for f in self.frames for a in f.anomalies]

    def types(self) -> list[str]:
        return [f.type for f in self.frames]


class _Packets:
    """The records of one connection, built send by send."""

    def __init__(self, port: int, opened: bool = True, step_us: int = 1000) -> None:
        self.port = port
        self.step_us = step_us
        self.records: list[Record] = []
        self.sent = 0
        self.seq = {"client": 1000, "server": 5000}
        if opened:
            self._add("client", "S")
            self.seq["client"] += 1
            self._add("server", "SA")
            self.seq["server"] += 1
            self._add("client", "A")

    def _add(self, role: str, flags: str, payload: bytes = b"") -> None:
        other = "server" if role == "client" else "client"
        ports = (CLIENT_PORT, self.port) if role == "client" else (self.port, CLIENT_PORT)
        data = _packet(ports, self.seq[role], self.seq[other], FLAGS[flags], payload)
        # The handshake is packet 0, just before T0, so that the sends are packets 1, 2, … as the
        # tests count them; the sends are `step_us` apart from T0 on (unless `send` says when).
        if flags != "PA":
            n, ts = 0, T0 - 10 + len(self.records)
        else:
            n = self.sent + 1
            ts = max(T0 + self.sent * self.step_us, self.records[-1].ts_us if self.records else T0)
        self.records.append(Record(n, ts, ETHERNET, data, len(data)))
        if flags == "PA":
            self.sent += 1
        self.seq[role] += len(payload)

    def send(self, role: str, data: bytes, ts_us: int | None = None) -> int:
        """Packets carrying `data` from `role` (at `ts_us` after T0 when given); the last one's number."""
        for i in range(0, max(len(data), 1), SEGMENT):
            self._add(role, "PA", data[i : i + SEGMENT])
            if ts_us is not None:
                r = self.records[-1]
                r.ts_us = T0 + ts_us
        return self.records[-1].number


def options(limits: Limits | None = None, **kw: Any) -> Options:
    return Options(limits=limits, **kw)


def dissect_sends(
    sends: Iterable[tuple[str, bytes]],
    port: int,
    limits: Limits | None = None,
    opened: bool = True,
    **kw: Any,
) -> Out:
    """The events of one connection on `port` whose sides send `sends` ((role, bytes)) in order."""
    packets = _Packets(port, opened)
    for role, data in sends:
        packets.send(role, data)
    return dissect_records(packets.records, limits, **kw)


def dissect_records(records: Sequence[Record], limits: Limits | None = None, **kw: Any) -> Out:
    from wiredump._engine import Dissector

    opts = options(limits, **kw)
    out = Out()
    for ev in dissect_capture(Dissector.from_records("crafted", iter(records), opts, None), opts):
        if ev.kind == "frame":
            out.frames.append(ev.obj)
        elif ev.kind == "anomaly" and ev.frame is None:
            out.anomalies.append(ev.obj)
        elif ev.kind == "exchange":
            out.exchanges.append(ev.obj)
        elif ev.kind == "connection":
            out.connections.append(ev.obj)
    return out


class Stream:
    """A connection fed send by send (`feed`), dissected once at `finish`: the sends go out as packets
    in the order fed; `packet` is not kept (each send is the next packet, cut into more when it is
    longer than `SEGMENT`), `ts_us` is the send's time after the connection's start."""

    def __init__(self, port: int, limits: Limits | None = None, **kw: Any) -> None:
        self.packets = _Packets(port)
        self.limits = limits
        self.kw = kw
        self.out = Out()

    def feed(self, role: str, data: bytes, packet: int = 0, ts_us: int | None = None) -> int:
        """Send `data` from `role`; the number of the packet that carries its last byte."""
        return self.packets.send(role, bytes(data), ts_us)

    def gap(self, role: str, size: int, packet: int = 0, ts_us: int | None = None) -> None:
        """`size` bytes of `role` that the capture lost: later sends come after a hole."""
        self.packets.seq[role] += size

    def finish(self) -> Out:
        self.out = dissect_records(self.packets.records, self.limits, **self.kw)
        return self.out


class Session:
    """One connection's sends, dissected anew at each `decode` (see the module's doc)."""

    def __init__(self, port: int, limits: Limits | None = None, **kw: Any) -> None:
        self.port = port
        self.limits = limits
        self.kw = kw
        self.sends: list[tuple[str, bytes]] = []
        self.seen = 0
        self.out = Out()

    def decode(self, data: bytes, role: str = "client") -> list[Frame]:
        """The frames that `data`, sent by `role` after everything before, completes."""
        self.sends.append((role, bytes(data)))
        self.out = dissect_sends(self.sends, self.port, self.limits, **self.kw)
        new = self.out.frames[self.seen :]
        self.seen = len(self.out.frames)
        return new

    def one(self, data: bytes, role: str = "client") -> Frame:
        """The one frame `data` completes."""
        frames = self.decode(data, role)
        assert len(frames) == 1, frames
        return frames[0]

    def frames(self) -> list[Frame]:
        """Every frame of the conversation so far, as the last `decode` left them (paired)."""
        return self.out.frames
