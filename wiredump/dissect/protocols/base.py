"""The one small interface every protocol implements.

Modelled on Wireshark's `tcp_dissect_pdus`: the protocol says how long the frame at
the head of a byte stream is, where the next plausible frame starts after garbage,
and how to decode one whole frame. Buffering, packet bookkeeping, gaps, truncation,
resynchronisation reporting and output ordering belong to the framing engine, so a
protocol module holds nothing but protocol knowledge.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType

from wiredump.dissect.anomalies import AnomalyKind
from wiredump.dissect.correlation import Correlator
from wiredump.dissect.fielddecl import FieldDecl
from wiredump.dissect.limits import Limits
from wiredump.dissect.model import Anomaly, Frame

# Values `Session.frame_length` may return besides a positive length.
NEED_MORE = 0
"""Not enough bytes yet to know the frame's length."""
NOT_A_FRAME = -1
"""The bytes at the head cannot start a frame: the engine resynchronises."""
UNDECODABLE = -2
"""The rest of this direction cannot be decoded (TLS, raw SASL…): the engine stops framing it."""


@dataclass(slots=True)
class ConnContext:
    """What a session knows of its connection and of the run."""

    capture: str
    stream: int
    client: str
    client_port: int
    server: str
    server_port: int
    correlator: Correlator
    limits: Limits
    options: dict[str, object] = field(default_factory=dict)
    report: Callable[[Anomaly], None] = lambda a: None
    """Report an anomaly that belongs to no frame (the engine stamps packet and stream)."""
    run_state: dict[str, object] = field(default_factory=dict)
    """State one run (one capture) shares between its connections, keyed by protocol-qualified
    names (e.g. Kafka's topic names); made once per capture by the pipeline, never process-global.
    Left to its default, it belongs to this connection alone."""


class Session(ABC):
    """Per-connection decoder state (both directions)."""

    def __init__(self, ctx: ConnContext) -> None:
        self.ctx = ctx

    @abstractmethod
    def frame_length(self, buf: bytes | bytearray, pos: int, role: str) -> int:
        """Total length in bytes (framing included) of the frame starting at `buf[pos]`.

        Return NEED_MORE, NOT_A_FRAME or UNDECODABLE instead when that is the answer.
        A length above the protocol's maximum is returned as is: the engine reports
        it as `oversize_frame` and resynchronises without buffering it. `buf` is the
        engine's buffer: read it, never keep a reference to it.
        """

    @abstractmethod
    def resync(self, buf: bytes | bytearray, pos: int, role: str) -> int | None:
        """Absolute offset of the first plausible frame start at or after `buf[pos]`, or None.

        None means no start was found in what is buffered; the engine keeps the last
        `RESYNC_KEEP` bytes and asks again when more arrive.
        """

    @abstractmethod
    def decode(self, data: bytes, role: str, complete: bool = True) -> list[Frame]:
        """Decode one frame's bytes sent by `role`; never raise.

        `complete` is False for the bytes left when the stream ended or a gap cut the
        frame: return a frame with status `truncated` describing what can be read.
        Usually one frame; a protocol may return none (bytes it swallows) or several.
        """

    def close(self) -> list[Frame]:
        """Called once at the end of the connection; may return frames it still held."""
        return []


MIN_CONFIDENCE = 50
"""Score a connection's best protocol needs (see `ProtocolSpec.score`); below it the connection
stays undecoded: raw bytes are shown, never a guess."""
CERTAIN = 90
"""Score at which detection decides at once instead of waiting for more of the connection's bytes."""


