"""The names Kafka frames carry, for rules and baselines to be checked against (`ProtocolSpec.type_names`).

Read from the generated schema (wiredump/proto/kafka_schema.json): every API name, and every
error name of Kafka's `Errors.java`. Besides the API names the session gives three types of its own:
`Unknown` (an API key the schema does not know), `TLS` (an encrypted connection on a Kafka port) and
`SaslToken` (a raw SASL/GSSAPI token between requests).
"""

from __future__ import annotations

from wiredump.dissect.protocols.kafka import schema

STYLE = "bold cyan"
"""How the CLI colours the protocol's name (a rich style; `ProtocolSpec.style`)."""

SESSION_TYPES = ("Unknown", "TLS", "SaslToken")
KEEPALIVE_TYPES = ("Heartbeat",)
"""A consumer's periodic Heartbeat: how many come depends on timing (`check`'s baselines skip it)."""


def type_names() -> frozenset[str]:
    return frozenset(schema.api_names().values()) | frozenset(SESSION_TYPES)


def error_names() -> frozenset[str]:
    return frozenset(schema.error_names().values())
