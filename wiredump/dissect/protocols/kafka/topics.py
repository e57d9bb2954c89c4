"""Topic ids (Fetch v13+, DescribeTopicPartitions…) mapped back to names, per run.

Newer Kafka APIs name topics by UUID only. Metadata-like responses carry both, so the
names they list resolve later frames. The rule: a topic id shows the name learnt from a
response decoded earlier in the capture, on any connection of that capture. The map
lives in the run's state (`ConnContext.run_state`, one per capture), never in the
process, so a capture decodes the same whatever was decoded before it. Under
`--workers` each worker frames the Kafka connections other workers decode too, in
observe mode (see `KafkaSession`), so every worker learns the same names at the same
point of the capture.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

MAX_IDS = 100_000
NULL_ID = "00000000-0000-0000-0000-000000000000"
RUN_KEY = "kafka.topic_names"
"""The key of the map in `ConnContext.run_state`."""


class TopicNames:
    """A bounded topic id -> name map (the oldest ids are forgotten first)."""

    __slots__ = ("_names",)

    def __init__(self) -> None:
        self._names: OrderedDict[str, str] = OrderedDict()

    def name_of(self, topic_id: str) -> str | None:
        return self._names.get(topic_id)

    def learn(self, body: dict[str, Any]) -> None:
        """Remember every (topic_id, name) pair a response body lists under `topics`."""
        topics = body.get("topics")
        if not isinstance(topics, list):
            return
        names = self._names
        for t in topics:
            if isinstance(t, dict):
                tid, name = t.get("topic_id"), t.get("name")
                if isinstance(tid, str) and isinstance(name, str) and tid != NULL_ID:
                    names[tid] = name
                    if len(names) > MAX_IDS:
                        names.popitem(last=False)

    def __len__(self) -> int:
        return len(self._names)


def of_run(run_state: dict[str, object]) -> TopicNames:
    """The run's map, made on first use."""
    names = run_state.get(RUN_KEY)
    if not isinstance(names, TopicNames):
        names = run_state[RUN_KEY] = TopicNames()
    return names
