"""EnvoyFilter patches of a proxy's bootstrap (applyTo BOOTSTRAP), as istiod applied them.

istiod merged BOOTSTRAP patches into the bootstrap it served over its Bootstrap Discovery
Service (``pilot/pkg/xds/bootstrapds.go``, removed in 2024): the EnvoyFilters that select
the proxy (root namespace and the proxy's namespace, ``workloadSelector`` or
``targetRefs``, each patch's ``match.proxy``; :mod:`pilothouse.push.envoy_filters`), in
their order, and of those only the MERGEs; any other operation was skipped and counted as
an error. There is no context to match: a bootstrap is neither inbound nor outbound.
pilothouse applies them where it writes a bootstrap (``pilothouse bootstrap``, the node
agent) with :func:`patched_envoy_bootstrap`, or :func:`patch_bootstrap` for a bootstrap
built another way.

A MERGE is protobuf's merge with durations replaced whole
(:func:`~pilothouse.xds.builders.envoy_patch_merge.merge`): a patch's ``static_resources``
clusters are appended to the bootstrap's, ``stats_flush_interval`` is set, a
``layered_runtime`` is merged field by field. The bootstrap is read as Envoy's
``config.bootstrap.v3.Bootstrap`` for that, so a patched bootstrap comes back in the
proto3 JSON mapping (field names as in the proto, durations such as ``"0.500s"``,
64-bit integers as strings: Envoy reads both forms); without a patch that applies, the
document is returned as it was given.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from google.protobuf import json_format, struct_pb2

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, envoy_bootstrap
from pilothouse.config.envoy_values import ValueProblem, decode_value
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config
from pilothouse.push.envoy_filters import EnvoyFilterIndex, PatchRule, ProxyPatches
from pilothouse.push.proxy import ProxyIdentity, parse_node
from pilothouse.xds.builders.envoy_patch_merge import merge

BOOTSTRAP: Final = EnvoyFilter.BOOTSTRAP
_Operation = EnvoyFilter.Patch.Operation


class BootstrapPatchError(ValueError):
    """The bootstrap to patch is not an Envoy Bootstrap (the message says where)."""


@dataclass(frozen=True, slots=True)
class PatchedBootstrap:
    """A bootstrap with the BOOTSTRAP patches that apply to its proxy merged in."""

    document: dict[str, Any]
    """The bootstrap, ready for ``json.dumps`` or ``yaml.safe_dump``."""
    applied: tuple[str, ...] = ()
    """``namespace/name patch N`` of each patch merged in, in the order they ran."""
    skipped: tuple[str, ...] = ()
    """Each patch that selects the proxy and was not applied, and why."""


def bootstrap_patches(
    envoy_filters: Iterable[Config], proxy: ProxyIdentity, mesh: MeshSettings | None = None
) -> ProxyPatches:
    """The BOOTSTRAP patches of ``envoy_filters`` (other kinds are ignored) that apply to
    ``proxy``, in istiod's order; a patch whose value does not decode is dropped."""
    filters = [c for c in envoy_filters if isinstance(c.spec, EnvoyFilter)]
    index = EnvoyFilterIndex(filters, mesh if mesh is not None else MeshSettings())
    return index.for_proxy(proxy, None).of((BOOTSTRAP,))


def patch_bootstrap(document: Mapping[str, Any], patches: ProxyPatches) -> PatchedBootstrap:
    """``document`` with the BOOTSTRAP MERGEs among ``patches`` merged in, in order (other
    operations are named in ``skipped``; BootstrapPatchError when ``document`` is not a
    Bootstrap)."""
    rules = patches.of((BOOTSTRAP,)).rules
    merges = [r for r in rules if r.operation == EnvoyFilter.Patch.MERGE]
    skipped = tuple(
        f"{_name(r)}: {_Operation.Name(r.operation)} not applied (BOOTSTRAP takes MERGE only)"
        for r in rules
        if r.operation != EnvoyFilter.Patch.MERGE
    )
    if not merges:
        return PatchedBootstrap(dict(document), skipped=skipped)
    message = _as_message(document)
    for rule in merges:
        merge(message, rule.value)
    # Through JSON text: MessageToDict gives an Any's fields as an OrderedDict, which
    # yaml.safe_dump refuses.
    patched = json.loads(json_format.MessageToJson(message, preserving_proto_field_name=True))
    return PatchedBootstrap(patched, tuple(_name(r) for r in merges), skipped)


def patched_envoy_bootstrap(
    options: EnvoyBootstrapOptions,
    envoy_filters: Iterable[Config] = (),
    mesh: MeshSettings | None = None,
) -> PatchedBootstrap:
    """:func:`~pilothouse.bootstrap.envoy.envoy_bootstrap` for ``options``, with the
    BOOTSTRAP patches of ``envoy_filters`` that select its proxy merged in. The proxy is
    the one the options describe: its node id, namespace, ``LABELS`` and the rest of
    its node metadata (``ISTIO_VERSION`` for a ``proxyVersion`` match)."""
    document = envoy_bootstrap(options)
    proxy = parse_node(
        options.node_id, dict(options.node_metadata), node_cluster=options.node_cluster
    )
    return patch_bootstrap(document, bootstrap_patches(envoy_filters, proxy, mesh))


def _as_message(document: Mapping[str, Any]) -> Any:
    """The Bootstrap message ``document`` spells (read as a patch value is, so every
    ``@type`` it names is loaded first)."""
    value = struct_pb2.Struct()
    try:
        value.update(document)
        return decode_value(BOOTSTRAP, value)
    except ValueProblem as problem:
        raise BootstrapPatchError(f"the bootstrap is not an Envoy Bootstrap: {problem}") from None
    except (ValueError, TypeError) as problem:  # a value a Struct cannot hold
        raise BootstrapPatchError(f"the bootstrap is not an Envoy Bootstrap: {problem}") from None


def _name(rule: PatchRule) -> str:
    return f"{rule.filter_name} patch {rule.position}"
