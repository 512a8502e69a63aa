"""The test suite's own tiers: the unit tier refuses to start processes, and markers come
from a test's directory and from the peers its module reaches."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.tiers import fixture_tiers, module_tiers
from tests.unit.conftest import ProcessStartedInUnitTier

TESTS = Path(__file__).resolve().parents[2]


def test_subprocesses_are_refused_in_the_unit_tier() -> None:
    with pytest.raises(ProcessStartedInUnitTier, match="move it to tests/integration"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
    with pytest.raises(ProcessStartedInUnitTier):
        subprocess.Popen(["true"])
    with pytest.raises(ProcessStartedInUnitTier):
        os.system("true")


async def test_asyncio_subprocesses_are_refused_in_the_unit_tier() -> None:
    with pytest.raises(ProcessStartedInUnitTier):
        await asyncio.create_subprocess_exec("true")
    with pytest.raises(ProcessStartedInUnitTier):
        await asyncio.create_subprocess_shell("true")


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing_is_refused_in_the_unit_tier(method: str) -> None:
    process = multiprocessing.get_context(method).Process(target=print)
    with pytest.raises(ProcessStartedInUnitTier):
        process.start()


def module(name: str, **values: object) -> ModuleType:
    made = ModuleType(name)
    vars(made).update(values)
    return made


def test_markers_come_from_the_directory() -> None:
    assert module_tiers(TESTS / "e2e" / "test_x.py", TESTS, None) == {"e2e"}
    assert module_tiers(TESTS / "kube" / "test_x.py", TESTS, None) == {"kube"}
    assert module_tiers(TESTS / "bench" / "test_x.py", TESTS, None) == {"slow"}
    assert module_tiers(TESTS / "fuzz" / "test_x.py", TESTS, None) == {"slow"}
    assert module_tiers(TESTS / "unit" / "push" / "test_x.py", TESTS, None) == set()
    assert module_tiers(TESTS / "integration" / "test_x.py", TESTS, None) == set()


def test_markers_come_from_the_peers_a_module_reaches(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test module reaching the Envoy harness through another test module of the suite
    is an Envoy test; Envoy's protos alone are not."""

    def starts_envoy() -> None: ...

    starts_envoy.__module__ = "tests.e2e.harness.fleet"
    helper = module("tests.integration.fake_helper", starts_envoy=starts_envoy)
    monkeypatch.setitem(sys.modules, helper.__name__, helper)
    reaching = module("tests.integration.test_fake", helper=helper)
    monkeypatch.setitem(sys.modules, reaching.__name__, reaching)
    protos = module("tests.integration.test_protos", cluster_pb2=module("envoy.config.cluster"))
    monkeypatch.setitem(sys.modules, protos.__name__, protos)
    etcd_user = module("tests.integration.test_etcd_user", etcd=module("tests.e2e.harness.etcd"))
    monkeypatch.setitem(sys.modules, etcd_user.__name__, etcd_user)
    browser = module("tests.e2e.test_browser", page=module("playwright.async_api._generated"))
    monkeypatch.setitem(sys.modules, browser.__name__, browser)

    here = TESTS / "integration" / "test_fake.py"
    assert module_tiers(here, TESTS, reaching) == {"envoy"}
    assert module_tiers(here, TESTS, protos) == set()
    assert module_tiers(here, TESTS, etcd_user) == {"etcd"}
    assert module_tiers(TESTS / "e2e" / "test_browser.py", TESTS, browser) == {"e2e", "browser"}


def test_markers_come_from_fixtures_that_start_peers() -> None:
    assert fixture_tiers(["tmp_path", "envoy_factory"]) == {"envoy"}
    assert fixture_tiers(["tmp_path", "free_port"]) == set()

