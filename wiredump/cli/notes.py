"""What the terminal says about a capture as a whole, once, at its end.

Two facts would otherwise be lost or drown the output:

* a capture with no broker traffic at all prints nothing — the user cannot tell a
  capture of something else (or of a broker on a port nobody told us about) from a
  bug; one line says how many TCP connections there were, on which server ports, and
  how to decode a port as a protocol;
* a capture whose records are cut by the snap length (or claim a longer original
  length than the datagram they hold) gets a `truncated_packet` anomaly on every such
  packet: thousands of identical lines. The terminal prints one summary line per
  capture instead (`-A` still shows each); the anomalies table keeps every row.

The protocol names come from the protocol registry, so a new protocol is named here
without this module knowing it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from wiredump.cli.entry import EXIT_INPUT
from wiredump.cli.escape import escape
from wiredump.cli.words import plural
from wiredump.dissect.model import Anomaly
from wiredump.dissect.pipeline import ANOMALY, CAPTURE_END, CONNECTION, FRAME, Event


def truncation(name: str, why: str) -> str:
    """The note for a capture whose file ends inside a record (`why`: the reader's words), as
    every command says it (through `report`)."""
    return f"{name}: capture is truncated: {why}"


def report(said: list[str], truncated: list[str]) -> int:
    """Writes the end-of-capture notes and truncation messages to stderr; the exit code
    (`EXIT_INPUT` when a capture was truncated, as for any input the user must know is
    incomplete)."""
    for t in said + truncated:
        print(f"wiredump: {t}", file=sys.stderr)
    return EXIT_INPUT if truncated else 0


SNAP = "truncated_packet"
"""The anomaly kind that is summarised per capture instead of shown per packet."""

MAX_PORTS = 8


def protocol_titles() -> str:
    """`Kafka/Pulsar/Pravega/TANK`: every registered protocol as people write it."""
    from wiredump.dissect.protocols import all_protocols

    return "/".join(spec.title or spec.name.capitalize() for spec in all_protocols().values())


def no_frames(connections: int, ports: dict[int, int], packets: int) -> str:
    """`no Kafka/… frames in 2 TCP connections (ports 80, 443); try -d PORT=PROTO`.

    `ports` counts connections per server port; the busiest ports are named first.
    """
    if not connections:
        return f"no {protocol_titles()} frames: no TCP connection in {plural(packets, 'packet')}"
    order = sorted(ports, key=lambda p: (-ports[p], p))
    shown = ", ".join(str(p) for p in order[:MAX_PORTS]) + (", …" if len(order) > MAX_PORTS else "")
    return (
        f"no {protocol_titles()} frames in {plural(connections, 'TCP connection')} "
        f"({'port' if len(order) == 1 else 'ports'} {shown}); try -d PORT=PROTO"
    )


@dataclass
class CaptureNotes:
    """Counts, per capture, what the end-of-capture lines need; `end` returns those lines."""

    summarise_snap: bool = True
    frames: int = 0
    connections: int = 0
    ports: dict[int, int] = field(default_factory=dict)  # server port -> connections
    snap: int = 0
    snap_first: Anomaly | None = None
    snap_last: int = 0

    def feed(self, ev: Event) -> bool:
        """Take note of `ev`; True when it is a line the notes replace (a snap-length anomaly)."""
        kind = ev.kind
        if kind == FRAME:
            self.frames += 1
        elif kind == ANOMALY:
            a = ev.obj
            if a.kind == SNAP and ev.frame is None:
                self.snap += 1
                if self.snap_first is None:
                    self.snap_first = a
                self.snap_last = a.packet
                return self.summarise_snap
        elif kind == CONNECTION:
            c = ev.obj
            self.connections += 1
            self.ports[c.server_port] = self.ports.get(c.server_port, 0) + 1
        return False

    def end(self, ev: Event, name: str | None = None) -> list[str]:
        """The lines for the capture that `ev` (its CAPTURE_END) closes; the counts start again.

        `name` prefixes the lines (several captures in one run).
        """
        assert ev.kind == CAPTURE_END
        lines = []
        where = f"{escape(name)}: " if name else ""
        if self.frames == 0:
            lines.append(where + no_frames(self.connections, self.ports, ev.obj.packets))
        if self.snap and self.summarise_snap:
            first = self.snap_first
            assert first is not None
            span = f"#{first.packet}" if self.snap == 1 else f"#{first.packet} to #{self.snap_last}"
            lines.append(
                f"{where}{plural(self.snap, 'packet')} ({span}) cut by the snap length or claiming a longer "
                f"original length than captured, e.g. #{first.packet}: {escape(first.detail)} "
                f"(each is a {SNAP} row of the anomalies table; -A shows each)"
            )
        self.frames = self.connections = self.snap = self.snap_last = 0
        self.ports = {}
        self.snap_first = None
        return lines
