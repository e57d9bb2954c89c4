"""`wiredump fields`: the declared field names, checked against the protocols' own specs read here
independently (Kafka's JSON message specs, PulsarApi.proto's text), and usable in filters and -e."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli_support import run_cli
from wiredump.dissect.filter import DisplayFilter

ROOT = Path(__file__).resolve().parents[1]


def listed(capsys: pytest.CaptureFixture[str], *proto: str) -> dict[str, tuple[str, str, str]]:
    r = run_cli(capsys, "fields", *proto)
    assert r.code == 0, r.err
    out = {}
    for line in r.out.splitlines():
        name, typ, protocol, description = line.split("\t")
        out[name] = (typ, protocol, description)
    return out


def test_kafka_fields_cover_every_spec_field(capsys: pytest.CaptureFixture[str]) -> None:
    spec = json.loads((ROOT / "wiredump/proto/kafka_schema.json").read_text())
    names: set[str] = set()

    def walk(fields: list[dict]) -> None:
        for f in fields:
            names.add(f["name"])
            walk(f.get("fields") or [])

    for api in spec["apis"].values():
        for side in ("request", "response"):
            for block in api[side]:
                walk(block["fields"])
    fields = listed(capsys, "kafka")
    assert {f"kafka.{n}" for n in names} <= set(fields)
    assert {"kafka.topic", "kafka.partition", "kafka.error", "kafka.client_id", "kafka.group_id"} <= set(
        fields
    )
    assert fields["kafka.acks"][0] == "int" and fields["kafka.group_id"][0] == "str"
    assert fields["kafka.validate_only"][0] == "bool"
    # tshark's names a user knows (tshark -G fields), mapped onto ours
    for tshark_name in ("kafka.topic_name", "kafka.partition_id", "kafka.consumer_group", "kafka.api_key"):
        assert tshark_name in fields
    assert all(p == "kafka" for _, p, _ in fields.values())


def test_pulsar_fields_cover_the_proto(capsys: pytest.CaptureFixture[str]) -> None:
    proto = (ROOT / "wiredump/proto/PulsarApi.proto").read_text()
    # BaseCommand's fields are the commands themselves (the frame's type), not fields of a frame
    start = proto.index("message BaseCommand")
    depth, i = 0, proto.index("{", start)
    while True:
        depth += {"{": 1, "}": -1}.get(proto[i], 0)
        if depth == 0:
            break
        i += 1
    proto = proto[:start] + proto[i + 1 :]
    names = set(re.findall(r"^\s*(?:optional|required|repeated)\s+[\w.]+\s+(\w+)\s*=", proto, re.M))
    assert {"topic", "producer_name", "request_id", "sequence_id", "partition_key"} <= names
    fields = listed(capsys, "pulsar")
    assert {f"pulsar.{n}" for n in names} <= set(fields)


def test_every_listed_field_compiles_in_a_filter_and_in_e(
    capsys: pytest.CaptureFixture[str], captures: Path
) -> None:
    fields = listed(capsys)
    assert len(fields) > 500
    for name, (typ, _, _) in fields.items():
        DisplayFilter(name)  # presence test compiles for every field
        if typ == "int":
            DisplayFilter(f"{name} == 1")
        elif typ in ("str", "bytes"):
            DisplayFilter(f'{name} contains "x"')
    sample = [n for n in fields if n.startswith(("tank.", "frame."))]
    args = [a for n in sample for a in ("-e", n)]
    r = run_cli(capsys, captures / "tank/t01-basic.pcap", "-T", "fields", *args, "-c", "3")
    assert r.code == 0, r.err
    assert len(r.out.splitlines()) == 3


def test_unknown_protocol(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "fields", "kafak")
    assert r.code == 2 and "unknown protocol 'kafak'" in r.err
