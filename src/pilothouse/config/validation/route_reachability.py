"""Warnings about VirtualService rules that can never be used.

Rules are tried in order, so a rule after a catch-all (a rule without matches) or a match
repeated from an earlier rule can never be used. Route names should be unique because
they name the routes in stats and debug output.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from pilothouse.api.istio.networking.v1alpha3.virtual_service_pb2 import (
    HTTPRoute,
    TCPRoute,
    TLSRoute,
)
from pilothouse.config.validation.report import Report


def check_reachability(
    routes: Sequence[HTTPRoute | TCPRoute | TLSRoute],
    path: str,
    report: Report,
) -> None:
    """Warn about rules after a catch-all and about matches already used by earlier rules."""
    catch_all: int | None = None
    seen: dict[str, int] = {}
    for index, route in enumerate(routes):
        item = f"{path}[{index}]"
        if catch_all is not None:
            report.warn(item, f"rule is never used: rule {catch_all} has no match and catches all")
            continue
        if not route.match:
            catch_all = index
            continue
        repeated = 0
        for match_index, match in enumerate(route.match):
            key = _match_key(match)
            if key in seen:
                repeated += 1
                if seen[key] != index:
                    report.warn(
                        f"{item}.match[{match_index}]",
                        f"match is never used: rule {seen[key]} has the same match",
                    )
            else:
                seen[key] = index
        if repeated == len(route.match):
            report.warn(item, "rule is never used: all its matches are used by earlier rules")


def check_route_names(routes: Sequence[HTTPRoute], path: str, report: Report) -> None:
    first: dict[str, int] = {}
    for index, route in enumerate(routes):
        if not route.name:
            continue
        if route.name in first:
            report.warn(
                f"{path}[{index}].name",
                f"route name {route.name!r} is already used by rule {first[route.name]}",
            )
        else:
            first[route.name] = index


def _match_key(match: Message) -> str:
    as_dict = MessageToDict(match, preserving_proto_field_name=True)
    as_dict.pop("name", None)
    return json.dumps(as_dict, sort_keys=True)
