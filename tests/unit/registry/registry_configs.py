"""Configs for registry tests, written as YAML and loaded with the real loader."""

from __future__ import annotations

from collections.abc import Callable

from pilothouse.config.load import Loader
from pilothouse.config.model import Config
from pilothouse.kinds.table import SCHEMAS
from pilothouse.registry.controller import ServiceEntryRegistry
from pilothouse.registry.update import RegistryUpdate
from pilothouse.sources.memory import MemoryStore

_LOADER = Loader(SCHEMAS)


def load(text: str) -> tuple[Config, ...]:
    return _LOADER.load_strict(text, "registry-test.yaml")


def load_one(text: str) -> Config:
    (config,) = load(text)
    return config


def service_entry(name: str, spec: str, namespace: str = "default", labels: str = "{}") -> Config:
    """A ServiceEntry whose spec is the YAML flow/block text ``spec`` (indented 2)."""
    return load_one(
        f"""
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {{name: {name}, namespace: {namespace}, labels: {labels}}}
spec:
{spec}
"""
    )


def workload_entry(name: str, spec: str, namespace: str = "default", labels: str = "{}") -> Config:
    return load_one(
        f"""
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {{name: {name}, namespace: {namespace}, labels: {labels}}}
spec:
{spec}
"""
    )


class Harness:
    """A MemoryStore, a registry on it, and the updates it reported."""

    def __init__(self, *configs: Config) -> None:
        self.store = MemoryStore("test")
        for config in configs:
            self.store.apply(config)
        self.updates: list[RegistryUpdate] = []
        self.registry = ServiceEntryRegistry(self.store, self.updates.append)
        self.initial = self.registry.initial_load()

    def apply(self, config: Config) -> list[RegistryUpdate]:
        return self._collect(lambda: self.store.apply(config))

    def delete(self, config: Config) -> list[RegistryUpdate]:
        return self._collect(lambda: self.store.delete(config.key))

    def _collect(self, action: Callable[[], object]) -> list[RegistryUpdate]:
        before = len(self.updates)
        action()
        return self.updates[before:]
