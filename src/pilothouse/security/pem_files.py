"""CA files on disk: PEM text read whole, private keys written 0600 from the start.

A private key file is created with ``os.open(..., 0o600)`` under a temporary name and
renamed into place, so it is never readable by others, not even for an instant, and a
reader never sees half a file. Public files (certificates) are written the same way
with mode 0644. Nothing here logs file contents.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final

PRIVATE_MODE: Final = 0o600
PUBLIC_MODE: Final = 0o644


def write_private(path: Path, data: bytes) -> None:
    """Write a private key file readable by its owner only."""
    _write(path, data, PRIVATE_MODE)


def write_public(path: Path, data: bytes) -> None:
    """Write a certificate file anyone may read."""
    _write(path, data, PUBLIC_MODE)


def _write(path: Path, data: bytes, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
    os.replace(temporary, path)
