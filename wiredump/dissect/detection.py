"""Which protocol a connection speaks, and which side is its client.

In order, for one capture (`Detector` is per capture, never shared: the same capture
gives the same answer whatever was dissected before it and whatever `--workers`):

1. decode-as (`-d PORT=PROTO`) on either port;
2. a protocol's well-known port (`ProtocolSpec.ports`) on either port;
3. a server port that an earlier connection of this capture was detected on;
4. otherwise the connection's first bytes are held (`Held`, bounded) and every protocol
   scores them (`ProtocolSpec.score`): what the client sent and what the server sent,
   and, when the capture did not see the connection open (no SYN, so its roles were
   guessed from the port numbers), the other role assignment too. The best score wins
   if it reaches `MIN_CONFIDENCE` and no other protocol ties with it; it wins at once
   when it reaches `CERTAIN`. A connection below the minimum is undecoded: no frames,
   no protocol in the connections table.

A connection is scored each time the other side speaks (at most EARLY_TRIES times) and
decided at once at CERTAIN; otherwise when its hold is full, when it closes, or after the
run's `hold_us` of capture time. Undecided when it closes but partly matched, it waits
(parked, within HOLD_TOTAL and `hold_us`) for a later connection to teach its port;
undecided while open, it is dropped and decoded from its next bytes on if its port is
taught later. The pipeline replays the held deliveries into the chosen protocol's framer
with their own packets and times, and keeps later frames back meanwhile so that frames
still leave in packet order.

A connection seen mid-stream whose hold fills below the minimum is not given up at once:
the capture may have begun inside a frame larger than HOLD_BYTES, so no frame start is in
its first window. The full direction's bytes are dropped (counted, reported as `undecoded`
once the connection is decided) and its next bytes are scored as a new window, while the
other direction's run keeps growing from its start (a broker's short replies to a large
append); at most MAX_WINDOWS per connection and CAPTURE_WINDOWS per capture, so a large
non-broker connection costs a bounded number of scorings. Left undecoded, a connection some
window of which partly matched a protocol is reported (the best score any window reached).

Detection runs on every connection, also on those another worker decodes, so that what
step 3 remembers is the same in every worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wiredump.dissect import internal
from wiredump.dissect.model import CLIENT, SERVER, Anomaly
from wiredump.dissect.protocols.base import CERTAIN, MIN_CONFIDENCE, ProtocolSpec
from wiredump.dissect.tcp import Connection

HOLD_BYTES = 64 * 1024
"""Bytes of each direction's first run that are scored; reaching it ends the wait."""
HOLD_CHUNKS = 32
"""Deliveries (data or gaps) held per connection before detection decides with what it has."""
HOLD_TOTAL = 32 * 1024 * 1024
"""Bytes held over all undecided connections of a capture; beyond it the connection that
pushed past decides at once (bounded memory whatever the number of connections)."""
EARLY_TRIES = 3
"""Times a connection is scored before its hold ends (each time the other side speaks)."""
MAX_WINDOWS = 128
"""Later windows tried per connection seen mid-stream whose first window scored below the minimum
(a capture begun inside a frame larger than HOLD_BYTES: its first window holds no frame start).
Each window is at most HOLD_BYTES of a direction, so a connection is tried on at most 8 MiB."""
CAPTURE_WINDOWS = 2048
"""Later windows tried over all connections of a capture: a capture full of large non-broker
connections seen mid-stream costs at most this many extra scorings (then they are given up at once)."""


def other(role: str) -> str:
    return SERVER if role == CLIENT else CLIENT


