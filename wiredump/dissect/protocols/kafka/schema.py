"""Kafka's API and error tables, as the Python face reads them (fields, names, docs).

The tables come from `wiredump/proto/kafka_schema.json`, generated from Kafka's own JSON message
specs by `scripts/gen_kafka_schema.py`; the engine's decoder is generated from the same file at
build time (engine/build.rs), so the names the filter and `check` accept are the ones it emits.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any


@cache
def schema() -> dict[str, Any]:
    text = resources.files("wiredump.proto").joinpath("kafka_schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@cache
def api_names() -> dict[int, str]:
    return {int(k): v["name"] for k, v in schema()["apis"].items()}


@cache
def api_versions() -> dict[int, frozenset[int]]:
    return {int(k): frozenset(v["versions"]) for k, v in schema()["apis"].items()}


@cache
def error_names() -> dict[int, str]:
    return {int(k): v for k, v in schema()["errors"].items()}


def error_name(code: int) -> str:
    return error_names().get(code, f"UNKNOWN_ERROR_{code}")
