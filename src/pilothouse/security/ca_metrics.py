"""The CA's metrics, under istiod's names (``security/pkg/server/ca/monitoring.go``).

Counters are plain integers the certificate service increments; :class:`CaCollector`
reads them, and the CA's expiry times, when ``/metrics`` is scraped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from pilothouse.metrics.families import gauge, istiod_counter


@dataclass
class CaCounters:
    """What the certificate service counted since start."""

    csr: int = 0
    success: int = 0
    authentication_failure: int = 0
    sign_error: int = 0


class CaCollector(Collector):
    """``citadel_server_*`` for ``/metrics``."""

    def __init__(
        self,
        counters: CaCounters,
        root_expiry: Callable[[], float],
        chain_expiry: Callable[[], float],
    ) -> None:
        self._counters = counters
        self._root_expiry = root_expiry
        self._chain_expiry = chain_expiry

    def collect(self) -> Iterator[Metric]:
        counts = self._counters
        yield istiod_counter(
            "citadel_server_csr_count", "The number of CSRs received by Citadel server.", counts.csr
        )
        yield istiod_counter(
            "citadel_server_success_cert_issuance_count",
            "The number of certificates issuances that have succeeded.",
            counts.success,
        )
        yield istiod_counter(
            "citadel_server_authentication_failure_count",
            "The number of authentication failures.",
            counts.authentication_failure,
        )
        yield istiod_counter(
            "citadel_server_csr_sign_err_count",
            "The number of errors occurred when signing the CSR.",
            counts.sign_error,
        )
        yield gauge(
            "citadel_server_root_cert_expiry_timestamp",
            "The unix timestamp, in seconds, when Citadel root cert will expire.",
            self._root_expiry(),
        )
        yield gauge(
            "citadel_server_cert_chain_expiry_timestamp",
            "The unix timestamp, in seconds, when Citadel cert chain will expire.",
            self._chain_expiry(),
        )
