"""The file source when its directory goes away, is replaced or cannot be read.

Real directories and the real watcher throughout. The tests run as root, for whom
``chmod`` cannot make a directory unreadable, so the permission cases make the one OS
call that lists a directory fail with ``EACCES`` (a stand-in for the kernel's answer to
an unprivileged user); everything else is real.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from pilothouse.sources.events import ConfigEvent, EventType
from pilothouse.sources.fs import FileSource

from .test_fs_source import gateway, key, port_of, wait_until

POLL = 0.1


@pytest.fixture
def mesh(tmp_path: Path) -> Path:
    root = tmp_path / "m"
    (root / "team").mkdir(parents=True)
    (root / "a.yaml").write_text(gateway("a", 80))
    (root / "b.yaml").write_text(gateway("b", 80))
    (root / "team" / "c.yaml").write_text(gateway("c", 80))
    return root


@pytest.fixture
async def running(mesh: Path) -> AsyncIterator[tuple[FileSource, list[ConfigEvent]]]:
    source = FileSource(mesh, debounce=0.05, root_poll=POLL)
    events: list[ConfigEvent] = []
    source.store.subscribe(events.append)
    task = asyncio.create_task(source.run())
    await wait_until(source.has_synced, 5)
    await asyncio.sleep(0.3)  # let the watcher start
    yield source, events
    source.close()
    await asyncio.wait_for(task, 5)


def names(source: FileSource) -> list[str]:
    return sorted(k.name for k in source.store.keys())


def unavailable_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "pilothouse.sources.fs" and "unavailable" in r.getMessage()
    ]


@pytest.fixture
def deny_listing(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """Paths in the returned set cannot be listed (EACCES), as for a user without read
    permission on them."""
    denied: set[str] = set()
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if os.fspath(path) in denied:
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    yield denied


async def test_moved_away_keeps_objects_then_applies_differences_when_back(
    running: tuple[FileSource, list[ConfigEvent]], mesh: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source, events = running
    caplog.set_level(logging.INFO, logger="pilothouse.sources.fs")
    aside = mesh.with_name("m.x")
    before = len(events)
    mesh.rename(aside)
    await wait_until(lambda: not source.availability().available, 5)
    await asyncio.sleep(5 * POLL)  # several polls while it is away
    assert names(source) == ["a", "b", "c"]
    assert len(events) == before, "nothing may be deleted while the directory is away"
    state = source.availability()
    assert state.reason == "missing" and state.source == f"fs://{mesh}"
    assert len(unavailable_logs(caplog)) == 1
    assert "missing" in unavailable_logs(caplog)[0]

    # edited while away: one object changed, one file gone
    (aside / "a.yaml").write_text(gateway("a", 81))
    (aside / "b.yaml").unlink()
    aside.rename(mesh)
    await wait_until(lambda: source.availability().available, 5)
    await wait_until(lambda: port_of(source, "a") == 81, 5)
    assert names(source) == ["a", "c"]
    changed = [(e.type, e.key.name) for e in events[before:]]
    assert sorted(changed) == [(EventType.DELETE, "b"), (EventType.UPDATE, "a")]

    # and the watcher runs again
    (mesh / "d.yaml").write_text(gateway("d", 80))
    await wait_until(lambda: source.store.get(key("d")) is not None, 5)


async def test_removed_and_recreated_is_read_again_and_watched(
    running: tuple[FileSource, list[ConfigEvent]], mesh: Path
) -> None:
    source, events = running
    before = len(events)
    shutil.rmtree(mesh)
    await wait_until(lambda: not source.availability().available, 5)
    await asyncio.sleep(3 * POLL)
    assert names(source) == ["a", "b", "c"]
    assert len(events) == before

    mesh.mkdir()
    (mesh / "a.yaml").write_text(gateway("a", 80))  # same as before: no event
    (mesh / "e.yaml").write_text(gateway("e", 80))
    await wait_until(lambda: source.store.get(key("e")) is not None, 5)
    await wait_until(lambda: names(source) == ["a", "e"], 5)
    changed = sorted((e.type, e.key.name) for e in events[before:])
    assert changed == [
        (EventType.ADD, "e"),
        (EventType.DELETE, "b"),
        (EventType.DELETE, "c"),
    ]
    assert source.availability().available

    (mesh / "a.yaml").write_text(gateway("a", 82))
    await wait_until(lambda: port_of(source, "a") == 82, 5)


async def test_replaced_within_one_poll_is_noticed(
    running: tuple[FileSource, list[ConfigEvent]], mesh: Path
) -> None:
    """``rm -rf`` and ``mkdir`` back to back: the old watcher watches a dead inode, so
    the source must notice the new directory by itself and watch that one."""
    source, _events = running
    replacement = mesh.with_name("m.new")
    replacement.mkdir()
    (replacement / "a.yaml").write_text(gateway("a", 90))
    shutil.rmtree(mesh)
    replacement.rename(mesh)
    await wait_until(lambda: port_of(source, "a") == 90, 5)
    await wait_until(lambda: names(source) == ["a"], 5)
    (mesh / "f.yaml").write_text(gateway("f", 80))
    await wait_until(lambda: source.store.get(key("f")) is not None, 5)


async def test_root_replaced_by_a_file_is_not_a_directory(
    running: tuple[FileSource, list[ConfigEvent]], mesh: Path
) -> None:
    source, _events = running
    shutil.rmtree(mesh)
    mesh.write_text("not a directory")
    await wait_until(lambda: source.availability().reason == "not a directory", 5)
    assert not source.availability().available
    assert names(source) == ["a", "b", "c"]
    mesh.unlink()
    mesh.mkdir()
    (mesh / "a.yaml").write_text(gateway("a", 80))
    await wait_until(lambda: names(source) == ["a"], 5)
    assert source.availability().available


async def test_unreadable_root_keeps_objects_and_says_permission_denied(
    running: tuple[FileSource, list[ConfigEvent]],
    mesh: Path,
    deny_listing: set[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    source, events = running
    caplog.set_level(logging.INFO, logger="pilothouse.sources.fs")
    before = len(events)
    deny_listing.add(str(mesh))
    (mesh / "a.yaml").write_text(gateway("a", 85))  # an event, so that the source looks
    await wait_until(lambda: source.availability().reason == "permission denied", 5)
    await asyncio.sleep(3 * POLL)
    assert names(source) == ["a", "b", "c"] and port_of(source, "a") == 80
    assert len(events) == before
    logged = unavailable_logs(caplog)
    assert len(logged) == 1 and "permission denied" in logged[0]

    deny_listing.clear()
    await wait_until(lambda: port_of(source, "a") == 85, 5)
    assert source.availability().available and names(source) == ["a", "b", "c"]


async def test_unreadable_subdirectory_keeps_its_files_objects(
    running: tuple[FileSource, list[ConfigEvent]], mesh: Path, deny_listing: set[str]
) -> None:
    source, _events = running
    team = str(mesh / "team")
    deny_listing.add(team)
    (mesh / "b.yaml").unlink()  # a real removal next to it still deletes
    await wait_until(lambda: source.store.get(key("b")) is None, 5)
    assert source.store.get(key("c")) is not None
    state = source.availability()
    assert state.available and team in state.reason and "permission denied" in state.reason

    deny_listing.clear()
    (mesh / "team" / "c.yaml").unlink()
    await wait_until(lambda: source.store.get(key("c")) is None, 5)
    assert source.availability().reason == ""


async def test_file_that_cannot_be_looked_at_keeps_its_objects(
    mesh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder without search permission: ``stat`` of its files fails with EACCES."""
    source = FileSource(mesh)
    source.load_all()
    hidden = str(mesh / "team" / "c.yaml")
    real = os.stat

    def stat(path: Any, *args: Any, **kwargs: Any) -> Any:
        if os.fspath(path) == hidden:
            raise PermissionError(errno.EACCES, "Permission denied", hidden)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    source.reload([hidden])
    assert source.store.get(key("c")) is not None
    (problem,) = source.statuses()[hidden].problems
    assert problem.file == hidden and "permission denied" in problem.message


async def test_missing_at_start_is_picked_up_when_it_appears(tmp_path: Path) -> None:
    root = tmp_path / "later"
    source = FileSource(root, debounce=0.05, root_poll=POLL)
    task = asyncio.create_task(source.run())
    try:
        await wait_until(source.has_synced, 5)
        assert source.store.keys() == []
        assert source.availability().reason == "missing"
        root.mkdir()
        (root / "a.yaml").write_text(gateway("a", 80))
        await wait_until(lambda: source.store.get(key("a")) is not None, 5)
        assert source.availability().available
        (root / "a.yaml").write_text(gateway("a", 81))
        await wait_until(lambda: port_of(source, "a") == 81, 5)
    finally:
        source.close()
        await asyncio.wait_for(task, 5)
