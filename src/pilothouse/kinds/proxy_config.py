"""ProxyConfig: worker threads, environment and image flavour of the proxies it selects.

Only ``networking.istio.io/v1beta1`` (Istio serves no other version of it). One without
a selector in the root namespace applies to every proxy of the mesh, one without a
selector elsewhere to the proxies of its namespace, one with a selector to the workloads
whose labels hold it; :func:`effective_settings` merges them for one proxy as istiod does,
with MeshConfig ``defaultConfig`` and the pod's ``proxy.istio.io/config`` annotation
(:mod:`pilothouse.config.proxy_defaults` reads those two).

It changes no xDS resource: istiod applies it when it injects a proxy, and pilothouse
when it writes a proxy's bootstrap (``pilothouse bootstrap``). So no proxy's scope sees a
change (:attr:`~pilothouse.kinds.kind.Audience.NO_PROXY`), it names no xDS type its
changes can alter, and it moves no endpoint: it pushes nothing to proxies. It is stored,
validated and served over MCP like any other kind.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from pilothouse.api.istio.mesh.v1alpha1 import proxy_pb2
from pilothouse.api.istio.networking.v1beta1 import proxy_config_pb2
from pilothouse.config.model import Config
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

EMPTY: Final[Mapping[str, str]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ProxySettings:
    """The ProxyConfig fields pilothouse applies, as one layer of the precedence or as
    the effective result (None / empty: not set at this layer)."""

    concurrency: int | None = None
    """Envoy's worker threads (``--concurrency``); 0: one per core."""
    environment: Mapping[str, str] = field(default_factory=lambda: EMPTY)
    """The proxy's environment (``environmentVariables`` / ``proxyMetadata``)."""
    image_type: str | None = None
    """``default``, ``debug`` or ``distroless``: shown, chooses nothing here."""
    admin_port: int | None = None
    """Envoy's admin port (mesh ``proxyAdminPort``; a ProxyConfig object has none)."""
    origins: tuple[str, ...] = ()
    """Where the values came from, lowest precedence first (``meshConfig.defaultConfig``,
    ``ProxyConfig shop/threads``, the annotation)."""

    def over(self, lower: ProxySettings) -> ProxySettings:
        """These settings laid over ``lower``: a field set here wins, the environment
        merges name by name (istiod's ``mergeWithPrecedence``)."""
        if not self.origins:
            return lower
        return ProxySettings(
            concurrency=self.concurrency if self.concurrency is not None else lower.concurrency,
            environment=MappingProxyType({**lower.environment, **self.environment}),
            image_type=self.image_type if self.image_type is not None else lower.image_type,
            admin_port=self.admin_port if self.admin_port is not None else lower.admin_port,
            origins=lower.origins + self.origins,
        )



def settings_of_object(config: Config) -> ProxySettings:
    """The settings a ProxyConfig object carries."""
    spec = config.spec
    assert isinstance(spec, proxy_config_pb2.ProxyConfig)
    return ProxySettings(
        concurrency=spec.concurrency.value if spec.HasField("concurrency") else None,
        environment=MappingProxyType(dict(spec.environment_variables)),
        image_type=spec.image.image_type if spec.HasField("image") else None,
        origins=(f"ProxyConfig {config.namespace}/{config.name}",),
    )


def settings_of_mesh_proxy_config(message: proxy_pb2.ProxyConfig, origin: str) -> ProxySettings:
    """The settings a mesh ProxyConfig (``defaultConfig``, the annotation) carries."""
    return ProxySettings(
        concurrency=message.concurrency.value if message.HasField("concurrency") else None,
        environment=MappingProxyType(dict(message.proxy_metadata)),
        image_type=message.image.image_type if message.HasField("image") else None,
        admin_port=message.proxy_admin_port or None,
        origins=(origin,),
    )


def _oldest_first(config: Config) -> tuple[float, str, str]:
    # istiod sorts ProxyConfigs by creation time, then name, then namespace; objects read
    # from files have no creation time and sort by name.
    when = config.creation_time.timestamp() if config.creation_time is not None else 0.0
    return (when, config.name, config.namespace)


def namespace_wide(configs: Iterable[Config], namespace: str) -> Config | None:
    """The ProxyConfig without a selector that applies to every proxy of ``namespace``:
    the oldest (istiod takes the first after sorting; the others are ignored). One with
    an empty selector (``selector: {}``) is not namespace-wide, and selects nothing."""
    found = sorted(
        (c for c in configs if c.namespace == namespace and not _has_selector(c)),
        key=_oldest_first,
    )
    return found[0] if found else None


def for_workload(
    configs: Iterable[Config], namespace: str, labels: Mapping[str, str]
) -> Config | None:
    """The oldest ProxyConfig of ``namespace`` whose selector's labels are all among
    ``labels`` (a selector without labels selects nothing)."""
    for config in sorted((c for c in configs if c.namespace == namespace), key=_oldest_first):
        spec = config.spec
        assert isinstance(spec, proxy_config_pb2.ProxyConfig)
        wanted = spec.selector.match_labels
        if wanted and all(labels.get(k) == v for k, v in wanted.items()):
            return config
    return None


def _has_selector(config: Config) -> bool:
    spec = config.spec
    assert isinstance(spec, proxy_config_pb2.ProxyConfig)
    return spec.HasField("selector")


def effective_settings(
    configs: Iterable[Config],
    namespace: str,
    labels: Mapping[str, str],
    root_namespace: str,
    mesh_default: ProxySettings | None = None,
    annotation: ProxySettings | None = None,
) -> ProxySettings:
    """The settings of a proxy in ``namespace`` with ``labels``, istiod's precedence
    (``EffectiveProxyConfig``), each layer laid over the ones before it:
    ``meshConfig.defaultConfig`` < the root namespace's namespace-wide ProxyConfig < the
    proxy's namespace's namespace-wide one < the pod's ``proxy.istio.io/config``
    annotation < the ProxyConfig whose selector matches the workload's labels."""
    objects = [c for c in configs if c.kind == KIND.name]
    result = mesh_default if mesh_default is not None else ProxySettings()
    for chosen in (namespace_wide(objects, root_namespace), namespace_wide(objects, namespace)):
        if chosen is not None:
            result = settings_of_object(chosen).over(result)
    if annotation is not None:
        result = annotation.over(result)
    workload = for_workload(objects, namespace, labels)
    if workload is not None:
        result = settings_of_object(workload).over(result)
    return result


def ignored_namespace_wide(configs: Iterable[Config]) -> tuple[tuple[Config, str], ...]:
    """Each ProxyConfig without a selector that another one of its namespace overrides
    (only the oldest applies; istiod ignores the others), with the warning to give."""
    by_namespace: dict[str, list[Config]] = {}
    for config in configs:
        if config.kind == KIND.name and not _has_selector(config):
            by_namespace.setdefault(config.namespace, []).append(config)
    warnings = []
    for namespace in sorted(by_namespace):
        applied, *ignored = sorted(by_namespace[namespace], key=_oldest_first)
        for config in ignored:
            message = (
                f"ignored: namespace {namespace} has more than one ProxyConfig without a"
                f" selector and {applied.name} applies"
            )
            warnings.append((config, message))
    return tuple(warnings)
