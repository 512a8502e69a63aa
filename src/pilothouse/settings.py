"""Settings: every knob pilothouse has, in one typed, frozen tree passed to whoever needs it.

The tree has one part per component: ``settings.xds`` (the gRPC xDS server, its
debouncer, push workers and admission control), ``settings.admin``, ``settings.ctrlz``,
``settings.rest``, ``settings.webhook``, ``settings.mcp`` and ``settings.sds``; the top
level holds what ``serve`` itself reads. Each part is the settings object its component takes
(``DiscoveryServer`` takes ``settings.xds``, ``RestDiscovery`` takes ``settings.rest``),
so a default is written once, in the tree, and equals istiod's where istiod has one (where it
does not, the field says why). A tree rather than one flat class because each
component then gets exactly the knobs it reads, and its tests build just that part
(``XdsSettings(debounce=DebounceSettings(debounce_after=0.01))``). The xDS part, the
largest, is written in :mod:`pilothouse.xds_settings`; this module names its classes too,
so that every class of the tree is found here.

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
import functools
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Final, Literal

from pilothouse.xds_settings import AdmissionSettings as AdmissionSettings
from pilothouse.xds_settings import DebounceSettings as DebounceSettings
from pilothouse.xds_settings import XdsSettings as XdsSettings

_NO_RENAMES: Final[Mapping[str, str]] = MappingProxyType({})


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
    host_names: tuple[str, ...] = ()
    """Names besides its certificate's, ``localhost``, loopback, its own addresses and
    host name that a request's ``Host`` header may carry to the webhook; any other name
    gets 421. ``*`` accepts every name."""


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
class GcSettings:
    """The cyclic garbage collector's thresholds in each serving process
    (:func:`pilothouse.heap.set_collector_thresholds`, applied once when ``serve``
    starts). 0 keeps CPython's own value for that generation (700, 10, 10)."""

    ENV_PREFIX: ClassVar[str] = "PILOTHOUSE_GC_"
    ENV_NAMES: ClassVar[Mapping[str, str]] = _NO_RENAMES

    threshold0: int = 0
    """Allocations (minus deallocations) of container objects that start a collection of
    the youngest generation (``gc.set_threshold``'s first value); 0: CPython's 700, which
    at 1,000 proxies runs about 20 young and 1.5 middle collections per push (2 % of the
    server's CPU per push, 6-9 % of a connect storm's; ``bench/gc_cost.py``). 20,000 runs
    none, but the push fan-out's p99 was no shorter for it (``docs/guides/scale.md``)."""
    threshold1: int = 0
    """Young collections between two collections of the middle generation; 0: CPython's 10."""
    threshold2: int = 0
    """Middle collections between two full ones (CPython also waits until the oldest
    generation's unfrozen objects grew by a quarter); 0: CPython's 10."""

    def __post_init__(self) -> None:
        for name in ("threshold0", "threshold1", "threshold2"):
            if getattr(self, name) < 0:
                raise ValueError(f"PILOTHOUSE_GC_{name.upper()} must not be negative")


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
    gc: GcSettings = field(default_factory=GcSettings)

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


@functools.cache
def knobs(tree: type[Any] = Settings) -> tuple[Knob, ...]:
    """Every leaf of ``tree``, in declaration order, nested parts in place (worked out once
    per tree: the classes are fixed, and reading their type hints is slow enough that
    ``serve``'s flags, asking once each, spent a tenth of a second on it)."""
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
