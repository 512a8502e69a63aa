"""Config source addresses (MeshConfig ``configSources[].address``) and the sources they name.

Accepted forms:

- ``fs:///abs/dir`` — a directory of Istio YAML (the path must be absolute);
- a plain path (``/abs/dir``, ``./mesh``, ``mesh``) — the same, relative paths allowed;
- ``xds://host:port`` — an MCP-over-xDS server (another pilothouse, istiod, Nacos);
- ``mcp://host:port`` — a legacy MCP ``ResourceSource``;
- ``etcd://host:port[,host:port…]/prefix`` — keys under a prefix of an etcd cluster, any
  of whose endpoints may be dialled (prefix ``/`` if none is given).

Hosts may be names, IPv4 addresses or bracketed IPv6 addresses (``xds://[::1]:15010``).
Anything else is refused with a :class:`AddressError` that says what would be accepted.
:func:`build_source` makes the source for the schemes implemented so far (fs, xds, etcd).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final, Protocol
from urllib.parse import urlsplit

from pilothouse.config.load import Loader
from pilothouse.config.schema import SchemaSet
from pilothouse.settings import Settings
from pilothouse.sources.etcd import EtcdSource
from pilothouse.sources.fs import FileSource
from pilothouse.sources.memory import MemoryStore
from pilothouse.sources.xds_upstream import UpstreamSettings, XdsUpstreamSource

_FORMS: Final = (
    "fs:///abs/dir, a directory path, xds://host:port, mcp://host:port"
    " or etcd://host:port[,host:port...]/prefix"
)


class Scheme(StrEnum):
    FS = "fs"
    XDS = "xds"
    MCP = "mcp"
    ETCD = "etcd"


class AddressError(ValueError):
    """A config source address that cannot be used; the message says why."""


class UnsupportedSource(AddressError):
    """A well-formed address whose kind of source is not implemented yet."""


@dataclass(frozen=True, slots=True)
class SourceAddress:
    """A parsed address: ``host``/``port`` for network schemes, ``path`` for fs and etcd.

    For etcd, ``endpoints`` lists every ``(host, port)`` given (``host``/``port`` are the
    first)."""

    scheme: Scheme
    host: str = ""
    port: int | None = None
    path: str = ""
    endpoints: tuple[tuple[str, int], ...] = ()

    def __str__(self) -> str:
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
    return SourceAddress(Scheme.ETCD, host, port, path, tuple(endpoints))


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
) -> ConfigSource:
    """The source for ``address`` (not started: call ``run()``)."""
    parsed = address if isinstance(address, SourceAddress) else parse_address(address)
    if parsed.scheme is Scheme.FS:
        directory = Path(parsed.path)
        loader = Loader(
            schemas=schemas if schemas is not None else SchemaSet(),
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
                schemas=schemas if schemas is not None else SchemaSet(),
                default_namespace=default_namespace,
                source=str(parsed),
            ),
        )
    raise UnsupportedSource(
        f"config source {parsed}: {parsed.scheme}:// sources are not supported yet"
    )
