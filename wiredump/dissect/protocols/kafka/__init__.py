"""Kafka: framing, headers, pairing and table-driven body decoding for every API key and version.

Modules: `schema` (the generated tables compiled into per-version plans), `body` (the one
walker for every request/response body), `records` (record batches v2 and legacy message
sets, checksums, decompression, messages), `embedded` (consumer-protocol and KRaft
structures carried as bytes), `topics` (topic id -> name), `summary` (timeline lines),
`session` (framing, resync, TLS, SASL, pairing) and `spec` (registration).
"""

from wiredump.dissect.protocols.kafka.spec import SPEC

__all__ = ["SPEC"]
