"""Every anomaly kind wiredump reports, declared once: name, severity and meaning.

The engine's kinds (TCP, capture, framing, and the problems every protocol shares: a
malformed frame, a bad checksum…) are listed here; a kind only one protocol reports is
declared by that protocol in `protocols/<name>/anomalies.py` (`ProtocolSpec.anomaly_kinds`),
so that nothing outside a protocol's module names it. From this one list come the kinds
`wiredump check` knows (to catch a misspelt `forbid`), the anomalies the timeline shows
without `-A` (by severity) and the list in docs/tables.md (a test keeps it equal to
`markdown_table()`; `python -m wiredump.dissect.anomalies` prints it). A test reads the
code for every kind it reports and fails on one that is not declared here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

ERROR = "error"
"""The traffic (or wiredump) is wrong: a broken frame, a failed checksum, a bug."""
WARNING = "warning"
"""Something is missing or could not be decoded: what is shown may be incomplete."""
NOTE = "note"
"""Normal on real networks, or harmless: worth knowing when looking closely (`-A`)."""
SEVERITIES = (ERROR, WARNING, NOTE)


@dataclass(frozen=True, slots=True)
class AnomalyKind:
    """One kind of the anomalies table's `kind` column."""

    name: str
    severity: str
    meaning: str
    protocol: str | None = None
    """The protocol that declares it; None for the engine's kinds (any protocol may report those)."""