class ProtocolSpec(ABC):
    """Registration data for one protocol: name, ports, detection, sessions."""

    name: str = ""
    title: str = ""
    """The name as people write it in prose (`TANK`); empty: the name capitalised (`Kafka`)."""
    ports: tuple[int, ...] = ()
    """Well-known server ports: a connection on one of them is this protocol's, whatever its bytes."""
    max_frame: int = 0
    """Largest frame (framing included) that the protocol allows; beyond it, `oversize_frame`."""
    shares_run_state: bool = False
    """True when a session learns from other connections through `ConnContext.run_state`. Then a
    worker of a parallel run (which decodes only its share of the connections) also frames the
    others, with `options["observe"]` set: the session learns what it would learn and returns no
    frames, so that every worker knows the same at each point of the capture."""

    def score(self, client: bytes, server: bytes, opened: bool) -> int:
        """How sure (0–100) that a connection whose client sent `client` and whose server sent
        `server` first (either may be empty) speaks this protocol.

        Detection asks every protocol, for both role assignments when the capture did not
        see the connection open (`opened` False: no SYN, the bytes may start inside a
        frame), and takes the best score if it reaches `MIN_CONFIDENCE` and no other
        protocol ties with it. Scores mean the same for every protocol: about 30 for one
        whole frame that frames and decodes cleanly from a side's first byte, more for the
        next frame in a row, 40 more when one side answers the other (see `trial.Trial`),
        and what only the protocol knows (a greeting, a handshake) on top; less for a frame
        that does not decode after clean ones, or of a kind the other side sends (a response
        from the client). A partial frame or a header alone is no evidence. The default is the common part, computed by the
        protocol's own session on the bytes; protocols add their openers. An exception is
        a bug (detection reports it as `internal_error` and scores the protocol 0).
        """
        from wiredump.dissect.protocols.trial import trial

        return trial(self, client, server, opened).points()

    def sniff(self, data: bytes, role: str) -> bool:
        """Do `data`, the first bytes `role` sent, open a connection the way this protocol does?

        A hint that `score` may add to (a greeting), never a decision on its own.
        """
        return False

    @abstractmethod
    def new_session(self, ctx: ConnContext) -> Session:
        """Fresh per-connection state."""

    def fields(self) -> list[FieldDecl]:
        """The fields filters and `-e` may name (`<name>.<field>`), each declared once: name, type, meaning.

        By default the `declare()` of the `fields` module in the protocol's own package
        (`protocols/<name>/fields.py`); a protocol without one offers only the frame columns.
        """
        module = _own_module(self, "fields")
        if module is None:
            return []
        declared: list[FieldDecl] = module.declare()
        return declared

    def type_names(self) -> frozenset[str]:
        """Every frame type name this protocol's frames can carry (`Frame.type`: `Produce`, `SEND`…).

        Rules and baselines name frames as `<protocol>.<type>`; a name that is not here is a
        mistake to report (with the closest one), never a rule that silently matches nothing.
        By default the `type_names()` of the `names` module in the protocol's own package, read
        from the protocol's own tables; empty (nothing checked) for a protocol without one.
        """
        module = _own_module(self, "names")
        return frozenset(module.type_names()) if module is not None else frozenset()

    def error_names(self) -> frozenset[str]:
        """Every error name this protocol's frames can carry (`Frame.error`), for `allowed_errors`.

        Names rather than a code → name map: some protocols' codes mean different errors in
        different messages (TANK), and some errors are reply types with no code of their own
        (Pravega). From the `names` module as `type_names`; empty (nothing checked) without one.
        """
        module = _own_module(self, "names")
        return frozenset(module.error_names()) if module is not None else frozenset()

    def anomaly_kinds(self) -> list[AnomalyKind]:
        """The anomaly kinds only this protocol reports (name, severity, meaning), each declared once.

        By default the `declare()` of the `anomalies` module in the protocol's own package
        (`protocols/<name>/anomalies.py`); none without one. The kinds every protocol may report
        (`malformed`, `bad_checksum`…) are the engine's (`wiredump.dissect.anomalies`).
        """
        module = _own_module(self, "anomalies")
        if module is None:
            return []
        declared: list[AnomalyKind] = module.declare()
        return declared


def _own_module(spec: ProtocolSpec, name: str) -> ModuleType | None:
    """The module `name` (`fields`, `names`, `anomalies`) of the package that defines `spec`'s class,
    or None when it has none: a protocol declares its metadata in its own package, nowhere else."""
    import importlib
    import sys

    package = sys.modules[type(spec).__module__].__package__
    if not package:  # a spec class defined outside any package
        return None
    try:
        return importlib.import_module(f"{package}.{name}")
    except ModuleNotFoundError as e:
        if e.name == f"{package}.{name}":
            return None
        raise
