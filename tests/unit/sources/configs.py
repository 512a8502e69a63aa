"""Builders of small Config objects for store tests."""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3 import gateway_pb2
from pilothouse.config.model import Config, Origin


def make_gateway(
    name: str, namespace: str = "default", port: int = 80, source: str = "s"
) -> Config:
    spec = gateway_pb2.Gateway(selector={"istio": "ingressgateway"})
    server = spec.servers.add()
    server.port.number = port
    server.port.protocol = "HTTP"
    server.port.name = "http"
    server.hosts.append("*")
    return Config(kind="Gateway", name=name, namespace=namespace, spec=spec, origin=Origin(source))
