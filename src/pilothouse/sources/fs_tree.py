"""What a config directory tree holds right now, and why a part of it cannot be read.

The file source must tell "these files are gone" from "I cannot see these files": the
first deletes their objects, the second must not. :func:`scan_tree` lists the config
files under a root and names the subdirectories it could not list; when the root itself
cannot be read (missing, not a directory, permission denied) it raises
:class:`RootUnavailable` instead of answering with an empty list.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

SUFFIXES = (".yaml", ".yml", ".json")


def is_config_file(path: Path) -> bool:
    return path.suffix in SUFFIXES and not path.name.startswith(".")


class RootUnavailable(Exception):
    """The root of a config tree cannot be read; ``reason`` says why, in a few words."""

    def __init__(self, root: Path, reason: str) -> None:
        super().__init__(f"{root}: {reason}")
        self.root = root
        self.reason = reason


@dataclass(frozen=True, slots=True)
class TreeScan:
    """The config files under a readable root (sorted), and the subdirectories that could
    not be listed, each with its reason."""

    files: tuple[str, ...]
    unreadable: Mapping[str, str] = field(default_factory=dict)

    def hides(self, path: str) -> bool:
        """True when ``path`` lies under a subdirectory that could not be listed."""
        return any(path.startswith(folder + os.sep) for folder in self.unreadable)


def reason_of(problem: OSError) -> str:
    """A short cause for an OS error on a path: ``missing``, ``permission denied``, ..."""
    if problem.errno == errno.ENOENT:
        return "missing"
    if problem.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if problem.errno == errno.ENOTDIR:
        return "not a directory"
    return problem.strerror or type(problem).__name__


def check_root(root: Path) -> None:
    """Raise :class:`RootUnavailable` unless ``root`` is a directory that can be listed."""
    try:
        mode = os.stat(root).st_mode
    except OSError as problem:
        raise RootUnavailable(root, reason_of(problem)) from None
    if not stat.S_ISDIR(mode):
        raise RootUnavailable(root, "not a directory")
    try:
        with os.scandir(root):
            pass
    except OSError as problem:
        raise RootUnavailable(root, reason_of(problem)) from None


def root_identity(root: Path) -> tuple[int, int]:
    """The root's device and inode (a different pair means it was replaced); raises
    :class:`RootUnavailable` like :func:`check_root`."""
    check_root(root)
    try:
        found = os.stat(root)
    except OSError as problem:
        raise RootUnavailable(root, reason_of(problem)) from None
    return (found.st_dev, found.st_ino)


def scan_tree(root: Path) -> TreeScan:
    """Every config file under ``root``; names starting with a dot are skipped.

    Raises :class:`RootUnavailable` when the root cannot be listed (also when it goes
    away during the walk).
    """
    check_root(root)
    top = str(root)
    unreadable: dict[str, str] = {}
    lost_root: list[str] = []

    def note(problem: OSError) -> None:
        where = str(problem.filename) if problem.filename is not None else top
        if where == top:
            lost_root.append(reason_of(problem))
        elif problem.errno != errno.ENOENT:  # a subdirectory removed meanwhile is just gone
            unreadable[where] = reason_of(problem)

    found: list[str] = []
    for directory, dirs, files in os.walk(top, onerror=note):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for file in files:
            path = Path(directory, file)
            if is_config_file(path):
                found.append(str(path))
    if lost_root:
        raise RootUnavailable(root, lost_root[0])
    return TreeScan(tuple(sorted(found)), unreadable)
