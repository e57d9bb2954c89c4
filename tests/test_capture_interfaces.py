"""pcapng interfaces past `Limits.max_interfaces` in a section are counted, not kept (issue 17).

A file of a million tiny interface description blocks cost 16× its bytes in memory; the readers now
keep at most `max_interfaces` per section. The expectations are hand-computed from the file written
here (pcapng specification: SHB 0x0A0D0D0A, IDB 1, EPB 6; interfaces are numbered per section) with
a bound of 2: section 1 describes 3 interfaces (1 not kept), section 2 describes 4 (2 not kept),
so 3 blocks are not kept; packet 4 names interface 3 of section 2, past the bound, and ends the
capture as a packet naming an undescribed interface does. Every engine must agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_capture_timestamps import SOURCE, block, epb, idb, pcap_packets, shb
from wiredump.dissect.capture import MAX_INTERFACES, CaptureReader
from wiredump.dissect.limits import Limits
from wiredump.dissect.pipeline import Options, dissect

pytestmark = pytest.mark.skipif(not SOURCE.exists(), reason="real captures not found")

TRUNCATED = (
    "packet 4 names interface 3, which was never described or is past the 2 interfaces kept per section"
)
LIMIT = (
    "3 pcapng interface blocks not kept: past the 2 interfaces kept per section"
    " (a packet naming one ends the capture)"
)


def write(path: Path) -> list[tuple[int, bytes, int]]:
    """Two sections (3 then 4 interfaces) and five packets of a real capture, on interfaces 0, 1 | 1, 3, 0."""
    pk = pcap_packets(SOURCE)[:5]
    data = shb() + idb() * 3
    data += epb(0, pk[0][0], pk[0][1], pk[0][2]) + epb(1, pk[1][0], pk[1][1], pk[1][2])
    data += shb() + idb() * 4
    data += epb(1, pk[2][0], pk[2][1], pk[2][2]) + epb(3, pk[3][0], pk[3][1], pk[3][2])
    data += epb(0, pk[4][0], pk[4][1], pk[4][2])
    data += block(0xBAD, b"")  # a custom block is skipped whatever the bound
    path.write_bytes(data)
    return pk


def test_reader_keeps_the_bound_and_counts_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "interfaces.pcapng"
    pk = write(path)
    r = CaptureReader(str(path), max_interfaces=2)
    recs = list(r)
    assert [(x.number, x.ts_us, x.data) for x in recs] == [(i + 1, pk[i][0], pk[i][1]) for i in range(3)]
    assert r.interfaces_not_kept == 3
    assert r.truncated == TRUNCATED
    # The default bound keeps them all: the same file reads whole.
    r = CaptureReader(str(path))
    assert MAX_INTERFACES == Limits().max_interfaces == 65_536
    assert [x.number for x in r] == [1, 2, 3, 4, 5]
    assert (r.interfaces_not_kept, r.truncated) == (0, None)


def test_the_engine_reports_the_interfaces_not_kept(tmp_path: Path) -> None:
    path = tmp_path / "interfaces.pcapng"
    write(path)
    opts = Options(limits=Limits(max_interfaces=2))
    got = [
        (e.obj.kind, e.obj.detail, e.obj.packet) for e in dissect([str(path)], opts) if e.kind == "anomaly"
    ]
    capture_level = [a for a in got if a[0] in ("truncated_capture", "interface_limit")]
    assert capture_level == [("truncated_capture", TRUNCATED, 3), ("interface_limit", LIMIT, 3)]
    end = [e.obj for e in dissect([str(path)], opts) if e.kind == "capture_end"]
    assert [(c.packets, c.truncated) for c in end] == [(3, TRUNCATED)]
