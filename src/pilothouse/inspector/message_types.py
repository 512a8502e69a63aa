"""Envoy message types by full name, their generated modules imported when first asked for.

A resource's ``typed_config`` (and every other ``google.protobuf.Any``) names its type
only by URL; reading it from JSON, or writing it as JSON, needs that type in the
descriptor pool, which holds only the modules imported so far. :class:`MessageTypes`
looks a name up in the default pool and, on a miss, imports every generated module
(``*_pb2``) of the Python package the name's proto package maps to
(``envoy.extensions.filters.network.http_connection_manager.v3`` for
``…v3.HttpConnectionManager``), then looks again. It stands in for a descriptor pool
where ``google.protobuf.json_format`` takes one.

Only packages under :data:`PROTO_ROOTS` are ever imported: a type URL comes from the
outside (an Envoy's dump), and must not make the process import arbitrary modules.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from typing import Final, cast

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

PROTO_ROOTS: Final = frozenset({"envoy", "xds", "udpa", "google", "validate"})
"""Top-level Python packages generated protobuf modules are loaded from (xds-protos)."""

_FULL_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")


class UnknownType(LookupError):
    """No generated module defines this message type."""


class MessageTypes:
    """Message descriptors and classes by full name, loading their modules on demand."""

    def __init__(self) -> None:
        self._pool = descriptor_pool.Default()
        self._searched: set[str] = set()

    @property
    def pool(self) -> descriptor_pool.DescriptorPool:
        """This, typed as the descriptor pool ``json_format`` takes (it only calls
        ``FindMessageTypeByName``)."""
        return cast(descriptor_pool.DescriptorPool, self)

    def FindMessageTypeByName(self, full_name: str) -> Descriptor:
        """The descriptor of ``full_name``; ``KeyError`` if no module defines it (named
        as the descriptor pool's method, which ``json_format`` calls)."""
        try:
            return self._pool.FindMessageTypeByName(full_name)
        except KeyError:
            if not self._load(full_name):
                raise
        return self._pool.FindMessageTypeByName(full_name)

    def new(self, type_url: str) -> Message:
        """An empty message of the type a type URL (or a full name) names."""
        full_name = type_url.rsplit("/", 1)[-1]
        try:
            descriptor = self.FindMessageTypeByName(full_name)
        except KeyError:
            raise UnknownType(f"unknown message type {full_name!r}") from None
        return message_factory.GetMessageClass(descriptor)()

    def _load(self, full_name: str) -> bool:
        """Import the modules of the package ``full_name`` is in; whether any was new."""
        if not _FULL_NAME.fullmatch(full_name) or full_name.split(".", 1)[0] not in PROTO_ROOTS:
            return False
        package = full_name.rsplit(".", 1)[0]
        while "." in package:  # a nested message's outer names are not packages
            if package in self._searched:
                return False
            self._searched.add(package)
            locations = _package_locations(package)
            if locations is not None:
                for module in pkgutil.iter_modules(locations):
                    if module.name.endswith("_pb2"):
                        importlib.import_module(f"{package}.{module.name}")
                return True
            package = package.rsplit(".", 1)[0]
        return False


def _package_locations(package: str) -> list[str] | None:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.submodule_search_locations is None:
        return None
    return list(spec.submodule_search_locations)
