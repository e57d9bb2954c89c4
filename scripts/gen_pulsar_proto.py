#!/usr/bin/env python3
"""Regenerate `wiredump/proto/PulsarApi_pb2.py` (and its `.pyi`) from `PulsarApi.proto`.

The Pulsar decoder parses every command with protobuf's own runtime, from classes
that protobuf's compiler generated out of the project's copy of the schema. This
script is the only way those files are made, so a test can regenerate them and
check that the committed ones match the committed schema.

    python scripts/gen_pulsar_proto.py           # rewrite the generated files
    python scripts/gen_pulsar_proto.py --check   # exit 1 if they are out of date
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent.parent / "wiredump" / "proto"
PROTO = "PulsarApi.proto"
OUTPUTS = ("PulsarApi_pb2.py", "PulsarApi_pb2.pyi")


def generate(out_dir: Path) -> None:
    """Run protoc (from grpcio-tools) on the schema, writing into `out_dir`."""
    from grpc_tools import protoc  # imported here: a dev-only dependency

    args = ["protoc", f"-I{PROTO_DIR}", f"--python_out={out_dir}", f"--pyi_out={out_dir}", PROTO]
    if protoc.main(args) != 0:
        raise SystemExit(f"protoc failed on {PROTO_DIR / PROTO}")


def generated_files() -> dict[str, str]:
    """The files a fresh generation produces, by name."""
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        return {name: (Path(tmp) / name).read_text() for name in OUTPUTS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare, do not write")
    args = parser.parse_args(argv)
    fresh = generated_files()
    stale = [
        n for n, text in fresh.items() if not (PROTO_DIR / n).exists() or (PROTO_DIR / n).read_text() != text
    ]
    if args.check:
        for n in stale:
            print(f"{PROTO_DIR / n} is out of date; run scripts/gen_pulsar_proto.py", file=sys.stderr)
        return 1 if stale else 0
    for n, text in fresh.items():
        (PROTO_DIR / n).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
