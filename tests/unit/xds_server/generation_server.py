"""The part of a discovery server that generation reads, in process, for unit tests:
a memory store, its ServiceEntry registry, a resource cache and the push context,
with a way to apply YAML, push a change (a new context) and generate a proxy's CDS,
EDS (for the clusters CDS named), LDS and RDS as the server's generators make them."""

from __future__ import annotations

from pilothouse.config.load import Loader
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import ConfigKey
from pilothouse.kinds.table import SCHEMAS
from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.push.cache import Resource, ResourceCache
from pilothouse.push.context import PushContext, build_context
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.push.request import PushRequest
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.sources.memory import MemoryStore
from pilothouse.xds.generators.base import GenerationInput
from pilothouse.xds.generators.cds import ClusterGenerator
from pilothouse.xds.generators.eds import EndpointGenerator
from pilothouse.xds.generators.lds import ListenerGenerator
from pilothouse.xds.generators.rds import RouteGenerator


class GenerationServer:
    """The store, registry, context and cache a discovery server would hold. Given
    ``texts``, it applies them and starts (the first context); otherwise call
    :meth:`apply` and :meth:`start`."""

    def __init__(self, *texts: str) -> None:
        self.store = MemoryStore("test")
        self.registry = ServiceEntryRegistry(self.store, lambda update: None)
        self.cache = ResourceCache()
        self.mesh = MeshSettings()
        self._context: PushContext | None = None
        for text in texts:
            self.apply(text)
        if texts:
            self.start()

    @property
    def context(self) -> PushContext:
        assert self._context is not None, "start() first"
        return self._context

    def apply(self, text: str) -> list[ConfigKey]:
        return [
            config.key
            for config in Loader(SCHEMAS, source="test").load_strict(text, "mesh.yaml")
            if self.store.apply(config) is not None
        ]

    def start(self) -> None:
        self.store.mark_synced()
        self.registry.initial_load()
        self._context = build_context(self.store, self.registry.services, self.mesh, "v1")

    def push(self, changed: list[ConfigKey]) -> None:
        self.cache.invalidate(changed)
        self._context = build_context(
            self.store,
            self.registry.services,
            self.mesh,
            "v2",
            self.context,
            PushRequest.for_configs(changed),
        )

    def resources(self, proxy: ProxyIdentity) -> dict[str, dict[str, Resource]]:
        """``{type: {name: resource}}``: CDS, LDS and RDS by wildcard, EDS for the
        clusters CDS named."""
        context = self.context
        out: dict[str, dict[str, Resource]] = {}
        names: dict[str, frozenset[str] | None] = {}
        for type_url, generator in (
            (CDS, ClusterGenerator()),
            (EDS, EndpointGenerator()),
            (LDS, ListenerGenerator()),
            (RDS, RouteGenerator()),
        ):
            made = generator.generate(
                GenerationInput(
                    proxy=proxy,
                    scope=context.scope(proxy),
                    context=context,
                    endpoints=self.registry.endpoint_index,
                    cache=self.cache,
                    names=names.get(type_url),
                )
            )
            out[type_url] = dict(made)
            if type_url == CDS:
                names[EDS] = frozenset(n for n in made if n.startswith("outbound|"))
        return out

    def generate(self, proxy: ProxyIdentity) -> dict[str, dict[str, bytes]]:
        """``{type: {name: body}}`` of :meth:`resources`."""
        return {
            type_url: {name: r.body for name, r in made.items()}
            for type_url, made in self.resources(proxy).items()
        }
