"""The Python daemon of local mode's executors: PySpark's own, importing the installed PySpark.

Why: Spark puts `$SPARK_HOME/python/lib/pyspark.zip` first on its Python workers' path. With
PySpark installed from PyPI that zip is a copy of the installed package without compiled
files, so the daemon (and every worker it forks) compiles PySpark's modules from source on each
start: half a second before the first task can run, measured on this project's machine
(`WIREDUMP_SPARK_TIMING`), against a tenth from the installed, compiled package. In local mode
the workers run the driver's interpreter, whose PySpark is that very package (the zip lies
inside it), so the zip entries are dropped and the same code is imported from its installed
files. Only zips inside the installed package are dropped: a `SPARK_HOME` pointing elsewhere
keeps its own. `pyspark.worker` is imported before forking (it starts no thread), so each
worker starts with it.

Used as `spark.python.daemon.module` by `session.session_config` for local masters only.
"""

from __future__ import annotations

import sys
from pathlib import Path


def _installed_zips() -> set[str]:
    """The entries of sys.path that are zips inside the installed pyspark package."""
    out = set()
    for entry in sys.path:
        if not entry.endswith(".zip"):
            continue
        p = Path(entry)
        # <site-packages>/pyspark/python/lib/<name>.zip, and <site-packages>/pyspark/__init__.py beside it
        if p.parent.name == "lib" and p.parent.parent.name == "python":
            package = p.parent.parent.parent
            if (
                package.name == "pyspark"
                and (package / "__init__.py").is_file()
                and str(package.parent) in sys.path  # this interpreter imports the installed copy
            ):
                out.add(entry)
    return out


def main() -> None:
    zips = _installed_zips()
    sys.path[:] = [e for e in sys.path if e not in zips]
    import pyspark.daemon
    import pyspark.worker  # noqa: F401 - imported once here rather than in every forked worker

    pyspark.daemon.manager()


if __name__ == "__main__":
    main()
