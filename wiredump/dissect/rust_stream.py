"""The Rust engine's capture reading and TCP reassembly, feeding the Python pipeline.

`Options.engine == "rust"` (CLI `--engine rust`, or WIREDUMP_ENGINE=rust) replaces the
pipeline's CaptureReader + parse_tcp + TcpReassembler with `wiredump._engine.StreamReader`,
which reads the capture and reassembles its connections natively and hands over the listener
calls the Python reassembler would have made, in the same order, in batches of event tuples
(the codes are documented in engine/src/python.rs). Everything after reassembly — protocol
choice, framing, decoding, correlation, release order — is the Python pipeline's own code.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from wiredump.dissect.capture import CaptureError
from wiredump.dissect.model import Anomaly

if TYPE_CHECKING:
    from wiredump.dissect.pipeline import Event, Options

__all__ = ["ENGINES", "RustCapture", "RustConnection", "dissect_native"]

ENGINES = ("native", "python", "rust")
"""The values `Options.engine`, `--engine` and WIREDUMP_ENGINE accept."""

RECORD, TRUNCATED, OPEN, DATA, GAP, CLOSE, ANOMALY, END, BAD_TIMESTAMP, TOUCH, SAW_SYN, RELEASE = range(12)
_OTHER = {"client": "server", "server": "client"}


class _Half:
    """One direction's byte count, where `pipeline._summary` reads it (`conn.c2s.bytes`)."""

    __slots__ = ("bytes",)

    def __init__(self) -> None:
        self.bytes = 0


class RustConnection:
    """What the pipeline's listener keeps of a connection reassembled in Rust.

    The listener reads the endpoints, `saw_syn` and (once closed) `last_ts_us`, and keeps its
    per-connection state in `user`; the counters (packets, bytes, gaps…) stay in Rust until the
    connection summaries are read.
    """

    __slots__ = ("stream", "client", "client_port", "server", "server_port", "first_ts_us")
    __slots__ += ("user", "protocol", "frames", "saw_syn", "last_ts_us", "released", "last_packet")
    __slots__ += ("packets", "c2s", "s2c", "gaps", "retransmissions", "state")

    def __init__(self, stream: int, client: str, client_port: int, server: str, server_port: int, first: int):
        self.stream = stream
        self.client = client
        self.client_port = client_port
        self.server = server
        self.server_port = server_port
        self.first_ts_us = first
        self.user: Any = None
        self.protocol: str | None = None
        self.frames = 0
        self.saw_syn = False
        self.last_ts_us = first
        self.released = False
        self.last_packet = 0
        # The row's counters, filled in from Rust when the connection is released.
        self.packets = self.gaps = self.retransmissions = 0
        self.c2s = _Half()
        self.s2c = _Half()
        self.state = "open"

    def swap_roles(self) -> None:
        """As `tcp.Connection.swap_roles`: the byte counts turn too (they are set once released,
        and a parked connection may be swapped after that, when its port is learned)."""
        self.client, self.client_port, self.server, self.server_port = (
            self.server,
            self.server_port,
            self.client,
            self.client_port,
        )
        self.c2s, self.s2c = self.s2c, self.c2s


class _Roles:
    """Stands in for the pipeline's `TcpReassembler` where detection swaps a connection's roles.

    The swap reaches the Rust reassembler for the events it makes from then on; the events of the
    batch at hand were made before it, so their roles are turned here (`flipped`).
    """

    def __init__(self, reader: RustCapture) -> None:
        self.reader = reader
        self.flipped: set[int] = set()

    def swap_roles(self, conn: RustConnection) -> None:
        conn.swap_roles()
        self.reader._reader.swap_roles(conn.stream)
        self.flipped ^= {conn.stream}


class RustCapture:
    """An opened capture (header checked, CaptureError raised at once) read by the Rust engine.

    Same face as CaptureReader where the commands look (`name`, `truncated`,
    `skipped_unknown_link`, `bytes_read`, `compression`, `format`); `native` tells the pipeline
    to take the stream events from it instead of iterating records.
    """

    native = True

    def __init__(self, path: str) -> None:
        from wiredump import _engine

        self.path = path
        source: Any = path
        if path == "-":
            # Read through Python's stdin object, which a caller may have replaced.
            source = getattr(sys.stdin, "buffer", None)
            if source is None:
                raise CaptureError("stdin: no standard input to read a capture from")
        self._source = source
        self._engine = _engine
        # Opened with no server ports; `configure` sets them before the first batch.
        self._reader = _engine.StreamReader(source, [], 0, name="stdin" if path == "-" else None)
        self.name: str = self._reader.name
        self.on_record: Any = None
        """Optional callable(number, ts_us) called for every record (the CLI's packet times)."""

    def configure(
        self,
        server_ports: frozenset[int],
        max_out_of_order: int,
        retention: tuple[int, int, int],
        max_interfaces: int,
    ) -> None:
        """Server ports, the out-of-order bound, (max_connections, half_open_us, closed_linger_us)
        and the pcapng interfaces kept per section."""
        self._reader.configure(sorted(server_ports), max_out_of_order, *retention, max_interfaces)

    def __iter__(self) -> Iterator[list[tuple]]:
        return iter(self._reader)

    @property
    def truncated(self) -> str | None:
        return self._reader.truncated

    @property
    def skipped_unknown_link(self) -> int:
        return self._reader.skipped_unknown_link

    @property
    def half_open_released(self) -> int:
        return self._reader.half_open_released

    @property
    def evicted(self) -> int:
        return self._reader.evicted

    @property
    def interfaces_not_kept(self) -> int:
        return self._reader.interfaces_not_kept

    @property
    def bytes_read(self) -> int:
        return self._reader.bytes_read

    @property
    def compression(self) -> str | None:
        return self._reader.compression

    @property
    def format(self) -> str:
        return self._reader.format

    def close(self) -> None:
        """Nothing to release before iteration ends (the file closes with the reader)."""


