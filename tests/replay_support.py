"""Differential testing of a protocol's Rust session against the Python reference, call by call.

`record(path, protocol)` runs the Python pipeline on a capture with the protocol's sessions
wrapped: every `decode`/`close` the Python framer makes (its exact bytes, role and completeness,
in order, for every connection) is recorded with the frames it returned and the frame-less
anomalies the session reported. `replay(recording)` feeds the same calls to the Rust session
(`wiredump._engine.replay`), which stamps and pairs its frames as the framer would, and
`differences(recording, replayed)` lists every way the two disagree: every frame attribute the
sinks read (fields in order, messages, anomalies, pairing), the exchanges and the reports.

Comparing call by call, rather than the pipelines' outputs, isolates the session: the framing,
detection and output ordering around it are the same Python code on both sides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, is_dataclass
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any

import pytest

from wiredump.dissect.model import Anomaly, Exchange, Frame, Message
from wiredump.dissect.pipeline import EXCHANGE, Options, dissect
from wiredump.dissect.protocols import all_protocols
from wiredump.dissect.protocols.base import Session

FRAME_ATTRS = (
    "protocol",
    "type",
    "type_code",
    "kind",
    "version",
    "correlation_id",
    "status",
    "error_code",
    "error",
    "summary",
    "role",
    "packet",
    "first_packet",
    "ts_us",
    "stream",
    "src",
    "src_port",
    "dst",
    "dst_port",
    "length",
    "peer_packet",
    "latency_us",
    "messages_counted",
    "partitions",
)
"""What a sink reads of a frame besides its fields, messages and anomalies (not `data`, `context`
or the output queue's flags); `partitions` (the partitions table's `TopicPartition`s) is compared
field by field, types included."""

MESSAGE_ATTRS = tuple(Message.__slots__)  # type: ignore[attr-defined]
ANOMALY_ATTRS = ("kind", "detail", "offset", "packet", "stream", "protocol")
EXCHANGE_ATTRS = tuple(Exchange.__slots__)  # type: ignore[attr-defined]


@dataclass
class Recording:
    """What the Python side did on one capture for one protocol."""

    protocol: str
    options: tuple[bool, bool, bool]
    conns: dict[int, tuple[int, str, int, str, int]] = field(default_factory=dict)
    calls: list[list[Any]] = field(default_factory=list)
    """`[stream, "decode", role, data, complete]` or `[stream, "close"]`; stamps are added once
    the framer has stamped the frames (see `replay_calls`)."""
    frames: list[list[Frame]] = field(default_factory=list)
    """The frames each call returned (the very objects, stamped and paired by the pipeline)."""
    reports: list[Anomaly] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)
    framing: bool = False
    """Record the framing calls too (`frame_length`, `resync`: their bytes from the frame's start and
    their answers), replayed and compared like the decodes (`[stream, op, role, data, packet, answer]`)."""


class _Recorder(Session):
    """A Python session that records every call the framer makes of it."""

    def __init__(self, inner: Session, rec: Recording) -> None:
        super().__init__(inner.ctx)
        self.inner = inner
        self.rec = rec
        self._report_wrapped = False
        ctx = inner.ctx
        rec.conns[ctx.stream] = (ctx.stream, ctx.client, ctx.client_port, ctx.server, ctx.server_port)

    def _wrap_report(self) -> None:
        # The framer installs its own `ctx.report` after the session is made: wrap it on first use.
        if self._report_wrapped:
            return
        self._report_wrapped = True
        ctx, original = self.inner.ctx, self.inner.ctx.report

        def report(a: Anomaly) -> None:
            self.rec.reports.append(a)
            original(a)

        ctx.report = report

    def _framing(
        self, op: str, buf: bytes | bytearray, pos: int, role: str, answer: int | None, seen: int
    ) -> None:
        """Records a framing call with its answer (resync's relative to `pos`) and the packet the
        framer stamped on what the session reported during it."""
        if not self.rec.framing:
            return
        packet = self.rec.reports[-1].packet if len(self.rec.reports) > seen else 0
        self.rec.calls.append([self.ctx.stream, op, role, bytes(buf[pos:]), packet, answer])
        self.rec.frames.append([])

    def frame_length(self, buf: bytes | bytearray, pos: int, role: str) -> int:
        self._wrap_report()
        seen = len(self.rec.reports)
        n = self.inner.frame_length(buf, pos, role)
        self._framing("frame_length", buf, pos, role, n, seen)
        return n

    def resync(self, buf: bytes | bytearray, pos: int, role: str) -> int | None:
        self._wrap_report()
        seen = len(self.rec.reports)
        at = self.inner.resync(buf, pos, role)
        self._framing("resync", buf, pos, role, None if at is None else at - pos, seen)
        return at

    def decode(self, data: bytes, role: str, complete: bool = True) -> list[Frame]:
        self._wrap_report()
        frames = self.inner.decode(data, role, complete)
        self.rec.calls.append([self.ctx.stream, "decode", role, bytes(data), complete])
        self.rec.frames.append(list(frames))
        return frames

    def close(self) -> list[Frame]:
        self._wrap_report()
        seen = len(self.rec.reports)
        frames = self.inner.close()
        # The packet the framer stamped on what the session reported at the end (for the replay's stamp).
        packet = self.rec.reports[-1].packet if len(self.rec.reports) > seen else 0
        self.rec.calls.append([self.ctx.stream, "close", packet])
        self.rec.frames.append(list(frames))
        return frames


def record(
    path: str | Path,
    protocol: str,
    monkeypatch: pytest.MonkeyPatch,
    *,
    show_secrets: bool = False,
    messages: bool = True,
    decode_as: dict[int, str] | None = None,
    framing: bool = False,
) -> Recording:
    """Runs the Python pipeline on `path`, recording every call of `protocol`'s sessions."""
    spec = all_protocols()[protocol]
    rec = Recording(protocol, (show_secrets, messages, False), framing=framing)
    original = spec.new_session

    def new_session(ctx: Any) -> Session:
        inner = original(ctx)
        if ctx.stream < 0 or ctx.options.get("observe"):  # detection trials, observers
            return inner
        return _Recorder(inner, rec)

    monkeypatch.setattr(spec, "new_session", new_session)
    options = Options(
        engine="python", show_secrets=show_secrets, messages=messages, decode_as=decode_as or {}
    )
    for ev in dissect([str(path)], options):
        if ev.kind == EXCHANGE and ev.obj.protocol == protocol:
            rec.exchanges.append(ev.obj)
    monkeypatch.setattr(spec, "new_session", original)
    return rec


def replay_calls(rec: Recording) -> list[tuple[Any, ...]]:
    """The recorded calls with the framer's stamps, as `wiredump._engine.replay` takes them."""
    out: list[tuple[Any, ...]] = []
    for call, frames in zip(rec.calls, rec.frames, strict=True):
        first = frames[0] if frames else None
        if call[1] == "decode":
            stream, _, role, data, complete = call
            packet = first.packet if first else 0
            first_packet = first.first_packet if first else 0
            ts_us = first.ts_us if first else 0
            out.append((stream, "decode", role, data, complete, packet, first_packet, ts_us))
        elif call[1] in ("frame_length", "resync"):
            out.append(tuple(call[:5]))
        else:
            out.append((call[0], "close", first.packet if first else call[2], 0))
    return out


@dataclass
class Replayed:
    frames: list[list[Frame]]
    exchanges: list[Exchange]
    reports: list[Anomaly]
    spans: list[list[list[tuple[str, int, int]]]]
    answers: dict[int, int | None] = field(default_factory=dict)
    """Call index → the Rust session's answer to a framing call."""


def replay(rec: Recording) -> Replayed:
    """The same calls through the Rust session."""
    from wiredump import _engine

    frames, exchanges, reports, spans, answers = _engine.replay(
        rec.protocol, list(rec.conns.values()), replay_calls(rec), rec.options
    )
    return Replayed(frames, exchanges, reports, spans, dict(answers))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (bytes, bytearray, memoryview)) and isinstance(b, (bytes, bytearray, memoryview)):
        return bytes(a) == bytes(b)
    if is_dataclass(a) and is_dataclass(b) and type(a) is type(b):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclass_fields(a))
    return type(a) is type(b) and a == b


