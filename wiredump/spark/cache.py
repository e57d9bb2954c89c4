"""Where the Spark commands keep files between runs: a directory only this user can write.

The files kept are inputs to code: the JVM maps the class archive (`jvm.py`), executors unpack
and import the package archive, Spark reads the log4j settings. Found in a directory other users
can write (a shared `/tmp`), any of them could be planted or swapped by someone else before a
run picks it up, so they live in `$WIREDUMP_CACHE_DIR`, else `$XDG_CACHE_HOME/wiredump`, else
`~/.cache/wiredump`: made with mode 0700, and used only when this user owns it and nobody else
may write to it. When none qualifies, `private_dir` says so (None) and the caller makes what it
needs in a fresh private temporary directory instead (nothing is then reused between runs).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def _candidate() -> Path | None:
    explicit = os.environ.get("WIREDUMP_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "wiredump"
    try:
        return Path.home() / ".cache" / "wiredump"
    except RuntimeError:  # no home directory to speak of
        return None


def private_dir() -> Path | None:
    """This user's cache directory for wiredump, made if needed; None when it is missing and
    cannot be made, or is not this user's alone (owned by another user, writable by others)."""
    path = _candidate()
    if path is None:
        return None
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return None
    return path


def kept_dir() -> Path:
    """`private_dir()`, else a fresh private temporary directory (mode 0700) for this run."""
    return private_dir() or Path(tempfile.mkdtemp(prefix="wiredump-"))
