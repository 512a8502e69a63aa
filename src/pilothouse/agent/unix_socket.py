"""A grpc.aio server on a Unix domain socket path, as istio-agent's sockets are.

The parent directory is made (mode 0750) and a stale socket file left by an earlier run
is removed before binding; anything else at the path (a regular file, a directory) is
refused rather than deleted. Only the agent's own user (and root) can connect: the
socket is made mode 0600 once bound.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

import grpc

MAX_MESSAGE: Final = 64 * 1024 * 1024
"""Bytes: the largest xDS message either side may send (a whole mesh's config)."""


class SocketPathError(OSError):
    """The socket's path is taken by something that is not a socket."""


def prepare(path: Path) -> None:
    """Make the directory and clear a stale socket at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o750)
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise SocketPathError(f"{path} exists and is not a socket")
    path.unlink()


def unix_server(path: Path) -> grpc.aio.Server:
    """A server bound to ``path`` (not started)."""
    prepare(path)
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            ("grpc.max_send_message_length", MAX_MESSAGE),
        ]
    )
    server.add_insecure_port(f"unix:{path}")
    return server


def restrict(path: Path) -> None:
    """Only the owner may connect (call once the server started and the file exists)."""
    os.chmod(path, 0o600)
