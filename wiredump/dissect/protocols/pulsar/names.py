"""The names Pulsar frames carry, for rules and baselines to be checked against (`ProtocolSpec.type_names`).

From PulsarApi.proto as compiled into the schema: the `BaseCommand.Type` enum (the frame types,
`SEND`, `PING`, …) and the `ServerError` enum (the errors of ERROR, SEND_ERROR and the
`error` fields of responses). `PROXY_PROTOCOL` is the type the session gives a HAProxy PROXY
header in front of the first command.
"""

from __future__ import annotations

from wiredump.dissect.protocols.pulsar import schema

STYLE = "bold magenta"
"""How the CLI colours the protocol's name (a rich style; `ProtocolSpec.style`)."""

SESSION_TYPES = ("PROXY_PROTOCOL",)
KEEPALIVE_TYPES = ("PING", "PONG")
"""The connection's keep-alive probes: how many come depends on timing (`check`'s baselines skip them)."""


def type_names() -> frozenset[str]:
    return frozenset(schema.TYPE_NAMES.values()) | frozenset(SESSION_TYPES)


def error_names() -> frozenset[str]:
    return frozenset(schema.SERVER_ERRORS.values())
