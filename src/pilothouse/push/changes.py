"""Plain change descriptions into PushRequests: a config event's key, a registry update.

The registry describes what changed (:class:`~pilothouse.registry.update.RegistryUpdate`)
and knows nothing of pushes; this module decides what push each change asks for.
"""

from __future__ import annotations

import math

from pilothouse.config.model import ConfigKey
from pilothouse.kinds.table import KINDS
from pilothouse.push.request import PushRequest, TriggerReason
from pilothouse.registry.update import RegistryUpdate

REGISTRY_KINDS = frozenset(k.name for k in KINDS if k.in_registry)
"""Kinds the registry turns into service and endpoint updates (each kind's
:attr:`~pilothouse.kinds.kind.Kind.in_registry`: ServiceEntry, WorkloadEntry)."""


def in_registry(key: ConfigKey) -> bool:
    """Whether the registry turns ``key``'s object into service and endpoint updates (its
    kind is one of :data:`REGISTRY_KINDS`), so its own push comes from the registry."""
    return key.kind in REGISTRY_KINDS


def config_request(key: ConfigKey, start: float = math.inf) -> PushRequest:
    """The push a changed config asks for: full, naming the key, reason ``config``.

    Changes of :data:`REGISTRY_KINDS` reach proxies through the registry instead
    (:func:`registry_request`); for them see :meth:`PushPipeline.config_changed`.
    """
    return PushRequest.for_configs([key], TriggerReason.CONFIG, start=start)


def registry_request(update: RegistryUpdate, start: float = math.inf) -> PushRequest:
    """The push a registry update asks for.

    Full: reason ``service`` (istiod's reason for ServiceEntry changes); the changed
    config keys plus every affected service as ``ServiceKey.config_key``, so that caches
    can drop the clusters of hosts that are gone. EDS only: reason ``endpoint``, naming
    the affected services only.
    """
    service_keys = frozenset(service.config_key for service in update.services)
    if update.full:
        return PushRequest.for_configs(
            update.config_keys | service_keys, TriggerReason.SERVICE, start=start
        )
    return PushRequest.for_configs(service_keys, TriggerReason.ENDPOINT, start=start, full=False)
