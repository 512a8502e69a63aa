"""Suite-wide: every ``pilothouse serve`` a test starts gets a TLS port and a ControlZ
port on free loopback ports and a CA in a temporary directory, never the fixed 15012
and 9876 (another server on the machine may hold them) and never a CA under the
working directory.

Test processes inherit this environment (the harnesses pass ``os.environ`` down), and
in-process ``settings_from`` reads it too. The CA's root is made here, once, before any
test runs: RSA key generation is slow, and two servers started at the same moment
must not both create a root in the same directory.

Hypothesis runs with no per-example deadline and without its "too slow" health check:
both time the machine, not the code, and turned property tests red on a loaded CI
machine (a property still fails on any counterexample it finds).

Each collected test is also given its tier markers (``e2e``, ``envoy``, ``etcd``, ``kube``,
``browser``, ``slow``) from where it lives and what it reaches: see ``tests/tiers.py``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from pilothouse.security.ca import CertificateAuthority
from pilothouse.settings import CaSettings
from tests.tiers import fixture_tiers, module_tiers

TLS_ADDRESS = "PILOTHOUSE_XDS_TLS_ADDRESS"
CA_DIR = "PILOTHOUSE_CA_DIR"
CTRLZ_ADDRESS = "PILOTHOUSE_CTRLZ_ADDRESS"

settings.register_profile(
    "pilothouse", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("pilothouse")


def pytest_configure(config: pytest.Config) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="pilothouse-test-ca-"))
    config.stash[_SCRATCH] = scratch
    os.environ[TLS_ADDRESS] = "127.0.0.1:0"
    os.environ[CA_DIR] = str(scratch / "ca")
    os.environ[CTRLZ_ADDRESS] = "127.0.0.1:0"
    CertificateAuthority.open(CaSettings(dir=str(scratch / "ca")), "cluster.local")


def pytest_unconfigure(config: pytest.Config) -> None:
    scratch = config.stash.get(_SCRATCH, None)
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test with its tiers (see ``tests/tiers.py``)."""
    tests_root = Path(__file__).parent
    by_file: dict[Path, set[str]] = {}
    for item in items:
        if item.path not in by_file:
            by_file[item.path] = module_tiers(item.path, tests_root, getattr(item, "module", None))
        fixtures = getattr(item, "fixturenames", ())
        for marker in sorted(by_file[item.path] | fixture_tiers(fixtures)):
            item.add_marker(marker)


_SCRATCH = pytest.StashKey[Path]()
