"""The file source on a real temporary directory, with real edits seen by the real watcher."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from pilothouse.config.load import Loader, LoadResult
from pilothouse.config.model import ConfigKey
from pilothouse.sources.events import ConfigEvent, EventType
from pilothouse.sources.fs import FileSource


def gateway(name: str, port: int = 80, namespace: str = "default") -> str:
    return f"""\
apiVersion: networking.istio.io/v1
kind: Gateway
metadata:
  name: {name}
  namespace: {namespace}
spec:
  selector: {{istio: ingressgateway}}
  servers:
  - port: {{number: {port}, name: http, protocol: HTTP}}
    hosts: ["*"]
"""


def key(name: str) -> ConfigKey:
    return ConfigKey("Gateway", "default", name)


def port_of(source: FileSource, name: str) -> int | None:
    config = source.store.get(key(name))
    return None if config is None else int(config.spec.servers[0].port.number)  # type: ignore[attr-defined]


def test_rules_without_the_watcher(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(gateway("a") + "---\n" + gateway("b"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.json").write_text(
        '{"apiVersion": "networking.istio.io/v1", "kind": "Gateway", "metadata": {"name": "c"},'
        ' "spec": {"servers": [{"port": {"number": 90, "name": "h", "protocol": "HTTP"},'
        ' "hosts": ["*"]}]}}'
    )
    (tmp_path / ".hidden.yaml").write_text("not: [valid")
    (tmp_path / "notes.txt").write_text("ignored")
    source = FileSource(tmp_path)
    events: list[ConfigEvent] = []
    source.store.subscribe(events.append)
    assert not source.has_synced()
    source.load_all()
    assert source.has_synced()
    assert sorted(k.name for k in source.store.keys()) == ["a", "b", "c"]
    a_file = str(tmp_path / "a.yaml")

    # break the file: last good objects stay, the error has file and line
    (tmp_path / "a.yaml").write_text(gateway("a", 81) + "---\nkind: [\n")
    source.reload([a_file])
    assert port_of(source, "a") == 80 and port_of(source, "b") == 80
    status = source.statuses()[a_file]
    assert not status.ok
    assert status.problems[0].line == 13 and "invalid YAML" in status.problems[0].message

    # an invalid object keeps its last good version while its sibling updates
    (tmp_path / "a.yaml").write_text(gateway("a", 82) + "---\n" + gateway("b", 0))
    source.reload([a_file])
    assert port_of(source, "a") == 82 and port_of(source, "b") == 80
    assert "spec.servers[0].port.number" in str(source.statuses()[a_file].problems[0])

    # fix it
    (tmp_path / "a.yaml").write_text(gateway("a", 82) + "---\n" + gateway("b", 83))
    source.reload([a_file])
    assert port_of(source, "b") == 83 and source.statuses()[a_file].ok

    # removing an object from a file deletes it; deleting the file deletes the rest
    (tmp_path / "a.yaml").write_text(gateway("a", 82))
    source.reload([a_file])
    assert source.store.get(key("b")) is None
    (tmp_path / "a.yaml").unlink()
    source.reload([a_file])
    assert [k.name for k in source.store.keys()] == ["c"]
    assert a_file not in source.statuses()
    kinds = [(e.type, e.key.name) for e in events]
    assert kinds[-2:] == [(EventType.DELETE, "b"), (EventType.DELETE, "a")]


def test_duplicate_across_files_first_wins_then_hands_over(tmp_path: Path) -> None:
    (tmp_path / "1-first.yaml").write_text(gateway("dup", 1))
    (tmp_path / "2-second.yaml").write_text(gateway("dup", 2))
    source = FileSource(tmp_path)
    source.load_all()
    assert port_of(source, "dup") == 1
    second = str(tmp_path / "2-second.yaml")
    (problem,) = source.statuses()[second].problems
    assert problem.file == second and problem.line == 1
    assert (
        str(tmp_path / "1-first.yaml") in problem.message and "already defined" in problem.message
    )
    (tmp_path / "1-first.yaml").unlink()
    source.reload([str(tmp_path / "1-first.yaml")])
    assert port_of(source, "dup") == 2
    assert source.statuses()[second].ok


def test_missing_directory_is_empty_and_synced(tmp_path: Path) -> None:
    source = FileSource(tmp_path / "nope")
    source.load_all()
    assert source.has_synced() and source.store.keys() == []


@pytest.fixture
async def watched(tmp_path: Path) -> AsyncIterator[tuple[FileSource, list[ConfigEvent]]]:
    (tmp_path / "base.yaml").write_text(gateway("base"))
    source = FileSource(tmp_path, debounce=0.05)
    events: list[ConfigEvent] = []
    source.store.subscribe(events.append)
    task = asyncio.create_task(source.run())
    while not source.has_synced():
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.3)  # let the watcher start
    yield source, events
    source.close()
    await asyncio.wait_for(task, 5)


async def wait_until(check: Callable[[], bool], timeout: float) -> float:
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(0.01)
    return time.monotonic() - start


async def test_watcher_sees_add_modify_break_fix_delete(
    watched: tuple[FileSource, list[ConfigEvent]], tmp_path: Path
) -> None:
    source, events = watched
    path = tmp_path / "more" / "new.yaml"
    path.parent.mkdir()
    path.write_text(gateway("new", 80))
    elapsed = await wait_until(lambda: port_of(source, "new") == 80, 5)
    assert elapsed < 1.0, f"an added file took {elapsed:.2f}s to show up"

    path.write_text(gateway("new", 81))
    await wait_until(lambda: port_of(source, "new") == 81, 5)

    path.write_text("kind: [broken\n")
    await wait_until(
        lambda: str(path) in source.statuses() and not source.statuses()[str(path)].ok, 5
    )
    assert port_of(source, "new") == 81

    path.write_text(gateway("new", 82))
    await wait_until(lambda: port_of(source, "new") == 82, 5)

    path.unlink()
    await wait_until(lambda: source.store.get(key("new")) is None, 5)
    assert port_of(source, "base") == 80
    seen = [(e.type, e.key.name) for e in events if e.key.name == "new"]
    assert seen == [
        (EventType.ADD, "new"),
        (EventType.UPDATE, "new"),
        (EventType.UPDATE, "new"),
        (EventType.DELETE, "new"),
    ]


async def test_watcher_sees_a_removed_directory(
    watched: tuple[FileSource, list[ConfigEvent]], tmp_path: Path
) -> None:
    source, _events = watched
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "g.yaml").write_text(gateway("team-gw"))
    await wait_until(lambda: source.store.get(key("team-gw")) is not None, 5)
    (folder / "g.yaml").unlink()
    folder.rmdir()
    await wait_until(lambda: source.store.get(key("team-gw")) is None, 5)


def test_a_tag_or_a_huge_number_keeps_the_objects_last_good_version(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(gateway("a", 80) + "---\n" + gateway("b", 80))
    source = FileSource(tmp_path)
    source.load_all()
    for broken in (
        gateway("a", 81).replace("kind: Gateway", "kind: !!bool Gateway"),
        gateway("a", 81).replace("name: a", "name: !!timestamp a"),
        gateway("a", 81).replace("number: 81", "number: '" + "8" * 5000 + "'"),
        gateway("a", 81).replace("name: a", "name: !!python/object:os.system a"),
    ):
        path.write_text(broken + "---\n" + gateway("b", 90))
        source.reload([str(path)])
        assert port_of(source, "a") == 80, broken  # the last good version stays
        assert port_of(source, "b") == 90  # its sibling in the same file updates
        (problem,) = source.statuses()[str(path)].problems
        assert problem.key == key("a") and problem.file == str(path) and problem.line
        path.write_text(gateway("a", 80) + "---\n" + gateway("b", 80))
        source.reload([str(path)])
        assert source.statuses()[str(path)].ok


def test_a_loader_failure_in_one_file_keeps_that_files_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.yaml").write_text(gateway("a", 80))
    (tmp_path / "b.yaml").write_text(gateway("b", 80))
    source = FileSource(tmp_path)
    source.load_all()
    real = Loader.load_bytes

    def load_bytes(self: Loader, data: bytes, file: str) -> LoadResult:
        if file.endswith("a.yaml"):
            raise RuntimeError("a bug")
        return real(self, data, file)

    monkeypatch.setattr(Loader, "load_bytes", load_bytes)
    (tmp_path / "a.yaml").write_text(gateway("a", 81))
    (tmp_path / "b.yaml").write_text(gateway("b", 81))
    source.reload([str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")])
    assert port_of(source, "a") == 80 and port_of(source, "b") == 81
    (problem,) = source.statuses()[str(tmp_path / "a.yaml")].problems
    assert "internal error" in problem.message and "RuntimeError" in problem.message


def test_an_object_moved_to_another_file_is_handed_over(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(gateway("moved", 80))
    source = FileSource(tmp_path)
    source.load_all()
    events: list[ConfigEvent] = []
    source.store.subscribe(events.append)

    # renamed (b.yaml -> a.yaml, before it in sorted order) and edited: one update
    (tmp_path / "b.yaml").unlink()
    (tmp_path / "a.yaml").write_text(gateway("moved", 81))
    source.reload([str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")])
    assert port_of(source, "moved") == 81
    assert [(e.type, e.key.name) for e in events] == [(EventType.UPDATE, "moved")]

    # renamed again (a.yaml -> c.yaml) and made invalid on the way: the last good stays
    (tmp_path / "a.yaml").unlink()
    broken = gateway("moved", 82).replace("name: moved", "name: !!bool moved")
    (tmp_path / "c.yaml").write_text(broken)
    source.reload([str(tmp_path / "a.yaml"), str(tmp_path / "c.yaml")])
    assert port_of(source, "moved") == 81 and len(events) == 1
    (problem,) = source.statuses()[str(tmp_path / "c.yaml")].problems
    assert "!!bool" in problem.message

    # and the fix reaches it
    (tmp_path / "c.yaml").write_text(gateway("moved", 83))
    source.reload([str(tmp_path / "c.yaml")])
    assert port_of(source, "moved") == 83 and source.statuses()[str(tmp_path / "c.yaml")].ok
