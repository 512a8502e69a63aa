"""Config source addresses (MeshConfig ``configSources[].address``) and the sources they name.

Accepted forms:

- ``fs:///abs/dir`` — a directory of Istio YAML (the path must be absolute);
- a plain path (``/abs/dir``, ``./mesh``, ``mesh``) — the same, relative paths allowed;
- ``xds://host:port`` — an MCP-over-xDS server (another pilothouse, istiod, Nacos);
- ``mcp://host:port`` — a legacy MCP ``ResourceSource``;
- ``etcd://host:port[,host:port…]/prefix`` — keys under a prefix of an etcd cluster, any
  of whose endpoints may be dialled (prefix ``/`` if none is given);
- ``k8s://`` — Istio custom resources of the Kubernetes cluster that ``--kubeconfig``
  names (in-cluster without it); ``k8s://?namespace=NS`` reads one namespace,
  ``k8s://?labelSelector=SEL`` only objects whose labels match SEL (Kubernetes selector
  syntax, URL-encoded: ``k8s://?labelSelector=team%3Dpayments``); both may be given.

Hosts may be names, IPv4 addresses or bracketed IPv6 addresses (``xds://[::1]:15010``).
Anything else is refused with a :class:`AddressError` that says what would be accepted.
:func:`build_source` makes the source for the schemes implemented so far (fs, xds, etcd, k8s).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit

from pilothouse.config.load import Loader
from pilothouse.config.schema import SchemaSet
from pilothouse.kinds.table import SCHEMAS
from pilothouse.settings import EtcdSettings, KubeSettings, Settings
from pilothouse.sources.etcd import EtcdSource
from pilothouse.sources.fs import FileSource
from pilothouse.sources.kubernetes.client import KubeConfigError, check_config
from pilothouse.sources.kubernetes.config_source import KubeConfigSource
from pilothouse.sources.memory import MemoryStore
from pilothouse.sources.xds_upstream import UpstreamSettings, XdsUpstreamSource

_FORMS: Final = (
    "fs:///abs/dir, a directory path, xds://host:port, mcp://host:port, "
    "etcd://host:port[,host:port...]/prefix or k8s://[?namespace=NS&labelSelector=SEL]"
)
_K8S_QUERY: Final = ("namespace", "labelSelector")
_DNS_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SELECTOR_PART: Final = re.compile(
    r"^\s*!?\s*[A-Za-z0-9_./-]+\s*((==|!=|=)\s*[A-Za-z0-9_.-]*|\s+(in|notin)\s+\([^()]*\))?\s*$"
)


class Scheme(StrEnum):
    FS = "fs"
    XDS = "xds"
    MCP = "mcp"
    ETCD = "etcd"
    K8S = "k8s"


class AddressError(ValueError):
    """A config source address that cannot be used; the message says why."""


class UnsupportedSource(AddressError):
    """A well-formed address whose kind of source is not implemented yet."""


@dataclass(frozen=True, slots=True)
class SourceAddress:
    """A parsed address: ``host``/``port`` for network schemes, ``path`` for fs and etcd,
    ``namespace`` and ``label_selector`` for k8s.

    For etcd, ``endpoints`` lists every ``(host, port)`` given (``host``/``port`` are the
    first)."""

    scheme: Scheme
    host: str = ""
    port: int | None = None
    path: str = ""
    namespace: str = ""
    label_selector: str = ""
    endpoints: tuple[tuple[str, int], ...] = ()

    def __str__(self) -> str:
        if self.scheme is Scheme.K8S:
            query = urlencode(
                [(k, v) for k, v in (("namespace", self.namespace),
                                      ("labelSelector", self.label_selector)) if v]
            )  # fmt: skip
            return f"k8s://?{query}" if query else "k8s://"
        if self.scheme is Scheme.FS:
            return f"fs://{self.path}" if self.path.startswith("/") else self.path
        if self.scheme is Scheme.ETCD and self.endpoints:
            hosts = ",".join(f"{_bracketed(h)}:{p}" for h, p in self.endpoints)
            return f"{self.scheme}://{hosts}{self.path}"
        return f"{self.scheme}://{_bracketed(self.host)}:{self.port}"


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def parse_address(address: str) -> SourceAddress:
    """Parse one config source address (see the module docstring for the forms)."""
    text = address.strip()
    if not text:
        raise AddressError(f"empty config source address; use {_FORMS}")
    if "://" not in text:
        if ":" in text.split("/", 1)[0] and not text.startswith(("/", ".")):
            raise AddressError(
                f"config source {address!r} looks like host:port without a scheme; use {_FORMS}"
            )
        return SourceAddress(Scheme.FS, path=text)
    scheme_text, _, rest = text.partition("://")
    try:
        scheme = Scheme(scheme_text.lower())
    except ValueError:
        raise AddressError(
            f"config source {address!r}: unsupported scheme {scheme_text!r}; use {_FORMS}"
        ) from None
    if scheme is Scheme.FS:
        if not rest.startswith("/"):
            raise AddressError(
                f"config source {address!r}: fs:// needs an absolute path, as in fs:///etc/mesh"
            )
        if "?" in rest or "#" in rest:
            raise AddressError(f"config source {address!r}: fs:// takes a plain path")
        return SourceAddress(Scheme.FS, path=rest)
    if scheme is Scheme.K8S:
        return _k8s_address(address, rest)
    if scheme is Scheme.ETCD:
        return _etcd_address(address, rest)
    return _network_address(address, scheme, rest)


def _etcd_address(address: str, rest: str) -> SourceAddress:
    """``host:port[,host:port…]/prefix``: every endpoint checked as a network address."""
    hosts, slash, prefix = rest.partition("/")
    endpoints: list[tuple[str, int]] = []
    for part in hosts.split(","):
        one = _network_address(address, Scheme.ETCD, part)
        assert one.port is not None
        endpoints.append((one.host, one.port))
    path = f"/{prefix}" if slash else "/"
    if "?" in path or "#" in path:
        raise AddressError(
            f"config source {address!r}: use etcd://host:port[,host:port...]/prefix (no query or #)"
        )
    (host, port), *_ = endpoints
    return SourceAddress(Scheme.ETCD, host, port, path, endpoints=tuple(endpoints))


def _k8s_address(address: str, rest: str) -> SourceAddress:
    example = "k8s://, k8s://?namespace=NS or k8s://?labelSelector=SEL"
    where, _, query = rest.partition("?")
    if where not in ("", "/") or "#" in query:
        raise AddressError(
            f"config source {address!r}: k8s:// names no host or path (the cluster is "
            f"--kubeconfig's); use {example}"
        )
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise AddressError(
            f"config source {address!r}: cannot read the query; use {example}"
        ) from None
    found: dict[str, str] = {}
    for name, value in pairs:
        if name not in _K8S_QUERY:
            raise AddressError(
                f"config source {address!r}: unknown parameter {name!r}; use {example}"
            )
        if name in found:
            raise AddressError(f"config source {address!r}: {name} given twice")
        found[name] = value
    namespace = found.get("namespace", "")
    if "namespace" in found and (len(namespace) > 63 or not _DNS_LABEL.match(namespace)):
        raise AddressError(
            f"config source {address!r}: namespace {namespace!r} is not a Kubernetes "
            "namespace name (a lowercase RFC 1123 label)"
        )
    selector = found.get("labelSelector", "")
    if "labelSelector" in found and not all(
        _SELECTOR_PART.match(part) for part in _selector_parts(selector)
    ):
        raise AddressError(
            f"config source {address!r}: labelSelector {selector!r} is not a Kubernetes "
            "label selector (key=value, key!=value, key in (a,b), key notin (a), key, !key; "
            "comma-separated, URL-encoded in the address)"
        )
    return SourceAddress(Scheme.K8S, namespace=namespace, label_selector=selector)


def _selector_parts(selector: str) -> list[str]:
    """A selector split at the commas outside parentheses (never empty parts)."""
    parts, depth, current = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def _network_address(address: str, scheme: Scheme, rest: str) -> SourceAddress:
    example = "etcd://host:port/prefix" if scheme is Scheme.ETCD else f"{scheme}://host:port"
    parts = urlsplit(f"{scheme}://{rest}")
    if parts.query or parts.fragment or "@" in parts.netloc:
        raise AddressError(f"config source {address!r}: use {example} (no user, query or #)")
    try:
        host, port = parts.hostname, parts.port
    except ValueError as problem:
        raise AddressError(f"config source {address!r}: {problem}; use {example}") from None
    if not host or port is None:
        raise AddressError(f"config source {address!r}: a host and a port are required: {example}")
    if port == 0:
        raise AddressError(f"config source {address!r}: port 0 cannot be dialled")
    path = parts.path
    if scheme is Scheme.ETCD:
        return SourceAddress(scheme, host, port, path or "/")
    if path not in ("", "/"):
        raise AddressError(f"config source {address!r}: {scheme}:// takes no path: {example}")
    return SourceAddress(scheme, host, port)


class ConfigSource(Protocol):
    """What ``serve`` runs for each address: its own store, plus run/close/has_synced."""

    @property
    def store(self) -> MemoryStore: ...

    @property
    def name(self) -> str: ...

    async def run(self) -> None: ...

    def close(self) -> None: ...

    def has_synced(self) -> bool: ...


def build_source(
    address: str | SourceAddress,
    *,
    default_namespace: str = Settings.default_namespace,
    file_debounce: float = Settings.file_debounce,
    file_root_poll: float = Settings.file_root_poll,
    schemas: SchemaSet | None = None,
    upstream: UpstreamSettings | None = None,
    kube: KubeSettings | None = None,
    etcd: EtcdSettings | None = None,
) -> ConfigSource:
    """The source for ``address`` (not started: call ``run()``)."""
    parsed = address if isinstance(address, SourceAddress) else parse_address(address)
    if parsed.scheme is Scheme.FS:
        directory = Path(parsed.path)
        loader = Loader(
            schemas=schemas if schemas is not None else SCHEMAS,
            default_namespace=default_namespace,
            source=f"fs://{directory.resolve()}",
        )
        return FileSource(directory, loader, debounce=file_debounce, root_poll=file_root_poll)
    if parsed.scheme is Scheme.XDS:
        assert parsed.port is not None
        return XdsUpstreamSource(parsed.host, parsed.port, schemas=schemas, settings=upstream)
    if parsed.scheme is Scheme.ETCD:
        return EtcdSource(
            parsed.endpoints,
            parsed.path,
            loader=Loader(
                schemas=schemas if schemas is not None else SCHEMAS,
                default_namespace=default_namespace,
                source=str(parsed),
            ),
            security=etcd,
            write_status=kube.write_status if kube is not None else False,
        )
    if parsed.scheme is Scheme.K8S:
        given = kube if kube is not None else KubeSettings()
        try:
            check_config(given.kubeconfig or None)
        except KubeConfigError as problem:
            raise AddressError(f"config source {parsed}: {problem}") from None
        return KubeConfigSource(
            str(parsed),
            Loader(
                schemas=schemas if schemas is not None else SCHEMAS,
                default_namespace=default_namespace,
                source=str(parsed),
            ),
            kubeconfig=given.kubeconfig or None,
            namespace=parsed.namespace,
            label_selector=parsed.label_selector,
            write_status=given.write_status,
        )
    raise UnsupportedSource(
        f"config source {parsed}: {parsed.scheme}:// sources are not supported yet"
    )
