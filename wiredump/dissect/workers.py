"""How many worker processes a command starts when the user did not say (`--workers`).

A module of its own, without pyarrow: the plain timeline asks it on every run, and importing
the parallel export's merge (`wiredump.dissect.parallel`, which needs pyarrow) just to hear
"one" cost ~0.4 s of CPU and ~100 MB of peak memory per run.
"""

from __future__ import annotations

from collections.abc import Sequence


def auto_workers(captures: Sequence[str]) -> int:
    """Worker processes to start when the user did not say: one, for now.

    Measured on the 447k-packet benchmark capture (7 connections): two workers took 62 s
    of wall time against 50 s for one process, and the merge peaked at 574 MB. Connections
    are split by stream number, so the two busy ones (producer and consumer) can land on
    the same worker; until the split follows the load, more workers are opt-in
    (`--workers N`), for captures of many comparable connections.
    """
    return 1
