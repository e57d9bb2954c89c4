"""`wiredump - -l` on a pipe fed live (`tcpdump -U -w - port 9092 | wiredump - -l`): each frame's
line comes out as soon as its packets have arrived, not once a few hundred packets have.

Expected values: kafka-python-basic.pdus.tsv (the independent decode beside the capture) says
its first frame is packet 4, an ApiVersions request, answered by packet 6.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

CAPTURE = Path("/work/shared/captures/kafka/kafka-python-basic.pcap")
pytestmark = pytest.mark.skipif(not CAPTURE.is_file(), reason="needs the shared captures")


def _first_line(proc: subprocess.Popen[bytes], timeout: float) -> bytes:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline() if ready else b""


@pytest.mark.parametrize("renderer", ["native", "python"])
def test_line_buffered_prints_before_the_pipe_ends(renderer: str) -> None:
    data = CAPTURE.read_bytes()
    env = dict(os.environ, NO_COLOR="1")
    if renderer == "python":
        env["WIREDUMP_TIMELINE"] = "python"
    proc = subprocess.Popen(
        [sys.executable, "-m", "wiredump", "-", "-l", "--no-progress"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None
    try:
        # 20,000 bytes: the global header and the first few dozen packets (packets 4 and 6
        # among them); far fewer than the 256 packets the engine otherwise reads per step.
        proc.stdin.write(data[:20_000])
        proc.stdin.flush()
        t0 = time.monotonic()
        line = _first_line(proc, 60)
        assert line, "no line while the pipe stays open"
        assert time.monotonic() - t0 < 60
        fields = line.decode().split()
        assert fields[0] == "4" and "ApiVersions" in fields and "#6" in line.decode(), line
    finally:
        proc.stdin.write(data[20_000:])
        proc.stdin.close()
        proc.wait(60)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
