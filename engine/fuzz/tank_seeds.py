"""Seeds for the `tank_session` fuzz target from the real TANK captures.

Each seed is a window of up to six consecutive frames of one connection (as the Python framer cut
them), each frame's first 2,000 bytes written as the target's chunks: `[ctl][bytes]`, ctl bit 7
the role (server), bits 0-6 the chunk length (at most 127). Run from the repository root:
`python engine/fuzz/tank_seeds.py` (writes engine/fuzz/corpus/tank_session/).
"""

from __future__ import annotations

from pathlib import Path

from tests.test_engine_rust_tank import captured_frames


def chunks(frames: list[tuple[str, bytes]]) -> bytes:
    """The frames as the fuzz target's chunked input."""
    out = bytearray()
    for role, data in frames:
        data = data[:2000]
        bit = 0x80 if role == "server" else 0
        for i in range(0, len(data), 127):
            piece = data[i : i + 127]
            out.append(bit | len(piece))
            out += piece
    return bytes(out)


def main() -> None:
    out = Path(__file__).parent / "corpus" / "tank_session"
    out.mkdir(parents=True, exist_ok=True)
    for name, conns in captured_frames().items():
        for ci, conn in enumerate(conns):
            for start in range(0, len(conn), 3):
                (out / f"{name}-{ci}-{start}").write_bytes(chunks(conn[start : start + 6]))


if __name__ == "__main__":
    main()
