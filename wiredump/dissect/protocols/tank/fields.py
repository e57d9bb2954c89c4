"""TANK's filter fields: the keys the TANK decoders write, each declared here once.

TANK has no machine-readable schema; these follow the field names of TANK's own
client and broker (`tank_client.cpp`), as the decoders in this package use them.
`tank.topic` is every topic a frame names (`topic`, and `name` inside `topics`);
each message's key and value are `tank.message.*`.
"""

from __future__ import annotations

from wiredump.dissect.fielddecl import BOOL, INT, NONE, STR, FieldDecl, message_fields

_FIELDS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("topic", STR, "Every topic the frame names", ("topic", "topics/name")),
    ("partition", INT, "Every partition index the frame names", ("partition",)),
    ("request_id", INT, "Request id pairing a response with its request", ("request_id",)),
    ("client_id", STR, "Client id of a Produce or Consume request", ("client_id",)),
    ("client_version", INT, "Client protocol version of a Produce or Consume request", ("client_version",)),
    ("required_acks", INT, "Acks a Produce asks for", ("required_acks",)),
    ("ack_timeout_ms", INT, "Produce ack timeout (ms)", ("ack_timeout_ms",)),
    ("max_wait_ms", INT, "Consume long-poll wait (ms; 4294967295 waits forever)", ("max_wait_ms",)),
    ("min_bytes", INT, "Consume minimum bytes", ("min_bytes",)),
    ("seqnum", INT, "Sequence numbers: a Consume's start, each message's", ("seqnum",)),
    ("fetch_size", INT, "Consume fetch size per partition", ("fetch_size",)),
    (
        "first_available_seqnum",
        INT,
        "First available sequence number of a partition",
        ("first_available_seqnum",),
    ),
    ("high_watermark", INT, "High watermark of a partition", ("high_watermark",)),
    ("base_seqnum", INT, "Base sequence number of a bundle", ("base_seqnum",)),
    ("error", STR, "Error name of a partition or response", ("error",)),
    ("error_code", INT, "Error code of a partition or response", ("error_code",)),
    ("error_or_flags", INT, "Consume response's error-or-flags byte", ("error_or_flags",)),
    ("flags", INT, "Flags of a request, bundle or message", ("flags",)),
    ("payload_size", INT, "Payload bytes after the 5-byte header", ("payload_size",)),
    ("partitions", INT, "Partition count of CreateTopic / DiscoverPartitions", ("partitions",)),
    ("replication_factor", INT, "Replication factor of CreateTopic", ("replication_factor",)),
    ("config", STR, "Topic configuration of CreateTopic", ("config",)),
    ("bundle_length", INT, "Bytes of a Produce bundle", ("bundle_length",)),
    ("codec", STR, "Compression codec of a bundle", ("codec",)),
    ("message_count", INT, "Messages in a bundle", ("message_count",)),
    ("sparse", BOOL, "Bundle in sparse format", ("sparse",)),
    ("timestamp_ms", INT, "Message timestamps (ms since the epoch)", ("timestamp_ms",)),
    ("value_size", INT, "Message value lengths", ("value_size",)),
    ("producer_id", INT, "Producer id of a ProduceWithSeqnum", ("producer_id",)),
    ("producer_epoch", INT, "Producer epoch of a ProduceWithSeqnum", ("producer_epoch",)),
    ("cluster_name", STR, "Cluster name of a DiscoverTopology answer", ("cluster_name",)),
    ("endpoint", STR, "Node endpoints of a topology answer", ("endpoint", "address")),
    ("topics_list", NONE, "The topics structure of a request or response", ("topics",)),
)


def declare() -> list[FieldDecl]:
    out = [FieldDecl(f"tank.{n}", t, d, keys=k) for n, t, d, k in _FIELDS]
    out += message_fields("tank", "message", "TANK message")
    return out
