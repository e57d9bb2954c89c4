"""Every field a filter or `-e` may name, and how its values are pulled out of a frame.

The names come from the declarations: `frame.*` below (where a frame sits in the
capture, tshark's names), and each protocol's `ProtocolSpec.fields()`. A bare
protocol name (`kafka`) is a field too: present on that protocol's frames, as in tshark.

Extraction is compiled once per run: `FieldContext.extractor(decl)` returns a function
frame → list of values. All the tree fields a run asks for are collected in one walk
of the frame's decoded tree, done once per frame however many fields the filter and
`-e` name; the context keeps only the current frame's values (the run's state, not
the module's).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from functools import cache
from typing import Any

from wiredump.dissect.fielddecl import FLOAT, INT, NONE, STR, FieldDecl
from wiredump.dissect.model import Frame

FRAME_FIELDS = (
    FieldDecl(
        "frame.number", INT, "Packet that completes the frame (the timeline's packet number)", frame="packet"
    ),
    FieldDecl("frame.first_packet", INT, "Packet that carried the frame's first byte", frame="first_packet"),
    FieldDecl("frame.len", INT, "Frame length in bytes, framing included", frame="length"),
    FieldDecl(
        "frame.time_epoch", FLOAT, "Time of the completing packet, seconds since the epoch", frame="@epoch"
    ),
    FieldDecl(
        "frame.time_relative",
        FLOAT,
        "Seconds since the capture's first packet (a literal may carry a unit: frame.time_relative > 1500ms)",
        frame="@relative",
    ),
    FieldDecl(
        "frame.time_delta",
        FLOAT,
        "Seconds since the previous decoded frame of the capture, shown or not",
        frame="@delta",
    ),
    FieldDecl(
        "frame.protocol", STR, "Protocol of the frame (a bare protocol name is a field too)", frame="protocol"
    ),
    FieldDecl("tcp.stream", INT, "TCP connection number (as tshark's tcp.stream)", frame="stream"),
    FieldDecl("tcp.srcport", INT, "TCP source port of the frame", frame="src_port"),
    FieldDecl("tcp.dstport", INT, "TCP destination port of the frame", frame="dst_port"),
    FieldDecl("ip.src", STR, "Source address of the frame", frame="src"),
    FieldDecl("ip.dst", STR, "Destination address of the frame", frame="dst"),
)
"""Frame-level fields by tshark's names (seconds for times, as tshark shows them)."""

TIME_FIELDS = frozenset({"frame.time_relative", "frame.time_delta", "frame.time_epoch"})
"""Fields in seconds: a literal with a unit (2ms, 1s) is converted to seconds for them."""


@cache
def registry() -> dict[str, FieldDecl]:
    """Every declared field by name: frame fields, then each protocol's (declarations are static)."""
    from wiredump.dissect.protocols import all_protocols

    out: dict[str, FieldDecl] = {d.name: d for d in FRAME_FIELDS}
    for name, spec in all_protocols().items():
        out[name] = FieldDecl(name, NONE, f"{name} frames (present on every {name} frame)", frame="@protocol")
        for d in spec.fields():
            out.setdefault(d.name, d)
    return out


def protocol_fields(protocol: str | None = None) -> list[FieldDecl]:
    """Declared fields in registry order, of one protocol (or `frame` for the frame fields) or all."""
    out = list(registry().values())
    if protocol is None:
        return out
    if protocol == "frame":
        return [d for d in out if d.name.split(".", 1)[0] in ("frame", "tcp", "ip")]
    return [d for d in out if d.protocol == protocol]


def closest(name: str) -> str | None:
    """The known field name closest to a mistyped one (`kafka.topik` → `kafka.topic`)."""
    names = list(registry())
    prefix = name.split(".", 1)[0]
    same = [n for n in names if n.startswith(prefix + ".")]
    for pool in (same, names):
        found = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
        if found:
            return found[0]
    return None


