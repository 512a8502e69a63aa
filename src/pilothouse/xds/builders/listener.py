"""What every Envoy listener builder shares: names, addresses, typed filters.

Listener names follow istiod: ``<address>_<port>`` for a listener that binds a
socket (``0.0.0.0_8080`` on a gateway, ``127.0.0.1_9080`` for a Sidecar egress
listener with ``bind: 127.0.0.1``), and the fixed name ``virtualOutbound`` for
the iptables catch-all.  An address that starts with ``unix://`` is a Unix
domain socket (Envoy's ``pipe``); its port is ignored.

HTTP connection managers are counted under ``<direction>_<listener name>``
(``outbound_0.0.0.0_8080``, ``inbound_10.0.0.1_9080``).  istiod appends a ``;``
delimiter that its bootstrap's stats-tag regexes strip; pilothouse's Envoys
carry no such regexes, so the delimiter is left out and the stat names read as
``http.outbound_0.0.0.0_8080.downstream_rq_total``.

The builder modules around this one:

- :mod:`.http_connection_manager`: the HCM and its HTTP filters;
- :mod:`.filter_chain`: tcp_proxy, filter chains, downstream transport sockets;
- :mod:`.listener_tls`: ``ServerTLSSettings`` → ``DownstreamTlsContext``;
- :mod:`.listener_gateway`: gateway listeners from Gateway servers;
- :mod:`.listener_sidecar`: sidecar outbound, virtualOutbound and inbound listeners;
- :mod:`.listener_grpc`: proxyless gRPC client (API) and server listeners.
"""

from __future__ import annotations

import ipaddress
from datetime import timedelta
from typing import Final

from envoy.config.core.v3 import address_pb2  # type: ignore[import-untyped]
from envoy.config.listener.v3 import listener_components_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.listener.tls_inspector.v3 import (  # type: ignore[import-untyped]
    tls_inspector_pb2,
)
from google.protobuf import any_pb2
from google.protobuf.message import Message

WILDCARD_ADDRESS: Final = "0.0.0.0"
LOCALHOST_ADDRESS: Final = "127.0.0.1"
UNIX_PREFIX: Final = "unix://"

VIRTUAL_OUTBOUND_LISTENER: Final = "virtualOutbound"
PROXY_LISTEN_PORT: Final = 15001
"""MeshConfig ``proxyListenPort``: where iptables redirects outbound traffic."""

HTTP_CONNECTION_MANAGER: Final = "envoy.filters.network.http_connection_manager"
TCP_PROXY: Final = "envoy.filters.network.tcp_proxy"
TLS_INSPECTOR: Final = "envoy.filters.listener.tls_inspector"

TRANSPORT_SOCKET_CONNECT_TIMEOUT: Final = timedelta(seconds=15)
"""istiod's bound on a downstream TLS handshake (slow-handshake protection)."""

OUTBOUND: Final = "outbound"
INBOUND: Final = "inbound"


def listener_name(address: str, port: int) -> str:
    """``<address>_<port>``, istiod's name for a listener bound to that socket."""
    return f"{address}_{port}"


def stat_prefix(direction: str, name: str) -> str:
    """``<direction>_<listener name>``: the HCM stat prefix istiod uses (without its ``;``)."""
    return f"{direction}_{name}"


def socket_address(address: str, port: int) -> address_pb2.Address:
    """A TCP ``socket_address``, or a ``pipe`` for ``unix://<path>``."""
    if address.startswith(UNIX_PREFIX):
        return address_pb2.Address(pipe=address_pb2.Pipe(path=address[len(UNIX_PREFIX) :]))
    return address_pb2.Address(
        socket_address=address_pb2.SocketAddress(address=address, port_value=port)
    )


def cidr_range(value: str) -> address_pb2.CidrRange:
    """An address range (``10.0.0.0/8``; a bare address is a range of one) as Envoy's
    ``CidrRange``, its host bits cleared."""
    network = ipaddress.ip_network(value, strict=False)
    return address_pb2.CidrRange(
        address_prefix=str(network.network_address), prefix_len={"value": network.prefixlen}
    )


def typed(message: Message) -> any_pb2.Any:
    """``message`` packed into an ``Any`` (deterministic encoding)."""
    packed = any_pb2.Any()
    packed.Pack(message, deterministic=True)
    return packed


def network_filter(name: str, config: Message) -> listener_components_pb2.Filter:
    """A network filter ``name`` with ``typed_config`` = ``config``."""
    return listener_components_pb2.Filter(name=name, typed_config=typed(config))


def tls_inspector() -> listener_components_pb2.ListenerFilter:
    """The TLS inspector listener filter: reads SNI and ALPN for filter chain matching."""
    return listener_components_pb2.ListenerFilter(
        name=TLS_INSPECTOR, typed_config=typed(tls_inspector_pb2.TlsInspector())
    )
