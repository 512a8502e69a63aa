"""One atomic write: the mode asked for whatever the umask, the old file replaced whole,
file and directory fsynced, and nothing left behind (the old file intact) on failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pilothouse.atomic_file import replace_file


@pytest.mark.parametrize("mode", [0o600, 0o644, 0o640])
def test_the_file_has_the_mode_asked_for_whatever_the_umask(tmp_path: Path, mode: int) -> None:
    target = tmp_path / "key.pem"
    previous = os.umask(0o077)
    try:
        replace_file(target, b"secret", mode=mode)
    finally:
        os.umask(previous)
    assert target.read_bytes() == b"secret"
    assert target.stat().st_mode & 0o777 == mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["key.pem"]


def test_a_file_is_replaced_whole_and_takes_the_new_mode(tmp_path: Path) -> None:
    target = tmp_path / "issuer"
    target.write_bytes(b"an older, longer content\n")
    target.chmod(0o600)
    inode = target.stat().st_ino
    replace_file(target, b"new\n", mode=0o644)
    assert target.read_bytes() == b"new\n"
    assert target.stat().st_mode & 0o777 == 0o644
    assert target.stat().st_ino != inode  # a new file renamed over it, not rewritten
    assert sorted(p.name for p in tmp_path.iterdir()) == ["issuer"]


def test_file_and_directory_are_fsynced_before_and_after_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    order: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(descriptor: int) -> None:
        order.append("dir" if os.path.isdir(f"/proc/self/fd/{descriptor}") else "file")
        real_fsync(descriptor)

    def replace(source: object, target: object) -> None:
        order.append("rename")
        real_replace(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    replace_file(tmp_path / "cert.pem", b"pem", mode=0o644)
    assert order == ["file", "rename", "dir"]


def test_a_failed_write_leaves_the_old_file_and_no_partial_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "root-cert.pem"
    target.write_bytes(b"old")

    def no_space(descriptor: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(OSError, match="No space left"):
        replace_file(target, b"new and partial", mode=0o644)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["root-cert.pem"]


def test_a_missing_directory_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "absent")):
        replace_file(tmp_path / "absent" / "file", b"x", mode=0o600)
