"""Which generated objects an EnvoyFilter patch's ``match`` picks (istiod's rules).

Listeners: ``name`` exact, ``portNumber`` the socket's port, ``listenerFilter`` the name
of one of its listener filters. On ``virtualInbound`` and ``virtualOutbound`` (which take
the traffic of every port), ``portNumber`` picks filter chains instead: every patch but a
LISTENER one matches the listener whatever its port, and then only the chains whose
``destination_port`` is that port. Filter chains: ``name``, ``transportProtocol`` exact,
``sni`` among the chain's server names, every one of the comma-separated
``applicationProtocols`` among its ALPNs, ``destinationPort`` its destination port, and
``filter.name`` the name of one of its network filters. Route configurations: ``name``
exact, ``portNumber`` the port in the name (``8080``, ``http.8080``, ``https.443.…``),
``portName`` and ``gateway`` from a gateway's ``https.<port>.<portName>.<gw>.<ns>``
name (``gateway`` is ``<ns>/<name>``; a plain ``http.<port>`` configuration matches any
gateway of the proxy). Virtual hosts: ``name`` exact, ``domainName`` among the domains.
Routes: ``name`` exact and ``action`` the kind of action. Clusters: ``name`` alone if it
is set, else the ``dir|port|subset|host`` parts (``service`` the host). istiod compares
no ``portName`` of a listener; neither does this.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from pilothouse.api.istio.networking.v1alpha3.envoy_filter_pb2 import EnvoyFilter
from pilothouse.config.model import ConfigKey
from pilothouse.xds.builders.listener import VIRTUAL_OUTBOUND_LISTENER

ANY: Final = EnvoyFilter.ANY
Applied = set[tuple[ConfigKey, int]]
"""The (EnvoyFilter, patch position) pairs that changed something, filled by the passes."""
RouteAction = EnvoyFilter.RouteConfigurationMatch.RouteMatch
VIRTUAL_LISTENERS: Final = frozenset({"virtualInbound", VIRTUAL_OUTBOUND_LISTENER})
"""The listeners whose filter chains stand for ports: ``portNumber`` matches their chains
(istiod's two; pilothouse builds no ``virtualInbound``, its inbound listeners are one
per port)."""


def context_matches(match: Any, context: int) -> bool:
    """Whether a patch's ``match.context`` is the pass's (ANY matches every pass)."""
    return bool(match.context == ANY or match.context == context)


def listener_matches(match: Any, listener: Any, apply_to: int) -> bool:
    """The listener fields of ``match`` against ``listener`` (not its chains), for a
    patch of ``apply_to``."""
    if match.WhichOneof("object_types") != "listener":
        return True
    wanted = match.listener
    if wanted.name and wanted.name != listener.name:
        return False
    by_chain = apply_to != EnvoyFilter.LISTENER and listener.name in VIRTUAL_LISTENERS
    port = listener.address.socket_address.port_value
    if wanted.port_number and not by_chain and wanted.port_number != port:
        return False
    return not wanted.listener_filter or any(
        f.name == wanted.listener_filter for f in listener.listener_filters
    )


def chain_matches(match: Any, listener: Any, chain: Any, *, with_filter: bool = True) -> bool:
    """The ``filterChain`` fields of ``match`` against ``chain`` of ``listener`` (and its
    ``portNumber`` when that is a virtual listener; ``with_filter``: also that the chain
    holds a network filter named ``filter.name``)."""
    if match.WhichOneof("object_types") != "listener":
        return True
    port = match.listener.port_number
    # an unset destination port reads 0: a virtual listener's catch-all matches no port
    if (
        port
        and listener.name in VIRTUAL_LISTENERS
        and chain.filter_chain_match.destination_port.value != port
    ):
        return False
    if not match.listener.HasField("filter_chain"):
        return True
    wanted = match.listener.filter_chain
    chain_match = chain.filter_chain_match
    if wanted.name and wanted.name != chain.name:
        return False
    if wanted.sni and wanted.sni not in chain_match.server_names:
        return False
    if wanted.transport_protocol and wanted.transport_protocol != chain_match.transport_protocol:
        return False
    if wanted.application_protocols:
        held = set(chain_match.application_protocols)
        if not all(p.strip() in held for p in wanted.application_protocols.split(",")):
            return False
    if wanted.destination_port and (
        not chain_match.HasField("destination_port")
        or wanted.destination_port != chain_match.destination_port.value
    ):
        return False
    if with_filter and wanted.HasField("filter") and wanted.filter.name:
        return any(f.name == wanted.filter.name for f in chain.filters)
    return True


def filter_name(match: Any) -> str:
    """``listener.filterChain.filter.name`` ("" when unset)."""
    if match.WhichOneof("object_types") != "listener":
        return ""
    return str(match.listener.filter_chain.filter.name)


def sub_filter_name(match: Any) -> str:
    """``listener.filterChain.filter.subFilter.name`` ("" when unset)."""
    if match.WhichOneof("object_types") != "listener":
        return ""
    return str(match.listener.filter_chain.filter.sub_filter.name)


def listener_filter_name(match: Any) -> str:
    """``listener.listenerFilter`` ("" when unset)."""
    if match.WhichOneof("object_types") != "listener":
        return ""
    return str(match.listener.listener_filter)


def route_configuration_matches(match: Any, config: Any, gateways: Iterable[str]) -> bool:
    """The route configuration fields of ``match`` against ``config``; ``gateways`` are
    the ``<ns>/<name>`` of the proxy's Gateways (a plain ``http.<port>`` name)."""
    if match.WhichOneof("object_types") != "route_configuration":
        return True
    wanted = match.route_configuration
    name = config.name
    if wanted.name and wanted.name != name:
        return False
    port, port_name, gateway = _route_name_parts(name)
    if wanted.port_number and wanted.port_number != port:
        return False
    if wanted.port_name and wanted.port_name != port_name:
        return False
    if wanted.gateway:
        if gateway:
            return bool(wanted.gateway == gateway)
        return name.startswith("http.") and wanted.gateway in set(gateways)
    return True


