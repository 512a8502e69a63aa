"""Settings: every knob pilothouse has, in one typed, frozen tree passed to whoever needs it.

The tree has one part per component: ``settings.xds`` (the gRPC xDS server, its
debouncer, push workers and admission control), ``settings.admin``, ``settings.ctrlz``,
``settings.rest``, ``settings.webhook``, ``settings.mcp`` and ``settings.sds``; the top
level holds what ``serve`` itself reads. Each part is the settings object its component takes
(``DiscoveryServer`` takes ``settings.xds``, ``RestDiscovery`` takes ``settings.rest``),
so a default is written once, here, and equals istiod's where istiod has one (where it
does not, the field says why). A tree rather than one flat class because each
component then gets exactly the knobs it reads, and its tests build just that part
(``XdsSettings(debounce=DebounceSettings(debounce_after=0.01))``).

The classes are frozen dataclasses without ``__slots__`` on purpose: a field's default
stays readable as a class attribute (``XdsSettings.cache_size``), so a component whose
constructor takes a single knob as a keyword can default it to that attribute instead
of writing the number again.

Every leaf is read from one environment variable: the class's ``ENV_PREFIX`` followed
by the field name in capitals (``settings.xds.cache_size`` is
``PILOTHOUSE_XDS_CACHE_SIZE``), except where ``ENV_NAMES`` keeps an older or istiod-like
name. :func:`knobs` lists them all; :mod:`pilothouse.environment` reads them. Nothing
else reads the environment.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Final, Literal

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
        if self.refusal_log_interval < 0:
            raise ValueError("PILOTHOUSE_XDS_REFUSAL_LOG_INTERVAL must not be negative")
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


def _host_or_network(entry: str) -> bool:
    try:
        ipaddress.ip_network(entry.strip("[]"), strict=False)
    except ValueError:
        return _HOST_NAME.fullmatch(entry) is not None
    return True


_HOST_NAME: Final = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]{0,251}[A-Za-z0-9_.])?")


@dataclass(frozen=True)
class AdminSettings:
    """The HTTP admin server: /ready, /healthz, REST xDS, the admin API."""

    ENV_PREFIX: ClassVar[str] = "PILOTHOUSE_ADMIN_"
    ENV_NAMES: ClassVar[Mapping[str, str]] = _NO_RENAMES

    address: str = "127.0.0.1:15014"
    """host:port of the HTTP server for /ready, REST xDS and debug (istiod's 15014)."""
    allow_remote: bool = False
    """Let clients that are not on this host use the admin API (``/admin/*``) and
    ControlZ; by default they get 403, whatever address the servers listen on."""
    host_names: tuple[str, ...] = ()
    """Names besides ``localhost``, loopback, this server's addresses and host name that
    a request's ``Host`` header may carry on the admin port and ControlZ (a Service's
    DNS name, say); any other name gets 403 (the guard against DNS rebinding). ``*``
    accepts every name."""


@dataclass(frozen=True)
class ControlZSettings:
    """ControlZ: the introspection pages (istio's ``pkg/ctrlz``)."""

    ENV_PREFIX: ClassVar[str] = "PILOTHOUSE_CTRLZ_"
    ENV_NAMES: ClassVar[Mapping[str, str]] = _NO_RENAMES

    OFF: ClassVar[str] = "off"

    address: str = "127.0.0.1:9876"
    """host:port of the ControlZ pages (istio's ``--ctrlz_address`` and ``--ctrlz_port``);
    port 0 picks a free port, ``off`` serves none."""


@dataclass(frozen=True)
class RestSettings:
    """REST xDS (``POST /v3/discovery:<kind>``) on the admin server."""

    ENV_PREFIX: ClassVar[str] = "PILOTHOUSE_REST_"
    ENV_NAMES: ClassVar[Mapping[str, str]] = _NO_RENAMES

    refresh_delay: float = 1.0
    """How often served resources tell REST-mode proxies to poll, seconds (keep it equal
    to their bootstrap's)."""
    request_timeout: float = 1.0
    """How long served resources tell REST-mode proxies a poll may take, seconds."""
    max_body_bytes: int = 4 * 1024 * 1024
    """Largest REST discovery request body."""
    json_cache_entries: int = 20_000
    """Resources kept rendered as JSON, at most."""
    answer_cache_entries: int = 4096
    """Entries in each of the remembered answers, response versions, bodies and node
    identities, at most."""
    answer_cache_bytes: int = 64 * 1024 * 1024
    """Bytes of remembered answers and bodies, at most."""


@dataclass(frozen=True)
class WebhookSettings:
    """The HTTPS validating admission webhook (on only with a certificate and key)."""

    ENV_PREFIX: ClassVar[str] = "PILOTHOUSE_WEBHOOK_"
    ENV_NAMES: ClassVar[Mapping[str, str]] = _NO_RENAMES

    address: str = "127.0.0.1:15017"
    """host:port of the HTTPS validation webhook (istiod's 15017)."""
    cert: str = ""
    """PEM certificate file; the webhook is off without one."""
    key: str = ""
    """PEM private key file."""
    read_timeout: float = 30.0
    """Seconds a request body may take to arrive before the answer is 408."""


@dataclass(frozen=True)
class McpSettings:
    """Legacy MCP: serving snapshots, reverse mode, dialling out to a sink."""

    ENV_PREFIX: ClassVar[str] = "PILOTHOUSE_MCP_"
    ENV_NAMES: ClassVar[Mapping[str, str]] = MappingProxyType(
        {
            "accept_sources": "PILOTHOUSE_ACCEPT_MCP_SOURCES",
            "sink_meta": "PILOTHOUSE_SINK_META",
        }
    )

    accept_sources: bool = False
    """Serve MCP ResourceSink so that sources can dial in (reverse mode)."""
    sink_address: str = ""
    """Dial out to this MCP ResourceSink and serve config over that stream."""
    sink_meta: tuple[str, ...] = ()
    """``k=v`` pairs sent as gRPC metadata on the dial-out stream."""
    max_wait: float = 1.0
    """Default snapshot group: longest wait before publishing, seconds (Galley: 1 s)."""
    quiesce: float = 0.5
    """Default snapshot group: quiet time before publishing, seconds (Galley: 0.5 s)."""


@dataclass(frozen=True)
class SdsSettings:
    """SDS: workload certificates, the trust bundle and credentials served over xDS
    (:mod:`pilothouse.xds.generators.sds`)."""

    ENV_PREFIX: ClassVar[str] = "PILOTHOUSE_SDS_"
    ENV_NAMES: ClassVar[Mapping[str, str]] = MappingProxyType({"secrets_dir": "PILOTHOUSE_SECRETS"})

    secrets_dir: str = ""
    """A directory of gateway credentials, ``<name>.crt`` + ``<name>.key`` [+
    ``<name>-cacert.crt``], served as ``kubernetes://<name>`` (and ``-cacert``) and
    followed on change; empty serves none."""
    credentials_namespace: str = ""
    """Only identities of this namespace may read the secrets directory's credentials
    (istiod serves a proxy its own namespace's Secrets); empty lets any verified
    identity read them."""
    workload_cert_ttl: float = 86400.0
    """SECRET_TTL: lifetime asked for workload certificates (``default``), seconds."""
    grace_period_ratio: float = 0.5
    """SECRET_GRACE_PERIOD_RATIO: a workload certificate is replaced when this part of
    its life is left (so at about half its lifetime)."""
    grace_period_jitter: float = 0.01
    """Random spread of the grace period ratio, drawn per certificate (istio-agent's)."""
    workload_key: Literal["rsa", "ecdsa"] = "rsa"
    """Workload private keys: RSA 2048 (istiod's default) or ECDSA P-256."""
    server_keys: bool = False
    """Make workload keys on the server and serve them as ``default`` to proxies that
    authenticate on the TLS port without a node agent. Weaker than the agent (the
    control plane then knows those keys), so off: with the agent
    (``pilothouse agent``) keys are made on the node and only CSRs reach the server."""

    def __post_init__(self) -> None:
        if self.workload_cert_ttl <= 0:
            raise ValueError("PILOTHOUSE_SDS_WORKLOAD_CERT_TTL must be positive")
        jitter, ratio = self.grace_period_jitter, self.grace_period_ratio
        if not 0 < ratio < 1 or not 0 <= jitter < min(ratio, 1 - ratio):
            raise ValueError("PILOTHOUSE_SDS_GRACE_PERIOD_RATIO ± _JITTER must lie between 0 and 1")


@dataclass(frozen=True)
class CaSettings:
    """The built-in CA (:mod:`pilothouse.security`): where its keys live, lifetimes,
    root rotation. Defaults are istiod's (``security/pkg/cmd/constants.go``)."""

    ENV_PREFIX: ClassVar[str] = "PILOTHOUSE_CA_"
    ENV_NAMES: ClassVar[Mapping[str, str]] = _NO_RENAMES

    dir: str = ".pilothouse/ca"
    """The CA directory, relative to the working directory unless absolute. With
    ``ca-cert.pem``, ``ca-key.pem``, ``root-cert.pem`` and ``cert-chain.pem`` it is a
    plugged-in CA (istiod's ``cacerts``); otherwise a self-signed root is created there
    on first start and reused. ``root-cert.pem`` there is what clients of the TLS port
    trust."""
    workload_cert_ttl: float = 24 * 3600.0
    """DEFAULT_WORKLOAD_CERT_TTL, seconds: used when a request asks for 0 or less."""
    max_workload_cert_ttl: float = 90 * 24 * 3600.0
    """MAX_WORKLOAD_CERT_TTL, seconds: longer requests are refused."""
    root_cert_ttl: float = 10 * 365 * 24 * 3600.0
    """CITADEL_SELF_SIGNED_CA_CERT_TTL, seconds: lifetime of a self-signed root."""
    root_check_interval: float = 3600.0
    """CITADEL_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL, seconds."""
    root_rotation_ratio: float = 0.2
    """A self-signed root is replaced when this share of its lifetime is left."""
    root_distribution_delay: float = 3600.0
    """Seconds a new root is only trusted (in the bundle, pushed to workloads) before it
    signs anything; istiod has no such delay because it keeps the root's key."""

    def __post_init__(self) -> None:
        if not self.dir:
            raise ValueError("PILOTHOUSE_CA_DIR must not be empty")
        if not 0 < self.root_rotation_ratio < 1:
            raise ValueError("PILOTHOUSE_CA_ROOT_ROTATION_RATIO must be between 0 and 1")
        if self.max_workload_cert_ttl < self.workload_cert_ttl:
            raise ValueError(
                "PILOTHOUSE_CA_MAX_WORKLOAD_CERT_TTL is below PILOTHOUSE_CA_WORKLOAD_CERT_TTL"
            )


@dataclass(frozen=True)
class AuthSettings:
    """How callers of the TLS port prove who they are (besides client certificates)."""

    ENV_PREFIX: ClassVar[str] = "PILOTHOUSE_AUTH_"
    ENV_NAMES: ClassVar[Mapping[str, str]] = _NO_RENAMES

    jwt_issuers: tuple[str, ...] = ()
    """``ISSUER=PATH`` pairs: bearer tokens from ISSUER are verified with the keys of
    the JWKS file at PATH (pilothouse never fetches keys over the network)."""
    audiences: tuple[str, ...] = ("istio-ca",)
    """TOKEN_AUDIENCES: a token must name one of these audiences."""
    local_issuer_dir: str = ".pilothouse/token-issuer"
    """The local token issuer ``pilothouse token`` keeps (relative to the working
    directory unless absolute): while its ``issuer`` and ``jwks.json`` are there, its
    tokens are trusted on the TLS port without ``jwt_issuers`` (read again when they
    change, so an issuer created after start is trusted too). Anyone who can read its
    ``key.pem`` can mint a token for any service account, hence any identity: keep it as
    private as the CA's directory, or set this empty to trust only ``jwt_issuers``."""


@dataclass(frozen=True)
class KubeSettings:
    """How pilothouse reaches a Kubernetes API server (``k8s://`` config sources)."""

    ENV_PREFIX: ClassVar[str] = "PILOTHOUSE_KUBE_"
    ENV_NAMES: ClassVar[Mapping[str, str]] = MappingProxyType(
        {"kubeconfig": "PILOTHOUSE_KUBECONFIG"}
    )

    kubeconfig: str = ""
    """A kubeconfig file; empty uses the pod's service account (in-cluster)."""
    write_status: bool = False
    """Write validation messages into each Istio object's ``status`` (and the Gateway
    API's conditions into its objects', on Kubernetes and in etcd); off, nothing is
    written to the API server or etcd."""
    service_registry: bool = True
    """With a ``k8s://`` source, also read the cluster's Services, EndpointSlices, Pods,
    Nodes and Namespaces as a service registry (istiod's Kubernetes registry)."""
    mesh_namespace: str = "istio-system"
    """Where the ``istio`` ConfigMap (the mesh config) is read from, when a ``k8s://``
    source is given and ``--mesh`` is not (istiod's ``POD_NAMESPACE``)."""
    mesh_wait: float = 5.0
    """Seconds start-up waits, at most, for the first read of the ``istio`` ConfigMap
    before opening its ports; an API server that cannot be reached ends the wait at once
    (the mesh defaults serve until the ConfigMap is read)."""


@dataclass(frozen=True)
class EtcdSettings:
    """How pilothouse reaches etcd: every ``etcd://`` config source, the CA's root kept
    there, and ``apply``/``get``/``delete --store``. Empty fields mean plaintext and no
    authentication (etcd's defaults)."""

    ENV_PREFIX: ClassVar[str] = "PILOTHOUSE_ETCD_"
    ENV_NAMES: ClassVar[Mapping[str, str]] = _NO_RENAMES

    ca_file: str = ""
    """PEM roots that etcd's serving certificate must chain to; set (or ``cert_file``
    set), the client speaks TLS."""
    cert_file: str = ""
    """A client certificate (PEM) for etcd's ``--client-cert-auth``; needs ``key_file``."""
    key_file: str = ""
    """The client certificate's private key (PEM)."""
    user: str = ""
    """An etcd user (``etcdctl user add``), authenticated with ``password``."""
    password: str = field(default="", repr=False)
    """The user's password (prefer the environment to a flag: flags show in ``ps``);
    never in a repr."""

    @property
    def tls(self) -> bool:
        return bool(self.ca_file or self.cert_file)


@dataclass(frozen=True)
class Settings:
    """All of pilothouse's knobs."""

    ENV_PREFIX: ClassVar[str] = "PILOTHOUSE_"
    ENV_NAMES: ClassVar[Mapping[str, str]] = _NO_RENAMES

    config_dirs: tuple[Path, ...] = ()
    """Directories served by file sources; empty means ``./mesh`` when it exists."""
    config_sources: tuple[str, ...] = ()
    """Extra config source addresses (fs:///dir, xds://host:port, mcp://host:port,
    etcd://host:port[,host:port...]/prefix)."""
    mesh_file: str = ""
    """An Istio mesh config file (MeshConfig YAML or the istio ConfigMap)."""
    default_namespace: str = "default"
    """Namespace given to objects whose metadata has none."""
    file_debounce: float = 0.1
    """Seconds of quiet before a changed file is reloaded."""
    file_root_poll: float = 0.5
    """How often a config directory is looked at while it is gone or unreadable (and
    checked for being replaced while it is watched), in seconds."""
    role: Literal["all", "config-server"] = "all"
    """``all`` serves proxies and config; ``config-server`` serves config only (MCP)."""
    log_level: str = "info"
    """``info``, or levels per scope as istiod writes them: ``default:info,xds:debug``."""
    drain_seconds: float = 5.0
    """How long SIGTERM waits for streams to close before stopping hard (istiod's
    shutdownDuration is 10 s)."""
    workers: int = 1
    """Serving processes sharing the ports (``SO_REUSEPORT``) under one supervising
    parent (:mod:`pilothouse.cli.supervisor`); 1 serves in this process, as always."""
    xds: XdsSettings = field(default_factory=XdsSettings)
    admin: AdminSettings = field(default_factory=AdminSettings)
    ctrlz: ControlZSettings = field(default_factory=ControlZSettings)
    rest: RestSettings = field(default_factory=RestSettings)
    webhook: WebhookSettings = field(default_factory=WebhookSettings)
    mcp: McpSettings = field(default_factory=McpSettings)
    ca: CaSettings = field(default_factory=CaSettings)
    auth: AuthSettings = field(default_factory=AuthSettings)
    sds: SdsSettings = field(default_factory=SdsSettings)
    kube: KubeSettings = field(default_factory=KubeSettings)
    etcd: EtcdSettings = field(default_factory=EtcdSettings)

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError("PILOTHOUSE_WORKERS must be at least 1")

    def with_overrides(self, values: Mapping[str, Any]) -> Settings:
        """A copy with the knobs named by dotted path (``xds.cache_size``) replaced;
        None values are skipped. Unknown paths raise ValueError."""
        known = {knob.path for knob in knobs()}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown settings: {', '.join(unknown)}")
        result: Any = self
        for path, value in values.items():
            if value is not None:
                result = _replaced(result, path.split("."), value)
        assert isinstance(result, Settings)
        return result

    def effective_config_dirs(self) -> tuple[Path, ...]:
        if self.config_dirs:
            return self.config_dirs
        mesh = Path("mesh")
        return (mesh,) if mesh.is_dir() else ()


def _replaced(node: Any, path: list[str], value: Any) -> Any:
    head, rest = path[0], path[1:]
    new = _replaced(getattr(node, head), rest, value) if rest else value
    return dataclasses.replace(node, **{head: new})


@dataclass(frozen=True, slots=True)
class Knob:
    """One leaf of the tree: where it is, what sets it, its type and its default."""

    path: str
    """Dotted attribute path from :class:`Settings` (``xds.cache_size``)."""
    env: str
    """The environment variable that sets it."""
    kind: Any
    """The field's type (``int``, ``float``, ``bool``, ``str``, ``tuple[str, ...]``...)."""
    default: Any


def knobs(tree: type[Any] = Settings) -> tuple[Knob, ...]:
    """Every leaf of ``tree``, in declaration order, nested parts in place."""
    found: list[Knob] = []
    _collect(tree, "", found)
    return tuple(found)


def _collect(tree: type[Any], prefix: str, found: list[Knob]) -> None:
    hints = typing.get_type_hints(tree)
    defaults = tree()
    for item in dataclasses.fields(tree):
        kind = hints[item.name]
        path = f"{prefix}{item.name}"
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            _collect(kind, f"{path}.", found)
            continue
        env = tree.ENV_NAMES.get(item.name, f"{tree.ENV_PREFIX}{item.name.upper()}")
        found.append(Knob(path, env, kind, getattr(defaults, item.name)))
