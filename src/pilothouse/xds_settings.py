"""The xDS server's part of the settings tree (``settings.xds``): its gRPC transport, the
debouncer, push workers, the resource cache, admission control and stream timing.

:class:`XdsSettings` is what ``DiscoveryServer`` and the push service take;
:class:`DebounceSettings` and :class:`AdmissionSettings` are its nested parts. They are
branches of :class:`pilothouse.settings.Settings` like any other (same rules: frozen
dataclasses without ``__slots__``, one environment variable per leaf, see
:mod:`pilothouse.settings`), in a module of their own because they are the largest
part; ``pilothouse.settings`` names them too, as it names every class of the tree.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar, Final

_NO_RENAMES: Final[Mapping[str, str]] = MappingProxyType({})


@dataclass(frozen=True)
class DebounceSettings:
    """How config events are merged into pushes (istiod's debounce knobs)."""

    ENV_PREFIX: ClassVar[str] = "PILOTHOUSE_"
    ENV_NAMES: ClassVar[Mapping[str, str]] = _NO_RENAMES

    debounce_after: float = 0.1
    """PILOT_DEBOUNCE_AFTER: quiet time before a push, seconds."""
    debounce_max: float = 10.0
    """PILOT_DEBOUNCE_MAX: longest a push waits for quiet, seconds."""
    eds_debounce: bool = True
    """PILOT_ENABLE_EDS_DEBOUNCE: debounce endpoint-only pushes too."""

    def __post_init__(self) -> None:
        if self.debounce_after < 0 or self.debounce_max < 0:
            raise ValueError("debounce times must not be negative")


@dataclass(frozen=True)
class AdmissionSettings:
    """Which new xDS streams are let in (:mod:`pilothouse.xds.server.admission`).

    A token bucket paces new streams (istiod's ``PILOT_MAX_REQUESTS_PER_SECOND``); a
    stream waits in line for its token; a circuit breaker caps the streams open at once.
    Three defaults differ from istiod's, for reasons of pilothouse's own:

    - ``rate``: istiod's is min(15 + 5 x cores, 100) a second, 25 on two cores, which
      would keep 2,000 sidecars coming for 80 s. pilothouse spends 1.5–2 ms of CPU on
      a new sidecar that is not refused (connect_storm, admission_storm); 250 a second
      keeps a storm to about half of one core, leaving the rest to the pushes of
      proxies already connected.
    - ``burst``: istiod's is 1. pilothouse lets waiting streams in from its one event
      loop, once per loop turn; with a burst of 1 that is one stream a turn, and during
      a storm, when turns take several milliseconds, a 250-a-second limit let in about
      150 a second. A burst of 25 (a tenth of a second at the default rate) lets in
      what came due during a turn of up to 100 ms; the bucket still never lets in more
      than the rate in any one second.
    - ``wait``: istiod's is 1 s (``rate.Limiter.Wait`` under a one-second deadline).
      A stream refused by it leaves its token unused while Envoy backs off (0.5 s, then
      up to 1.5, 3.5, 7.5 s ...; Envoy reads no pushback hint): a 2,000-sidecar storm at
      250 a second took 11 s instead of 8, after about 2,000 refusals that cost CPU
      too. Holding a stream costs little (its HTTP/2 stream and first request), so
      pilothouse holds up to 10 s of streams (2,500 at the default rate): a storm of
      that size is let in at the rate with no refusal. 10 s stays below the 15 s after
      which Envoy (its default ``initial_fetch_timeout``) and gRPC's xDS client (its
      resource-does-not-exist timer) give up waiting for a first response.
    """

    ENV_PREFIX: ClassVar[str] = "PILOTHOUSE_XDS_ADMISSION_"
    ENV_NAMES: ClassVar[Mapping[str, str]] = _NO_RENAMES

    rate: float = 250.0
    """New xDS streams admitted per second (PILOT_MAX_REQUESTS_PER_SECOND); 0 admits
    every stream at once (no rate limit)."""
    burst: int = 25
    """Streams admitted at once (after a quiet spell, or when the event loop comes back
    to waiting streams late), at least 1; never more than ``rate`` in a second."""
    wait: float = 10.0
    """Longest a new stream waits for its turn, seconds (istiod: 1 s); a stream whose
    turn is further away is refused with RESOURCE_EXHAUSTED at once, told when to come
    back (``grpc-retry-pushback-ms``)."""
    max_connections: int = 0
    """xDS streams open at once, at most; beyond it a new stream is refused with
    UNAVAILABLE at once. 0 means no limit (istiod has none)."""

    def __post_init__(self) -> None:
        if self.rate < 0 or self.wait < 0 or self.max_connections < 0:
            raise ValueError(
                "PILOTHOUSE_XDS_ADMISSION_RATE, _WAIT and _MAX_CONNECTIONS must not be negative"
            )
        if self.burst < 1:
            raise ValueError(f"PILOTHOUSE_XDS_ADMISSION_BURST must be at least 1, got {self.burst}")


@dataclass(frozen=True)
class XdsSettings:
    """The xDS server: its gRPC transport, push pipeline, cache and stream timing."""

    ENV_PREFIX: ClassVar[str] = "PILOTHOUSE_XDS_"
    ENV_NAMES: ClassVar[Mapping[str, str]] = MappingProxyType(
        {
            "push_throttle": "PILOTHOUSE_PUSH_THROTTLE",
            "max_receive_bytes": "PILOTHOUSE_MAX_RECEIVE_BYTES",
            "replica_id": "PILOTHOUSE_REPLICA_ID",
            "debug_allow_remote": "PILOTHOUSE_DEBUG_ALLOW_REMOTE",
            "jwks_fetch": "PILOTHOUSE_JWKS_FETCH",
            "jwks_allowed_hosts": "PILOTHOUSE_JWKS_ALLOWED_HOSTS",
            "wasm_allowed_hosts": "PILOTHOUSE_WASM_ALLOWED_HOSTS",
            "wasm_cache_bytes": "PILOTHOUSE_WASM_CACHE_BYTES",
        }
    )

    address: str = "127.0.0.1:15010"
    """host:port of the plaintext xDS gRPC server (istiod's 15010)."""
    debounce: DebounceSettings = field(default_factory=DebounceSettings)
    push_throttle: int = 0
    """PILOT_PUSH_THROTTLE: concurrent pushes; 0 means the default, 100 (istiod sizes it
    by cores; here pushes share one event loop, see ``push.workers.DEFAULT_PUSH_THROTTLE``)."""
    cache_size: int = 60_000
    """PILOT_XDS_CACHE_SIZE: generated resources kept encoded, at most."""
    send_timeout: float = 5.0
    """Seconds a push worker waits for a connection's responses to be written before
    it moves on (a stalled stream must not hold a worker)."""
    answer_wait: float = 1.0
    """Seconds a connection's next push waits, at most, for its proxy to ACK or NACK the
    last one (pushes that come meanwhile merge into one); 0 pushes again as soon as the
    last push is written. A proxy slower to read than the server is to write otherwise
    gets push after push, and later changes wait behind them in the transport."""
    warming_timeout: float = 5.0
    """Seconds routes wait for their new clusters' endpoints to be ACKed before they are
    sent anyway (make before break); removed clusters linger twice as long."""
    jwks_fetch: bool = True
    """Fetch the key sets RequestAuthentications name by ``jwksUri`` (istiod's
    PILOT_JWT_ENABLE_REMOTE_JWKS). Off, pilothouse makes no outbound request: such rules
    refuse every token until their keys are given inline (``jwks``)."""
    jwks_allowed_hosts: tuple[str, ...] = ()
    """Where a ``jwksUri`` may lead although it is loopback, private, link-local, CGNAT,
    multicast, unspecified or this host's own address (all refused by default, on the
    addresses a host resolves to and on every redirect): host names (a URL naming that
    host), addresses or CIDRs (``10.0.0.0/8``). istiod fetches from anywhere; this is the
    opt-in for an issuer on the private network."""
    wasm_allowed_hosts: tuple[str, ...] = ()
    """Where a WasmPlugin's ``http(s)`` ``url`` may lead although it is loopback,
    private, link-local... (the ``jwks_allowed_hosts`` rules, for modules)."""
    wasm_cache_bytes: int = 256 * 1024 * 1024
    """Bytes of fetched Wasm modules kept (16 modules of the largest size accepted): past
    it, the least recently used modules no served WasmPlugin names are dropped (fetched
    again when named again); modules still served are never dropped, only reported."""
    max_receive_bytes: int = 4 * 1024 * 1024
    """ISTIO_GPRC_MAXRECVMSGSIZE: largest request accepted on an xDS stream."""
    max_send_bytes: int = 512 * 1024 * 1024
    """Largest response the gRPC server sends."""
    max_concurrent_streams: int = 100_000
    """ISTIO_GPRC_MAXSTREAMS: streams per HTTP/2 connection."""
    max_pending_streams: int = 10_000
    """New streams gRPC holds until the server takes them up; beyond it gRPC cancels
    them (its own default is 1,000, and above it it cancels some at random: a storm of
    2,000 proxies then sees CANCELLED streams before admission control sees them)."""
    keepalive_time: float = 30.0
    """GRPC_KEEPALIVE_INTERVAL: seconds between the server's pings on an idle connection."""
    keepalive_timeout: float = 10.0
    """GRPC_KEEPALIVE_TIMEOUT: seconds a ping may go unanswered before the connection
    is closed."""
    min_ping_interval: float = 15.0
    """Shortest interval between client pings the server accepts (istiod: half of
    GRPC_KEEPALIVE_INTERVAL)."""
    max_connection_age: float = 1800.0
    """--keepaliveMaxServerConnectionAge: seconds after which a connection is asked to go
    away (GOAWAY; proxies reconnect, maybe to another replica), gRPC adding +/-10 %
    jitter; 0 means never, as istiod's code. The default is its Helm chart's 30 minutes,
    so that proxies spread over replicas that started after them."""
    max_connection_age_grace: float = 10.0
    """Seconds a connection asked to go away has to finish its streams."""
    admission: AdmissionSettings = field(default_factory=AdmissionSettings)
    replica_id: str = ""
    """This replica's name in ``control_plane.identifier`` on every response, in
    ``/debug/syncz`` and in ``proxy-status`` (istiod's POD_NAME); empty means
    ``<hostname>:<xDS port>``."""
    debug_allow_remote: bool = False
    """Answer ``/debug/*`` and the ``istio.io/debug/*`` xDS types to clients that are
    not on loopback (istiod lets loopback bypass its debug authorization; pilothouse
    has no authentication yet, so anything else is refused unless this is set)."""
    tls_address: str = "127.0.0.1:15012"
    """host:port of the TLS xDS gRPC server that also serves the certificate service
    (istiod's 15012, on all interfaces there; loopback here, as every other default
    address, so ``0.0.0.0:15012`` to let other hosts in). Empty turns it off."""
    tls_names: tuple[str, ...] = ("istiod.istio-system.svc", "localhost", "127.0.0.1", "::1")
    """Subject alternative names of the TLS port's serving certificate (issued by the
    CA): DNS names, and IP addresses written as such."""
    identity_check: bool = True
    """PILOT_ENABLE_XDS_IDENTITY_CHECK: an authenticated proxy's NAMESPACE (and
    SERVICE_ACCOUNT when set) must match one of its identities, else PERMISSION_DENIED."""
    # The TLS port's own protection, and refused connections made visible
    # (xds/server/tls_front.py, tls_accept.py, refusals.py).
    tls_handshake_timeout: float = 10.0
    """Seconds a client has to finish its TLS handshake on the TLS port."""
    tls_auth_timeout: float = 10.0
    """Seconds a TLS connection without a client certificate has, after its handshake,
    to make an authenticated call (a valid token); else it is closed."""
    tls_max_unauthenticated: int = 0
    """TLS connections open at once that have not yet proved an identity (handshaking,
    or not yet authenticated); beyond it a new one is closed at once, before any TLS
    work. 0: an eighth of the process's open-file limit, from 16 to 1,024."""
    tls_max_unauthenticated_per_address: int = 0
    """Of those, at most this many from one client address (IP, port ignored), so that
    one host cannot hold every slot; beyond it a new one from that address is closed
    at once as well. 0: a quarter of the limit in force, at least 4 (never above it)."""
    tls_accept_pause: float = 1.0
    """Longest pause, seconds, of the TLS port's accept when the process is out of file
    descriptors (pauses double from 0.05 s up to it)."""
    refusal_log_interval: float = 10.0
    """Seconds per window of the throttled log lines for refused xDS connections and
    streams (a few lines per reason per window; the rest counted) and for a paused
    accept (one line per window)."""
    refusals_kept: int = 100
    """Recent refused xDS connections and streams kept for ``/debug/refusals``."""

    def __post_init__(self) -> None:
        if min(self.tls_handshake_timeout, self.tls_auth_timeout, self.tls_accept_pause) <= 0:
            raise ValueError(
                "PILOTHOUSE_XDS_TLS_HANDSHAKE_TIMEOUT, _AUTH_TIMEOUT and _ACCEPT_PAUSE must "
                "be positive"
            )
        if self.tls_max_unauthenticated < 0 or self.refusals_kept < 0:
            raise ValueError(
                "PILOTHOUSE_XDS_TLS_MAX_UNAUTHENTICATED and PILOTHOUSE_XDS_REFUSALS_KEPT "
                "must not be negative"
            )
        if self.tls_max_unauthenticated_per_address < 0:
            raise ValueError(
                "PILOTHOUSE_XDS_TLS_MAX_UNAUTHENTICATED_PER_ADDRESS must not be negative"
            )
        if self.refusal_log_interval < 0:
            raise ValueError("PILOTHOUSE_XDS_REFUSAL_LOG_INTERVAL must not be negative")
        if self.answer_wait < 0:
            raise ValueError("PILOTHOUSE_XDS_ANSWER_WAIT must not be negative")
        for entry in self.jwks_allowed_hosts:
            if not _host_or_network(entry):
                raise ValueError(
                    f"PILOTHOUSE_JWKS_ALLOWED_HOSTS: {entry!r} is neither a host name "
                    "nor an address or CIDR"
                )
        for entry in self.wasm_allowed_hosts:
            if not _host_or_network(entry):
                raise ValueError(
                    f"PILOTHOUSE_WASM_ALLOWED_HOSTS: {entry!r} is neither a host name "
                    "nor an address or CIDR"
                )
        if self.wasm_cache_bytes <= 0:
            raise ValueError("PILOTHOUSE_WASM_CACHE_BYTES must be positive")


def _host_or_network(entry: str) -> bool:
    try:
        ipaddress.ip_network(entry.strip("[]"), strict=False)
    except ValueError:
        return _HOST_NAME.fullmatch(entry) is not None
    return True


_HOST_NAME: Final = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]{0,251}[A-Za-z0-9_.])?")