def _route_name_parts(name: str) -> tuple[int, str, str]:
    """(port, port name, ``ns/gateway``) of a route configuration's name."""
    if name.isdigit():
        return int(name), "", ""
    parts = name.split(".")
    if parts[0] == "http" and len(parts) >= 2 and parts[1].isdigit():
        return int(parts[1]), "", ""
    if parts[0] == "https" and len(parts) == 5 and parts[1].isdigit():
        return int(parts[1]), parts[2], f"{parts[4]}/{parts[3]}"
    inbound = name.split("|")
    if len(inbound) >= 2 and inbound[1].isdigit():
        return int(inbound[1]), "", ""
    return 0, "", ""


def virtual_host_matches(match: Any, host: Any) -> bool:
    if match.WhichOneof("object_types") != "route_configuration":
        return True
    if not match.route_configuration.HasField("vhost"):
        return True
    wanted = match.route_configuration.vhost
    if wanted.name and wanted.name != host.name:
        return False
    return not wanted.domain_name or wanted.domain_name in host.domains


def route_match(match: Any) -> Any:
    """The ``routeConfiguration.vhost.route`` of ``match`` (None when unset)."""
    if match.WhichOneof("object_types") != "route_configuration":
        return None
    vhost = match.route_configuration.vhost
    return vhost.route if vhost.HasField("route") else None


_ACTIONS: Final = {
    RouteAction.ROUTE: "route",
    RouteAction.REDIRECT: "redirect",
    RouteAction.DIRECT_RESPONSE: "direct_response",
}


def route_matches(wanted: Any, route: Any) -> bool:
    """A ``RouteMatch`` (or None: every route) against one route."""
    if wanted is None:
        return True
    if wanted.name and wanted.name != route.name:
        return False
    action = _ACTIONS.get(wanted.action)
    return action is None or route.WhichOneof("action") == action


def cluster_matches(match: Any, cluster: Any) -> bool:
    if match.WhichOneof("object_types") != "cluster":
        return True
    wanted = match.cluster
    if wanted.name:
        return bool(wanted.name == cluster.name)
    parts = cluster.name.split("|")
    if len(parts) != 4:
        return not (wanted.port_number or wanted.subset or wanted.service)
    _, port, subset, host = parts
    if wanted.subset and wanted.subset != subset:
        return False
    if wanted.service and wanted.service != host:
        return False
    return not wanted.port_number or str(wanted.port_number) == port
