"""The protocol-level transcript of a run: what `baseline` records and `check --baseline` compares.

Per TCP connection and per role (client, server) the sequence of frames, each reduced
to the fields that should not change between two runs of the same scenario: type,
version, status, error code, topics; and per connection the messages carried, by
direction and topic. What changes from run to run (ports, timestamps, correlation and
producer ids, producer names, offsets, the stream numbering) is left out unless asked for
with `--include`. How many messages each frame carries depends on client batching and
timing, so it is left out too (`batch` adds it). Consecutive identical entries collapse
into one with `repeat: N`, so a producer sending 10,000 SENDs is one line and memory
stays proportional to the number of distinct runs, not frames. Keep-alives (the frame types
each protocol declares as such, `ProtocolSpec.keepalive_types`) come and go with timing and
are skipped by default.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from wiredump.check import names
from wiredump.check.names import Pattern
from wiredump.check.spec import Loc
from wiredump.dissect.model import OK, Frame

ENTRY_FIELDS: dict[str, str] = {
    # In the order entries are written.
    "type": "the frame type (always kept)",
    "kind": "request, response or event",
    "version": "protocol version (Kafka api_version, TANK client version, Pravega wire version)",
    "status": "frame status when not ok (malformed, bad_checksum, …)",
    "error": "error code (and its name) of the frame",
    "topics": "topics (Pravega segments) the frame names",
    "batch": "number of application messages the frame carries (depends on client batching and timing)",
    "partitions": "partitions of the messages carried",
    "compression": "compression codecs of the messages carried",
    "id": "correlation id (Kafka correlation id, Pulsar request id, …)",
    "producer": "producer / client names (Pulsar producer_name, Kafka client_id)",
    "offsets": "first and last offset or message id of the messages carried",
    "length": "frame length in bytes",
    "repeat": "how many times an entry repeats in a row",
    "messages": "per connection: application messages carried, by direction (produce/deliver) and topic",
    "port": "server port of the connection",
    "state": "how the connection ended (closed, reset, open, midstream)",
}
FIELDS = tuple(ENTRY_FIELDS)
DEFAULT_FIELDS = ("type", "version", "status", "error", "topics", "messages", "repeat")
CONNECTION_FIELDS = ("port", "state", "messages")


def default_skip() -> tuple[str, ...]:
    """`<protocol>.<type>` of every keep-alive type the protocols declare, in registry order."""
    from wiredump.dissect.protocols import all_protocols

    return tuple(f"{spec.name}.{t}" for spec in all_protocols().values() for t in spec.keepalive_types())


_TOPIC_KEYS = {"topic", "topic_name", "segment"}
_TOPIC_LISTS = {"topics", "topic_data", "responses", "partitions_metadata"}
_MAX_WALK = 8
_MAX_TOPICS = 64


def topics_of(f: Frame) -> list[str]:
    """Topic names a frame names, from its messages and its decoded fields."""
    found: set[str] = {m.topic for m in f.messages if m.topic}
    _walk(f.fields, None, found, 0)
    return sorted(found)[:_MAX_TOPICS]


def _walk(v: Any, list_key: str | None, found: set[str], depth: int) -> None:
    """Collect topic-like strings: values of `topic`/`segment` keys, and the `name` of the
    entries of a `topics`-like list (Kafka's topic_data/responses, TANK's topics)."""
    if depth > _MAX_WALK or len(found) >= _MAX_TOPICS:
        return
    if isinstance(v, dict):
        for k, x in v.items():
            if isinstance(x, str):
                if x and (k in _TOPIC_KEYS or (k == "name" and list_key in _TOPIC_LISTS)):
                    found.add(x)
            elif isinstance(x, list):
                _walk(x, k, found, depth + 1)
            elif isinstance(x, dict):
                _walk(x, None, found, depth + 1)
    elif isinstance(v, list):
        for x in v[:256]:
            if isinstance(x, str):
                if x and list_key in ("topics", "topic_names"):
                    found.add(x)
            elif isinstance(x, (dict, list)):
                _walk(x, list_key, found, depth + 1)


def _producers(f: Frame) -> list[str]:
    out: set[str] = set()
    fields = f.fields
    header = fields.get("header") if isinstance(fields, dict) else None
    if isinstance(header, dict) and isinstance(header.get("client_id"), str):
        out.add(header["client_id"])
    for part in ("command", "metadata"):
        d = fields.get(part) if isinstance(fields, dict) else None
        if isinstance(d, dict):
            for k in ("producer_name", "consumer_name", "client_id"):
                if isinstance(d.get(k), str) and d[k]:
                    out.add(d[k])
    return sorted(out)


def entry_of(f: Frame, fields: frozenset[str], topic: Callable[[str], str] = str) -> dict[str, Any]:
    """A frame as a transcript entry: only the chosen fields, in a fixed order, empty ones left out.

    `topic` maps a topic name to how it is recorded (see `Config.topic_patterns`).
    """
    e: dict[str, Any] = {"type": f.type}
    if "kind" in fields:
        e["kind"] = f.kind
    if "version" in fields and f.version is not None:
        e["version"] = f.version
    if "status" in fields and f.status != OK:
        e["status"] = f.status
    if "error" in fields and f.error_code is not None:
        e["error"] = f"{f.error_code} {f.error}" if f.error else f.error_code
    if "topics" in fields:
        t = sorted({topic(x) for x in topics_of(f)})
        if t:
            e["topics"] = t
    if "batch" in fields and f.messages:
        e["batch"] = len(f.messages)
    if "partitions" in fields:
        parts = sorted({m.partition for m in f.messages if m.partition is not None})
        if parts:
            e["partitions"] = parts
    if "compression" in fields:
        codecs = sorted({m.compression for m in f.messages if m.compression})
        if codecs:
            e["compression"] = codecs
    if "id" in fields and f.correlation_id is not None:
        e["id"] = f.correlation_id
    if "producer" in fields:
        p = _producers(f)
        if p:
            e["producer"] = p
    if "offsets" in fields and f.messages:
        ids = [m.offset if m.offset is not None else m.message_id for m in f.messages]
        ids = [i for i in ids if i is not None]
        if ids:
            e["offsets"] = [ids[0], ids[-1]] if len(ids) > 1 else [ids[0]]
    if "length" in fields:
        e["length"] = f.length
    return e


def entry_key(e: dict[str, Any]) -> str:
    """A stable text form of an entry without its repeat count, for comparing."""
    return json.dumps({k: v for k, v in e.items() if k != "repeat"}, sort_keys=True, default=str)


def entry_text(e: dict[str, Any]) -> str:
    """`SEND batch=1 ×6`: an entry as one readable line."""
    parts = [str(e.get("type"))]
    for k, v in e.items():
        if k in ("type", "repeat"):
            continue
        if isinstance(v, list):
            v = ",".join(map(str, v))
        parts.append(f"{k}={v}")
    rep = e.get("repeat", 1)
    return " ".join(parts) + (f" ×{rep}" if rep != 1 else "")


@dataclass(slots=True)
class Entry:
    """One run of identical frames on one side of a connection."""

    data: dict[str, Any]
    key: str
    count: int = 1
    packet: int | None = None
    """Packet of the first frame of the run (None for a baseline loaded from a file)."""
    index: int = 0
    """1-based position of that frame among the frames of its role (after skipping)."""

    def as_dict(self, repeat: bool) -> dict[str, Any]:
        d = dict(self.data)
        if repeat and self.count != 1:
            d["repeat"] = self.count
        return d


@dataclass(slots=True)
class ConnTranscript:
    """One connection's transcript: entries per role and message totals (plus, for a run,
    where it is: capture and stream; for a baseline, its label and line in the file)."""

    protocol: str
    client: list[Entry] = field(default_factory=list)
    server: list[Entry] = field(default_factory=list)
    totals: dict[str, dict[str, int]] = field(default_factory=dict)
    """direction → topic ("*" when topics are ignored) → messages."""
    port: int | None = None
    state: str | None = None
    capture: str | None = None
    stream: int | None = None
    label: str | None = None
    """For a baseline connection: its name in the file (`connection 3`)."""
    line: int | None = None

    def side(self, role: str) -> list[Entry]:
        return self.client if role == "client" else self.server

    def opens_with(self, n: int = 3) -> list[str]:
        return [str(e.data["type"]) for e in self.client[:n]] or [
            str(e.data["type"]) for e in self.server[:n]
        ]

    def where(self) -> str:
        if self.label:
            return self.label
        return f"stream {self.stream} of {self.capture}"


@dataclass(slots=True)
class Config:
    """Which fields a transcript keeps and which frame types it skips."""

    fields: frozenset[str] = frozenset(DEFAULT_FIELDS)
    skip: tuple[str, ...] = field(default_factory=default_skip)
    topic_patterns: tuple[str, ...] = ()
    """Regular expressions; a topic that matches one whole is recorded as the expression
    itself, so topic names that carry a run id (`orders-3f9a…`) compare equal."""
    _patterns: list[Pattern] = field(default_factory=list)
    _topic_res: list[tuple[str, re.Pattern[str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        dummy = Loc(None, 0, 0, "--skip")
        self._patterns = [names.parse(dummy, s, i) for i, s in enumerate(self.skip)]
        self._topic_res = [(p, re.compile(p)) for p in self.topic_patterns]

    def topic(self, name: str) -> str:
        for text, rx in self._topic_res:
            if rx.fullmatch(name):
                return text
        return name

    def skipped(self, f: Frame) -> bool:
        return self.skips(f.protocol, f.type)

    def skips(self, protocol: str | None, type_: str | None) -> bool:
        return any(p.matches(protocol, type_) for p in self._patterns)

    @property
    def repeat(self) -> bool:
        return "repeat" in self.fields


class TranscriptBuilder:
    """Turns pipeline events into one `ConnTranscript` per connection, in one pass."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.conns: dict[tuple[int, int], ConnTranscript] = {}
        self._n: Counter[tuple[int, int, str]] = Counter()
        self._capture_no = 0
        """Counts captures, so a capture given twice gives two sets of connections."""

    def feed(self, ev: Any) -> None:
        if ev.kind == "frame":
            self.frame(ev.capture, ev.obj)
        elif ev.kind == "capture_end":
            self._capture_no += 1
        elif ev.kind == "connection":
            c = ev.obj
            t = self.conns.get((self._capture_no, c.stream))
            if t is not None:
                t.port = c.server_port
                t.state = c.state

    def frame(self, capture: str, f: Frame) -> None:
        key = (self._capture_no, f.stream)
        t = self.conns.get(key)
        if t is None:
            t = self.conns[key] = ConnTranscript(f.protocol, capture=capture, stream=f.stream)
        fields = self.config.fields
        if "messages" in fields:
            # Counted even for skipped types: skipping polls keeps the totals as a guard.
            for m in f.messages:
                topic = self.config.topic(m.topic or "-") if "topics" in fields else "*"
                d = t.totals.setdefault(m.direction, {})
                d[topic] = d.get(topic, 0) + 1
        if self.config.skipped(f):
            return
        data = entry_of(f, fields, self.config.topic)
        k = entry_key(data)
        side = t.side(f.role)
        n = self._n[(self._capture_no, f.stream, f.role)] = self._n[(self._capture_no, f.stream, f.role)] + 1
        if side and side[-1].key == k:
            side[-1].count += 1
            return
        side.append(Entry(data, k, 1, f.packet, n))

    def transcripts(self) -> list[ConnTranscript]:
        out = [t for t in self.conns.values() if t.client or t.server or t.totals]
        for t in out:
            if "port" not in self.config.fields:
                t.port = None
            if "state" not in self.config.fields:
                t.state = None
        return sort_connections(out, self.config.repeat)


