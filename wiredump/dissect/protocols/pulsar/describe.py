"""The one-line timeline summary of each Pulsar command.

Says what an operator looks for first: topics, producer/consumer names and ids,
lookup answers and redirects, permits, message counts and sizes, errors. Commands
without a dedicated line get their scalar fields, shortened.
"""

from __future__ import annotations

from typing import Any

MAX_LEN = 160


def _short(text: str) -> str:
    return text if len(text) <= MAX_LEN else text[: MAX_LEN - 1] + "…"


def generic(cmd: dict[str, Any]) -> str:
    parts = []
    for k, v in cmd.items():
        if isinstance(v, (dict, list, bytes)):
            continue
        parts.append(f"{k}={v}")
    return _short(" ".join(parts))


def mid(d: dict[str, Any] | None) -> str:
    """A MessageIdData dict as ledger:entry (with partition/batch when set)."""
    if not d:
        return "?"
    s = f"{d.get('ledgerId', '?')}:{d.get('entryId', '?')}"
    if d.get("partition", -1) not in (-1, None) or d.get("batch_index", -1) not in (-1, None):
        s += f":{d.get('partition', -1)}:{d.get('batch_index', -1)}"
    return s


def line(type_name: str, cmd: dict[str, Any], extra: dict[str, Any]) -> str:
    """Summary for `type_name` with command fields `cmd`; `extra` holds session knowledge (topic…)."""
    g = cmd.get
    t = type_name
    if t == "CONNECT":
        s = f"{g('client_version', '?')} protocol v{g('protocol_version', 0)} auth={g('auth_method_name', 'none')}"
        if g("proxy_to_broker_url"):
            s += f" via proxy to {g('proxy_to_broker_url')}"
        return _short(s)
    if t == "CONNECTED":
        return _short(
            f"{g('server_version', '?')} protocol v{g('protocol_version', 0)}"
            + (f" max_message_size={g('max_message_size')}" if g("max_message_size") is not None else "")
        )
    if t == "PRODUCER":
        name = f" name={g('producer_name')}" if g("producer_name") else ""
        return _short(f"{g('topic')} producer_id={g('producer_id')}{name}")
    if t == "PRODUCER_SUCCESS":
        ready = "" if g("producer_ready", True) else " (not ready: waiting for exclusive access)"
        return _short(
            f"producer_name={g('producer_name')} last_sequence_id={g('last_sequence_id', -1)}{ready}"
        )
    if t == "SUBSCRIBE":
        name = f" consumer_name={g('consumer_name')}" if g("consumer_name") else ""
        return _short(
            f"{g('topic')} subscription={g('subscription')} {g('subType')} consumer_id={g('consumer_id')}{name}"
        )
    if t in ("SEND", "MESSAGE"):
        return _short(extra.get("payload_line", ""))
    if t == "SEND_RECEIPT":
        return _short(
            f"producer_id={g('producer_id')} seq={g('sequence_id')} → {mid(g('message_id'))}"
            + (f" topic={extra['topic']}" if extra.get("topic") else "")
        )
    if t == "SEND_ERROR":
        return _short(
            f"producer_id={g('producer_id')} seq={g('sequence_id')} {g('error')}: {g('message', '')}"
        )
    if t in ("ERROR", "SUCCESS"):
        s = f"request_id={extra.get('request_id')}"
        if extra.get("answers"):
            s += f" ({extra['answers']}" + (f" {extra['topic']}" if extra.get("topic") else "") + ")"
        if t == "ERROR":
            s += f" {g('error')}: {g('message', '')}"
        return _short(s)
    if t == "FLOW":
        return _short(
            f"consumer_id={g('consumer_id')} +{g('messagePermits')} permits"
            + (f" topic={extra['topic']}" if extra.get("topic") else "")
        )
    if t == "ACK":
        ids = g("message_id") or []
        more = f" (+{len(ids) - 1} more)" if len(ids) > 1 else ""
        topic = f" topic={extra['topic']}" if extra.get("topic") else ""
        return _short(
            f"consumer_id={g('consumer_id')} {g('ack_type')} {mid(ids[0] if ids else None)}{more}{topic}"
        )
    if t == "LOOKUP":
        return _short(f"{g('topic')}" + (" authoritative" if g("authoritative") else ""))
    if t == "LOOKUP_RESPONSE":
        resp = g("response", "?")
        if resp == "Failed":
            return _short(f"Failed {g('error')}: {g('message', '')}")
        url = g("brokerServiceUrl") or g("brokerServiceUrlTls") or "?"
        auth = " (authoritative)" if g("authoritative") else ""
        proxy = " through proxy" if g("proxy_through_service_url") else ""
        topic = f"{extra['topic']} " if extra.get("topic") else ""
        return _short(f"{topic}{resp} → {url}{auth}{proxy}")
    if t == "PARTITIONED_METADATA":
        return _short(str(g("topic")))
    if t == "PARTITIONED_METADATA_RESPONSE":
        if g("response") == "Failed":
            return _short(f"Failed {g('error')}: {g('message', '')}")
        topic = f"{extra['topic']} " if extra.get("topic") else ""
        return _short(f"{topic}partitions={g('partitions', 0)}")
    if t in ("CLOSE_PRODUCER", "CLOSE_CONSUMER"):
        who = "producer_id" if t == "CLOSE_PRODUCER" else "consumer_id"
        s = f"{who}={g(who)}" + (f" topic={extra['topic']}" if extra.get("topic") else "")
        if g("assignedBrokerServiceUrl"):
            s += f" → {g('assignedBrokerServiceUrl')}"
        return _short(s)
    if t == "GET_LAST_MESSAGE_ID_RESPONSE":
        return f"last={mid(g('last_message_id'))}"
    if t == "GET_TOPICS_OF_NAMESPACE_RESPONSE":
        return _short(f"{len(g('topics') or [])} topics")
    if t == "TOPIC_MIGRATED":
        return _short(
            f"{g('resource_type')} {g('resource_id')} → {g('brokerServiceUrl') or g('brokerServiceUrlTls')}"
        )
    if t == "REDELIVER_UNACKNOWLEDGED_MESSAGES":
        n = len(g("message_ids") or [])
        return f"consumer_id={g('consumer_id')}" + (f" {n} messages" if n else " all unacked")
    return generic(cmd)
