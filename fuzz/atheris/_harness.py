"""What every atheris target shares: the input encoding, the finding rule and the entry point.

Why a shared module: the targets differ only in what they feed (a protocol session or a whole
capture file); the rule that decides what a finding is must be the same everywhere and the same
as the test suite's autouse `no_internal_errors` rule — any exception, and any `internal_error`
anomaly (a decoder bug the shield caught), is a finding. The shield's anomaly is turned back
into its original exception so that libFuzzer reports, saves and minimises it like a crash.

Session input encoding (also the seed format written by scripts/fuzz_seeds.py, and the format
the Rust `<proto>_session` targets are asked to share so both engines use one corpus):
byte 0 picks the limits (bit 0: tiny message cap, so the message_limit paths are reached);
then records of [role: 1 byte, bit 0 = server][length: 2 bytes big-endian][bytes]; a record
cut short takes what is left. The records are pushed through the protocol's framer and
session in that order, as the pipeline does with reassembled TCP data.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TINY_MESSAGES = 3
"""The message cap under the tiny-limits profile: small enough that real frames cross it."""


def encode_chunks(chunks: list[tuple[str, bytes]], profile: int = 0) -> bytes:
    """The session input for (role, bytes) chunks (chunks over 65535 bytes are split)."""
    out = bytearray([profile])
    for role, data in chunks:
        for i in range(0, max(len(data), 1), 0xFFFF):
            part = data[i : i + 0xFFFF]
            out += bytes([1 if role == "server" else 0]) + len(part).to_bytes(2, "big") + part
    return bytes(out)


def decode_chunks(data: bytes) -> tuple[int, list[tuple[str, bytes]]]:
    """(profile, chunks) of a session input; never fails (every byte string is an input)."""
    if not data:
        return 0, []
    profile, pos, chunks = data[0], 1, []
    while pos < len(data):
        role = "server" if data[pos] & 1 else "client"
        n = int.from_bytes(data[pos + 1 : pos + 3], "big")
        chunks.append((role, data[pos + 3 : pos + 3 + n]))
        pos += 3 + n
    return profile, chunks


class _InternalError(Exception):
    """Raised when the shield made an internal_error anomaly without an exception object."""


def _raise_internal_errors() -> None:
    """Make the shield re-raise what it caught: the original traceback is the finding."""
    from wiredump.dissect import internal

    def reraise(exc: BaseException, function: str, *args: Any, **kwargs: Any) -> Any:
        raise exc

    internal.internal_error = reraise  # type: ignore[assignment]


def session_target(protocol: str) -> Callable[[bytes], None]:
    """The one-input function for `protocol`'s session driven through the framer."""
    from tests.fuzzing import drive
    from wiredump.dissect.internal import INTERNAL_ERROR
    from wiredump.dissect.limits import Limits

    def one_input(data: bytes) -> None:
        profile, chunks = decode_chunks(data)
        limits = Limits(max_messages=TINY_MESSAGES) if profile & 1 else Limits()
        out = drive(protocol, chunks, limits)
        for a in out.anomalies + [a for f in out.frames for a in f.anomalies]:
            if a.kind == INTERNAL_ERROR:
                raise _InternalError(a.detail)

    return one_input


def capture_target() -> Callable[[bytes], None]:
    """The one-input function for whole capture files through the reader and the pipeline."""
    from wiredump.dissect.capture import CaptureError
    from wiredump.dissect.internal import INTERNAL_ERROR
    from wiredump.dissect.pipeline import ANOMALY, dissect

    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"wiredump-fuzz-{os.getpid()}.pcap"

    def events(data: bytes) -> Iterator[Any]:
        path.write_bytes(data)
        try:
            yield from dissect([str(path)])
        except CaptureError:
            return

    def one_input(data: bytes) -> None:
        for ev in events(data):
            if ev.kind == ANOMALY and ev.obj.kind == INTERNAL_ERROR:
                raise _InternalError(ev.obj.detail)

    return one_input


def _import_all(package: str) -> None:
    """Import every module of `package` now: atheris instruments only what is imported inside
    its context, and decoders import some of their modules lazily."""
    import importlib
    import pkgutil

    pkg = importlib.import_module(package)
    for info in pkgutil.walk_packages(pkg.__path__, package + "."):
        try:
            importlib.import_module(info.name)
        except ImportError:
            pass  # an optional module (e.g. the Rust bindings when not built)


def main(make: Callable[[], Callable[[bytes], None]]) -> None:
    """Instrument wiredump, build the target and hand it to libFuzzer (argv as libFuzzer's)."""
    import atheris

    with atheris.instrument_imports(include=["wiredump"]):
        _import_all("wiredump.dissect")
    _raise_internal_errors()
    # libFuzzer re-runs argv[0] through the shell for -minimize_crash (and -fork/-jobs): make it
    # "python /abs/target.py", which the shell can run whatever the current directory.
    argv = list(sys.argv)
    argv[0] = f"{shlex.quote(sys.executable)} {shlex.quote(os.path.abspath(argv[0]))}"
    atheris.Setup(argv, make())
    atheris.Fuzz()