@dataclass(slots=True)
class Held:
    """A connection's first deliveries, kept until detection decides, then replayed as they came."""

    items: list[tuple[str, bytes | int, int, int]] = field(default_factory=list)
    """(role, data or the size of a gap, packet, ts_us) in delivery order."""
    runs: dict[str, bytearray] = field(default_factory=lambda: {CLIENT: bytearray(), SERVER: bytearray()})
    """Each direction's first bytes up to its first gap (at most HOLD_BYTES): what is scored."""
    cut: set[str] = field(default_factory=set)
    """Directions whose scored run ended at a gap."""
    gap_first: bool = False
    """A gap came before some direction's first byte: its run starts inside the stream."""
    size: int = 0
    last_role: str | None = None
    tries: int = 0
    first_packet: int = 0
    first_ts_us: int = 0
    given_up: bool = False
    """No protocol reached the minimum while the connection was open: nothing is held any more,
    and the connection is decoded from its next delivery on only if its port is learned later."""
    dropped: dict[str, int] = field(default_factory=lambda: {CLIENT: 0, SERVER: 0})
    """Bytes of each direction not decoded because no protocol was known for them."""
    windows: int = 0
    """Windows slid past (see `slide`): their bytes are in `dropped`."""
    best_seen: tuple[str, int] | None = None
    """The best score any window slid past reached (for the anomaly of a connection left undecoded)."""

    def add(self, role: str, data: bytes, packet: int, ts_us: int) -> bool:
        """Hold one delivery; True when the other side just spoke (time to score again)."""
        if not self.items and not self.windows:  # the first of all (not of a later window)
            self.first_packet, self.first_ts_us = packet, ts_us
        self.items.append((role, data, packet, ts_us))
        self.size += len(data)
        run = self.runs[role]
        if role not in self.cut and len(run) < HOLD_BYTES:
            run += data[: HOLD_BYTES - len(run)]
        turn = self.last_role is not None and self.last_role != role
        self.last_role = role
        return turn

    def add_gap(self, role: str, size: int, packet: int, ts_us: int) -> None:
        if not self.items and not self.windows:  # the first of all (not of a later window)
            self.first_packet, self.first_ts_us = packet, ts_us
        self.items.append((role, size, packet, ts_us))
        if self.runs[role]:
            self.cut.add(role)
        else:
            self.gap_first = True

    def full(self) -> bool:
        return len(self.items) >= HOLD_CHUNKS or any(len(r) >= HOLD_BYTES for r in self.runs.values())

    def swap(self) -> None:
        """The other side is the client: every held delivery changes role."""
        self.items = [(other(r), d, p, t) for r, d, p, t in self.items]
        self.runs = {CLIENT: self.runs[SERVER], SERVER: self.runs[CLIENT]}
        self.cut = {other(r) for r in self.cut}
        self.last_role = other(self.last_role) if self.last_role else None
        self.dropped = {CLIENT: self.dropped[SERVER], SERVER: self.dropped[CLIENT]}

    def done(self) -> list[str]:
        """Directions whose window is over: their run is full or ended at a gap, or, when the hold
        is full by its count of deliveries (small segments), the direction that made most of them."""
        over = [r for r in (CLIENT, SERVER) if r in self.cut or len(self.runs[r]) >= HOLD_BYTES]
        if over or len(self.items) < HOLD_CHUNKS:
            return over
        count = {CLIENT: 0, SERVER: 0}
        for role, *_ in self.items:
            count[role] += 1
        return [max((CLIENT, SERVER), key=lambda r: count[r])]

    def slide(self, best: tuple[str, int] | None) -> int:
        """Drop what the `done` directions held and score their next bytes as a new window.

        For a connection seen mid-stream that scored below the minimum: the capture may have
        begun inside a frame larger than the window, so a later window can hold the first frame
        start. What the other direction holds stays (its run is still growing from its start).
        The dropped bytes are counted in `dropped` (reported when the connection is decided).
        Returns the bytes released.
        """
        gone = set(self.done())
        if best is not None and (self.best_seen is None or best[1] > self.best_seen[1]):
            self.best_seen = best
        kept: list[tuple[str, bytes | int, int, int]] = []
        released = 0
        for item in self.items:
            role, data = item[0], item[1]
            if role not in gone:
                kept.append(item)
            elif not isinstance(data, int):
                self.dropped[role] += len(data)
                released += len(data)
        self.items = kept
        self.size -= released
        for role in gone:
            self.runs[role] = bytearray()
            self.cut.discard(role)
        self.gap_first = True  # the new window starts inside the stream
        self.tries = 0
        self.windows += 1
        return released

    def give_up(self) -> int:
        """Stop holding (see `given_up`); returns the bytes released."""
        for role, data, _, _ in self.items:
            if not isinstance(data, int):
                self.dropped[role] += len(data)
        size, self.size = self.size, 0
        self.items = []
        self.runs = {CLIENT: bytearray(), SERVER: bytearray()}
        self.given_up = True
        return size

    def what(self) -> str:
        """The bytes not decoded, for an anomaly."""
        counts = dict(self.dropped)
        for role, data, _, _ in self.items:
            if not isinstance(data, int):
                counts[role] += len(data)
        return f"{counts[CLIENT]} client and {counts[SERVER]} server bytes"


