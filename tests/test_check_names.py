"""Type and error names in rules and baselines are checked against what each protocol declares.

The declared names are compared with the protocols' own reference texts in ../shared/reference,
parsed here independently (Kafka's message JSON files and errors.tsv, PulsarApi.proto's
`BaseCommand.Type` and `ServerError` enums, Pravega's WIRE.md command table and failure list,
TANK's WIRE.md message table), and with every type and error the real captures' frames carry
(so a correct rule is never refused). The misspellings of issue 16 are usage errors with exit 2,
file:line and the closest name.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli_support import run_cli
from tests.conftest import CAPTURES, REFERENCE, tsv_rows
from wiredump.check import names, rules
from wiredump.check.spec import SpecError, load
from wiredump.dissect.protocols import all_protocols
from wiredump.dissect.protocols.base import ProtocolSpec

CAPTURE = CAPTURES / "kafka" / "kafka-python-basic.pcap"


def parse_rules(text: str) -> rules.Rules:
    return rules.parse(load(text, "r.yaml"), "r.yaml")


def refused(text: str) -> SpecError:
    with pytest.raises(SpecError) as e:
        parse_rules(text)
    return e.value


# -- the cases, through the command line ---------------------------------------------------
@pytest.mark.skipif(not CAPTURE.exists(), reason="real captures not found")
@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("latency_ms:\n  kafka.Prodce: {p99: 50}\n", 2, "unknown type 'Prodce'"),
        ("versions:\n  kafka.Fech: {max: 12}\n", 2, "unknown type 'Fech'"),
        ("allowed_errors:\n  kafka.JoinGrop: [0]\n", 2, "unknown type 'JoinGrop'"),
        (
            "allowed_errors:\n  kafka.JoinGroup:\n    - MEMBER_ID_REQUIRED\n    - REBALANCE_IN_PROGRES\n",
            4,
            "unknown error name 'REBALANCE_IN_PROGRES' for kafka.JoinGroup",
        ),
        ("forbid:\n  pulsar.SEDN: [malformed]\n", 2, "unknown type 'SEDN'"),
        ("expect:\n  tank.Produse: {min: 1}\n", 2, "unknown type 'Produse'"),
        ("max_unanswered:\n  pravega.SetupApend: 0\n", 2, "unknown type 'SetupApend'"),
        ("expect:\n  kafak.Produce: {min: 1}\n", 2, "unknown protocol 'kafak'"),
    ],
)
def test_misspelled_names_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int, reason: str
) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    r = run_cli(capsys, "check", str(CAPTURE), "--rules", str(path))
    assert r.code == 2
    assert "Traceback" not in r.err
    assert f"{path}:{line}" in r.err and reason in r.err


def test_closest_known_name_is_suggested() -> None:
    assert "did you mean kafka.Produce?" in refused("latency_ms:\n  kafka.Prodce: {p99: 5}\n").reason
    assert "did you mean kafka.Fetch?" in refused("versions:\n  kafka.Fech: {max: 12}\n").reason
    assert "did you mean kafka.JoinGroup?" in refused("allowed_errors:\n  kafka.JoinGrop: [0]\n").reason
    e = refused("allowed_errors:\n  kafka.JoinGroup: [REBALANCE_IN_PROGRES]\n")
    assert "did you mean REBALANCE_IN_PROGRESS?" in e.reason
    assert "did you mean pulsar.SEND?" in refused("forbid:\n  pulsar.SEDN: [malformed]\n").reason
    assert "did you mean kafka?" in refused("expect:\n  kafak.Produce: {min: 1}\n").reason
    # A wildcard protocol with a literal type is checked against every protocol.
    assert "did you mean kafka.Fetch?" in refused("expect:\n  '*.Fecth': {min: 0}\n").reason


def test_wildcards_case_and_codes_stay_allowed() -> None:
    r = parse_rules(
        "expect:\n"
        "  kafka.*: {min: 0}\n"
        "  '*.Fetch': {min: 0}\n"
        "  kafka.Fetch*: {min: 0}\n"
        "  pulsar.send: {min: 0}\n"  # names are case-insensitive, as frames are matched
        "  'tank.[PC]*': {min: 0}\n"
        "  '*': {min: 0}\n"
        "allowed_errors:\n"
        "  kafka.JoinGroup: [MEMBER_ID_REQUIRED, member_id_required, 79, 9999]\n"  # codes are not checked
        "  pulsar.*: [ServiceNotReady]\n"
        "  pravega.SetupAppend: [WrongHost, NoSuchSegment]\n"
        "  tank.Produce: [unknown_topic, no_leader]\n"
        "  '*': [NOT_COORDINATOR, TopicNotFound]\n"
    )
    assert len(r.rules) == 11


def test_error_names_are_checked_against_the_named_protocol() -> None:
    # A Pulsar error is not a Kafka error.
    e = refused("allowed_errors:\n  kafka.Produce: [TopicNotFound]\n")
    assert e.line == 2 and "unknown error name 'TopicNotFound'" in e.reason


def test_baseline_skip_names_are_checked(tmp_path: Path) -> None:
    from wiredump.check import baseline

    text = "wiredump_baseline: 1\nskip: [kafka.Heartbeat, kafka.Heartbaet]\nconnections: []\n"
    with pytest.raises(SpecError) as e:
        baseline.parse(load(text, "b.yaml"), "b.yaml")
    assert e.value.line == 2 and "did you mean kafka.Heartbeat?" in e.value.reason


# -- the registry, not a list in check/ ------------------------------------------------------------
class _Fake(ProtocolSpec):
    name = "fakeproto"
    ports = (1,)


def test_protocols_come_from_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    import wiredump.dissect.protocols as registry

    assert names.protocols() == tuple(all_protocols())
    assert set(names.protocols()) == {"kafka", "pulsar", "pravega", "tank"}
    fake = {**all_protocols(), "fakeproto": _Fake()}
    monkeypatch.setattr(registry, "all_protocols", lambda: fake)
    assert "fakeproto" in names.protocols()
    # A protocol that declares no names (no `names` module) has its types accepted as written.
    assert _Fake().type_names() == frozenset() and _Fake().error_names() == frozenset()
    parse_rules("expect:\n  fakeproto.Anything: {min: 0}\n")


# -- declared names against the references ------------------------------------------------------
def _spec(name: str) -> ProtocolSpec:
    return all_protocols()[name]


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="reference not found")
def test_kafka_names_match_the_message_definitions() -> None:
    apis = set()
    for folder in ("message", "message-3.9"):
        for p in (REFERENCE / "kafka" / folder).glob("*Request.json"):
            # The JSON files carry // comments: strip them before parsing.
            text = re.sub(r"^\s*//.*$", "", p.read_text(), flags=re.M)
            doc = json.loads(text)
            if doc.get("type") == "request" and "apiKey" in doc:
                apis.add(doc["name"].removesuffix("Request"))
    assert _spec("kafka").type_names() == apis | {"Unknown", "TLS", "SaslToken"}
    errors = {r["name"] for r in tsv_rows(REFERENCE / "kafka" / "errors.tsv")}
    assert _spec("kafka").error_names() == errors


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="reference not found")
def test_pulsar_names_match_the_proto() -> None:
    proto = (REFERENCE / "pulsar" / "PulsarApi.proto").read_text()
    base = proto[proto.index("message BaseCommand") :]
    type_enum = base[base.index("enum Type") : base.index("}", base.index("enum Type"))]
    types = set(re.findall(r"^\s*(\w+)\s*=\s*\d+", type_enum, re.M))
    err = proto[proto.index("enum ServerError") :]
    errors = set(re.findall(r"^\s*(\w+)\s*=\s*\d+", err[: err.index("}")], re.M))
    assert _spec("pulsar").type_names() == types | {"PROXY_PROTOCOL"}
    assert _spec("pulsar").error_names() == errors


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="reference not found")
def test_pravega_names_match_the_command_table() -> None:
    wire = (REFERENCE / "pravega" / "WIRE.md").read_text()
    rows = re.findall(r"^\| *([−-]?\d+) \| ([A-Z_0-9]+) \((\w+)\)", wire, re.M)
    assert _spec("pravega").type_names() == {cls for _, _, cls in rows}
    by_constant = {const: cls for _, const, cls in rows}
    failures = wire[wire.index("answered by a failure reply") : wire.index("isFailure() = true")]
    assert _spec("pravega").error_names() == {
        by_constant[c] for c in re.findall(r"([A-Z_]+) \(\d+", failures)
    }


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="reference not found")
def test_tank_types_match_the_message_table() -> None:
    wire = (REFERENCE / "tank" / "WIRE.md").read_text()
    rows = re.findall(r"^\| 0x0[0-9a-f] \| `?(?:__obsolete_)?(\w+)`? \|", wire, re.M)
    assert _spec("tank").type_names() == set(rows) | {"Unknown"}
    # Errors (prose in WIRE.md §4-§6): the Produce codes it lists by name.
    errors = _spec("tank").error_names()
    assert {"unknown_partition", "unknown_topic", "no_leader", "other_leader", "read_only"} <= errors


# -- no false refusals: every name the real captures carry is declared ---------------------------
@pytest.mark.skipif(not CAPTURES.is_dir(), reason="real captures not found")
def test_every_type_and_error_of_the_real_captures_is_declared() -> None:
    from wiredump.dissect.pipeline import Options, dissect

    seen: set[tuple[str, str, str | None]] = set()
    paths = sorted(str(p) for p in CAPTURES.glob("*/*.pcap"))
    assert len(paths) >= 20
    for ev in dissect(paths, Options(messages=False)):
        if ev.kind == "frame" and ev.obj.type != "?":
            seen.add((ev.obj.protocol, ev.obj.type, ev.obj.error))
    assert {p for p, _, _ in seen} == {"kafka", "pulsar", "pravega", "tank"}
    specs = all_protocols()
    for proto, type_, error in seen:
        assert type_ in specs[proto].type_names(), (proto, type_)
        assert error is None or error in specs[proto].error_names(), (proto, type_, error)
    # And a rule naming each of them is accepted.
    lines = sorted({f"  {p}.{t}: {{min: 0}}" for p, t, _ in seen})
    parse_rules("expect:\n" + "\n".join(lines) + "\n")


def test_keepalive_types_are_declared_by_their_protocol() -> None:
    # The baselines' default skip list is every protocol's own declaration, each a type it has.
    from wiredump.check.transcript import Config, default_skip

    specs = all_protocols()
    declared = [(name, t) for name, spec in specs.items() for t in spec.keepalive_types()]
    assert all(t in specs[name].type_names() for name, t in declared)
    assert default_skip() == tuple(f"{n}.{t}" for n, t in declared) == Config().skip
    assert set(default_skip()) == {"kafka.Heartbeat", "pulsar.PING", "pulsar.PONG", "pravega.KeepAlive"}
    assert _Fake().keepalive_types() == ()
