"""Pairing requests with responses, one correlator per connection.

A protocol decides what the key is (Kafka: correlation id; Pulsar: request id and a
response type that fits; TANK: request id) and calls `request` / `response`; the
correlator links the two frames (peer packet both ways, latency on the later one),
keeps the request held back from the output until its answer is known, and records
the exchange. Outstanding requests are bounded per connection (`max_pending`) and over the
whole capture (`PendingBudget`): a request held waiting for its answer keeps its whole frame, so
without the second bound a capture of many connections that never answer (or a flood of
pipelined requests) would hold frames by the million.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Hashable

from wiredump.dissect.model import Exchange, Frame

ANSWERED = "answered"
UNANSWERED = "unanswered"
NO_REQUEST = "no_request"
NO_RESPONSE_EXPECTED = "no_response_expected"
PENDING_LIMIT = "pending_limit"


class PendingBudget:
    """Requests waiting for their answer over all connections of one capture.

    One per capture, owned by the pipeline and shared by its connections' correlators
    (`Limits.max_pending_total`). Past the limit, the connection that registers a request gives
    up its own oldest one as unanswered, so a connection never takes another's requests away
    and the outcome does not depend on which connection the engine looks at first.
    """

    __slots__ = ("count", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0

    def detail(self, given_up: int | None) -> str:
        """The `pending_limit` anomaly's text, on the request that went over the bound;
        `given_up`: the packet of the connection's oldest request given up for it, None when it
        is this very request (the connection had no other waiting)."""
        which = "this one" if given_up is None else f"the connection's oldest (packet {given_up})"
        return (
            f"more than {self.limit} requests waited for their answer at once over the capture "
            f"(Limits.max_pending_total): {which} is reported unanswered"
        )


class Correlator:
    def __init__(
        self, stream: int, protocol: str, max_pending: int = 65536, budget: PendingBudget | None = None
    ) -> None:
        self.stream = stream
        self.protocol = protocol
        self.max_pending = max_pending
        self.budget = budget
        self._pending: OrderedDict[Hashable, deque[Frame]] = OrderedDict()
        self._count = 0
        self._done: list[tuple[str, Frame | None, Frame | None]] = []
        self.evicted = 0

    # -- what protocols call -------------------------------------------------------------
    def request(self, frame: Frame, key: Hashable, expects_response: bool = True) -> None:
        """Register a request; it is held until answered when it expects a response."""
        if not expects_response:
            self._done.append((NO_RESPONSE_EXPECTED, frame, None))
            return
        frame.awaiting = True
        q = self._pending.get(key)
        if q is None:
            q = self._pending[key] = deque()
        q.append(frame)
        self._count += 1
        budget = self.budget
        if budget is not None:
            budget.count += 1
            if budget.count > budget.limit:
                # Said on the request that arrived (not yet out), not on the one given up, which
                # the pipeline may have let out already (its hold bounds).
                given_up = self._evict_oldest()
                frame.note(PENDING_LIMIT, budget.detail(None if given_up is frame else given_up.packet))
                return
        if self._count > self.max_pending:
            self._evict_oldest()

    def peek(self, key: Hashable, fits: Callable[[Frame], bool] | None = None) -> Frame | None:
        """The request a response with this key would pair with, without pairing it."""
        q = self._pending.get(key)
        if not q:
            return None
        for req in q:
            if fits is None or fits(req):
                return req
        return None

    def response(
        self, frame: Frame, key: Hashable, fits: Callable[[Frame], bool] | None = None
    ) -> Frame | None:
        """Pair a response with the oldest fitting request under `key`; None if there is none."""
        req = self.peek(key, fits)
        if req is None:
            self._done.append((NO_REQUEST, None, frame))
            return None
        q = self._pending[key]
        q.remove(req)
        if not q:
            del self._pending[key]
        self._count -= 1
        if self.budget is not None:
            self.budget.count -= 1
        # Linked in `drain`, once the engine has stamped the response's packet and time.
        self._done.append((ANSWERED, req, frame))
        return req

    def event_pair(self, first: Frame, second: Frame) -> None:
        """Link two frames that belong together without an exchange row (e.g. acks)."""
        self._done.append(("", first, second))

    @staticmethod
    def link(req: Frame, resp: Frame) -> None:
        req.awaiting = False
        req.peer_packet = resp.packet or None
        resp.peer_packet = req.packet
        if resp.ts_us and req.ts_us:
            resp.latency_us = resp.ts_us - req.ts_us

    # -- what the engine calls -----------------------------------------------------------
    def drain(self) -> list[Exchange]:
        """Exchanges completed since the last call, as table rows."""
        out = []
        for status, req, resp in self._done:
            if req is not None and resp is not None:
                self.link(req, resp)
            if status:
                out.append(self._row(status, req, resp))
        self._done.clear()
        return out

    def close(self) -> list[Exchange]:
        """Every request still outstanding becomes unanswered."""
        for q in self._pending.values():
            for req in q:
                req.awaiting = False
                self._done.append((UNANSWERED, req, None))
        self._pending.clear()
        if self.budget is not None:
            self.budget.count -= self._count
        self._count = 0
        return self.drain()

    def _evict_oldest(self) -> Frame:
        key, q = next(iter(self._pending.items()))
        req = q.popleft()
        if not q:
            del self._pending[key]
        self._count -= 1
        if self.budget is not None:
            self.budget.count -= 1
        self.evicted += 1
        req.awaiting = False
        self._done.append((UNANSWERED, req, None))
        return req

    def _row(self, status: str, req: Frame | None, resp: Frame | None) -> Exchange:
        first = req or resp
        assert first is not None
        return Exchange(
            stream=self.stream,
            protocol=self.protocol,
            type=first.type,
            correlation_id=first.correlation_id,
            status=status,
            request_packet=req.packet if req else None,
            response_packet=resp.packet if resp else None,
            request_ts_us=req.ts_us if req else None,
            response_ts_us=resp.ts_us if resp else None,
            latency_us=resp.latency_us if (req and resp) else None,
            error_code=resp.error_code if resp else None,
        )
