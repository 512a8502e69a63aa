"""Sidecar: ingress and egress listeners, egress hosts, and the outbound traffic policy."""

from __future__ import annotations

from pilothouse.api.istio.networking.v1alpha3.gateway_pb2 import ServerTLSSettings
from pilothouse.api.istio.networking.v1alpha3.sidecar_pb2 import (
    CaptureMode,
    IstioEgressListener,
    IstioIngressListener,
    OutboundTrafficPolicy,
    Sidecar,
    SidecarPort,
)
from pilothouse.config.validation.addresses import (
    UNIX_PREFIX,
    check_default_endpoint,
    check_ip,
    check_unix_socket,
)
from pilothouse.config.validation.connection_pool import check_connection_pool
from pilothouse.config.validation.destinations import check_destination
from pilothouse.config.validation.enums import check_enum_values
from pilothouse.config.validation.hosts import check_host, check_namespaced_host
from pilothouse.config.validation.labels import check_workload_selector
from pilothouse.config.validation.ports import (
    check_port_name,
    check_port_number,
    check_protocol,
    is_http,
)
from pilothouse.config.validation.report import Report
from pilothouse.config.validation.server_tls import check_server_tls


def validate_sidecar(spec: Sidecar, report: Report) -> None:
    check_enum_values(spec, "spec", report)
    if spec.HasField("workload_selector"):
        check_workload_selector(
            spec.workload_selector.labels, "spec.workloadSelector.labels", report
        )
    if not (
        spec.ingress
        or spec.egress
        or spec.HasField("outbound_traffic_policy")
        or spec.HasField("inbound_connection_pool")
    ):
        report.error(
            "spec",
            "a Sidecar needs ingress, egress, outboundTrafficPolicy or inboundConnectionPool",
        )
    ingress_ports: dict[int, int] = {}
    for index, listener in enumerate(spec.ingress):
        _check_ingress(listener, f"spec.ingress[{index}]", report, ingress_ports, index)
    if spec.HasField("inbound_connection_pool"):
        check_connection_pool(spec.inbound_connection_pool, "spec.inboundConnectionPool", report)
    egress_ports: dict[int, int] = {}
    socket_binds: dict[str, int] = {}
    catch_all: int | None = None
    for index, egress in enumerate(spec.egress):
        path = f"spec.egress[{index}]"
        if not egress.HasField("port"):
            if catch_all is not None:
                report.error(
                    path, f"only one egress listener may omit the port (egress[{catch_all}] does)"
                )
            elif index != len(spec.egress) - 1:
                report.error(path, "the egress listener without a port must be the last one")
            catch_all = index if catch_all is None else catch_all
        else:
            _check_egress_port(egress, path, report, egress_ports, socket_binds, index)
        _check_egress_hosts(egress, path, report)
    if spec.HasField("outbound_traffic_policy"):
        _check_outbound(spec.outbound_traffic_policy, "spec.outboundTrafficPolicy", report)


def _check_port(port: SidecarPort, path: str, report: Report, *, allow_zero: bool) -> None:
    check_port_name(port.name, f"{path}.name", report, required=False)
    check_protocol(port.protocol, f"{path}.protocol", report, required=False)
    if not (allow_zero and port.number == 0):
        check_port_number(port.number, f"{path}.number", report)
    if port.target_port:
        report.warn(f"{path}.targetPort", "targetPort is deprecated and has no effect on Sidecars")


def _check_ingress(
    listener: IstioIngressListener,
    path: str,
    report: Report,
    ports: dict[int, int],
    index: int,
) -> None:
    if not listener.HasField("port"):
        report.error(f"{path}.port", "ingress listeners need a port")
        return
    port = listener.port
    _check_port(port, f"{path}.port", report, allow_zero=False)
    if port.number in ports:
        report.error(
            f"{path}.port.number",
            f"port {port.number} is already used by ingress[{ports[port.number]}]",
        )
    else:
        ports[port.number] = index
    if listener.bind:
        check_ip(listener.bind, f"{path}.bind", report)
    if listener.default_endpoint:
        check_default_endpoint(listener.default_endpoint, f"{path}.defaultEndpoint", report)
    if listener.HasField("tls"):
        _check_ingress_tls(listener.tls, f"{path}.tls", report)
    if listener.HasField("connection_pool"):
        check_connection_pool(listener.connection_pool, f"{path}.connectionPool", report)
        if listener.connection_pool.HasField("http") and not is_http(port.protocol):
            report.warn(
                f"{path}.connectionPool.http",
                f"port {port.number} is not HTTP ({port.protocol or 'unset'}); only the tcp "
                "settings apply",
            )


