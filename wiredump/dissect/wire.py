"""A bounds-checked cursor over frame bytes, shared by every decoder.

Every read checks the bytes left first, so a declared length or count can never
make a decoder read past its frame or allocate more than the frame holds; a short
read raises `Short`, which decoders turn into a `malformed`/`truncated` status with
the offset where it happened.
"""

from __future__ import annotations

import struct
import uuid

_BE = {1: ">b", 2: ">h", 4: ">i", 8: ">q"}
_BEU = {1: ">B", 2: ">H", 4: ">I", 8: ">Q"}
_LE = {1: "<b", 2: "<h", 4: "<i", 8: "<q"}
_LEU = {1: "<B", 2: "<H", 4: "<I", 8: "<Q"}
_S = {k: struct.Struct(v) for d in (_BE, _BEU, _LE, _LEU) for k, v in ((v, v) for v in d.values())}


class Short(Exception):
    """Raised when a read needs more bytes than remain."""

    def __init__(self, what: str, offset: int, need: int, left: int) -> None:
        super().__init__(f"{what} at byte {offset} needs {need} bytes, {left} left")
        self.what = what
        self.offset = offset


class Cursor:
    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    @property
    def left(self) -> int:
        return self.end - self.pos

    def need(self, n: int, what: str = "field") -> None:
        if n < 0 or self.pos + n > self.end:
            raise Short(what, self.pos, n, self.end - self.pos)

    def _fmt(self, fmt: str, size: int, what: str) -> int:
        if self.pos + size > self.end:
            raise Short(what, self.pos, size, self.end - self.pos)
        (v,) = _S[fmt].unpack_from(self.buf, self.pos)
        self.pos += size
        return v

    def i8(self, what: str = "int8") -> int:
        return self._fmt(">b", 1, what)

    def u8(self, what: str = "uint8") -> int:
        return self._fmt(">B", 1, what)

    def i16(self, what: str = "int16") -> int:
        return self._fmt(">h", 2, what)

    def u16(self, what: str = "uint16") -> int:
        return self._fmt(">H", 2, what)

    def i32(self, what: str = "int32") -> int:
        return self._fmt(">i", 4, what)

    def u32(self, what: str = "uint32") -> int:
        return self._fmt(">I", 4, what)

    def i64(self, what: str = "int64") -> int:
        return self._fmt(">q", 8, what)

    def u64(self, what: str = "uint64") -> int:
        return self._fmt(">Q", 8, what)

    def u16le(self, what: str = "uint16") -> int:
        return self._fmt("<H", 2, what)

    def u32le(self, what: str = "uint32") -> int:
        return self._fmt("<I", 4, what)

    def u64le(self, what: str = "uint64") -> int:
        return self._fmt("<Q", 8, what)

    def i64le(self, what: str = "int64") -> int:
        return self._fmt("<q", 8, what)

    def f64(self, what: str = "float64") -> float:
        if self.pos + 8 > self.end:
            raise Short(what, self.pos, 8, self.end - self.pos)
        (v,) = struct.unpack_from(">d", self.buf, self.pos)
        self.pos += 8
        return v

    def take(self, n: int, what: str = "bytes") -> bytes:
        if n < 0 or self.pos + n > self.end:
            raise Short(what, self.pos, n, self.end - self.pos)
        v = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return v

    def skip(self, n: int, what: str = "bytes") -> None:
        if n < 0 or self.pos + n > self.end:
            raise Short(what, self.pos, n, self.end - self.pos)
        self.pos += n

    def rest(self) -> bytes:
        v = bytes(self.buf[self.pos : self.end])
        self.pos = self.end
        return v

    def uuid(self, what: str = "uuid") -> str:
        return str(uuid.UUID(bytes=self.take(16, what)))

    def uvarint(self, what: str = "varint", max_bytes: int = 10) -> int:
        """Unsigned LEB128 varint (Kafka's unsigned varint, protobuf, TANK)."""
        value = shift = 0
        start = self.pos
        buf, end = self.buf, self.end
        for _ in range(max_bytes):
            if self.pos >= end:
                raise Short(what, start, self.pos - start + 1, end - start)
            b = buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
        raise Short(f"{what} (longer than {max_bytes} bytes)", start, max_bytes + 1, end - start)

    def zigzag(self, what: str = "varint", max_bytes: int = 10) -> int:
        """Signed zig-zag varint (Kafka record fields)."""
        v = self.uvarint(what, max_bytes)
        return (v >> 1) ^ -(v & 1)
