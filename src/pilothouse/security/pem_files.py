"""CA files on disk: PEM text read whole, private keys written 0600 from the start.

Every file is written by :func:`~pilothouse.atomic_file.replace_file`: created 0600
under a temporary name, fsynced and renamed into place, so a private key is never
readable by others, not even for an instant, and a reader never sees half a file.
Public files (certificates) end with mode 0644. Nothing here logs file contents.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from pilothouse.atomic_file import replace_file

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
    replace_file(path, data, mode=mode)
