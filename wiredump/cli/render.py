"""Text for the terminal: timeline lines, field trees, hex dumps — plain and coloured.

Every piece is produced twice from the same parts: as plain `str` for pipes,
`--no-color` and files (stable, greppable, fast: one f-string per frame), and as a
`rich.text.Text` with styles for a terminal. Nothing rich-specific ever reaches the
plain path.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cache
from typing import Any

from rich.text import Text

from wiredump.cli.escape import escape
from wiredump.dissect.model import Anomaly, Frame, Message


@cache
def _protocol_styles() -> dict[str, str]:
    """Each registered protocol's colour, as the protocol declares it (`ProtocolSpec.style`)."""
    from wiredump.dissect.protocols import all_protocols

    return {name: spec.style() for name, spec in all_protocols().items()}


def protocol_style(protocol: str | None, default: str = "bold") -> str:
    """The rich style of a protocol's name; `default` for a name no protocol registered."""
    return _protocol_styles().get(protocol or "", default)


STATUS_STYLES = {
    "malformed": "bold red",
    "bad_checksum": "bold red",
    "undecodable": "bold red",
    "truncated": "yellow",
    "unknown_type": "yellow",
    "unsupported_version": "yellow",
    "unanswered": "bold bright_red",
    "no reply yet": "yellow",
    "after gap": "yellow",
    "after resync": "yellow",
}
BAD_BADGE = "bold red"


# -- time --------------------------------------------------------------------------------------
TIME_FORMATS = {
    "r": "relative: seconds since the first packet of the capture",
    "d": "delta: seconds since the previous line shown",
    "a": "absolute: time of day (UTC)",
    "ad": "absolute with date (UTC)",
    "e": "epoch: seconds since 1970",
}


