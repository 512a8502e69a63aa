"""Gateway: servers (port, hosts, bind address, TLS) and conflicts between servers."""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3.gateway_pb2 import Gateway, Server, ServerTLSSettings
from pilothouse.config.validation.addresses import (
    UNIX_PREFIX,
    check_default_endpoint,
    check_ip,
    check_unix_socket,
)
from pilothouse.config.validation.enums import check_enum_values
from pilothouse.config.validation.hosts import check_namespaced_host, is_dns_label
from pilothouse.config.validation.labels import check_labels
from pilothouse.config.validation.ports import (
    check_port_name,
    check_port_number,
    check_protocol,
    is_http,
    is_tls,
    parse_protocol,
)
from pilothouse.config.validation.report import Report
from pilothouse.config.validation.server_tls import check_server_tls


def validate_gateway(spec: Gateway, report: Report) -> None:
    check_enum_values(spec, "spec", report)
    if report.name and not is_dns_label(report.name):
        report.error(
            "metadata.name",
            f"gateway name {report.name!r} must be a DNS-1123 label (no dots): VirtualServices "
            "refer to gateways as <namespace>/<name>",
        )
    if not spec.servers:
        report.error("spec.servers", "a Gateway needs at least one server")
    port_names: dict[str, int] = {}
    for index, server in enumerate(spec.servers):
        path = f"spec.servers[{index}]"
        _check_server(server, path, report)
        if not server.HasField("port"):
            continue
        name = server.port.name
        if name and name in port_names:
            report.error(
                f"{path}.port.name",
                f"port name {name!r} is already used by servers[{port_names[name]}]",
            )
        elif name:
            port_names[name] = index
        if server.tls.https_redirect and not is_http(server.port.protocol):
            report.warn(f"{path}.tls.httpsRedirect", "httpsRedirect only applies to HTTP servers")
    _check_server_conflicts(spec, report)
    check_labels(spec.selector, "spec.selector", report)


def _check_server(server: Server, path: str, report: Report) -> None:
    if not server.hosts:
        report.error(f"{path}.hosts", "a server needs at least one host")
    for index, host in enumerate(server.hosts):
        check_namespaced_host(host, f"{path}.hosts[{index}]", report, owner="gateway")
    unix_bind = server.bind.startswith(UNIX_PREFIX)
    if unix_bind:
        check_unix_socket(server.bind, f"{path}.bind", report)
    elif server.bind:
        check_ip(server.bind, f"{path}.bind", report)
    if server.default_endpoint:
        check_default_endpoint(server.default_endpoint, f"{path}.defaultEndpoint", report)
    if server.HasField("tls"):
        check_server_tls(server.tls, f"{path}.tls", report)
    if not server.HasField("port"):
        report.error(f"{path}.port", "a server needs a port")
        return
    port = server.port
    check_protocol(port.protocol, f"{path}.port.protocol", report, required=True)
    if unix_bind:
        if port.number != 0:
            report.error(f"{path}.port.number", "port number must be 0 with a unix socket bind")
    else:
        check_port_number(port.number, f"{path}.port.number", report)
    if port.target_port:
        report.warn(
            f"{path}.port.targetPort", "targetPort is deprecated and has no effect on Gateways"
        )
    check_port_name(port.name, f"{path}.port.name", report, required=True)
    if parse_protocol(port.protocol) is not None:
        _check_protocol_and_tls(server, path, report)


def _check_protocol_and_tls(server: Server, path: str, report: Report) -> None:
    protocol = server.port.protocol
    has_tls = server.HasField("tls")
    if is_tls(protocol):
        if not has_tls:
            report.error(f"{path}.tls", f"{protocol.upper()} servers need tls settings")
        return
    if not has_tls:
        return
    tls = server.tls
    if not is_http(protocol):
        report.error(f"{path}.tls", "tls settings apply only to HTTPS and TLS servers")
    elif tls.mode != ServerTLSSettings.PASSTHROUGH or any(
        (tls.server_certificate, tls.private_key, tls.ca_certificates, tls.credential_name)
    ):
        report.error(
            f"{path}.tls",
            "a plain-text HTTP server can use tls only for httpsRedirect; terminating or "
            "passing through TLS needs protocol HTTPS or TLS",
        )


def _protocol_family(protocol: str) -> str:
    if is_http(protocol):
        return "HTTP"
    if is_tls(protocol):
        return "TLS"
    return protocol.upper()


def _check_server_conflicts(spec: Gateway, report: Report) -> None:
    """Servers sharing a listener (bind address and port) must agree on the protocol family
    (HTTP-like or TLS-like, or the same other protocol) and must not repeat a host."""
    listeners: dict[tuple[str, int], tuple[int, str, dict[str, int]]] = {}
    for index, server in enumerate(spec.servers):
        if not server.HasField("port") or parse_protocol(server.port.protocol) is None:
            continue
        key = (server.bind, server.port.number)
        family = _protocol_family(server.port.protocol)
        if key not in listeners:
            listeners[key] = (index, family, {host: index for host in server.hosts})
            continue
        first, first_family, hosts = listeners[key]
        path = f"spec.servers[{index}]"
        if family != first_family:
            report.error(
                f"{path}.port.protocol",
                f"port {server.port.number} is also used by servers[{first}] with protocol "
                f"{spec.servers[first].port.protocol!r}; servers on one port must agree on "
                "the protocol",
            )
            continue
        for host_index, host in enumerate(server.hosts):
            if host in hosts:
                report.error(
                    f"{path}.hosts[{host_index}]",
                    f"host {host!r} is already served on port {server.port.number} by "
                    f"servers[{hosts[host]}]",
                )
            else:
                hosts[host] = index