class FieldContext:
    """The run's field extraction: one tree walk per frame for every field asked for, and frame times.

    Create one per run (the filter and the `-e` columns share it), call
    `start_capture(first_ts_us)` when a capture starts, then use the extractors.
    """

    def __init__(self) -> None:
        self.origin_us: int | None = None
        self._plain: dict[str, list[int]] = {}  # tree key -> slots
        self._parented: dict[tuple[str, str], list[int]] = {}  # (parent key, key) -> slots
        self._slots = 0
        self._frame: Frame | None = None
        self._values: list[list[Any]] | None = None
        self._prev_ts: int | None = None  # time of the frame before the current one
        self._last_ts: int | None = None
        self.needs_messages = False

    def start_capture(self, first_ts_us: int | None) -> None:
        self.origin_us = first_ts_us
        self._prev_ts = self._last_ts = None
        self._frame = None

    # -- per frame ---------------------------------------------------------------------------
    def _see(self, f: Frame) -> None:
        if f is self._frame:
            return
        self._frame = f
        self._values = None
        self._prev_ts, self._last_ts = self._last_ts, f.ts_us
        if self.origin_us is None:
            self.origin_us = f.ts_us

    def _tree_values(self, f: Frame) -> list[list[Any]]:
        self._see(f)
        if self._values is None:
            values: list[list[Any]] = [[] for _ in range(self._slots)]
            self._walk(f.fields, "", values, 0)
            self._values = values
        return self._values

    def _walk(self, node: Any, parent: str, values: list[list[Any]], depth: int) -> None:
        if depth > 40:
            return
        plain, parented = self._plain, self._parented
        if isinstance(node, dict):
            for k, v in node.items():
                if isinstance(k, str) and k.startswith("_"):
                    continue  # the decoder's derived summaries (`_errors`) repeat fields found elsewhere
                slots = plain.get(k)
                pslots = parented.get((parent, k)) if parented else None
                if slots:
                    for s in slots:
                        _collect(v, values[s])
                if pslots:
                    for s in pslots:
                        _collect(v, values[s])
                if isinstance(v, (dict, list)):
                    self._walk(v, k, values, depth + 1)
        elif isinstance(node, list):
            for item in node:
                if isinstance(item, (dict, list)):
                    self._walk(item, parent, values, depth + 1)

    def observe(self, f: Frame) -> None:
        """Note a frame in capture order (frame.time_delta counts from the one before)."""
        self._see(f)

    # -- compiling ---------------------------------------------------------------------------
    def extractor(self, decl: FieldDecl) -> Callable[[Frame], list[Any]]:
        """frame → every value of `decl` in it (empty when absent or another protocol's frame)."""
        proto = decl.protocol
        scoped = proto not in ("frame", "tcp", "ip")
        if decl.frame is not None:
            return self._frame_extractor(decl, proto if scoped else None)
        if decl.message is not None:
            self.needs_messages = True
            return _message_extractor(decl.message, proto)
        slot = self._slots
        self._slots += 1
        for key in decl.keys:
            parent, sep, leaf = key.rpartition("/")
            if sep:
                self._parented.setdefault((parent, leaf), []).append(slot)
            else:
                self._plain.setdefault(leaf, []).append(slot)
        tree_values = self._tree_values
        stringify = decl.type == STR

        def get(f: Frame) -> list[Any]:
            if f.protocol != proto:
                return []
            vals = tree_values(f)[slot]
            if stringify:
                return [v if isinstance(v, str) else str(v) for v in vals]
            return vals

        return get

    def _frame_extractor(self, decl: FieldDecl, proto: str | None) -> Callable[[Frame], list[Any]]:
        attr = decl.frame
        if attr == "@protocol":
            return lambda f: [True] if f.protocol == proto else []
        if attr == "@epoch":
            return lambda f: [f.ts_us / 1e6]
        if attr == "@relative":

            def relative(f: Frame) -> list[Any]:
                self._see(f)
                return [(f.ts_us - (self.origin_us or 0)) / 1e6]

            return relative
        if attr == "@delta":

            def delta(f: Frame) -> list[Any]:
                self._see(f)
                return [0.0 if self._prev_ts is None else (f.ts_us - self._prev_ts) / 1e6]

            return delta
        assert attr is not None

        def get(f: Frame) -> list[Any]:
            if proto is not None and f.protocol != proto:
                return []
            v = getattr(f, attr)
            return [] if v is None else [v]

        return get


def _collect(v: Any, out: list[Any]) -> None:
    if isinstance(v, list):
        out.extend(x for x in v if x is not None and not isinstance(x, (dict, list)))
    elif v is not None and not isinstance(v, dict):
        out.append(v)


def _message_extractor(attr: str, proto: str) -> Callable[[Frame], list[Any]]:
    if attr == "header_key":

        def headers_k(f: Frame) -> list[Any]:
            if f.protocol != proto:
                return []
            return [k for m in f.messages for k, _ in (m.headers or ())]

        return headers_k
    if attr == "header_value":

        def headers_v(f: Frame) -> list[Any]:
            if f.protocol != proto:
                return []
            return [v for m in f.messages for _, v in (m.headers or ()) if v is not None]

        return headers_v

    def get(f: Frame) -> list[Any]:
        if f.protocol != proto:
            return []
        out = []
        for m in f.messages:
            v = getattr(m, attr)
            if v is not None:
                out.append(v)
        return out

    return get