def conn_key(t: ConnTranscript, repeat: bool) -> str:
    """Everything compared about a connection, as stable text (used to sort and to pair)."""
    return json.dumps(
        {
            "protocol": t.protocol,
            "port": t.port,
            "state": t.state,
            "messages": t.totals,
            "client": [e.as_dict(repeat) for e in t.client],
            "server": [e.as_dict(repeat) for e in t.server],
        },
        sort_keys=True,
        default=str,
    )


def sort_connections(conns: Iterable[ConnTranscript], repeat: bool) -> list[ConnTranscript]:
    """A deterministic order that does not depend on stream numbering or timing."""
    return sorted(conns, key=lambda t: (t.protocol, t.opens_with(), conn_key(t, repeat)))


def project(t: ConnTranscript, fields: frozenset[str], config: Config | None = None) -> ConnTranscript:
    """The transcript with only `fields` kept, topics mapped and skipped types dropped as
    `config` says; runs that become identical merge."""
    topic: Callable[[str], str] = config.topic if config is not None else str
    out = ConnTranscript(
        t.protocol,
        port=t.port if "port" in fields else None,
        state=t.state if "state" in fields else None,
        capture=t.capture,
        stream=t.stream,
        label=t.label,
        line=t.line,
    )
    if "messages" in fields:
        for d, per in t.totals.items():
            if "topics" in fields:
                merged: dict[str, int] = {}
                for name, n in per.items():
                    merged[topic(name)] = merged.get(topic(name), 0) + n
                out.totals[d] = merged
            else:
                out.totals[d] = {"*": sum(per.values())}
    for role in ("client", "server"):
        side = out.side(role)
        for e in t.side(role):
            if config is not None and config.skips(t.protocol, str(e.data.get("type"))):
                continue
            data = {k: v for k, v in e.data.items() if k == "type" or k in fields}
            if "topics" in data:
                data["topics"] = sorted({topic(x) for x in data["topics"]})
            k = entry_key(data)
            if side and side[-1].key == k:
                side[-1].count += e.count
            else:
                side.append(Entry(data, k, e.count, e.packet, e.index))
    return out
