"""The Gateway API status ``pilothouse get … -o yaml|json`` shows for objects kept in the
config store (etcd): computed from everything the store holds, as a server serving it
would report it (:mod:`pilothouse.kinds.gateway_api.status`; backends are found among
the store's ServiceEntry hosts, the only services a store without Kubernetes declares)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aetcd

from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds import service_entry
from pilothouse.kinds.gateway_api.kinds import GROUP
from pilothouse.kinds.gateway_api.status import Status, gateway_api_status
from pilothouse.kinds.gateway_api.translation import translate
from pilothouse.sources.etcd_client import list_prefix
from pilothouse.sources.etcd_layout import EtcdLayout


def shows_status(group: str) -> bool:
    """Whether objects of ``group`` get a computed status (the Gateway API's)."""
    return group == GROUP


async def store_statuses(
    client: aetcd.Client, layout: EtcdLayout, loader: Loader
) -> dict[ConfigKey, Status]:
    """The status of every Gateway API object in the store."""
    by_kind: dict[str, list[Config]] = {}
    for schema in layout.schemas:
        for kv in (await list_prefix(client, layout.kind_range(schema.kind))).kvs:
            stored = layout.decode(loader, kv.key, kv.value, kv.mod_revision)
            if stored.config is not None:
                by_kind.setdefault(schema.kind, []).append(stored.config)

    def configs(kind: str) -> Sequence[Config]:
        return by_kind.get(kind, [])

    hosts = {
        host
        for entry in configs(service_entry.KIND.name)
        for host in getattr(entry.spec, "hosts")  # noqa: B009 (a ServiceEntry's hosts)
    }
    domain = MeshSettings().domain_suffix
    return gateway_api_status(translate(configs, domain), configs, hosts.__contains__, domain)


def with_status(data: dict[str, Any], status: Status | None) -> dict[str, Any]:
    """``data`` with ``status`` (left as stored when there is none)."""
    return {**data, "status": status} if status is not None else data