class Clock:
    """Formats frame times the way `-t` asks."""

    def __init__(self, mode: str) -> None:
        if mode not in TIME_FORMATS:
            raise ValueError(mode)
        self.mode = mode
        self.base: int | None = None
        self.prev: int | None = None

    def start(self, first_ts_us: int | None) -> None:
        """A new capture: relative times count from its first packet."""
        self.base = first_ts_us
        self.prev = None

    def format(self, ts_us: int | None, advance: bool = True) -> str:
        if ts_us is None or ts_us == 0:
            return "-"
        mode = self.mode
        if mode == "r":
            base = self.base if self.base is not None else ts_us
            d = ts_us - base
            return f"{d // 1_000_000}.{d % 1_000_000:06d}" if d >= 0 else f"-{-d / 1e6:.6f}"
        if mode == "d":
            prev = self.prev if self.prev is not None else ts_us
            if advance:
                self.prev = ts_us
            d = ts_us - prev
            return f"{d // 1_000_000}.{d % 1_000_000:06d}" if d >= 0 else f"-{-d / 1e6:.6f}"
        if mode == "e":
            return f"{ts_us // 1_000_000}.{ts_us % 1_000_000:06d}"
        dt = datetime.fromtimestamp(ts_us // 1_000_000, tz=timezone.utc)
        us = ts_us % 1_000_000
        if mode == "a":
            return f"{dt:%H:%M:%S}.{us:06d}"
        return f"{dt:%Y-%m-%d %H:%M:%S}.{us:06d}"


# -- the timeline line ------------------------------------------------------------------------
def format_latency(us: int | None) -> str:
    if us is None:
        return ""
    if us < 1000:
        return f"{us}µs"
    if us < 1_000_000:
        return f"{us / 1000:.3f}ms"
    return f"{us / 1_000_000:.3f}s"


def short_latency(us: int | None) -> str:
    """Three significant digits at most: 337µs, 1.01ms, 50.1ms, 502ms, 3.01s (table cells)."""
    if us is None:
        return "-"
    if us < 1000:
        return f"{us}µs"
    for div, unit in ((1000, "ms"), (1_000_000, "s")):
        v = us / div
        if v < 1000 or unit == "s":
            if v < 10:
                return f"{v:.2f}{unit}"
            if v < 100:
                return f"{v:.1f}{unit}"
            return f"{v:.0f}{unit}"
    return f"{us}µs"


def badges(f: Frame, reply: str | None = None, after: str | None = None) -> list[str]:
    """Status words for a frame: its status, its own anomalies, the reply verdict, stream breaks."""
    out: list[str] = []
    if f.status != "ok":
        out.append(f.status)
    for a in f.anomalies:
        if (
            a.kind not in out
            and a.kind != f.status
            and not (a.kind == "truncated" and f.status == "truncated")
        ):
            out.append(a.kind)
    if f.error and f.error not in f.summary:
        out.append(f"error {escape(f.error)}")
    if reply:
        out.append(reply)
    if after:
        out.append(f"after {after}")
    return out


@dataclass(slots=True)
class Parts:
    """The pieces of one timeline line."""

    packet: int
    time: str
    stream: int
    client: str
    arrow: str
    server: str
    protocol: str
    type: str
    cid: str
    peer: str
    badges: list[str]
    summary: str
    error: bool
    error_name: str = ""
    """The error's name (escaped), also when the summary already says it (see `rich_line`)."""


def endpoint(host: str, port: int | None) -> str:
    """`10.0.0.1:9092`, and an IPv6 address in brackets as URLs write it: `[::1]:9092`."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parts(f: Frame, time: str, reply: str | None = None, after: str | None = None) -> Parts:
    if f.role == "client":
        client, server, arrow = endpoint(f.src, f.src_port), endpoint(f.dst, f.dst_port), "→"
    else:
        client, server, arrow = endpoint(f.dst, f.dst_port), endpoint(f.src, f.src_port), "←"
    type_ = escape(f.type) if f.version is None else f"{escape(f.type)} v{f.version}"
    cid = "" if f.correlation_id is None else f"id={f.correlation_id}"
    peer = ""
    if f.peer_packet is not None:
        if f.latency_us is not None:
            peer = f"← #{f.peer_packet} {format_latency(f.latency_us)}"
        else:
            peer = f"→ #{f.peer_packet}"
    return Parts(
        f.packet,
        time,
        f.stream,
        client,
        arrow,
        server,
        f.protocol,
        type_,
        cid,
        peer,
        badges(f, reply, after),
        escape(f.summary),
        bool(f.error),
        escape(f.error) if f.error else "",
    )


def plain_line(p: Parts) -> str:
    """One stable line: packet, time, stream, client ⇄ server, protocol, type, id, peer, [badges], summary."""
    out = f"{p.packet:>6} {p.time:>10} {p.stream:>3} {p.client} {p.arrow} {p.server} {p.protocol:<7} {p.type}"
    if p.cid:
        out += f" {p.cid}"
    if p.peer:
        out += f" {p.peer}"
    if p.badges:
        out += " [" + ", ".join(p.badges) + "]"
    if p.summary:
        out += f"  {p.summary}"
    return out


def plain_frame(f: Frame, time: str, reply: str | None = None, after: str | None = None) -> str:
    """`plain_line(parts(f, time, reply, after))`, the same text made without the `Parts` in
    between: the plain timeline makes one per frame, and this is its hot path (a test checks
    the two agree on every frame of the real captures)."""
    src, dst = f.src, f.dst
    a = f"[{src}]:{f.src_port}" if ":" in src else f"{src}:{f.src_port}"
    b = f"[{dst}]:{f.dst_port}" if ":" in dst else f"{dst}:{f.dst_port}"
    ends = f"{a} → {b}" if f.role == "client" else f"{b} ← {a}"
    type_ = escape(f.type)
    if f.version is not None:
        type_ = f"{type_} v{f.version}"
    out = f"{f.packet:>6} {time:>10} {f.stream:>3} {ends} {f.protocol:<7} {type_}"
    if f.correlation_id is not None:
        out += f" id={f.correlation_id}"
    if f.peer_packet is not None:
        if f.latency_us is not None:
            out += f" ← #{f.peer_packet} {format_latency(f.latency_us)}"
        else:
            out += f" → #{f.peer_packet}"
    if f.status != "ok" or f.anomalies or f.error or reply or after:
        marks = badges(f, reply, after)
        if marks:
            out += " [" + ", ".join(marks) + "]"
    if f.summary:
        out += "  " + escape(f.summary)
    return out


def rich_line(p: Parts, width: int) -> Text:
    """The same line styled, fitted to `width` so that status and error stay in sight.

    Endpoints shrink to the arrow below 140 columns. When the summary names the error
    and would be cut, the error becomes a badge; when the badges themselves would not
    fit, the peer (then the id) gives way. Only the summary (the topic list…) is ever
    cut, with an ellipsis.
    """
    t = Text(no_wrap=True, overflow="ellipsis", end="")
    t.append(f"{p.packet:>6} ", "dim")
    t.append(f"{p.time:>10} ", "dim")
    t.append(f"{p.stream:>3} ", "bold")
    if width >= 140:
        t.append(p.client, "blue")
        t.append(f" {p.arrow} ", "bold")
        t.append(p.server, "blue")
        t.append(" ")
    else:
        t.append(f"{p.arrow} ", "bold")
    t.append(f"{p.protocol:<7} ", protocol_style(p.protocol))
    t.append(p.type, "bold red" if p.error else "bold")
    shown = list(p.badges)
    cid = f" {p.cid}" if p.cid else ""
    peer = f" {p.peer}" if p.peer else ""
    badges_len = sum(len(b) + 3 for b in shown)
    if (
        p.error_name
        and p.summary
        and not any(b.startswith("error") for b in shown)
        and len(t) + len(cid) + len(peer) + badges_len + 2 + len(p.summary) > width
    ):
        # The summary names the error but will be cut: a badge keeps the error in sight.
        shown.append(f"error {p.error_name}")
        badges_len += len(shown[-1]) + 3
    if len(t) + len(cid) + len(peer) + badges_len > width:
        peer = ""
    if len(t) + len(cid) + badges_len > width:
        cid = ""
    if cid:
        t.append(cid, "cyan")
    if peer:
        t.append(peer, "green" if p.peer.startswith("←") else "dim green")
    for b in shown:
        t.append(" ")
        style = STATUS_STYLES.get(b, BAD_BADGE if b.startswith("error") else "yellow")
        t.append(f"[{b}]", style)
    if p.summary:
        t.append("  ")
        t.append(p.summary)
    return t


def anomaly_parts(a: Anomaly, time: str) -> tuple[str, str]:
    where = "" if a.stream is None else f"{a.stream:>3}"
    head = f"{a.packet:>6} {time:>10} {where:>3}"
    body = f"! {a.kind}" + (f" ({a.protocol})" if a.protocol else "") + f": {escape(a.detail)}"
    return head, body


def plain_anomaly(a: Anomaly, time: str) -> str:
    head, body = anomaly_parts(a, time)
    return f"{head} {body}"


def rich_anomaly(a: Anomaly, time: str) -> Text:
    head, body = anomaly_parts(a, time)
    t = Text(no_wrap=True, overflow="ellipsis", end="")
    t.append(head + " ", "dim")
    serious = a.kind not in ("retransmission", "out_of_order", "duplicate")
    t.append(body, "dim yellow" if serious else "dim")
    return t


# -- field tree ---------------------------------------------------------------------------------
MAX_TREE_DEPTH = 40
MAX_LIST_ITEMS = 2000
MAX_BYTES_SHOWN = 64


VALUES = ("none", "short", "full")
"""How much of each message's key and value -V and show print (`--values`)."""
VALUE_WIDTH = 64
"""`--values short`: characters of a text key/value shown (bytes: VALUE_WIDTH // 2, as hex)."""


class Shown(str):
    """A key or value already rendered for the tree (escaped, maybe truncated); `kind` is its type column,
    which keeps the full length (`bytes[300]`) when the text is cut."""

    kind: str = ""


def shown_bytes(b: bytes, mode: str) -> Shown:
    """A message key or value as text when it is UTF-8 (escaped, quoted), else hex; cut in `short` mode."""
    try:
        text: str | None = b.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    cut = mode == "short"
    if text is not None:
        more = cut and len(text) > VALUE_WIDTH
        out = Shown('"' + escape(text[:VALUE_WIDTH] if more else text, '"') + '"' + ("…" if more else ""))
    else:
        limit = VALUE_WIDTH // 2
        more = cut and len(b) > limit
        out = Shown((b[:limit] if more else b).hex(" ") + (" …" if more else "") if b else "(empty)")
    out.kind = f"bytes[{len(b)}]"
    return out


def type_name(v: Any) -> str:
    if isinstance(v, Shown):
        return v.kind
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    if isinstance(v, (bytes, bytearray, memoryview)):
        return f"bytes[{len(v)}]"
    if isinstance(v, (list, tuple)):
        return f"list[{len(v)}]"
    if isinstance(v, dict):
        return "struct"
    return type(v).__name__


def scalar_text(v: Any) -> str:
    if isinstance(v, Shown):
        return str(v)
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + escape(v, '"') + '"'
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        if not b:
            return "(empty)"
        if len(b) > MAX_BYTES_SHOWN:
            return b[:MAX_BYTES_SHOWN].hex(" ") + f" …(+{len(b) - MAX_BYTES_SHOWN} bytes)"
        return b.hex(" ")
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else str(v)
    return str(v)


def _is_scalar(v: Any) -> bool:
    return not isinstance(v, (dict, list, tuple))


@dataclass(slots=True)
class TreeLine:
    depth: int
    key: str
    value: str  # "" for a container
    type: str


def tree(value: Any, key: str = "", depth: int = 0) -> Iterator[TreeLine]:
    """A depth-first walk of decoded fields: one line per field, containers before their children."""
    if depth > MAX_TREE_DEPTH:
        yield TreeLine(depth, key, "…(nested too deep)", "")
        return
    if isinstance(value, dict):
        if key:
            yield TreeLine(depth, key, "", type_name(value))
            depth += 1
        for k, v in value.items():
            yield from tree(v, escape(str(k)), depth)
        return
    if isinstance(value, (list, tuple)):
        if (
            all(_is_scalar(x) for x in value)
            and len(value) <= 16
            and not any(isinstance(x, (bytes, bytearray)) for x in value)
        ):
            yield TreeLine(depth, key, "[" + ", ".join(scalar_text(x) for x in value) + "]", type_name(value))
            return
        yield TreeLine(depth, key, "", type_name(value))
        for i, x in enumerate(value):
            if i >= MAX_LIST_ITEMS:
                yield TreeLine(depth + 1, "…", f"{len(value) - i} more", "")
                break
            yield from tree(x, f"[{i}]", depth + 1)
        return
    yield TreeLine(depth, key, scalar_text(value), type_name(value))


def message_tree(messages: list[Message], values: str = "short") -> dict[str, Any]:
    """The carried messages as a tree node.

    `values`: `none` shows sizes only (key_size, header value lengths); `short` each key,
    value and header value as escaped text (hex when not UTF-8) cut at VALUE_WIDTH, the
    full length in the type column; `full` the whole of them.
    """
    out = []
    for m in messages:
        d: dict[str, Any] = {"direction": m.direction}
        for name in ("topic", "partition", "offset", "message_id"):
            v = getattr(m, name)
            if v is not None:
                d[name] = v
        if m.key is not None:
            if values == "none":
                d["key_size"] = len(m.key)
            else:
                d["key"] = shown_bytes(m.key, values)
        d["value_size"] = m.value_size
        if m.value is not None and values != "none":
            d["value"] = shown_bytes(m.value, values)
        if m.timestamp_ms is not None:
            d["timestamp"] = (
                datetime.fromtimestamp(m.timestamp_ms / 1000, tz=timezone.utc)
                .isoformat()
                .replace("+00:00", "Z")
                if 0 <= m.timestamp_ms < 253402300800000
                else m.timestamp_ms
            )
        if m.headers:
            d["headers"] = {
                k: None if v is None else len(v) if values == "none" else shown_bytes(v, values)
                for k, v in m.headers
            }
        if m.compression:
            d["compression"] = m.compression
        if m.checksum_ok is not None:
            d["checksum_ok"] = m.checksum_ok
        if m.detail:
            d["detail"] = m.detail
        out.append(d)
    return {f"messages ({len(messages)})": out}


def detail_lines(f: Frame, values: str = "short") -> Iterator[TreeLine]:
    """The whole detail of a frame: header facts, fields, messages (keys and values per `values`), anomalies."""
    head = {
        "frame": {
            "protocol": f.protocol,
            "type": f.type,
            "type_code": f.type_code,
            "kind": f.kind,
            "version": f.version,
            "correlation_id": f.correlation_id,
            "status": f.status,
            "error_code": f.error_code,
            "error": f.error,
            "packets": f"{f.first_packet}-{f.packet}" if f.first_packet != f.packet else f.packet,
            "length": f.length,
            "peer_packet": f.peer_packet,
            "latency_us": f.latency_us,
        }
    }
    head["frame"] = {k: v for k, v in head["frame"].items() if v is not None}
    yield from tree(head)
    yield TreeLine(0, "fields", "", "struct")
    yield from tree(f.fields, "", 1)
    if f.messages:
        yield from tree(message_tree(f.messages, values))
    if f.anomalies:
        yield TreeLine(0, f"anomalies ({len(f.anomalies)})", "", "list")
        for a in f.anomalies:
            at = f" @ byte {a.offset}" if a.offset is not None else ""
            yield TreeLine(1, a.kind, scalar_text(a.detail + at), "")


def plain_tree_line(t: TreeLine) -> str:
    pad = "    " * (t.depth + 1)
    if not t.value:
        return f"{pad}{t.key}:" + (f" ({t.type})" if t.type and t.type != "struct" else "")
    tail = f" ({t.type})" if t.type and t.type != "null" else ""
    return f"{pad}{t.key}: {t.value}{tail}"


def rich_tree_line(t: TreeLine) -> Text:
    pad = "    " * (t.depth + 1)
    text = Text(pad, end="")
    text.append(t.key, "bold" if not t.value else "cyan")
    text.append(":")
    if t.value:
        text.append(" ")
        style = "green" if t.value.startswith('"') else "magenta" if t.type.startswith("bytes") else ""
        text.append(t.value, style)
    if t.type and t.type not in ("struct", "null"):
        text.append(f" ({t.type})", "dim")
    return text


# -- hex dump -------------------------------------------------------------------------------------
def parse_marks(items: list[str] | None) -> list[tuple[int, int]]:
    """`--mark START[:LEN]` (decimal or 0x hex) → (start, end) byte ranges; field names are skipped."""
    out = []
    for item in items or []:
        if not item[:1].isdigit():
            continue
        start_s, _, len_s = item.partition(":")
        start = int(start_s, 0)
        length = int(len_s, 0) if len_s else 1
        if start < 0 or length <= 0:
            raise ValueError(item)
        out.append((start, start + length))
    return out


def mark_names(items: list[str] | None) -> list[str]:
    """The `--mark` values that name fields (`client_id`, `topic_data.0.name`) rather than offsets."""
    return [item for item in items or [] if item[:1] and not item[:1].isdigit()]


def field_marks(spans: dict[str, tuple[int, int]] | None, names: list[str]) -> list[tuple[int, int]]:
    """Byte ranges of the named fields in the frame: exactly where the decoder read each one
    (`Frame.spans`, asked for with `Options.spans`), whatever its type.

    A name matches a field whose dotted path ends with it (`name`, `topic_data.0.name`), so
    `--mark name` marks every topic name of a Produce. Nothing is searched for by value: a
    field the decoder kept no span for is not marked rather than guessed.
    """
    if not spans:
        return []
    wanted = [tuple(n.split(".")) for n in names]
    out: list[tuple[int, int]] = []
    for path, (start, end) in spans.items():
        parts = tuple(path.split("."))
        if end > start and any(parts[-len(w) :] == w for w in wanted):
            out.append((start, end))
            if len(out) >= 1000:
                break
    return out


def _marked(i: int, marks: list[tuple[int, int]]) -> bool:
    return any(s <= i < e for s, e in marks)


def hex_lines(data: bytes, marks: list[tuple[int, int]] | None = None) -> Iterator[str]:
    """`offset  16 hex bytes  ascii`, as `tshark -x`; marked bytes are bracketed: `00[01 02]03`."""
    marks = marks or []
    for off in range(0, len(data), 16):
        chunk = data[off : off + 16]
        cells: list[str] = []
        for j in range(16):
            i = off + j
            sep = "  " if j == 8 else " "
            if j < len(chunk):
                m, prev_m = _marked(i, marks), j > 0 and _marked(i - 1, marks)
                if m and not prev_m:
                    sep = sep[:-1] + "["
                elif prev_m and not m:
                    sep = "]" + sep[1:]
                cells.append(sep + f"{chunk[j]:02x}")
            else:
                cells.append(sep + "  ")
        last = off + len(chunk) - 1
        close = "]" if _marked(last, marks) else " "
        ascii_ = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        yield f"{off:04x} {''.join(cells)}{close} {ascii_}"


def rich_hex_lines(
    data: bytes, marks: list[tuple[int, int]] | None = None, per_line: int = 16
) -> Iterator[Text]:
    """The same dump; marked bytes in reverse video instead of brackets (8 a line in narrow terminals)."""
    marks = marks or []
    for off in range(0, len(data), per_line):
        chunk = data[off : off + per_line]
        t = Text(end="")
        t.append(f"{off:04x} ", "dim")
        for j in range(per_line):
            t.append("  " if j == 8 else " ")
            if j < len(chunk):
                t.append(f"{chunk[j]:02x}", "reverse bold" if _marked(off + j, marks) else "")
            else:
                t.append("  ")
        t.append("  ")
        for j, b in enumerate(chunk):
            t.append(chr(b) if 32 <= b < 127 else ".", "reverse" if _marked(off + j, marks) else "dim")
        yield t


# -- plain tables ---------------------------------------------------------------------------------
def plain_table(headers: list[str], rows: list[list[str]], right: set[int] | None = None) -> Iterator[str]:
    """Columns padded to their widest cell, two spaces apart; `right` columns right-aligned."""
    right = right or set()
    widths = [len(h) for h in headers]
    for r in rows:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(c))

    def fmt(cells: list[str]) -> str:
        out = [c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(cells)]
        return "  ".join(out).rstrip()

    yield fmt(headers)
    yield fmt(["-" * w for w in widths])
    for r in rows:
        yield fmt(r)
