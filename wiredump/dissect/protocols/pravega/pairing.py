"""Pairing Pravega replies with their requests (WIRE.md §4).

The session hands every decoded request and reply here. Outstanding requests are
indexed by requestId and, for appends, by writer id and event number; each pair is
given to the connection's correlator under a key unique to the request, so the
correlator links the frames, measures latency and writes the exchange rows while
the Pravega rules for *which* request a reply answers stay here:

* a reply answers the oldest outstanding request with its requestId whose type
  expects it; failure replies answer any request. Request ids are unique per flow, so
  a reply of a type the request does not expect still pairs by id (anomaly
  `unexpected_reply`) unless it is an append acknowledgement;
* DATA_APPENDED(writer, eventNumber, previousEventNumber) acknowledges every append of
  the writer with last event number in (previous, eventNumber]; CONDITIONAL_CHECK_FAILED
  and INVALID_EVENT_NUMBER name one event;
* a READ_SEGMENT may be answered by several SEGMENT_READs: the first makes the
  exchange, the others point back at the request without a second row;
* the client's HELLO is answered by the server's HELLO.

Everything held is bounded: the correlator evicts the oldest outstanding requests
beyond its limit, and the indexes here forget them with it.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

from wiredump.dissect.correlation import Correlator
from wiredump.dissect.model import Anomaly, Frame
from wiredump.dissect.protocols.pravega.commands import COMMANDS, Command

APPEND_TYPES = frozenset({"AppendBlockEnd", "ConditionalAppend", "ConditionalBlockEnd"})
APPEND_REPLIES = frozenset({"DataAppended", "ConditionalCheckFailed"})
MAX_ANSWERED_READS = 1024
"""Answered READ_SEGMENTs remembered for the further SEGMENT_READs that may follow."""


@dataclass(slots=True)
class Pending:
    """Private to a request frame: its correlator key and whether it has been answered."""

    key: tuple[Any, ...]
    request_id: int | None
    writer_id: str | None = None
    event_number: int | None = None
    done: bool = False


class Pairing:
    """Outstanding requests of one connection, and the rules that pair replies with them."""

    def __init__(self, correlator: Correlator, max_pending: int) -> None:
        self.correlator = correlator
        self._max_pending = max(16, max_pending)
        self._seq = 0
        self._by_rid: dict[int, deque[Frame]] = {}
        self._appends: dict[str, OrderedDict[int, Frame]] = {}
        self._pending_count = 0
        self._answered_reads: OrderedDict[int, Frame] = OrderedDict()
        self._hello: Frame | None = None

    def hello_request(self, f: Frame) -> None:
        f.context = Pending(self._next_key(), None)
        self._hello = f
        self.correlator.request(f, f.context.key)

    def hello_reply(self, f: Frame) -> None:
        req = self._hello
        if req is not None and isinstance(req.context, Pending) and not req.context.done:
            req.context.done = True
            self.correlator.response(f, req.context.key)
        else:
            self.correlator.response(f, ("pravega-no-hello",))

    def no_reply(self, f: Frame) -> None:
        """A request answered by nothing of its own (APPEND_BLOCK: its end is acknowledged)."""
        self.correlator.request(f, ("pravega-block",), expects_response=False)

    def _next_key(self) -> tuple[str, int]:
        self._seq += 1
        return ("pravega", self._seq)

    def register(self, f: Frame, cmd: Command) -> None:
        fields = f.fields
        rid = f.correlation_id
        p = Pending(self._next_key(), rid)
        if cmd.name in APPEND_TYPES:
            p.writer_id = fields["writer_id"]
            p.event_number = fields.get("last_event_number", fields.get("event_number"))
        f.context = p
        self.correlator.request(f, p.key)
        if rid is not None and rid != -1:
            self._by_rid.setdefault(rid, deque()).append(f)
            self._pending_count += 1
        if p.writer_id is not None and p.event_number is not None:
            self._appends.setdefault(p.writer_id, OrderedDict())[p.event_number] = f
            self._pending_count += 1
        if self._pending_count > 2 * self._max_pending:
            self._prune()

    def answer(self, f: Frame, cmd: Command) -> None:
        fields, name = f.fields, cmd.name
        rid = f.correlation_id
        reqs: list[Frame] = []
        if name == "DataAppended":
            reqs = self._acked_appends(
                fields["writer_id"], fields["previous_event_number"], fields["event_number"]
            )
        elif name == "ConditionalCheckFailed":
            reqs = self._acked_appends(
                fields["writer_id"], fields["event_number"] - 1, fields["event_number"]
            )
        if not reqs and rid is not None and rid != -1:
            req, expected = self._by_request_id(rid, cmd)
            if req is not None:
                reqs = [req]
                if not expected:
                    f.add(
                        Anomaly(
                            "unexpected_reply", f"{name} is not a reply {req.type} expects (request id {rid})"
                        )
                    )
        if not reqs and name == "InvalidEventNumber":
            n = fields.get("event_number", -1)
            reqs = self._acked_appends(fields["writer_id"], n - 1, n) if n != -1 else []
        if not reqs and name == "SegmentRead" and rid is not None:
            first = self._answered_reads.get(rid)
            if first is not None:
                f.peer_packet = first.packet or None
                fields["continues_read_of_packet"] = first.packet
                return
        if not reqs:
            self.correlator.response(f, ("pravega-unmatched",))
            return
        for req in reqs:
            p = req.context
            p.done = True
            self.correlator.response(f, p.key)
            if req.type == "ReadSegment" and rid is not None:
                self._answered_reads[rid] = req
                while len(self._answered_reads) > MAX_ANSWERED_READS:
                    self._answered_reads.popitem(last=False)
        if len(reqs) > 1:
            fields["acknowledges"] = [r.context.event_number for r in reqs]

    def _acked_appends(self, writer: str, previous: int, last: int) -> list[Frame]:
        """Outstanding appends of `writer` whose last event number is in (previous, last].

        Appends are indexed in the order sent, which is event-number order, so the scan
        stops at the first one past `last`.
        """
        pending = self._appends.get(writer)
        if not pending:
            return []
        out = []
        for n, req in list(pending.items()):
            if n > last:
                break
            if dead(req):
                self._forget(req)
            elif previous < 0 or n > previous:
                out.append(req)
        for req in out:
            self._forget(req)
        return out

    def _by_request_id(self, rid: int, cmd: Command) -> tuple[Frame | None, bool]:
        """The oldest outstanding request with this request id that `cmd` answers.

        Request ids are unique per flow, so when no outstanding request expects this
        reply type, the oldest non-append request with the id is still its request
        (returned with False: the reply is not one the request expects). Append
        acknowledgements never take that fallback; they pair by writer and event number.
        """
        fallback = None
        for req in list(self._by_rid.get(rid, ())):
            if dead(req):
                self._forget(req)
                continue
            req_cmd = COMMANDS.get(req.type_code)
            if req_cmd is None:
                continue
            if cmd.failure or cmd.name in req_cmd.replies:
                self._forget(req)
                return req, True
            if fallback is None and req.type not in APPEND_TYPES and cmd.name not in APPEND_REPLIES:
                fallback = req
        if fallback is not None:
            self._forget(fallback)
        return fallback, False

    def _forget(self, req: Frame) -> None:
        """Drop a request from both indexes (answered, or given up by the correlator)."""
        p = req.context
        q = self._by_rid.get(p.request_id) if p.request_id is not None else None
        if q is not None:
            for i, other in enumerate(q):
                if other is req:
                    del q[i]
                    self._pending_count -= 1
                    break
            if not q:
                del self._by_rid[p.request_id]
        if p.writer_id is not None:
            appends = self._appends.get(p.writer_id)
            if appends is not None and appends.get(p.event_number) is req:
                del appends[p.event_number]
                self._pending_count -= 1
                if not appends:
                    del self._appends[p.writer_id]

    def _prune(self) -> None:
        """Forget requests the correlator already gave up on (it bounds outstanding requests)."""
        count = 0
        for rid in list(self._by_rid):
            q = deque(r for r in self._by_rid[rid] if not dead(r))
            if q:
                self._by_rid[rid] = q
                count += len(q)
            else:
                del self._by_rid[rid]
        for w in list(self._appends):
            live = OrderedDict((n, r) for n, r in self._appends[w].items() if not dead(r))
            if live:
                self._appends[w] = live
                count += len(live)
            else:
                del self._appends[w]
        self._pending_count = count


def dead(req: Frame) -> bool:
    """Answered, or given up on by the correlator."""
    p = req.context
    return not isinstance(p, Pending) or p.done or not req.awaiting
