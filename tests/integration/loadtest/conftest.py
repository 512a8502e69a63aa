"""The simulated-proxy fixtures of the unit tier (a fake ADS server), for the load
generator's command-line tests that also run trigger commands as processes."""

from __future__ import annotations

from tests.unit.loadtest.conftest import ads_server

__all__ = ["ads_server"]