def _where(fields_a: Any, fields_b: Any, path: str = "") -> str:
    """The first path at which two field trees differ, for a readable failure."""
    if isinstance(fields_a, dict) and isinstance(fields_b, dict):
        if list(fields_a) != list(fields_b):
            return f"{path or '<top>'}: keys {list(fields_a)} != {list(fields_b)}"
        for k in fields_a:
            if not _same(fields_a[k], fields_b[k]):
                return _where(fields_a[k], fields_b[k], f"{path}.{k}" if path else str(k))
    if isinstance(fields_a, list) and isinstance(fields_b, list) and len(fields_a) == len(fields_b):
        for i, (x, y) in enumerate(zip(fields_a, fields_b, strict=True)):
            if not _same(x, y):
                return _where(x, y, f"{path}.{i}")
    return f"{path or '<top>'}: {fields_a!r:.200} != {fields_b!r:.200}"


def differences(rec: Recording, got: Replayed, limit: int = 20) -> list[str]:
    """Every disagreement between the Python frames and the Rust ones (at most `limit`)."""
    out: list[str] = []
    for i, (call, py, rs) in enumerate(zip(rec.calls, rec.frames, got.frames, strict=True)):
        where = f"call {i} (stream {call[0]} {call[1]} {call[2] if len(call) > 2 else ''})"
        if call[1] in ("frame_length", "resync"):
            if got.answers.get(i, "missing") != call[5]:
                out.append(f"{where}: Python answers {call[5]!r}, Rust {got.answers.get(i, 'missing')!r}")
            continue
        if len(py) != len(rs):
            out.append(f"{where}: {len(py)} Python frames, {len(rs)} Rust frames")
            continue
        for j, (a, b) in enumerate(zip(py, rs, strict=True)):
            at = f"{where} frame {j} [{a.type} packet {a.packet}]"
            for name in FRAME_ATTRS:
                if not _same(getattr(a, name), getattr(b, name)):
                    out.append(f"{at}: {name} {getattr(a, name)!r:.200} != {getattr(b, name)!r:.200}")
            if not _same(a.fields, b.fields):
                out.append(f"{at}: fields differ at {_where(a.fields, b.fields)}")
            if len(a.messages) != len(b.messages):
                out.append(f"{at}: {len(a.messages)} messages != {len(b.messages)}")
            else:
                for k, (ma, mb) in enumerate(zip(a.messages, b.messages, strict=True)):
                    for name in MESSAGE_ATTRS:
                        if not _same(getattr(ma, name), getattr(mb, name)):
                            out.append(
                                f"{at} message {k}: {name} {getattr(ma, name)!r:.200} != {getattr(mb, name)!r:.200}"
                            )
            anomalies_a = [tuple(getattr(x, n) for n in ANOMALY_ATTRS) for x in a.anomalies]
            anomalies_b = [tuple(getattr(x, n) for n in ANOMALY_ATTRS) for x in b.anomalies]
            if anomalies_a != anomalies_b:
                out.append(f"{at}: anomalies {anomalies_a} != {anomalies_b}")
        if len(out) >= limit:
            return out[:limit]
    ex_a = sorted((tuple(getattr(e, n) for n in EXCHANGE_ATTRS) for e in rec.exchanges), key=key_t)
    ex_b = sorted((tuple(getattr(e, n) for n in EXCHANGE_ATTRS) for e in got.exchanges), key=key_t)
    if ex_a != ex_b:
        only_a = [e for e in ex_a if e not in ex_b][:5]
        only_b = [e for e in ex_b if e not in ex_a][:5]
        out.append(f"exchanges differ: {len(ex_a)} vs {len(ex_b)}; Python only {only_a}; Rust only {only_b}")
    rep_a = [tuple(getattr(x, n) for n in ANOMALY_ATTRS) for x in rec.reports]
    rep_b = [tuple(getattr(x, n) for n in ANOMALY_ATTRS) for x in got.reports]
    if sorted(map(repr, rep_a)) != sorted(map(repr, rep_b)):
        out.append(f"reports differ: Python {rep_a[:5]} Rust {rep_b[:5]}")
    return out[:limit]


def key_t(t: tuple[Any, ...]) -> tuple[Any, ...]:
    """Sort key for rows with Nones."""
    return tuple((v is None, "" if v is None else v) for v in t)
