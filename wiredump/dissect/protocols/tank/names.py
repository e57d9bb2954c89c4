"""The names TANK frames carry, for rules and baselines to be checked against (`ProtocolSpec.type_names`).

From the constants: the message ids' names (`MSG_NAMES`; `Unknown` for an id outside them) and
the error names of every response that carries one. TANK's error codes depend on the message
(0x01 is `unknown_partition` in a Produce response, `already_exists` in a CreateTopic one), so
the names, not the codes, are what a rule can be checked against.
"""

from __future__ import annotations

from wiredump.dissect.protocols.tank import constants as C

STYLE = "bold yellow"
"""How the CLI colours the protocol's name (a rich style; `ProtocolSpec.style`)."""

SESSION_TYPES = ("Unknown",)


def type_names() -> frozenset[str]:
    return frozenset(C.MSG_NAMES.values()) | frozenset(SESSION_TYPES)


def error_names() -> frozenset[str]:
    tables = (
        C.PRODUCE_ERRORS,
        C.CONSUME_FLAGS,
        C.DISCOVER_PARTITION_REASONS,
        C.CREATE_TOPIC_ERRORS,
        C.RELOAD_CONF_ERRORS,
    )
    return frozenset(name for table in tables for name in table.values()) | {"unknown_topic"}
