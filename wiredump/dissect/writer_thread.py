"""A writer thread: the export's record batches written while the engine makes the next ones.

Why a thread: on the native fast path the Rust engine builds the record batches with the GIL
released (`TableFeed.pump`), and pyarrow releases it while it encodes and compresses a row
group, so the two run on two cores at once and the export takes about as long as the slower of
them instead of their sum. Batches cross through a bounded queue, so memory stays bounded:
at most `depth` handed-out groups wait, and the engine waits when the writer falls behind.

Order is kept (one thread, first in first out), so the files are byte for byte those written
inline. An error of the writer (a full disk) is raised in the caller's thread, at its next
`put` or at `close`.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

_STOP = object()
"""What `close` queues to end the thread."""


class BackgroundWriter:
    """Calls `write(item)` on a thread of its own, for each item `put`, in order."""

    def __init__(self, write: Callable[[Any], None], depth: int = 1) -> None:
        self._write = write
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None  # raised once, to the caller
        self._failed = False  # nothing more is written once the writer failed
        self._thread = threading.Thread(target=self._loop, name="wiredump-writer", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while (item := self._queue.get()) is not _STOP:
            if self._failed:
                continue  # drained, so a waiting `put` never blocks after a failure
            try:
                self._write(item)
            except BaseException as e:  # noqa: BLE001 — handed to the caller's thread
                self._failed = True
                self._error = e

    def _raise(self) -> None:
        if self._error is not None:
            e, self._error = self._error, None
            raise e

    def put(self, item: Any) -> None:
        """Queues one item (waits while `depth` items wait); raises what the writer raised."""
        self._raise()
        self._queue.put(item)

    def close(self) -> None:
        """Waits for every queued item to be written; raises what the writer raised."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
        self._raise()

    def __enter__(self) -> BackgroundWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if kind is None:
            self.close()
            return
        # The caller failed: what was queued is still written (as it would have been inline),
        # and the caller's error is the one raised.
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
        self._error = None
