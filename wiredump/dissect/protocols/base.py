"""What the Python face knows of a protocol: its name, its ports and its metadata, declared once.

The native engine (engine/, Rust) frames, decodes and pairs every protocol; the Python side keeps
only what the filter, `-e`, `check`/`baseline` and the docs need to name and check: each protocol's
fields (`fields.py`), frame type and error names (`names.py`) and its own anomaly kinds
(`anomalies.py`), in the protocol's own package, read through the one `ProtocolSpec` below.
"""

from __future__ import annotations

from types import ModuleType

from wiredump.dissect.anomalies import AnomalyKind
from wiredump.dissect.fielddecl import FieldDecl


class ProtocolSpec:
    """Registration data for one protocol: its name and where its metadata lives."""

    name: str = ""
    title: str = ""
    """The name as people write it in prose (`TANK`); empty: the name capitalised (`Kafka`)."""
    ports: tuple[int, ...] = ()
    """Well-known server ports (the engine's own table decides; these are for the docs and help)."""

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

    def keepalive_types(self) -> tuple[str, ...]:
        """The frame types this protocol sends to keep a connection alive, whose number depends on
        timing: `check`'s baselines skip them by default. The `KEEPALIVE_TYPES` of the protocol's
        `names` module; none without one."""
        module = _own_module(self, "names")
        return tuple(getattr(module, "KEEPALIVE_TYPES", ())) if module is not None else ()

    def style(self) -> str:
        """How the CLI colours this protocol's name (a rich style, `bold cyan`): the `STYLE` of the
        protocol's `names` module, so the renderer names no protocol; plain `bold` without one."""
        module = _own_module(self, "names")
        return str(getattr(module, "STYLE", "bold")) if module is not None else "bold"

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
