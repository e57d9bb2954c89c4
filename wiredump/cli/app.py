"""The `wiredump` command line, parsed by typer (`entry.main` is the entry point).

`wiredump CAPTURE…` (no subcommand) is the timeline, as `tshark -r` is; every other
verb is a subcommand. Errors a user can cause (bad path, not a capture, bad option)
end as one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from wiredump.cli.entry import EXIT_INPUT

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Dissect Kafka, Pulsar, Pravega and TANK traffic in pcap/pcapng captures.\n\n"
    "wiredump CAPTURE… prints the timeline; see the subcommands for the rest.",
)


Captures = Annotated[list[str], typer.Argument(help="pcap or pcapng files (gzip ok), or - for stdin.")]
DecodeAs = Annotated[
    list[str] | None,
    typer.Option("-d", "--decode-as", help="Decode a port as a protocol, e.g. -d 19092=kafka (repeatable)."),
]


def fail(message: str, code: int = EXIT_INPUT) -> typer.Exit:
    typer.echo(f"wiredump: {message}", err=True)
    return typer.Exit(code)


# Each command lives in its own module and registers itself on `app` when imported.
COMMAND_MODULES = ("timeline", "export", "show", "stats", "follow", "check", "spark", "fields")


def _load_commands() -> None:
    import importlib

    for name in COMMAND_MODULES:
        try:
            importlib.import_module(f"wiredump.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"wiredump.cli.{name}":
                raise


ARROW_FREE = {"spark", "timeline", "fields"}
"""Commands that need not load pyarrow here: Spark (which wants pandas) and the two that never
touch Arrow but for the timeline's `--workers` merge. Loading pyarrow costs ~0.4 s of CPU and
~100 MB of peak memory, a third of the plain timeline of a 150 MB capture."""


class _NoPandas:
    """Import hook that makes `import pandas` fail, while it is on sys.meta_path."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is not used by this command")
        return None


def arrow_without_pandas() -> None:
    """Keep pyarrow from importing pandas, which nothing outside Spark needs.

    `pyarrow.array` imports pandas (when installed) on first use just to check
    whether its input is a pandas object; measured, that costs ~1.5 s of start-up
    and ~80 MB of peak memory per run. Hiding pandas for that first call makes
    pyarrow remember, for this process, that there is no pandas to check against.
    """
    import pyarrow as pa

    if "pandas" in sys.modules:
        return

    hook = _NoPandas()
    sys.meta_path.insert(0, hook)
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(hook)


def dispatch(args: list[str]) -> None:
    """Runs the command `args` names (`entry.main` has put `timeline` first where no
    subcommand was named), parsed by typer."""
    workers = args[:1] == ["timeline"] and any(a.startswith("--workers") for a in args)
    if args and (args[0] not in ARROW_FREE or workers):
        arrow_without_pandas()
    _load_commands()
    app(args, prog_name="wiredump", standalone_mode=True)
