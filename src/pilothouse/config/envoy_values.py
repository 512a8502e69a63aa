"""An EnvoyFilter patch's ``value``, read as the Envoy message its ``applyTo`` names.

A patch value is written in the proto3 JSON mapping of an Envoy message (a Listener, an
HttpFilter, a Cluster …), stored in the EnvoyFilter as a ``google.protobuf.Struct``.
:func:`decode_value` turns it into that message with the Envoy protos the project
installs (the ``xds-protos`` package), strictly: an unknown field or an ``@type`` naming
no installed message is a :class:`ValueProblem` with the JSON path where it was found, as
istiod's validation refuses a "referenced type unknown". A ``typed_config`` written as
``@type`` + fields becomes an ``Any`` holding the binary message. The modules of an
``@type``'s proto package are imported the first time a value names one (the Envoy API
has thousands; the process never loads those no value names).
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from envoy.config.bootstrap.v3 import bootstrap_pb2  # type: ignore[import-untyped]
from envoy.config.cluster.v3 import cluster_pb2  # type: ignore[import-untyped]
from envoy.config.core.v3 import extension_pb2  # type: ignore[import-untyped]
from envoy.config.listener.v3 import (  # type: ignore[import-untyped]
    listener_components_pb2,
    listener_pb2,
)
from envoy.config.route.v3 import (  # type: ignore[import-untyped]
    route_components_pb2,
    route_pb2,
)
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2 as hcm_pb2,
)
from google.protobuf import descriptor_pool, json_format, struct_pb2
from google.protobuf.message import Message

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter

ApplyTo = EnvoyFilter.ApplyTo

MESSAGES: Final[Mapping[int, type[Message]]] = {
    EnvoyFilter.LISTENER: listener_pb2.Listener,
    EnvoyFilter.FILTER_CHAIN: listener_components_pb2.FilterChain,
    EnvoyFilter.NETWORK_FILTER: listener_components_pb2.Filter,
    EnvoyFilter.HTTP_FILTER: hcm_pb2.HttpFilter,
    EnvoyFilter.ROUTE_CONFIGURATION: route_pb2.RouteConfiguration,
    EnvoyFilter.VIRTUAL_HOST: route_components_pb2.VirtualHost,
    EnvoyFilter.HTTP_ROUTE: route_components_pb2.Route,
    EnvoyFilter.CLUSTER: cluster_pb2.Cluster,
    EnvoyFilter.EXTENSION_CONFIG: extension_pb2.TypedExtensionConfig,
    EnvoyFilter.BOOTSTRAP: bootstrap_pb2.Bootstrap,
    EnvoyFilter.LISTENER_FILTER: listener_components_pb2.ListenerFilter,
}
"""applyTo → the Envoy message its patch values are (istiod's table)."""

_TYPE_PREFIX: Final = "type.googleapis.com/"
_FAILED_FIELD: Final = re.compile(r"Failed to parse (\w+) field: ")
_WHERE: Final = re.compile(r' at "?([A-Za-z0-9_.\[\]]+?)"?\.?$', re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ValueProblem(Exception):
    """Why a value is not its Envoy message: ``where`` is the JSON path inside the value
    (``typed_config.inline_code``, empty for the value itself)."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


def decode_value(apply_to: int, value: struct_pb2.Struct) -> Message:
    """The Envoy message ``value`` spells for ``apply_to`` (:class:`ValueProblem` if it
    spells none)."""
    kind = MESSAGES.get(apply_to)
    if kind is None:
        raise ValueProblem("", f"applyTo {ApplyTo.Name(apply_to)} takes no value")
    as_json = json_format.MessageToDict(value)
    for type_url in _type_urls(as_json):
        _load_type(type_url)
    message = kind()
    try:
        json_format.ParseDict(as_json, message, ignore_unknown_fields=False)
    except json_format.ParseError as error:
        raise _problem(str(error), message.DESCRIPTOR.name) from None
    return message


def _type_urls(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        found = value.get("@type")
        if isinstance(found, str):
            yield found
        for inner in value.values():
            yield from _type_urls(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _type_urls(inner)


def _load_type(type_url: str) -> None:
    """Import the proto package that declares ``type_url``'s message, if it is installed
    and not loaded yet (an unknown one is left for the parser to refuse)."""
    full_name = type_url.rpartition("/")[2]
    pool = descriptor_pool.Default()
    try:
        pool.FindMessageTypeByName(full_name)
        return
    except KeyError:
        pass
    parts = full_name.split(".")
    # A nested message's package is a prefix of its name: try the longest first.
    for end in range(len(parts) - 1, 0, -1):
        package = ".".join(parts[:end])
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.submodule_search_locations:
            continue
        for module in pkgutil.iter_modules(spec.submodule_search_locations):
            if module.name.endswith("_pb2"):
                importlib.import_module(f"{package}.{module.name}")
        return


def _problem(text: str, top: str) -> ValueProblem:
    """A ParseError's text as a path inside the value and a one-line message."""
    first = text.splitlines()[0] if text else "not a valid value"
    where = ""
    match = _WHERE.search(first)
    if match is not None:
        where = match.group(1)
        first = first[: match.start()]
    if where == top:
        where = ""
    elif where.startswith(top + "."):
        where = where[len(top) + 1 :]
    steps = _FAILED_FIELD.findall(first)
    if steps:
        first = _FAILED_FIELD.sub("", first)
        where = ".".join([where, *steps] if where else steps)
    field = re.search(r'has no field named "([^"]+)"', first)
    if field is not None:
        where = f"{where}.{field.group(1)}" if where else field.group(1)
    first = first.replace(_TYPE_PREFIX, "")
    if "Can not find message descriptor" in first:
        first = f"referenced type unknown: {first.rpartition(': ')[2]}"
    return ValueProblem(where, first.rstrip(". "))
