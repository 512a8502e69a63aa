"""The push stage: turn config and registry changes into push requests, debounce them, decide
which connections each concerns (the pipeline), queue them per
connection and push them with bounded concurrency.

Modules: ``service`` (the push service: drives the push, from a change in to a target's
push out), ``target`` (what push/ knows of a connection), ``proxy_push`` (what one
connection's push sends), ``counters`` (what the push service counts), ``pipeline``
(changes in, ``(connection, PushRequest)`` pairs out), ``changes`` (config events and
registry updates into requests), ``request`` (PushRequest, ConfigKey, TriggerReason and
merge), ``debounce`` (the debounce rules and their asyncio driver), ``queue`` (the
per-connection push queue), ``workers`` (the throttled consumer of that queue),
``own_sidecars`` (istiod's ProxyUpdate: the connected sidecars a changed Pod or
WorkloadEntry is, pushed in full), ``pods_proxy`` and ``pod_sidecars`` (a sidecar
completed from its Kubernetes Pod, and completed again when the Pod changes), ``clock``
(the loop clock and a manual clock for tests), ``impact`` (what candidate objects would
push, planned without applying them). Push versions and nonces are the
protocol's (:mod:`pilothouse.xds.protocol.versions`).
"""

from pilothouse.config.model import ConfigKey
from pilothouse.push.request import PushRequest, TriggerReason, merge_all

__all__ = ["ConfigKey", "PushRequest", "TriggerReason", "merge_all"]
