"""xDS type URLs, their short names, which are wildcard, and the push order.

The wildcard rule follows Istio: CDS, LDS and every type that is not an Envoy
per-name type (Istio's own MCP-over-xDS kinds such as
``networking.istio.io/v1/ServiceEntry``, ``core/v1alpha1/MeshConfig`` and debug
types such as ``istio.io/debug/syncz``) are wildcard; EDS, RDS, SDS and ECDS are
requested by name.  A wildcard type is also a *full-state* type in SotW: every
response carries the whole set and a missing name is a delete.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

TYPE_PREFIX: Final = "type.googleapis.com/"

LDS: Final = TYPE_PREFIX + "envoy.config.listener.v3.Listener"
RDS: Final = TYPE_PREFIX + "envoy.config.route.v3.RouteConfiguration"
CDS: Final = TYPE_PREFIX + "envoy.config.cluster.v3.Cluster"
EDS: Final = TYPE_PREFIX + "envoy.config.endpoint.v3.ClusterLoadAssignment"
SDS: Final = TYPE_PREFIX + "envoy.extensions.transport_sockets.tls.v3.Secret"
ECDS: Final = TYPE_PREFIX + "envoy.config.core.v3.TypedExtensionConfig"

# Istio-internal types that also have istioctl short names.
NDS: Final = TYPE_PREFIX + "istio.networking.nds.v1.NameTable"
PCDS: Final = TYPE_PREFIX + "istio.mesh.v1alpha1.ProxyConfig"
WDS: Final = TYPE_PREFIX + "istio.workload.Address"
WADS: Final = TYPE_PREFIX + "istio.security.Authorization"

SYNCZ: Final = "istio.io/debug/syncz"

SHORT_NAMES: Final = MappingProxyType(
    {
        CDS: "CDS",
        EDS: "EDS",
        LDS: "LDS",
        RDS: "RDS",
        SDS: "SDS",
        ECDS: "ECDS",
        NDS: "NDS",
        PCDS: "PCDS",
        WDS: "WDS",
        WADS: "WADS",
    }
)

_BY_SHORT_NAME: Final = MappingProxyType({short: url for url, short in SHORT_NAMES.items()})

# Envoy types whose subscriptions name their resources.
_PER_NAME_TYPES: Final = frozenset({EDS, RDS, SDS, ECDS})

# Make before break: clusters, then their endpoints, then listeners and the routes
# that point at the clusters, then secrets.  Every other type comes after.
_PUSH_ORDER: Final = MappingProxyType({CDS: 0, EDS: 1, LDS: 2, RDS: 3, SDS: 4})

# When the key type is pushed, the next request (ACK) for each value type must be
# answered even if nothing changed: Envoy needs a fresh EDS response to finish
# warming a cluster (envoy#13009).
WARMING_DEPENDENCIES: Final = MappingProxyType({CDS: (EDS,)})


def short_name(type_url: str) -> str:
    """The istioctl short name (``CDS``); other types keep their URL without the prefix."""
    known = SHORT_NAMES.get(type_url)
    if known is not None:
        return known
    return type_url.removeprefix(TYPE_PREFIX)


def type_url_for(name: str) -> str:
    """The type URL for a short name (``eds`` or ``EDS``) or a URL given in full."""
    known = _BY_SHORT_NAME.get(name.upper())
    if known is not None:
        return known
    return name


def is_wildcard_type(type_url: str) -> bool:
    """Whether the type is wildcard (and full state) in Istio's sense."""
    return type_url not in _PER_NAME_TYPES


def is_full_state_type(type_url: str) -> bool:
    """Whether a SotW response of this type must carry the whole set (LDS, CDS, Istio types)."""
    return is_wildcard_type(type_url)


def push_order_key(type_url: str) -> tuple[int, str]:
    """Sort key putting types in push order: CDS, EDS, LDS, RDS, SDS, then others by URL."""
    return (_PUSH_ORDER.get(type_url, len(_PUSH_ORDER)), type_url)
