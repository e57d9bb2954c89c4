"""Issue 14 (trust), engine side: broken Pulsar frames are frames, acknowledged-but-unseen bytes at
the start of a direction are a gap, and a decoder bug is an `internal_error` that fails the suite.

Expected values come from the independent decodes beside the real captures
(`pulsar/*.summary.json`, `*.pdus.tsv`), from the crafted bytes themselves (their length,
where they were put), from the variant's own TCP headers (which ACK first covers the
dropped bytes) and, where installed, from tshark's "ACKed unseen segment" flag.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
import variants as V
from conftest import INTERNAL_ERROR_MARK, ROOT, dissect_lists, tsv_rows

from wiredump.dissect.stats import StatsCollector
from wiredump.proto import PulsarApi_pb2 as P

PULSAR = "pulsar/s01-producer-nobatch"
KAFKA = "kafka/kafka-python-basic"


# -- splicing crafted bytes into a real capture ---------------------------------------------------
def splice(src: Path, at_orig: int, blob: bytes, out: Path) -> Path:
    """`src` with `blob` sent just before the payload of packet `at_orig`, in the same segment.

    Later segments of that direction move up by len(blob) in sequence space and the peer's
    ACKs past the insertion point acknowledge len(blob) more, so the TCP stream is whole and
    every packet keeps its number (the independent decode's packet numbers still apply).
    """
    cap = V.read(src)
    target = next(r for r in cap.recs if r.orig == at_orig)
    t0 = target.tcp()
    assert t0 is not None and t0.payload
    ins, n = t0.seq, len(blob)

    def after(x: int) -> bool:
        d = (x - ins) & 0xFFFFFFFF
        return 0 < d < 0x80000000

    recs = []
    for r in cap.recs:
        t = r.tcp()
        if t is None or t.conn != t0.conn:
            recs.append(r)
            continue
        seq, ack, payload = t.seq, t.ack, t.payload
        if t.src == t0.src:
            if r is target:
                payload = blob + payload
            elif after(seq) or (seq == ins and r.orig > at_orig):
                seq += n
        elif t.flags & V.ACK and after(ack):
            ack += n
        nr = V.rebuild(r, seq & 0xFFFFFFFF, payload)
        data = bytearray(nr.data)
        ihl = (data[V.ETH] & 0x0F) * 4
        struct.pack_into(">I", data, V.ETH + ihl + 8, ack & 0xFFFFFFFF)
        recs.append(replace(nr, data=bytes(data), orig_len=len(data)))
    return V.write(cap, recs, out)


_PING = P.BaseCommand(type=P.BaseCommand.PING, ping=P.CommandPing()).SerializeToString()
BAD_FRAMES = {
    # totalSize 10 (a 14-byte frame) whose commandSize says 40
    "command_over_total": struct.pack(">II", 10, 40) + (_PING + bytes(6))[:6],
    # sizes agree; the BaseCommand is type 18 then an unterminated varint
    "garbage_command": struct.pack(">II", 18, 14) + b"\x08\x12" + b"\xff" * 10 + b"\x01\x02",
    # a PING whose totalSize says 2 GiB
    "two_gib": struct.pack(">II", 0x80000000, len(_PING)) + _PING,
}


def _summary_frames(captures: Path) -> list[tuple[str, str, int, int]]:
    s = json.loads((captures / f"{PULSAR}.summary.json").read_text())
    role = {"c2s": "client", "s2c": "server"}
    return [(f["type"], role[f["dir"]], f["first_packet"], f["last_packet"]) for f in s["frames"]]


# (packet the bad frame is put in front of, role): the client's first frame (before CONNECT),
# the server's first frame (before CONNECTED), and mid-stream (before PARTITIONED_METADATA).
PLACES = [(4, "client"), (6, "server"), (8, "client")]


@pytest.mark.parametrize("place", PLACES, ids=["client-first", "server-first", "client-mid"])
@pytest.mark.parametrize("name", sorted(BAD_FRAMES))
def test_pulsar_bad_frame_is_reported_and_the_rest_decodes(captures, tmp_path, name, place):
    at, role = place
    blob = BAD_FRAMES[name]
    expected = _summary_frames(captures)
    assert any(f[2] == at and f[1] == role for f in expected)
    out = splice(captures / f"{PULSAR}.pcap", at, blob, tmp_path / f"{name}.pcap")
    frames, anomalies, _ = dissect_lists(out, "pulsar")

    ours = [f for f in frames if f.packet == at and f.role == role and f.length == len(blob)]
    rest = [f for f in frames if f not in ours]
    # Every real frame is still there, as the independent decode has it.
    assert [(f.type, f.role, f.first_packet, f.packet) for f in rest] == expected
    assert all(f.status == "ok" for f in rest)
    if name == "two_gib":
        assert ours == []
        over = [a for a in anomalies if a.kind == "oversize_frame"]
        assert len(over) == 1 and over[0].packet == at and "2147483652" in over[0].detail
        # The engine resynchronises over what the oversize frame's header covered: exactly the blob.
        skips = [a for a in anomalies if a.kind == "resync"]
        assert len(skips) == 1 and skips[0].packet == at
        assert re.search(rf"skipped {len(blob)} {role} bytes", skips[0].detail)
    else:
        assert len(ours) == 1
        f = ours[0]
        assert f.status == "malformed" and f.protocol == "pulsar"
        assert f.fields["total_size"] == struct.unpack(">I", blob[:4])[0]
        assert f.fields["command_size"] == struct.unpack(">I", blob[4:8])[0]
        why = "does not fit in totalSize" if name == "command_over_total" else "BaseCommand does not parse"
        assert any(a.kind == "malformed" and why in a.detail for a in f.anomalies)
        assert not [a for a in anomalies if a.kind in ("resync", "oversize_frame")]


# -- acknowledged bytes the capture lacks at the start of a direction ---------------------------------
def _drop_first_data(src: Path, role: str, out: Path) -> tuple[Path, V.Rec, int]:
    """The capture without the first data segment `role` sent on its first connection; returns the
    variant, the dropped record and the variant's packet number of the first ACK covering it."""
    cap = V.read(src)
    syn = next(t for r in cap.recs if (t := r.tcp()) and t.flags & V.SYN and not t.flags & V.ACK)
    client = syn.src
    dropped = next(
        r
        for r in cap.recs
        if (t := r.tcp()) and t.payload and t.conn == syn.conn and (t.src == client) == (role == "client")
    )
    d = dropped.tcp()
    recs = V.drop(cap.recs, {dropped.orig})
    end = (d.seq + len(d.payload)) & 0xFFFFFFFF
    ack_at = next(
        i + 1
        for i, r in enumerate(recs)
        if (t := r.tcp())
        and t.src == d.dst
        and t.dst == d.src
        and t.flags & V.ACK
        and ((t.ack - end) & 0xFFFFFFFF) < 0x80000000
    )
    return V.write(cap, recs, out), dropped, ack_at


def _tshark_acked_unseen(path: Path) -> list[int]:
    tshark = shutil.which("tshark")
    if tshark is None:
        return []
    out = subprocess.run(
        [
            tshark,
            "-r",
            str(path),
            "-Y",
            "tcp.analysis.ack_lost_segment",
            "-T",
            "fields",
            "-e",
            "frame.number",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [int(x) for x in out.split()]


CASES = [
    # the client's only request of the connection: nothing of that direction follows it
    ("tank/t01-basic", "client"),
    # the broker's CONNECTED: more of the broker's frames follow it
    (PULSAR, "server"),
    # the broker's unsolicited first Ping
    ("tank/t01-basic", "server"),
]


@pytest.mark.parametrize("name,role", CASES)
def test_acked_unseen_first_segment_is_a_gap(captures, tmp_path, name, role):
    out, dropped, ack_at = _drop_first_data(captures / f"{name}.pcap", role, tmp_path / "v.pcap")
    size = len(dropped.tcp().payload)
    _, anomalies, _ = dissect_lists(out)
    gaps = [a for a in anomalies if a.kind == "gap" and a.stream == 0]
    assert len(gaps) == 1, [a.detail for a in gaps]
    assert gaps[0].detail.startswith(f"{size} {role} bytes missing at stream offset 0")
    assert gaps[0].packet == ack_at
    flagged = _tshark_acked_unseen(out)
    if flagged:
        assert ack_at == flagged[0]


def test_acked_unseen_first_segment_keeps_every_other_frame(captures, tmp_path):
    """TANK: every message of the independent decode but the dropped request is still decoded."""
    name = "tank/t01-basic"
    cap = V.read(captures / f"{name}.pcap")
    out, dropped, _ = _drop_first_data(captures / f"{name}.pcap", "client", tmp_path / "v.pcap")
    origs = [r.orig for r in V.drop(cap.recs, {dropped.orig})]
    frames, _, _ = dissect_lists(out, "tank")
    got = sorted((f.stream, f.role, origs[f.packet - 1]) for f in frames)
    role = {"c>s": "client", "s>c": "server"}
    want = sorted(
        (int(r["stream"]), role[r["dir"]], int(r["last_frame"]))
        for r in tsv_rows(captures / f"{name}.pdus.tsv")
        if int(r["first_frame"]) != dropped.orig
    )
    assert got == want


# -- internal errors --------------------------------------------------------------------------------
# A panic in the engine's protocol code becomes an `internal_error` anomaly on its frame and the run
# goes on: engine/tests/native_pipeline.rs (panics_in_the_session_become_internal_errors,
# internal_errors_of_framing_are_reported_one_by_one_up_to_a_bound). Here: what Python does with them.
def test_stats_count_internal_errors_whatever_the_filter():
    from wiredump.dissect.model import Anomaly
    from wiredump.dissect.pipeline import ANOMALY, Event

    planted = Anomaly("internal_error", "internal error: panic in pulsar.close (planted)", packet=3, stream=0)
    stats = StatsCollector(keep=lambda frame, capture: False)
    stats.add_events([Event(ANOMALY, planted, "x.pcap")])
    res = stats.result()
    assert res["totals"]["frames"] == 0
    assert res["anomalies"]["internal_error"]["count"] == 1
    assert res["totals"]["internal_errors"] == 1


def test_the_suite_fails_a_test_that_produces_an_internal_error(captures, tmp_path):
    """The autouse check in conftest: an unmarked test whose decoder raises fails; marked, it passes."""
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    cap = captures / f"{PULSAR}.pcap"
    body = f"""
        import pytest
        from wiredump._engine import Dissector
        from wiredump.dissect import pipeline
        from wiredump.dissect.model import Anomaly
        from wiredump.dissect.pipeline import Options

        class Planted:
            # The engine's events with an internal_error planted before the capture's end (no
            # Python patch reaches a Rust session: a Rust panic caught reaches Python this way).
            def __init__(self, path, options):
                self.inner = Dissector(path, options)

            def __iter__(self):
                for ev in self.inner:
                    if ev.kind == pipeline.CAPTURE_END:
                        a = Anomaly("internal_error", "internal error: panic in pulsar.decode (planted)")
                        yield pipeline.Event(pipeline.ANOMALY, a, ev.capture)
                    yield ev

        def _go(monkeypatch):
            monkeypatch.setattr(pipeline, "open_source", lambda path, options: Planted(path, options))
            return sum(1 for e in pipeline.dissect([{str(cap)!r}], Options()) if e.kind == "frame")

        def test_unmarked(monkeypatch):
            assert _go(monkeypatch) > 0

        @pytest.mark.{INTERNAL_ERROR_MARK}
        def test_marked(monkeypatch):
            assert _go(monkeypatch) > 0
        """
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(body))
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rA",
            str(tmp_path / "test_inner.py"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    out = res.stdout
    assert res.returncode == 1, out
    assert (
        re.search(r"ERROR .*test_unmarked", out) and "internal_error anomaly" in out and "planted" in out
    ), out
    assert re.search(r"PASSED .*test_marked", out), out
