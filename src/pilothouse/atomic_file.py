"""A file written whole or not at all, with the mode asked for, and durable once written.

:func:`replace_file` writes the bytes to a new temporary file beside the target (created
readable by its owner only, so a private key is never readable by others, not even for
an instant), gives it ``mode`` exactly (the umask does not apply), flushes and fsyncs
it, renames it over the target and fsyncs the directory, so that the rename
survives a crash. A reader sees the old file or the new one, never half of one; when
anything fails the temporary file is removed and the target is left as it was.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def replace_file(path: Path, data: bytes, *, mode: int) -> None:
    """Make ``path`` hold ``data`` with permission bits ``mode`` (OSError if it cannot;
    ``path`` is then unchanged)."""
    descriptor, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    temporary = Path(name)
    try:
        with os.fdopen(descriptor, "wb") as out:
            os.fchmod(out.fileno(), mode)
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
    sync_directory(path.parent)


def sync_directory(directory: Path) -> None:
    """fsync ``directory``, so that a rename into it is on disk."""
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
