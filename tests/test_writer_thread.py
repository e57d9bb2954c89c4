"""The export's writer thread: items written in order, the writer's errors raised to the caller."""

from __future__ import annotations

import threading

import pytest

from wiredump.dissect.writer_thread import BackgroundWriter


def test_items_are_written_in_order_on_another_thread() -> None:
    seen: list[tuple[int, str]] = []
    with BackgroundWriter(lambda i: seen.append((i, threading.current_thread().name)), depth=1) as w:
        for i in range(200):
            w.put(i)
    assert [i for i, _ in seen] == list(range(200))
    assert {name for _, name in seen} == {"wiredump-writer"}


def test_a_writer_error_reaches_the_caller_and_nothing_blocks() -> None:
    written: list[int] = []

    def write(i: int) -> None:
        if i == 3:
            raise OSError(28, "No space left on device")
        written.append(i)

    w = BackgroundWriter(write, depth=1)
    with pytest.raises(OSError, match="No space"):
        for i in range(1000):  # the error is raised at a later put (or at close), never a hang
            w.put(i)
        w.close()
    w.close()  # stops the thread; the error was already raised once
    assert written == [0, 1, 2]


def test_the_callers_error_wins_and_queued_items_are_still_written() -> None:
    written: list[int] = []
    with pytest.raises(KeyError), BackgroundWriter(written.append, depth=4) as w:
        w.put(1)
        w.put(2)
        raise KeyError("engine failed")
    assert written == [1, 2]
