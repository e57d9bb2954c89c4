"""Evidence for detection: a protocol's own session tried on a connection's first bytes.

Detection (see `ProtocolSpec.score`) must not trust a few magic bytes: TANK requests
start like Kafka size prefixes, small integers look like type codes. The surest test of
"is this protocol P?" is P's own framer and decoder: a scratch session (its own
correlator and limits, nothing shared with the run) frames what each side sent from its
first byte, decodes every whole frame, and pairs the answers with the requests. What
it finds is a `Trial`; `Trial.points` turns it into the common part of a score, and a
protocol adds what only it knows (an opening greeting, a handshake).

Bounded: a trial looks at what the pipeline holds (at most a few tens of KiB per
direction), decodes at most `MAX_FRAMES` frames per direction and, for a capture begun
mid-connection, searches for the first frame start in the first `SCAN` bytes only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wiredump.dissect.correlation import ANSWERED, Correlator
from wiredump.dissect.limits import Limits
from wiredump.dissect.model import CLIENT, OK, REQUEST, RESPONSE, SERVER
from wiredump.dissect.protocols.base import NEED_MORE, ConnContext, ProtocolSpec, Session

MAX_FRAMES = 6
"""Whole frames decoded per direction: the first, the next, and a few more to pair answers."""
SCAN = 4096
"""Bytes searched for a first frame start when the capture began mid-connection."""

FIRST_FRAME = 30
"""Points for a whole frame that frames and decodes cleanly from a direction's first byte."""
FIRST_FRAME_LATER = 20
"""The same, found after skipping the tail of a frame the capture cut (mid-connection)."""
NEXT_FRAME = 15
"""The next frame starts where the first ends and decodes cleanly too."""
MORE_FRAMES = 10
"""A third clean frame in a row."""
ANSWER = 40
"""A frame of one side answers a request of the other (paired by the protocol's own ids)."""
BROKEN = 25
"""Taken off when a frame after a clean one fails to frame or decode: the chain is not this protocol's."""
MISPLACED = 15
"""Taken off for each frame that the protocol says the other side sends (a response from the
client, a request from the server): the roles are the other way round."""


@dataclass(slots=True)
class Side:
    """What a scratch session made of one direction's first bytes."""

    frames: list[str] = field(default_factory=list)
    """Type names of the whole frames that decoded with status ok, in order, from the first."""
    skipped: int = 0
    """Bytes before the first frame (a capture begun inside a frame)."""
    broken: bool = False
    """A frame after the clean ones failed to frame or decode."""
    partial: bool = False
    """The bytes end inside a frame whose header the session accepted."""
    misplaced: int = 0
    """Frames of a kind the other side sends (see MISPLACED)."""

    def points(self) -> int:
        n = len(self.frames)
        if not n:
            return 0
        p = FIRST_FRAME if not self.skipped else FIRST_FRAME_LATER
        if n >= 2:
            p += NEXT_FRAME
        if n >= 3:
            p += MORE_FRAMES
        if self.broken:
            p -= BROKEN
        p -= MISPLACED * self.misplaced
        return max(p, 0)


@dataclass(slots=True)
class Trial:
    client: Side
    server: Side
    answered: int
    """Frames of one side paired with a request of the other."""

    def points(self) -> int:
        """The protocol-independent part of a score (0–100): clean frames each way, answers."""
        p = self.client.points() + self.server.points()
        sides = (self.client, self.server)
        if self.answered and not any(s.broken or s.misplaced for s in sides):
            p += ANSWER
        return min(p, 100)


def scratch_context(spec: ProtocolSpec) -> ConnContext:
    """A context of its own for a trial: nothing it does reaches the run's output or state."""
    return ConnContext(
        capture="",
        stream=-1,
        client="",
        client_port=0,
        server="",
        server_port=0,
        correlator=Correlator(-1, spec.name),
        limits=Limits(max_decompressed=1 << 20, max_decompressed_total=4 << 20),
        options={"show_secrets": False, "messages": False},
    )


def trial(spec: ProtocolSpec, client: bytes, server: bytes, opened: bool) -> Trial:
    """Frame and decode `client` then `server` (each a direction's first bytes) with `spec`'s session.

    `opened`: the bytes start where the connection did (its SYN was captured), so the
    first frame must start at the first byte; otherwise a first frame start is searched
    for. Requests are decoded before answers so that answers pair; a protocol whose
    server speaks first pairs nothing that way and relies on its own greeting evidence.
    An exception from the session is a bug, not a verdict on the bytes: it propagates
    (detection reports it as `internal_error` and scores the protocol 0).
    """
    session = spec.new_session(scratch_context(spec))
    answered = 0
    sides = {}
    for role, data in ((CLIENT, client), (SERVER, server)):
        side, n = _walk(spec, session, data, role, opened)
        sides[role] = side
        answered += n
    return Trial(sides[CLIENT], sides[SERVER], answered)


def _walk(spec: ProtocolSpec, session: Session, data: bytes, role: str, opened: bool) -> tuple[Side, int]:
    side = Side()
    answered = 0
    pos, end = 0, len(data)
    correlator = session.ctx.correlator
    while pos < end and len(side.frames) < MAX_FRAMES:
        n = session.frame_length(data, pos, role)
        if n == NEED_MORE:
            side.partial = True
            break
        if n < 0 or (spec.max_frame and n > spec.max_frame):
            if side.frames or side.skipped or opened:
                side.broken = bool(side.frames)
                break
            at = session.resync(data[:SCAN], 0, role)
            if at is None or at <= 0 or at >= end:
                break
            side.skipped = pos = at
            continue
        if pos + n > end:
            side.partial = True
            break
        frames = session.decode(data[pos : pos + n], role, True)
        done = correlator.drain()
        if not frames or any(f.status != OK for f in frames):
            side.broken = bool(side.frames)
            if not side.frames:
                side.skipped = -1  # the first frame did not decode: no evidence at all
            break
        side.frames.extend(f.type for f in frames)
        wrong = RESPONSE if role == CLIENT else REQUEST
        side.misplaced += sum(1 for f in frames if f.kind == wrong)
        answered += sum(1 for ex in done if ex.status == ANSWERED)
        pos += n
    if side.skipped < 0:
        side.frames.clear()
        side.skipped = 0
    return side, answered
