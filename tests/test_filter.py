"""The display-filter language: parsing, semantics, error positions, and `-Y` on real captures."""

from __future__ import annotations

import pytest
from cli_support import parse_lines, read_tsv, run_cli

from wiredump.dissect.filter import DisplayFilter, FilterError, tokenize
from wiredump.dissect.model import Anomaly, Frame, Message


def frame(**kw) -> Frame:
    f = Frame(protocol=kw.pop("protocol", "kafka"), type=kw.pop("type", "Produce"), type_code=0)
    for k, v in kw.items():
        setattr(f, k, v)
    return f


PRODUCE = frame(
    kind="request",
    version=9,
    correlation_id=7,
    stream=3,
    packet=45,
    latency_us=None,
    summary="orders[0] 3 records",
    fields={"body": {"topic_data": [{"name": "orders", "partition_data": []}]}},
)
RESPONSE = frame(
    kind="response",
    role="server",
    version=9,
    correlation_id=7,
    stream=3,
    packet=46,
    latency_us=15_000,
    error_code=3,
    error="UNKNOWN_TOPIC_OR_PARTITION",
    status="ok",
)
SEND = frame(
    protocol="pulsar",
    type="SEND",
    kind="request",
    stream=0,
    packet=10,
    status="bad_checksum",
    messages=[Message("produce", 12, topic="persistent://public/default/payments")],
    anomalies=[Anomaly("bad_checksum", "crc32c mismatch", 8)],
)
ALL = [PRODUCE, RESPONSE, SEND]


def pick(expr: str) -> list[int]:
    flt = DisplayFilter(expr)
    return [f.packet for f in ALL if flt.matches(f, "x.pcap")]


@pytest.mark.parametrize(
    ("expr", "packets"),
    [
        ('protocol == "kafka" && type == "Produce" && latency_us > 10000', [46]),
        ("protocol == kafka and type == Produce and latency_us > 10ms", [46]),
        ("latency_us > 15ms", []),
        ("latency_us >= 15ms", [46]),
        ("latency_ms == 15", [46]),
        ('status != "ok"', [10]),
        ('topic ~ "orders"', [45]),
        ('topic ~ "payments$"', [10]),
        ('topic == "orders"', [45]),
        ("error", [46]),
        ("!error", [45, 10]),
        ("not error_code", [45, 10]),
        ("error_code != 0", [46]),
        ("error_code == 0", []),  # a null never compares
        ("version != 9", []),  # SEND has no version: null, so not "!= 9" either
        ("type in {Produce SEND}", [45, 46, 10]),
        ('type in {"SEND", Fetch}', [10]),
        ("stream in {1..3}", [45, 46]),
        ("!(stream in {1..3})", [10]),
        ("kind == response || protocol == pulsar", [46, 10]),
        ("(kind == request || kind == response) && stream == 3", [45, 46]),
        ("kind == request && !(protocol == pulsar)", [45]),
        ("summary contains records", [45]),
        ("error ~ '^UNKNOWN_'", [46]),
        ("anomaly == bad_checksum", [10]),
        ("messages > 0", [10]),
        ("capture == x.pcap", [45, 46, 10]),
        ("packet == 0x2d", [45]),
        ("correlation_id eq 7 and role == server", [46]),
    ],
)
def test_semantics(expr, packets):
    assert pick(expr) == packets


@pytest.mark.parametrize(
    ("expr", "message", "column"),
    [
        ("protocol ==", "expected a value after '=='", 12),
        ("protocol kafka", "expected an operator", 10),
        ("(type == Produce", "expected ')' to close the '(' at column 1", 17),
        ("type == Produce)", "unbalanced ')'", 16),
        ("latncy_us > 5", "unknown column 'latncy_us'; did you mean 'latency_us'?", 1),
        ('latency_us > "fast"', 'latency_us is a number, "fast" is not', 14),
        ('type ~ "("', "bad regular expression", 8),
        ('type == "Produce', "string not closed", 9),
        ("type == Produce &&", "expected a column name, found the end of the filter", 19),
        ("type == Produce # x", "unexpected character '#'", 17),
        ("stream in 1", "expected '{' after 'in'", 11),
        ("stream in {}", "empty set", 11),
        ("", "empty filter", 1),
    ],
)
def test_errors_point_at_the_mistake(expr, message, column):
    with pytest.raises(FilterError) as e:
        DisplayFilter(expr)
    assert message in e.value.message
    assert e.value.pos + 1 == column
    lines = e.value.render().splitlines()
    assert lines[1] == f"  {expr}"
    assert lines[2] == "  " + " " * (column - 1) + "^"


def test_deep_nesting_is_refused_not_a_crash():
    with pytest.raises(FilterError, match="nested more than"):
        DisplayFilter("(" * 200 + "error" + ")" * 200)
    with pytest.raises(FilterError, match="nested more than"):
        DisplayFilter("!" * 500 + "error")


def test_never_evaluates_python():
    with pytest.raises(FilterError):
        DisplayFilter("__import__('os').system('true')")


def test_tokens():
    kinds = [(t.kind, t.text) for t in tokenize("a>=1.5ms||!b")]
    assert kinds == [
        ("word", "a"),
        ("op", ">="),
        ("number", "1.5ms"),
        ("op", "||"),
        ("op", "!"),
        ("word", "b"),
        ("end", ""),
    ]


# -- -Y on real captures ---------------------------------------------------------------------------
def test_filter_on_kafka_capture_matches_pdus_tsv(capsys, captures):
    pcap = captures / "kafka" / "kafka-python-basic.pcap"
    rows = read_tsv(pcap.with_name("kafka-python-basic.pdus.tsv"))
    res = run_cli(capsys, pcap, "-Y", "type == Produce && kind == request")
    got = [int(x["packet"]) for x in parse_lines(res.out)]
    assert got == [int(r["last_frame"]) for r in rows if r["api_name"] == "Produce" and r["dir"] == "req"]
    res = run_cli(capsys, pcap, "-Y", "stream == 3 && correlation_id in {3..4}")
    got = sorted(int(x["packet"]) for x in parse_lines(res.out))
    want = sorted(
        int(r["last_frame"]) for r in rows if r["stream"] == "3" and r["correlation_id"] in ("3", "4")
    )
    assert got == want == [45, 46, 47, 48]
    res = run_cli(capsys, pcap, "-Y", 'topic ~ "kp-basic" && type == Produce')
    assert len(parse_lines(res.out)) == 10  # every Produce request and response names kp-basic
    res = run_cli(capsys, pcap, "-Y", "error")
    errs = parse_lines(res.out)
    assert [(x["type"], x["packet"]) for x in errs] == [("JoinGroup", x["packet"]) for x in errs] and len(
        errs
    ) == 1


def test_filter_syntax_error_exits_2_with_a_caret(capsys, captures):
    pcap = captures / "kafka" / "kafka-python-basic.pcap"
    res = run_cli(capsys, pcap, "-Y", "type == Produce &&& x")
    assert res.code == 2
    assert res.out == ""
    lines = res.err.splitlines()
    assert lines[0].startswith("wiredump: bad filter: ") and "(column 19)" in lines[0]
    assert lines[1] == "  type == Produce &&& x"
    assert lines[2] == "  " + " " * 18 + "^"


def test_examples_in_the_docs_parse():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "terminal.md").read_text()
    block = doc.split("## Display filters", 1)[1].split("```", 2)[1]
    examples = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert len(examples) == 7
    for ex in examples:
        DisplayFilter(ex)
