"""Building VirtualService specs around one HTTP route, for the HTTP route tests."""

from __future__ import annotations

from typing import Any

from pilothouse.api.istio.networking.v1alpha3.virtual_service_pb2 import VirtualService
from pilothouse.config.validation import Report, validate_virtual_service

from .checking import run

DEST = {"destination": {"host": "reviews"}}


def route(**fields: Any) -> dict[str, Any]:
    """A VirtualService whose only HTTP route is ``fields`` (with a route unless replaced)."""
    http = {"route": [DEST], **fields}
    return {"hosts": ["reviews.example.com"], "gateways": ["gw"], "http": [http]}


def action(**fields: Any) -> dict[str, Any]:
    """Like ``route`` but without the default route destination."""
    return {"hosts": ["reviews.example.com"], "http": [fields]}


def match(**fields: Any) -> dict[str, Any]:
    return route(match=[fields])


def check(spec: dict[str, Any]) -> Report:
    return run(validate_virtual_service, VirtualService, spec)