def _check_ingress_tls(tls: ServerTLSSettings, path: str, report: Report) -> None:
    if tls.subject_alt_names:
        report.error(f"{path}.subjectAltNames", "subjectAltNames is not supported on ingress")
    if tls.https_redirect:
        report.error(f"{path}.httpsRedirect", "httpsRedirect is not supported on Sidecars")
    if tls.credential_name:
        report.error(f"{path}.credentialName", "credentialName is not supported on Sidecars")
    if tls.mode in (ServerTLSSettings.ISTIO_MUTUAL, ServerTLSSettings.AUTO_PASSTHROUGH):
        mode = ServerTLSSettings.TLSmode.Name(tls.mode)
        report.error(f"{path}.mode", f"mode {mode} cannot be used on Sidecar ingress")
    check_server_tls(tls, path, report)


def _check_egress_port(
    egress: IstioEgressListener,
    path: str,
    report: Report,
    ports: dict[int, int],
    socket_binds: dict[str, int],
    index: int,
) -> None:
    port = egress.port
    _check_port(port, f"{path}.port", report, allow_zero=True)
    if port.number == 0:
        if not egress.bind.startswith(UNIX_PREFIX):
            report.error(f"{path}.bind", "port 0 needs a unix:// bind address")
        else:
            check_unix_socket(egress.bind, f"{path}.bind", report)
        if egress.capture_mode not in (CaptureMode.DEFAULT, CaptureMode.NONE):
            report.error(
                f"{path}.captureMode", "unix socket listeners need captureMode DEFAULT or NONE"
            )
        if egress.bind in socket_binds:
            report.error(
                f"{path}.bind",
                f"unix socket is already used by egress[{socket_binds[egress.bind]}]",
            )
        else:
            socket_binds[egress.bind] = index
        return
    if egress.bind:
        check_ip(egress.bind, f"{path}.bind", report)
    if port.number in ports:
        report.error(
            f"{path}.port.number",
            f"port {port.number} is already used by egress[{ports[port.number]}]",
        )
    else:
        ports[port.number] = index


def _check_egress_hosts(egress: IstioEgressListener, path: str, report: Report) -> None:
    if not egress.hosts:
        report.error(f"{path}.hosts", "an egress listener needs at least one host")
        return
    seen: dict[str, set[str]] = {}
    for index, entry in enumerate(egress.hosts):
        item = f"{path}.hosts[{index}]"
        check_namespaced_host(entry, item, report, owner="sidecar")
        namespace, slash, name = entry.partition("/")
        if not slash:
            continue
        names = seen.setdefault(report.namespace if namespace == "." else namespace, set())
        if name in names or (name != "*" and "*" in names) or (name == "*" and names):
            report.warn(item, f"egress host {entry!r} repeats or is covered by another entry")
        names.add(name)
    if "*" in seen.get("*", set()) and len(egress.hosts) > 1:
        report.warn(
            f"{path}.hosts", "'*/*' already imports everything; the other hosts add nothing"
        )


def _check_outbound(policy: OutboundTrafficPolicy, path: str, report: Report) -> None:
    if not policy.HasField("egress_proxy"):
        return
    proxy_path = f"{path}.egressProxy"
    if policy.mode != OutboundTrafficPolicy.ALLOW_ANY:
        report.error(proxy_path, "egressProxy can be set only with mode ALLOW_ANY")
    proxy = policy.egress_proxy
    if not proxy.host:
        report.error(f"{proxy_path}.host", "egressProxy needs a host")
    elif check_host(proxy.host, f"{proxy_path}.host", report, wildcard=False):
        check_destination(proxy, proxy_path, report)
    if not proxy.HasField("port"):
        report.error(f"{proxy_path}.port", "egressProxy needs a port")
