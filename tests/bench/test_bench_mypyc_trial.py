"""bench/mypyc_trial.py without its build (compiling the engine takes about 40 s of CPU,
more than a smoke test may spend): the engine it compiles is still the stream engine's
modules, the build copy gets the repository's mypy settings and nothing else, the runs
alternate, and a pure child is told apart from a compiled one."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import mypyc_trial

SRC = Path(__file__).resolve().parents[2] / "src"


def test_the_engine_is_the_per_connection_path() -> None:
    files = mypyc_trial.engine_files(SRC)
    assert len(files) == len(set(files)) >= 25
    for path in files:
        assert (SRC / path).is_file() and not path.endswith("__init__.py")
    for wanted in (
        "pilothouse/xds/server/connection.py",
        "pilothouse/xds/protocol/sotw.py",
        "pilothouse/xds/protocol/stream_engine.py",
        "pilothouse/push/workers.py",
    ):
        assert wanted in files
    # push_cost.py replaces functions of these: a compiled module's cannot be replaced
    assert "pilothouse/push/pipeline.py" not in files
    assert "pilothouse/push/proxy_push.py" not in files


def test_the_build_copy_gets_the_mypy_settings_alone() -> None:
    config = mypyc_trial.mypy_config()
    assert config.startswith("[tool.mypy]")
    assert 'module = ["pilothouse.api.*"]' in config
    assert "setuptools" not in config and "[project" not in config


def test_runs_alternate_so_each_side_goes_first_as_often() -> None:
    order = list(mypyc_trial.alternated(4))
    assert order == [
        (0, False), (0, True), (1, True), (1, False),
        (2, False), (2, True), (3, True), (3, False),
    ]  # fmt: skip


def test_paired_runs_give_compiled_over_pure() -> None:
    figure = mypyc_trial.paired([100.0, 80.0], [90.0, 60.0])
    assert figure["compiled_to_pure_per_run"] == [0.9, 0.75]
    assert figure["compiled_to_pure"] == 0.825
    assert (figure["pure"], figure["compiled"]) == (90.0, 75.0)


def test_a_pure_child_is_told_apart_from_a_compiled_one(tmp_path: Path) -> None:
    mypyc_trial.check_engine(None)  # the source tree: connection.py
    with pytest.raises(RuntimeError, match="not the engine this side measures"):
        mypyc_trial.check_engine(tmp_path)  # nothing built there: still the .py


def test_the_keep_rule_wants_both_the_speed_and_a_cheap_build(tmp_path: Path) -> None:
    def built(wall: float) -> mypyc_trial.Build:
        return mypyc_trial.Build(tmp_path, (), wall, wall)

    assert mypyc_trial.met(0.12, built(15.0)).startswith("yes: keep")
    assert mypyc_trial.met(0.12, built(45.0)).startswith("no: ")
    assert mypyc_trial.met(0.08, built(15.0)).startswith("no: server CPU per push down 8.0%")
    assert mypyc_trial.met(0.12, built(0.0)).startswith("not judged")  # reused, not timed
