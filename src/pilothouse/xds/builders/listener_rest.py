"""Listeners for proxies that poll REST-JSON: their RDS references point at REST."""

from __future__ import annotations

from typing import Any

from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2 as hcm_pb2,
)

from pilothouse.xds.builders.cluster import RestPolling, rest_config_source


def rds_over_rest(listener: Any, polling: RestPolling) -> None:
    """Point every RDS reference of ``listener`` at REST polling (REST-mode proxies have
    no ADS stream)."""
    source = rest_config_source(polling)
    for chain in listener.filter_chains:
        for network_filter in chain.filters:
            if not network_filter.typed_config.Is(hcm_pb2.HttpConnectionManager.DESCRIPTOR):
                continue
            manager = hcm_pb2.HttpConnectionManager()
            network_filter.typed_config.Unpack(manager)
            if manager.HasField("rds"):
                manager.rds.config_source.CopyFrom(source)
                network_filter.typed_config.Pack(manager)