def _flip(ev: tuple) -> tuple:
    """An event made before its connection's roles were swapped, as it would have been made after."""
    if ev[0] == ANOMALY:
        kind, detail = ev[1], ev[2]
        words = detail.split(" ")
        for i, w in enumerate(words):
            if w in _OTHER:
                words[i] = _OTHER[w]
                break
        return (ev[0], kind, " ".join(words), *ev[3:])
    return (ev[0], ev[1], _OTHER[ev[2]], *ev[3:])


def dissect_native(reader: RustCapture, options: Options) -> Iterator[Event]:
    """`pipeline.dissect_capture` with capture reading and reassembly done in Rust.

    The listener calls, release points and closing events follow the Python loop exactly:
    after each record the ready and held events are released; after the last one the
    connections are flushed, the truncation (if any) is reported and everything is released.
    """
    from wiredump.dissect.pipeline import ANOMALY as ANOMALY_EV
    from wiredump.dissect.pipeline import Event, _Capture, finish_capture

    cap = _Capture(reader.name, options)
    limits = cap.limits
    reader.configure(
        cap.server_ports,
        limits.max_out_of_order,
        (limits.max_connections, limits.half_open_us, limits.closed_linger_us),
        limits.max_interfaces,
    )
    roles = _Roles(reader)
    cap.tcp = roles  # type: ignore[assignment]
    flipped = roles.flipped
    conns: dict[int, RustConnection] = {}
    on_data, on_gap, on_close, on_anomaly = cap.on_data, cap.on_gap, cap.on_close, cap.on_anomaly
    owns_none = cap.owns(None)
    on_record = reader.on_record
    packets = 0
    started = False
    for batch in reader:
        flipped.clear()
        for ev in batch:
            code = ev[0]
            if flipped and code in (DATA, GAP, ANOMALY) and ev[4 if code == ANOMALY else 1] in flipped:
                ev = _flip(ev)
            if code == DATA:
                on_data(conns[ev[1]], ev[2], ev[3], ev[4], ev[5])
            elif code == RECORD:
                if started and (cap.ready or cap.held or cap.rows_out):
                    yield from cap.release()
                started = True
                packets = ev[1]
                cap.now_us = ev[2]
                if on_record is not None:
                    on_record(packets, ev[2])
            elif code == OPEN:
                conns[ev[1]] = RustConnection(*ev[1:])
            elif code == ANOMALY:
                on_anomaly(Anomaly(ev[1], ev[2], packet=ev[3], stream=ev[4]))
            elif code == GAP:
                on_gap(conns[ev[1]], ev[2], ev[3], ev[4], ev[5])
            elif code == CLOSE:
                c = conns[ev[1]]
                c.last_ts_us = ev[2]
                on_close(c)
            elif code == TOUCH:
                conns[ev[1]].last_ts_us = ev[2]
            elif code == RELEASE:
                c = conns[ev[1]]
                (c.packets, c.c2s.bytes, c.s2c.bytes, c.gaps, c.retransmissions, c.first_ts_us, last) = ev[2]
                if ev[1] in flipped:  # counted before the roles swapped in this batch
                    c.c2s.bytes, c.s2c.bytes = c.s2c.bytes, c.c2s.bytes
                c.last_ts_us, c.state, c.last_packet, c.released = last, ev[3], ev[4], True
                cap.on_release(c)
                del conns[ev[1]]
            elif code == SAW_SYN:
                conns[ev[1]].saw_syn = True
            elif code == BAD_TIMESTAMP:
                if owns_none:
                    # The reader gave the packet the capture's last good time; say so on the packet.
                    cap.ready.append(
                        Event(
                            ANOMALY_EV, Anomaly("bad_timestamp", ev[2], packet=ev[1], stream=None), cap.name
                        )
                    )
            elif code == TRUNCATED:
                if owns_none:
                    cap.ready.append(
                        Event(
                            ANOMALY_EV,
                            Anomaly(
                                "truncated_packet",
                                f"packet cut by the snap length: {ev[2]} of {ev[3]} bytes captured",
                                packet=ev[1],
                                stream=None,
                            ),
                            cap.name,
                        )
                    )
            elif code == END:
                if started and (cap.ready or cap.held or cap.rows_out):
                    yield from cap.release()
                started = False
    yield from finish_capture(
        cap,
        packets,
        reader.truncated,
        reader.skipped_unknown_link,
        reader.half_open_released,
        reader.evicted,
        reader.interfaces_not_kept,
    )