@dataclass(slots=True)
class Decision:
    spec: ProtocolSpec | None
    swap: bool = False
    """The connection's roles must be swapped (the side tcp took for the server is the client)."""
    best: tuple[str, int] | None = None
    """For an undecoded connection: the protocol that scored best, and its score."""
    learned: int | None = None
    """The server port this decision taught (other connections on it are now this protocol's)."""
    errors: list[Anomaly] = field(default_factory=list)
    """`internal_error` anomalies: a protocol's scoring raised (a bug; it scored 0)."""
    wait: bool = False
    """Not a decision: only `errors` to report, the bytes stay held."""


class Detector:
    """Protocol choice for the connections of one capture (see the module docstring)."""

    def __init__(self, protocols: dict[str, ProtocolSpec], decode_as: dict[int, ProtocolSpec]) -> None:
        self.protocols = protocols
        self.decode_as = decode_as
        self.port_map: dict[int, ProtocolSpec] = {}
        for spec in protocols.values():
            for port in spec.ports:
                self.port_map.setdefault(port, spec)
        self.learned: dict[int, ProtocolSpec] = {}
        """Server port → the protocol a connection on it was detected as, in this capture."""
        self.held_total = 0
        self.windows = 0
        """Later windows tried so far in this capture (see CAPTURE_WINDOWS)."""

    @property
    def server_ports(self) -> frozenset[int]:
        return frozenset(self.port_map) | frozenset(self.decode_as)

    def by_port(self, conn: Connection) -> Decision | None:
        """Steps 1–3: a decision from the ports alone, or None."""
        for table in (self.decode_as, self.port_map):
            for port in (conn.server_port, conn.client_port):
                if port in table:
                    return Decision(table[port])
        spec = self.learned.get(conn.server_port)
        if spec is not None:
            return Decision(spec)
        spec = self.learned.get(conn.client_port)
        if spec is not None and not conn.saw_syn:
            return Decision(spec, swap=True)
        return None

    def may_slide(self, conn: Connection, held: Held) -> bool:
        """Whether an undecided connection's next window is scored rather than giving up on it:
        seen mid-stream, a window whose run is done, within the per-connection and capture budgets."""
        return (
            not conn.saw_syn
            and bool(held.done())
            and held.windows < MAX_WINDOWS
            and self.windows < CAPTURE_WINDOWS
            and self.held_total <= HOLD_TOTAL
        )

    def by_bytes(self, conn: Connection, held: Held, final: bool) -> Decision | None:
        """Step 4: the decision the held bytes support, or None to wait for more (when not `final`)."""
        decision = self.by_port(conn)  # an earlier connection may have taught a port meanwhile
        if decision is not None:
            return decision
        opened = conn.saw_syn and not held.gap_first
        client, server = bytes(held.runs[CLIENT]), bytes(held.runs[SERVER])
        tries = [(False, client, server)]
        if not conn.saw_syn:
            tries.append((True, server, client))
        scores: list[tuple[int, bool, ProtocolSpec]] = []
        errors: list[Anomaly] = []
        for spec in self.protocols.values():
            for swap, c, s in tries:
                try:
                    points = int(spec.score(c, s, opened))
                except Exception as e:
                    points = 0
                    roles = "roles swapped" if swap else "roles by port"
                    errors.append(
                        internal.internal_error(e, "score", spec.name, f"the first bytes ({roles})")
                    )
                scores.append((points, swap, spec))
        best = max((p for p, _, _ in scores), default=0)
        top = [(swap, spec) for p, swap, spec in scores if p == best]
        if final:
            undecided = Decision(None, best=(top[0][1].name, best) if best else None, errors=errors)
        else:  # no decision yet; errors of this try are reported all the same
            undecided = Decision(None, errors=errors, wait=True) if errors else None
        if best < (MIN_CONFIDENCE if final else CERTAIN):
            return undecided
        if len({spec.name for _, spec in top}) > 1:
            return undecided  # two protocols equally sure: a guess either way
        swap, spec = min(top, key=lambda t: t[0])  # the ports' role assignment when both fit
        port = conn.client_port if swap else conn.server_port
        taught = port not in self.learned
        self.learned.setdefault(port, spec)
        return Decision(spec, swap, learned=port if taught else None, errors=errors)
