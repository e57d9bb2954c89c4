"""Pulsar's command and error tables, as the Python face reads them (names, docs).

From the classes generated out of the project's copy of `PulsarApi.proto` (`wiredump/proto`); the
engine's decoder (engine/src/pulsar) is generated from the same .proto at build time, so the names
`check` accepts are the ones it emits.
"""

from __future__ import annotations

from wiredump.proto import PulsarApi_pb2 as pb

TYPE_NAMES: dict[int, str] = {v.number: v.name for v in pb.BaseCommand.Type.DESCRIPTOR.values}
"""BaseCommand type number → enum name (CONNECT, SEND, …)."""
SERVER_ERRORS: dict[int, str] = {v.number: v.name for v in pb.ServerError.DESCRIPTOR.values}
"""ServerError number → name: the errors of ERROR, SEND_ERROR and responses' `error` fields."""