ENGINE_KINDS: tuple[AnomalyKind, ...] = (
    # -- capture and packets --------------------------------------------------------------------
    AnomalyKind(
        "truncated_capture", WARNING, "the capture file ends inside a record: the rest of the capture is lost"
    ),
    AnomalyKind(
        "truncated_packet",
        WARNING,
        "a packet cut by the snap length: fewer bytes captured than were sent; its TCP payload is incomplete",
    ),
    AnomalyKind(
        "bad_timestamp",
        WARNING,
        "a packet whose time cannot be represented: it is given the capture's last good time",
    ),
    AnomalyKind(
        "unreadable_capture",
        ERROR,
        "a capture a Spark executor could not read (Spark exports only): none of its rows are in the tables",
    ),
    # -- TCP ------------------------------------------------------------------------------------------
    AnomalyKind(
        "gap",
        WARNING,
        "bytes of a TCP stream the capture lacks (lost by the capture, or acknowledged but never seen): "
        "frames across them are cut or skipped",
    ),
    AnomalyKind(
        "retransmission", NOTE, "a TCP segment sent again with the same bytes (the first copy is kept)"
    ),
    AnomalyKind("out_of_order", NOTE, "a TCP segment that arrived before bytes that precede it"),
    AnomalyKind(
        "overlap_conflict",
        WARNING,
        "a retransmitted TCP segment whose bytes differ from the first copy (the first copy is kept)",
    ),
    AnomalyKind(
        "half_open_released",
        NOTE,
        "connections that never carried payload (SYN floods, unused handshakes) released after a minute "
        "without a packet, counted in one anomaly at the end of the capture",
    ),
    AnomalyKind(
        "connection_limit",
        WARNING,
        "more connections tracked at once than wiredump keeps: the quietest were released early, and a "
        "later packet of theirs starts a new stream",
    ),
    AnomalyKind(
        "interface_limit",
        WARNING,
        "pcapng interface description blocks past the interfaces kept per section (`Limits.max_interfaces`),"
        " counted in one anomaly at the end of the capture; a packet naming one ends the capture",
    ),
    # -- framing ----------------------------------------------------------------------------------------
    AnomalyKind(
        "resync",
        WARNING,
        "bytes skipped because they do not start a frame of the connection's protocol, up to the next "
        "confirmed frame start",
    ),
    AnomalyKind(
        "oversize_frame",
        ERROR,
        "a frame that declares a length above its protocol's maximum: skipped without buffering it",
    ),
    AnomalyKind(
        "undecodable",
        WARNING,
        "bytes of the protocol that cannot be decoded (an encrypted or raw authentication stream): "
        "shown, not read",
    ),
    AnomalyKind(
        "undecoded",
        WARNING,
        "a connection (or its first bytes) left undecoded: no protocol recognised it with enough confidence, "
        "or its port was learnt too late",
    ),
    AnomalyKind(
        "truncated", WARNING, "a frame cut by the end of the capture or by a gap: only its start is read"
    ),
    # -- frames, whatever the protocol --------------------------------------------------------------------
    AnomalyKind(
        "malformed",
        ERROR,
        "a frame that breaks its protocol's rules (a length or count beyond its end, a field that cannot be "
        "read, bytes after the body)",
    ),
    AnomalyKind("bad_checksum", ERROR, "a checksum the protocol carries does not match the bytes"),
    AnomalyKind(
        "unknown_type",
        WARNING,
        "a frame type (API key, command) the protocol's tables do not know, or an answer whose request is "
        "not captured and that no layout fits",
    ),
    AnomalyKind(
        "unsupported_version", WARNING, "a version of a frame that the protocol's tables do not cover"
    ),
    AnomalyKind(
        "trailing_bytes",
        NOTE,
        "bytes after the last field of a frame that its receiver ignores: the frame is decoded",
    ),
    AnomalyKind(
        "decompression_failed",
        ERROR,
        "a compressed batch that does not decompress with its codec: its messages are not read",
    ),
    AnomalyKind(
        "decompression_limit",
        WARNING,
        "decompression stopped at wiredump's limit (size or ratio): not the frame's fault, its messages "
        "past the limit are not read",
    ),
    AnomalyKind(
        "message_limit",
        WARNING,
        "a frame carried more messages than wiredump keeps as rows: the rest were read and checked, not kept",
    ),
    AnomalyKind(
        "batch_limit",
        WARNING,
        "a frame carried more batches of messages than wiredump lists in its fields: the rest were read, checked and counted",
    ),
    AnomalyKind(
        "pending_limit",
        WARNING,
        "more requests waited for their answer at once over the capture than wiredump remembers: the "
        "connection's oldest is reported unanswered (its answer, if it comes, finds no request)",
    ),
    AnomalyKind(
        "element_limit",
        WARNING,
        "a frame's body held more array elements than wiredump keeps in its fields: the rest were read, "
        "not listed",
    ),
    AnomalyKind(
        "anomaly_limit",
        WARNING,
        "a frame had more anomalies of one kind than wiredump lists per frame (64): the rest are counted here",
    ),
    # -- wiredump itself -------------------------------------------------------------------------------------
    AnomalyKind(
        "internal_error",
        ERROR,
        "wiredump failed (a protocol's code raised): a bug to report, never a verdict on the capture",
    ),
)


def declared() -> dict[str, AnomalyKind]:
    """Every kind by name: the engine's, then each protocol's in registry order.

    Raises ValueError when a protocol declares a kind that is already declared (a kind
    means one thing, whoever reports it) or gives a severity that is not one of ours.
    """
    from wiredump.dissect.protocols import all_protocols

    out = {k.name: k for k in ENGINE_KINDS}
    for spec in all_protocols().values():
        for k in spec.anomaly_kinds():
            if k.name in out:
                raise ValueError(f"{spec.name} declares anomaly kind {k.name!r}, already declared")
            out[k.name] = replace(k, protocol=spec.name)
    for k in out.values():
        if k.severity not in SEVERITIES:
            raise ValueError(f"anomaly kind {k.name!r} has severity {k.severity!r}, not one of {SEVERITIES}")
    return out


def shown_by_default() -> frozenset[str]:
    """Kinds the timeline shows without `-A` when they belong to no frame: errors and warnings."""
    return frozenset(k.name for k in declared().values() if k.severity != NOTE)


def markdown_table() -> str:
    """The list of kinds as docs/tables.md holds it (engine kinds first, then by protocol)."""
    lines = ["| kind | severity | reported by | meaning |", "|---|---|---|---|"]
    for k in declared().values():
        lines.append(f"| `{k.name}` | {k.severity} | {k.protocol or 'any'} | {k.meaning} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
