"""Where a proxy's Envoy admin API is, from its node metadata: ``ENVOY_ADMIN_ADDRESS``.

``pilothouse inspect --sample`` reads the ``/config_dump`` of proxies it picks among
those connected, so it must know where each one's admin API listens. Istio's proxies
do not say: they carry ``ENVOY_STATUS_PORT`` and ``ENVOY_PROMETHEUS_PORT`` (the agent's
ports, not Envoy's admin) and ``INSTANCE_IPS``, and their admin port (15000) listens
on the pod's loopback only, so the pod IP and 15000 would name an address nobody can
reach. pilothouse therefore uses a metadata key of its own, ``ENVOY_ADMIN_ADDRESS``:
``host:port`` of the admin API as seen from where ``inspect`` runs. ``pilothouse
bootstrap`` writes it whenever it knows the port (``--admin-port`` other than 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from pilothouse.addresses import AddressError, parse_host_port

ENVOY_ADMIN_ADDRESS: Final = "ENVOY_ADMIN_ADDRESS"
"""The node metadata key: ``host:port`` of the proxy's Envoy admin API."""


def envoy_admin_address(metadata: Mapping[str, str] | None) -> str | None:
    """The admin ``host:port`` a proxy's metadata names, or None (absent or malformed)."""
    if not metadata:
        return None
    value = metadata.get(ENVOY_ADMIN_ADDRESS, "").strip()
    try:
        parse_host_port(value, ENVOY_ADMIN_ADDRESS, dial=True)
    except AddressError:
        return None
    return value
