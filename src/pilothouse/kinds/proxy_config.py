"""ProxyConfig: worker threads, environment and image flavour of the proxies it selects.

Only ``networking.istio.io/v1beta1`` (Istio serves no other version of it). One without
a selector in the root namespace applies to every proxy of the mesh, one without a
selector elsewhere to the proxies of its namespace, one with a selector to the workloads
whose labels hold it (:mod:`pilothouse.config.proxy_settings` merges them as istiod does).

It changes no xDS resource: istiod applies it when it injects a proxy, and pilothouse
when it writes a proxy's bootstrap (``pilothouse bootstrap``). So no proxy's scope sees a
change (:attr:`~pilothouse.kinds.kind.Audience.NO_PROXY`), it names no xDS type its
changes can alter, and it moves no endpoint: it pushes nothing to proxies. It is stored,
validated and served over MCP like any other kind.
"""

from __future__ import annotations

from pilothouse.api.istio.networking.v1beta1 import proxy_config_pb2
from pilothouse.config.validation.proxy_config import validate_proxy_config
from pilothouse.kinds.groups import networking
from pilothouse.kinds.kind import Audience, Kind
from pilothouse.protocol.type_urls import CDS, LDS, RDS

KIND = Kind(
    name="ProxyConfig",
    schema=networking(
        "ProxyConfig",
        proxy_config_pb2.ProxyConfig,
        "proxyconfigs",
        validate_proxy_config,
        versions=("v1beta1",),
        mcp_version="v1beta1",
    ),
    short_names=("pc",),
    audience=Audience.NO_PROXY,
    unread_by=frozenset({CDS, LDS, RDS}),
)
