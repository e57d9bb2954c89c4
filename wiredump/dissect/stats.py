"""Aggregates over a run's events: per protocol and type, per connection, per anomaly kind.

Kept apart from the terminal so that `wiredump stats --json`, `wiredump check` and
anything else compute the same numbers the same way. Percentiles use the
nearest-rank method (the smallest observed value with at least q of all values at
or below it), so every reported latency is one that really happened.

Sources, chosen so the numbers equal what the exported tables give:
frames and bytes per type come from frame events (`frames` table: count, sum of
`length`); latency, unanswered and no-request counts from exchange events
(`exchanges` table, keyed by the request's type); connections from connection
events; anomaly counts from every anomaly event (`anomalies` table). An `internal_error`
(a wiredump bug caught by the engine's shield) is counted whatever the display
filter, and totalled apart (`totals.internal_errors`): a bug is never filtered out of sight.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from wiredump.dissect.internal import INTERNAL_ERROR
from wiredump.dissect.model import ConnectionSummary, Exchange, Frame

QUANTILES = {"p50": 0.50, "p90": 0.90, "p99": 0.99}


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile of already sorted values (None when there are none)."""
    n = len(sorted_values)
    if n == 0:
        return None
    if not 0 <= q <= 1:
        raise ValueError(f"quantile {q} outside [0, 1]")
    rank = max(1, math.ceil(q * n))
    return sorted_values[rank - 1]


def latency_summary(values: Iterable[int]) -> dict[str, Any]:
    """count, min, p50, p90, p99, max, mean (microseconds) of latencies."""
    s = sorted(values)
    out: dict[str, Any] = {"count": len(s)}
    if not s:
        out.update({"min": None, **{k: None for k in QUANTILES}, "max": None, "mean": None})
        return out
    out["min"] = s[0]
    for name, q in QUANTILES.items():
        out[name] = percentile(s, q)
    out["max"] = s[-1]
    out["mean"] = round(sum(s) / len(s), 1)
    return out


# -- histogram -------------------------------------------------------------------------------------
def bucket_bounds(lo: int, hi: int) -> list[int]:
    """Upper bounds (µs) on a 1-2-5 scale, from the first bound ≥ lo to the first bound ≥ hi."""
    seq: list[int] = []
    b = 1
    while not seq or seq[-1] < hi:
        seq.extend((b, 2 * b, 5 * b))
        b *= 10
    end = next(i for i, v in enumerate(seq) if v >= hi)
    start = next(i for i, v in enumerate(seq) if v >= lo)
    return seq[start : end + 1]


