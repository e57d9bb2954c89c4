"""The engine's Python face: options and events, the model, tables, filter, fields, stats.

The package is also the public entry point `wiredump.dissect(paths, options)` (see
`wiredump.api.dissect`): calling the module runs the pipeline. Its modules live inside it, so
`import wiredump.dissect.pipeline` sets `wiredump.dissect` to this package; making the package
callable keeps `wiredump.dissect(...)` working whatever was imported before.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _CallablePackage(types.ModuleType):
    def __call__(self, paths: Any, options: Any = None, **overrides: Any) -> Any:
        from wiredump.api import dissect

        return dissect(paths, options, **overrides)


sys.modules[__name__].__class__ = _CallablePackage
