"""A file source's directory must exist when serve starts (a typo is not an empty mesh)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pilothouse.cli.config_sources import MissingConfigDirectory, check_config_directories
from pilothouse.settings import Settings

MEANT = "; did you mean {}?"

CASES = [
    ("--config", "exmaples", "no such directory ({root}/exmaples)" + MEANT.format("examples")),
    ("--config", "zzz", "no such directory ({root}/zzz)"),
    ("--config", "mesh.yaml", "not a directory ({root}/mesh.yaml)"),
    ("--config", "mesh.yaml/x", "no such directory ({root}/mesh.yaml/x: a part of it is a file)"),
    ("--config-source", "fs://{root}/exampels",
     "no such directory ({root}/exampels)" + MEANT.format("{root}/examples")),
]  # fmt: skip


def settings(**values: object) -> Settings:
    return Settings().with_overrides(values)


def test_existing_directories_and_other_sources_pass(tmp_path: Path) -> None:
    check_config_directories(
        settings(config_dirs=(tmp_path,), config_sources=("xds://h:1", f"fs://{tmp_path}")),
        ["etcd://h:2/m", "k8s://"],
    )


@pytest.mark.parametrize(("flag", "given", "problem"), CASES)
def test_a_missing_directory_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str, given: str, problem: str
) -> None:
    (tmp_path / "examples").mkdir()
    (tmp_path / "mesh.yaml").write_text("")
    monkeypatch.chdir(tmp_path)
    address = given.format(root=tmp_path)
    if flag == "--config":
        values = settings(config_dirs=(Path(address),))
    else:
        values = settings(config_sources=(address,))
    with pytest.raises(MissingConfigDirectory) as refused:
        check_config_directories(values)
    assert str(refused.value) == f"{flag} {address}: {problem.format(root=tmp_path)}"


def test_the_mesh_configs_sources_are_named_as_such(tmp_path: Path) -> None:
    with pytest.raises(MissingConfigDirectory, match=r"^the mesh config's configSources fs://"):
        check_config_directories(settings(), [f"fs://{tmp_path}/gone"])
