"""Joining chunked messages: one logical message sent as several SEND/MESSAGE frames.

A producer splits a payload larger than the broker's maximum into chunks that share
a uuid (and the producer's name); each chunk's MessageMetadata gives chunk_id,
num_chunks_from_msg and total_chunk_msg_size. The chunks are joined in order, then
decrypted/decompressed/split once. Memory is bounded: a connection holds at most
`max_sets` unfinished chunked messages and `max_bytes` of their chunks; the oldest
set goes first, with an anomaly saying so.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field


@dataclass(slots=True)
class ChunkSet:
    num_chunks: int
    total_size: int
    parts: list[bytes] = field(default_factory=list)
    packets_frames: list[object] = field(default_factory=list)  # the frames that carried the chunks
    checksums: list[bool | None] = field(default_factory=list)
    size: int = 0


@dataclass(slots=True)
class Joined:
    """A finished chunked message."""

    payload: bytes
    chunks: int
    checksum_ok: bool | None
    frames: list[object]
    problem: str | None = None


class ChunkAssembler:
    def __init__(self, max_sets: int = 64, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_sets = max_sets
        self.max_bytes = max_bytes
        self.held = 0
        self._sets: OrderedDict[Hashable, ChunkSet] = OrderedDict()

    def add(
        self,
        key: Hashable,
        chunk_id: int,
        num_chunks: int,
        total_size: int,
        data: bytes,
        checksum_ok: bool | None,
        frame: object,
    ) -> tuple[Joined | None, list[str]]:
        """Add one chunk; returns the joined message when this chunk completes it, and problems."""
        problems: list[str] = []
        cs = self._sets.get(key)
        if chunk_id == 0 and cs is not None:
            problems.append(f"chunked message {key!r} restarted at chunk 0 after {len(cs.parts)} chunks")
            self._drop(key)
            cs = None
        if cs is None:
            if chunk_id != 0:
                problems.append(f"chunk {chunk_id}/{num_chunks} of {key!r} without its earlier chunks")
                return None, problems
            if num_chunks <= 0 or total_size < 0 or total_size > self.max_bytes:
                problems.append(
                    f"chunked message {key!r}: implausible {num_chunks} chunks / {total_size} bytes"
                )
                return None, problems
            cs = self._sets[key] = ChunkSet(num_chunks, total_size)
        elif chunk_id != len(cs.parts):
            problems.append(
                f"chunk {chunk_id} of {key!r} where chunk {len(cs.parts)} was expected; message dropped"
            )
            self._drop(key)
            return None, problems
        cs.parts.append(data)
        cs.packets_frames.append(frame)
        cs.checksums.append(checksum_ok)
        cs.size += len(data)
        self.held += len(data)
        problems += self._enforce(key)
        if key not in self._sets:
            return None, problems
        if len(cs.parts) < cs.num_chunks:
            return None, problems
        self._drop(key)
        payload = b"".join(cs.parts)
        problem = None
        if cs.total_size and len(payload) != cs.total_size:
            problem = f"joined {len(payload)} bytes, total_chunk_msg_size says {cs.total_size}"
        ok: bool | None
        if any(c is False for c in cs.checksums):
            ok = False
        elif all(c is True for c in cs.checksums):
            ok = True
        else:
            ok = None
        return Joined(payload, len(cs.parts), ok, cs.packets_frames, problem), problems

    def pending(self) -> list[tuple[Hashable, int, int]]:
        """Unfinished sets: (key, chunks seen, chunks expected)."""
        return [(k, len(cs.parts), cs.num_chunks) for k, cs in self._sets.items()]

    def _drop(self, key: Hashable) -> None:
        cs = self._sets.pop(key, None)
        if cs is not None:
            self.held -= cs.size

    def _enforce(self, current: Hashable) -> list[str]:
        problems = []
        while self._sets and (len(self._sets) > self.max_sets or self.held > self.max_bytes):
            key, cs = next(iter(self._sets.items()))
            problems.append(
                f"chunked message {key!r} abandoned after {len(cs.parts)}/{cs.num_chunks} chunks "
                f"(over {self.max_sets} sets or {self.max_bytes} bytes held)"
            )
            self._drop(key)
            if key == current:
                break
        return problems
