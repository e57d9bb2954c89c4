"""`wiredump`'s entry point: what every invocation goes through before the command line is parsed.

`wiredump CAPTURE…` with no option into a pipe or file, the main job, runs the engine's plain
timeline straight away (`plain.default_timeline`), and `wiredump export CAPTURE… -o DIR` its
export (`exporting.default_export`); everything else is parsed by typer (`app.dispatch`). Errors
a user can cause (bad path, not a capture, bad option) end as one line on stderr and exit code 2,
never a traceback.
"""

from __future__ import annotations

import os
import signal
import sys

EXIT_INPUT = 2

SUBCOMMANDS = {"timeline", "export", "show", "stats", "check", "baseline", "spark", "follow", "fields"}

BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "1")
"""numpy comes in only as pyarrow's dependency and wiredump never calls BLAS, but OpenBLAS
starts one thread per core when numpy is imported, and they spin: measured ~0.1 CPU s per process
(perf: `blas_thread_server`), taken from the engine and the Parquet writer on the same cores, and
paid again by every Spark worker (which inherit this environment in local mode; clusters get it
from `spark.executorEnv`, `wiredump.spark.session.ALWAYS`). A value the user set is kept."""


class UsageError(Exception):
    """A mistake in the command line; one line on stderr, exit 2."""


def plain_captures(args: list[str]) -> list[str] | None:
    """The captures of `wiredump timeline CAPTURE…` given with no option at all (`-` is stdin,
    not an option), else None."""
    if args[:1] != ["timeline"] or len(args) < 2:
        return None
    captures = args[1:]
    if any(a.startswith("-") and a != "-" for a in captures):
        return None
    return captures


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault(*BLAS_THREADS)
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None and hasattr(signal, "SIGPIPE"):
        # `wiredump X | head` ends quietly when head stops reading, as tshark does.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if args and args[0] not in SUBCOMMANDS and args[0] not in ("--help", "-h", "--version"):
        args.insert(0, "timeline")
    if args and args[0] == "--version":
        from wiredump import __version__

        print(f"wiredump {__version__}")
        return
    from wiredump.dissect.capture import CaptureError

    try:
        captures = plain_captures(args)
        if captures is not None:
            from wiredump.cli.plain import default_timeline

            code = default_timeline(captures)
            if code is not None:
                if code:
                    sys.exit(code)
                return
        if args[:1] == ["export"]:
            from wiredump.cli.exporting import default_export, plain_export

            plain = plain_export(args)
            if plain is not None:
                code = default_export(*plain)
                if code is not None:
                    if code:
                        sys.exit(code)
                    return
        from wiredump.cli.app import dispatch

        dispatch(args)
    except (CaptureError, UsageError) as e:
        print(f"wiredump: {e}", file=sys.stderr)
        sys.exit(EXIT_INPUT)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(0)
    except KeyboardInterrupt:
        sys.exit(130)
