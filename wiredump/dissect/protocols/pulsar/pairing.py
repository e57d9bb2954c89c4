"""Which Pulsar responses answer which requests.

Request ids are not unique on a connection (the C++ client keeps one counter for
lookups and another for producer/consumer commands), so a response is paired with
the oldest pending request that has its request id *and* a type it can answer. The
generic ERROR answers any request that carries a request id.
"""

from __future__ import annotations

from wiredump.dissect.protocols.pulsar.schema import TYPE_CODES

_T = TYPE_CODES

ANSWERS: dict[int, frozenset[int]] = {}
"""Request type → response types that answer it (besides ERROR)."""


def _answers(request: str, *responses: str) -> None:
    ANSWERS[_T[request]] = frozenset(_T[r] for r in responses)


for _name in ("SUBSCRIBE", "UNSUBSCRIBE", "CLOSE_PRODUCER", "CLOSE_CONSUMER", "SEEK"):
    _answers(_name, "SUCCESS")
_answers("PRODUCER", "PRODUCER_SUCCESS")
_answers("PARTITIONED_METADATA", "PARTITIONED_METADATA_RESPONSE")
_answers("LOOKUP", "LOOKUP_RESPONSE")
_answers("CONSUMER_STATS", "CONSUMER_STATS_RESPONSE")
_answers("GET_LAST_MESSAGE_ID", "GET_LAST_MESSAGE_ID_RESPONSE")
_answers("GET_TOPICS_OF_NAMESPACE", "GET_TOPICS_OF_NAMESPACE_RESPONSE")
_answers("GET_SCHEMA", "GET_SCHEMA_RESPONSE")
_answers("GET_OR_CREATE_SCHEMA", "GET_OR_CREATE_SCHEMA_RESPONSE")
for _name in (
    "NEW_TXN",
    "ADD_PARTITION_TO_TXN",
    "ADD_SUBSCRIPTION_TO_TXN",
    "END_TXN",
    "END_TXN_ON_PARTITION",
    "END_TXN_ON_SUBSCRIPTION",
):
    _answers(_name, f"{_name}_RESPONSE")
_answers("TC_CLIENT_CONNECT_REQUEST", "TC_CLIENT_CONNECT_RESPONSE")
_answers("WATCH_TOPIC_LIST", "WATCH_TOPIC_LIST_SUCCESS")
# Current brokers answer the close with SUCCESS, earlier ones with WATCH_TOPIC_LIST_SUCCESS.
_answers("WATCH_TOPIC_LIST_CLOSE", "SUCCESS", "WATCH_TOPIC_LIST_SUCCESS")
_answers("ACK", "ACK_RESPONSE")
_answers("SCALABLE_TOPIC_SUBSCRIBE", "SCALABLE_TOPIC_SUBSCRIBE_RESPONSE")

ERROR = _T["ERROR"]
REQUEST_TYPES = frozenset(ANSWERS)
RESPONSE_TYPES = frozenset(r for rs in ANSWERS.values() for r in rs) | {ERROR}

# Requests keyed by another id than request_id: first answer, then pushes (provisional commands).
SESSION_REQUESTS: dict[int, tuple[str, int]] = {
    _T["SCALABLE_TOPIC_LOOKUP"]: ("session_id", _T["SCALABLE_TOPIC_UPDATE"]),
    _T["WATCH_SCALABLE_TOPICS"]: ("watch_id", _T["WATCH_SCALABLE_TOPICS_UPDATE"]),
    _T["WATCH_TC_ASSIGNMENTS"]: ("watch_id", _T["WATCH_TC_ASSIGNMENTS_UPDATE"]),
}
SESSION_RESPONSES: dict[int, tuple[str, int]] = {
    resp: (fld, req) for req, (fld, resp) in SESSION_REQUESTS.items()
}


def fits(response_type: int, request_type: int) -> bool:
    """True if a response of `response_type` can answer a request of `request_type`."""
    if response_type == ERROR:
        return request_type in ANSWERS
    return response_type in ANSWERS.get(request_type, ())
