"""wiredump: dissector and capture analysis for Kafka, Pulsar, Pravega and TANK."""

__version__ = "0.1.0"

from typing import Any

__all__ = ["dissect", "tables", "__version__"]


def __getattr__(name: str) -> Any:
    # Lazy: `import wiredump` (and so every CLI start) stays free of the engine and pyarrow.
    # `wiredump.dissect` is the engine's package, callable as the pipeline (its __init__).
    if name == "dissect":
        import importlib

        return importlib.import_module("wiredump.dissect")
    if name == "tables":
        from wiredump.api import tables

        return tables
    raise AttributeError(f"module 'wiredump' has no attribute {name!r}")
