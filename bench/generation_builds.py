"""Counting the resources a pass actually built, as opposed to the ones it reused.

Every Envoy generator (CDS, EDS, LDS, RDS) turns a freshly built message into a
resource through ``encode`` (pilothouse.xds.generators.cds), imported by name into
each generator module. :class:`BuildCounter` swaps each module's ``encode`` for a
counting wrapper while it is active and puts the original back afterwards, so a
benchmark can tell how many returned resources were new work and how many came
from the ResourceCache. The generators are not changed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from pilothouse.protocol.type_urls import CDS, EDS, LDS, RDS
from pilothouse.xds.generators import cds, eds, lds, rds

ENCODE = "encode"
"""The name each generator module calls to turn a built message into a resource."""

ENCODERS: Mapping[str, ModuleType] = {CDS: cds, EDS: eds, LDS: lds, RDS: rds}
"""Type URL → the generator module whose ``encode`` builds that type's resources."""


class BuildCounter:
    """How many resources of each type were encoded while :meth:`active`."""

    def __init__(self, modules: Mapping[str, ModuleType] = ENCODERS) -> None:
        self._modules = modules
        self.built: dict[str, int] = dict.fromkeys(modules, 0)

    def reset(self) -> dict[str, int]:
        """The counts so far, then zero."""
        counts = dict(self.built)
        self.built = dict.fromkeys(self._modules, 0)
        return counts

    @contextmanager
    def active(self) -> Iterator[BuildCounter]:
        originals: dict[str, Callable[..., Any]] = {}
        try:
            for type_url, module in self._modules.items():
                original = getattr(module, ENCODE)
                originals[type_url] = original
                setattr(module, ENCODE, self._counting(type_url, original))
            yield self
        finally:
            for type_url, original in originals.items():
                setattr(self._modules[type_url], ENCODE, original)

    def _counting(self, type_url: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def encode(message: Any, name: str) -> Any:
            self.built[type_url] += 1
            return original(message, name)

        return encode
