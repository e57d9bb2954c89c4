"""Topic ids (Fetch v13+, DescribeTopicPartitions…) mapped back to names.

Newer Kafka APIs name topics by UUID only. Metadata-like responses carry both, so the
names learnt from them resolve later frames; UUIDs are unique, so one bounded map
shared by all connections is enough.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

MAX_IDS = 100_000
NULL_ID = "00000000-0000-0000-0000-000000000000"
_NAMES: OrderedDict[str, str] = OrderedDict()


def name_of(topic_id: str) -> str | None:
    return _NAMES.get(topic_id)


def learn(body: dict[str, Any]) -> None:
    """Remember every (topic_id, name) pair a response body lists under `topics`."""
    topics = body.get("topics")
    if not isinstance(topics, list):
        return
    for t in topics:
        if isinstance(t, dict):
            tid, name = t.get("topic_id"), t.get("name")
            if isinstance(tid, str) and isinstance(name, str) and tid != NULL_ID:
                _NAMES[tid] = name
                if len(_NAMES) > MAX_IDS:
                    _NAMES.popitem(last=False)
