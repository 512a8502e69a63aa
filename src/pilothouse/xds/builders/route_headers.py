"""``Headers`` (request / response operations) → Envoy header mutations, as istiod.

- ``set`` → ``HeaderValueOption`` with ``OVERWRITE_IF_EXISTS_OR_ADD``; ``add`` →
  ``APPEND_IF_EXISTS_OR_ADD``; each group sorted by header name, sets first.
- ``remove`` → ``*_headers_to_remove``.
- Pseudo-headers (``:…``) and ``host`` cannot be changed by these lists and are
  dropped from them; setting ``:authority`` or ``host`` on the *request* is a
  host rewrite instead (``set`` wins over ``add``), which the route builder
  turns into ``host_rewrite_literal``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from envoy.config.core.v3 import base_pb2  # type: ignore[import-untyped]

from pilothouse.api.istio.networking.v1alpha3 import virtual_service_pb2 as vs_pb2

HeaderValueOption = base_pb2.HeaderValueOption


@dataclass(frozen=True, slots=True)
class HeaderOperations:
    """The Envoy form of one ``Headers`` block."""

    request_to_add: tuple[base_pb2.HeaderValueOption, ...] = ()
    request_to_remove: tuple[str, ...] = ()
    response_to_add: tuple[base_pb2.HeaderValueOption, ...] = ()
    response_to_remove: tuple[str, ...] = ()
    authority: str = ""


def is_internal_header(name: str) -> bool:
    """Pseudo-headers and ``host``: not changeable through header lists."""
    return name.startswith(":") or name.lower() == "host"


def _is_authority(name: str) -> bool:
    return name.lower() in (":authority", "host")


def _options(headers: Mapping[str, str], *, append: bool) -> list[base_pb2.HeaderValueOption]:
    action = (
        HeaderValueOption.APPEND_IF_EXISTS_OR_ADD
        if append
        else HeaderValueOption.OVERWRITE_IF_EXISTS_OR_ADD
    )
    out = []
    for name in sorted(headers):
        if is_internal_header(name):
            continue
        option = HeaderValueOption(append_action=action)
        option.header.key = name
        option.header.value = headers[name]
        out.append(option)
    return out


def _authority(headers: Mapping[str, str]) -> str:
    found = ""
    for name in sorted(headers):
        if _is_authority(name):
            found = headers[name]
    return found


def header_operations(headers: vs_pb2.Headers) -> HeaderOperations:
    """Translate one ``Headers`` block."""
    request = headers.request
    response = headers.response
    return HeaderOperations(
        request_to_add=(
            *_options(request.set, append=False),
            *_options(request.add, append=True),
        ),
        request_to_remove=tuple(name for name in request.remove if not is_internal_header(name)),
        response_to_add=(
            *_options(response.set, append=False),
            *_options(response.add, append=True),
        ),
        response_to_remove=tuple(name for name in response.remove if not is_internal_header(name)),
        authority=_authority(request.set) or _authority(request.add),
    )