def histogram(values: Sequence[int]) -> list[tuple[int, int]]:
    """(upper bound µs, count of values ≤ bound and > previous bound) on a 1-2-5 scale."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    bounds = bucket_bounds(max(lo, 1), max(hi, 1))
    counts = [0] * len(bounds)
    import bisect

    for v in values:
        counts[min(bisect.bisect_left(bounds, v), len(bounds) - 1)] += 1
    return list(zip(bounds, counts, strict=True))


# -- collector -------------------------------------------------------------------------------------
@dataclass
class TypeStats:
    protocol: str
    type: str
    frames: int = 0
    bytes: int = 0
    requests: int = 0
    responses: int = 0
    events: int = 0
    messages: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)
    latencies: list[int] = field(default_factory=list)
    answered: int = 0
    unanswered: int = 0
    no_request: int = 0
    no_response_expected: int = 0
    unanswered_packets: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "type": self.type,
            "frames": self.frames,
            "bytes": self.bytes,
            "requests": self.requests,
            "responses": self.responses,
            "events": self.events,
            "messages": self.messages,
            "errors": dict(self.errors.most_common()),
            "statuses": dict(self.statuses.most_common()),
            "latency_us": latency_summary(self.latencies),
            "answered": self.answered,
            "unanswered": self.unanswered,
            "no_request": self.no_request,
            "no_response_expected": self.no_response_expected,
            "unanswered_packets": self.unanswered_packets[:100],
        }


FramePredicate = Callable[[Frame, str], bool]


def exchange_as_frame(e: Exchange) -> Frame:
    """The request side of an exchange as a frame, so a display filter can judge the exchange."""
    return Frame(
        protocol=e.protocol,
        type=e.type,
        type_code=-1,
        kind="request",
        correlation_id=e.correlation_id,
        error_code=e.error_code,
        packet=e.request_packet or e.response_packet or 0,
        first_packet=e.request_packet or e.response_packet or 0,
        ts_us=e.request_ts_us or e.response_ts_us or 0,
        stream=e.stream,
        peer_packet=e.response_packet,
        latency_us=e.latency_us,
    )


class StatsCollector:
    """Feed it pipeline events (`add`), read `result()`.

    With `keep` (a display filter's `matches`), only matching frames count; an exchange
    counts when its request side (protocol, type, stream, correlation id, packet,
    latency) matches; connections and anomalies count when their stream had a
    matching frame (anomalies of a frame: when that frame matched).
    """

    MAX_PACKETS_KEPT = 100
    MAX_CONNECTIONS_LISTED = 10_000
    """Connections listed one by one (the first ones, in stream order); all are counted. A SYN flood
    of a million connections would otherwise cost gigabytes (issue 17.4)."""

    def __init__(self, keep: FramePredicate | None = None) -> None:
        self.keep = keep
        self._streams: set[tuple[str, int]] = set()  # (capture, stream) with a kept frame
        self._loose: list[tuple[str, Any]] = []  # stream anomalies waiting for the verdict on their stream
        self.types: dict[tuple[str, str], TypeStats] = {}
        self.connections: list[tuple[str, ConnectionSummary]] = []
        self.connection_count = 0
        self.anomalies: Counter[str] = Counter()
        self.anomaly_packets: defaultdict[str, list[int]] = defaultdict(list)
        self.captures: list[dict[str, Any]] = []
        self.frames = 0
        self.bytes = 0
        self.messages = 0

    def _type(self, protocol: str, type_: str) -> TypeStats:
        key = (protocol, type_)
        t = self.types.get(key)
        if t is None:
            t = self.types[key] = TypeStats(protocol, type_)
        return t

    def add_events(self, events: Iterable[Any]) -> None:
        for ev in events:
            self.add(ev)

    def add(self, ev: Any) -> None:
        kind = ev.kind
        keep = self.keep
        if kind == "frame":
            if keep is not None:
                if not keep(ev.obj, ev.capture):
                    return
                self._streams.add((ev.capture, ev.obj.stream))
            self.add_frame(ev.obj)
        elif kind == "exchange":
            if keep is None or keep(exchange_as_frame(ev.obj), ev.capture):
                self.add_exchange(ev.obj)
        elif kind == "anomaly":
            a = ev.obj
            if keep is not None and a.kind != INTERNAL_ERROR:
                if ev.frame is not None:
                    if not keep(ev.frame, ev.capture):
                        return
                else:
                    self._loose.append((ev.capture, a))
                    return
            self._count_anomaly(a)
        elif kind == "connection":
            if keep is None or (ev.capture, ev.obj.stream) in self._streams:
                self.connection_count += 1
                if len(self.connections) < self.MAX_CONNECTIONS_LISTED:
                    self.connections.append((ev.capture, ev.obj))
        elif kind == "capture_end":
            c = ev.obj
            self.captures.append(
                {
                    "name": c.name,
                    "packets": c.packets,
                    "truncated": c.truncated,
                    "skipped_unknown_link": c.skipped_unknown_link,
                }
            )

    def _count_anomaly(self, a: Any) -> None:
        self.anomalies[a.kind] += 1
        pk = self.anomaly_packets[a.kind]
        if len(pk) < self.MAX_PACKETS_KEPT:
            pk.append(a.packet)

    def add_frame(self, f: Frame) -> None:
        t = self._type(f.protocol, f.type)
        t.frames += 1
        t.bytes += f.length
        n = len(f.messages) + f.messages_counted  # every message carried, kept as a row or not
        t.messages += n
        if f.kind == "request":
            t.requests += 1
        elif f.kind == "response":
            t.responses += 1
        else:
            t.events += 1
        if f.error:
            t.errors[f.error] += 1
        elif f.error_code:
            t.errors[f"code {f.error_code}"] += 1
        if f.status != "ok":
            t.statuses[f.status] += 1
        self.frames += 1
        self.bytes += f.length
        self.messages += n

    def add_exchange(self, e: Exchange) -> None:
        t = self._type(e.protocol, e.type)
        status = e.status
        if status == "answered":
            t.answered += 1
            if e.latency_us is not None:
                t.latencies.append(e.latency_us)
        elif status == "unanswered":
            t.unanswered += 1
            if e.request_packet is not None and len(t.unanswered_packets) < self.MAX_PACKETS_KEPT:
                t.unanswered_packets.append(e.request_packet)
        elif status == "no_request":
            t.no_request += 1
        elif status == "no_response_expected":
            t.no_response_expected += 1

    # -- results ---------------------------------------------------------------------------------
    def latencies_by_protocol(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = defaultdict(list)
        for t in self.types.values():
            out[t.protocol].extend(t.latencies)
        return dict(out)

    def result(self) -> dict[str, Any]:
        for capture, a in self._loose:
            if a.stream is not None and (capture, a.stream) in self._streams:
                self._count_anomaly(a)
        self._loose.clear()
        types = sorted(self.types.values(), key=lambda t: (t.protocol, -t.frames, t.type))
        by_proto = self.latencies_by_protocol()
        return {
            "captures": self.captures,
            "totals": {
                "frames": self.frames,
                "bytes": self.bytes,
                "messages": self.messages,
                "connections": self.connection_count,
                "connections_not_listed": self.connection_count - len(self.connections),
                "anomalies": sum(self.anomalies.values()),
                "internal_errors": self.anomalies[INTERNAL_ERROR],
                "unanswered": sum(t.unanswered for t in types),
            },
            "types": [t.as_dict() for t in types],
            "protocols": {p: latency_summary(v) for p, v in sorted(by_proto.items())},
            "histogram": {
                p: [{"le_us": b, "count": c} for b, c in histogram(v)]
                for p, v in sorted(by_proto.items())
                if v
            },
            "connections": [
                {
                    "capture": cap,
                    "stream": c.stream,
                    "client": f"{c.client}:{c.client_port}",
                    "server": f"{c.server}:{c.server_port}",
                    "protocol": c.protocol,
                    "packets": c.packets,
                    "frames": c.frames,
                    "bytes": c.bytes_client + c.bytes_server,
                    "bytes_client": c.bytes_client,
                    "bytes_server": c.bytes_server,
                    "gaps": c.gaps,
                    "retransmissions": c.retransmissions,
                    "state": c.state,
                    "duration_us": max(0, c.last_ts_us - c.first_ts_us),
                }
                for cap, c in self.connections
            ],
            "anomalies": {
                k: {"count": n, "packets": self.anomaly_packets[k]} for k, n in self.anomalies.most_common()
            },
        }
