"""What serve serves: the mesh config and config sources loaded in one step, with serve's
errors and exits (nothing started, no port opened)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from pilothouse.cli.serve_config import ServedConfig, load_served_config
from pilothouse.settings import Settings


def settings(**values: object) -> Settings:
    return Settings().with_overrides(values)


def load(given: Settings) -> ServedConfig:
    return asyncio.run(load_served_config(given))


def test_the_mesh_config_and_its_sources_are_loaded_into_one_store(tmp_path: Path) -> None:
    named = tmp_path / "named"
    named.mkdir()
    mesh = tmp_path / "mesh.yaml"
    mesh.write_text(f"rootNamespace: ops\nconfigSources:\n- address: fs://{named}\n")
    config = load(settings(mesh_file=str(mesh), config_dirs=(tmp_path,)))
    assert config.mesh.root_namespace == "ops"
    assert config.mesh_sources == (f"fs://{named}",)
    assert [s.name for s in config.sources] == [f"fs://{tmp_path}", f"fs://{named}"]
    assert (config.kube_mesh, config.kube_registry, config.reverse) == (None, None, None)
    assert not config.store.has_synced()  # loaded, not started
    config.close()


def test_a_mesh_file_that_cannot_be_read_ends_serve_naming_it(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as ended:
        load(settings(mesh_file=str(tmp_path / "absent.yaml")))
    assert str(ended.value.code).startswith("pilothouse: --mesh: ")
    assert "absent.yaml" in str(ended.value.code)


def test_a_missing_directory_the_mesh_config_names_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mesh = tmp_path / "mesh.yaml"
    mesh.write_text(f"configSources:\n- address: fs://{tmp_path}/absent\n")
    with pytest.raises(SystemExit) as ended:
        load(settings(mesh_file=str(mesh)))
    assert ended.value.code == 2
    assert capsys.readouterr().err.startswith("pilothouse serve: ")


def test_no_source_is_served_empty_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "pilothouse.serve"):
        config = load(settings(config_dirs=()))
    assert config.sources == [] and config.reverse is None
    assert "no config source given" in caplog.text


def test_accepting_sources_adds_the_reverse_sink_s_store(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, "pilothouse.serve"):
        config = load(settings(config_dirs=(), **{"mcp.accept_sources": True}))
    assert config.reverse is not None and config.sources == []
    assert "no config source given" not in caplog.text  # sinks dial in with the config
