"""Pulsar's schema: the committed generated code is what protoc makes of the committed .proto."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import google.protobuf
import pytest

from tests.conftest import REFERENCE as SHARED_REFERENCE
from wiredump.dissect.protocols.pulsar import schema

ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "wiredump" / "proto"
REFERENCE = SHARED_REFERENCE / "pulsar" / "PulsarApi.proto"


def _gencode_version() -> tuple[int, ...]:
    text = (PROTO_DIR / "PulsarApi_pb2.py").read_text()
    m = re.search(r"# Protobuf Python Version: (\d+)\.(\d+)\.(\d+)", text)
    assert m, "generated file lacks its version header"
    return tuple(int(x) for x in m.groups())


def test_committed_generated_code_matches_a_fresh_generation() -> None:
    pytest.importorskip("grpc_tools.protoc")
    # protoc 35.x writes gencode for protobuf-python 7.35.x; another protoc writes other headers.
    libprotoc = subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "--version"], capture_output=True, text=True
    ).stdout.split()[-1]
    if int(libprotoc.split(".")[0]) != _gencode_version()[1]:
        pytest.skip(f"installed protoc {libprotoc} differs from the one that generated the committed file")
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_pulsar_proto.py"), "--check"], cwd=ROOT
    )
    assert result.returncode == 0


def test_project_schema_is_the_reference_schema() -> None:
    if not REFERENCE.exists():
        pytest.skip("reference schema not available")
    assert (PROTO_DIR / "PulsarApi.proto").read_text() == REFERENCE.read_text()
    assert "Licensed to the Apache Software Foundation" in (PROTO_DIR / "PulsarApi.proto").read_text()


def test_runtime_satisfies_gencode_and_pyproject_bound() -> None:
    runtime = tuple(int(x) for x in google.protobuf.__version__.split(".")[:3])
    assert runtime >= _gencode_version()
    pyproject = (ROOT / "pyproject.toml").read_text()
    m = re.search(r'"protobuf>=(\d+)\.(\d+)(?:\.(\d+))?"', pyproject)
    assert m
    bound = tuple(int(x or 0) for x in m.groups())
    assert bound >= _gencode_version(), "pyproject allows a protobuf older than the generated code needs"


def test_every_command_type_of_the_notes_table_is_named() -> None:
    # NOTES §3: codes 2–40, 50–68 and 70–81; 0, 1, 41–49 and 69 are unused.
    expected = set(range(2, 41)) | set(range(50, 69)) | set(range(70, 82))
    assert set(schema.TYPE_NAMES) == expected
    assert schema.TYPE_NAMES[6] == "SEND" and schema.TYPE_NAMES[24] == "LOOKUP_RESPONSE"
    assert schema.TYPE_NAMES[68] == "TOPIC_MIGRATED"
    # Every type's command sits in the BaseCommand field with its own number.
    from google.protobuf.descriptor import FieldDescriptor

    from wiredump.proto import PulsarApi_pb2 as pb

    fields = {f.number for f in pb.BaseCommand.DESCRIPTOR.fields if f.type == FieldDescriptor.TYPE_MESSAGE}
    assert fields == expected
