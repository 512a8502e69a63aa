"""``--store etcd://host:port[,host:port…]/prefix`` for ``apply``, ``get`` and ``delete``:
the address checked, a client on the first endpoint that answers, and kubectl's exit
codes and error lines. The ``--etcd-*`` flags (TLS files, user and password; shared with
``serve``) default to the ``PILOTHOUSE_ETCD_*`` variables, as for ``serve``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field

import aetcd

from pilothouse.cli.store_objects import resource
from pilothouse.config.model import ConfigKey
from pilothouse.config.schema import SchemaSet
from pilothouse.settings import EtcdSettings, knobs
from pilothouse.sources.addresses import AddressError, Scheme, parse_address
from pilothouse.sources.etcd_client import EtcdUnavailable, client_for, reason
from pilothouse.sources.etcd_layout import EtcdLayout

EXIT_OK = 0
EXIT_ERROR = 1
STORE_ENV = "PILOTHOUSE_STORE"


class StoreUnreachable(Exception):
    """No endpoint of the store answered; the message lists why, per endpoint."""


@dataclass(frozen=True, slots=True)
class Store:
    endpoints: tuple[tuple[str, int], ...]
    layout: EtcdLayout
    security: EtcdSettings = field(default_factory=EtcdSettings)


def add_store_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        default=os.environ.get(STORE_ENV),
        metavar="ADDRESS",
        help=f"etcd://host:port[,host:port...]/prefix (default: ${STORE_ENV})",
    )
    parser.add_argument(
        "--request-timeout", type=float, default=10.0, metavar="SECONDS", help="per request"
    )
    add_etcd_arguments(parser)


def add_etcd_arguments(parser: argparse.ArgumentParser) -> None:
    """How to reach a protected etcd (``serve`` and the store commands)."""
    parser.add_argument(
        "--etcd-ca-file", metavar="FILE", help="speak TLS to etcd, trusting these roots (PEM)"
    )
    parser.add_argument(
        "--etcd-cert-file", metavar="FILE", help="client certificate for etcd (PEM)"
    )
    parser.add_argument("--etcd-key-file", metavar="FILE", help="its private key (PEM)")
    parser.add_argument("--etcd-user", metavar="NAME", help="authenticate to etcd as NAME")
    parser.add_argument(
        "--etcd-password",
        metavar="PASSWORD",
        help="that user's password (better: $PILOTHOUSE_ETCD_PASSWORD, flags show in ps)",
    )


def etcd_settings(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> EtcdSettings:
    """The ``--etcd-*`` flags, else the ``PILOTHOUSE_ETCD_*`` variables; ValueError when
    they do not go together."""
    variables = os.environ if environ is None else environ
    values: dict[str, str] = {}
    for knob in knobs(EtcdSettings):
        given = getattr(args, f"etcd_{knob.path}", None) or variables.get(knob.env, "")
        if given:
            values[knob.path] = str(given)
    return EtcdSettings(**values)


def store_of(
    address: str | None, schemas: SchemaSet, security: EtcdSettings | None = None
) -> Store:
    """The store an address names; ValueError with the reason when it cannot be one."""
    if not address:
        raise ValueError(f"a store is required: --store etcd://host:port/prefix or ${STORE_ENV}")
    try:
        parsed = parse_address(address)
    except AddressError as problem:
        raise ValueError(str(problem)) from None
    if parsed.scheme is not Scheme.ETCD:
        raise ValueError(f"--store {address!r}: only etcd://host:port[,host:port...]/prefix")
    return Store(parsed.endpoints, EtcdLayout(parsed.path, schemas), security or EtcdSettings())


@contextlib.asynccontextmanager
async def connected(store: Store, timeout: float) -> AsyncIterator[aetcd.Client]:
    """A client on the first endpoint that answers a read of the store's prefix."""
    failures: list[str] = []
    for host, port in store.endpoints:
        client = client_for(host, port, timeout=timeout, security=store.security)
        try:
            await client.get(store.layout.root)
        except (aetcd.exceptions.ClientError, EtcdUnavailable, OSError) as problem:
            failures.append(f"{host}:{port}: {reason(problem, store.security)}")
            with contextlib.suppress(Exception):
                await client.close()
            continue
        try:
            yield client
        finally:
            with contextlib.suppress(Exception):
                await client.close()
        return
    raise StoreUnreachable("cannot reach the store (" + "; ".join(failures) + ")")


def not_found(key: ConfigKey, schemas: SchemaSet) -> str:
    schema = schemas.by_kind(key.kind)
    assert schema is not None
    return f'Error from server (NotFound): {resource(schema, plural=True)} "{key.name}" not found'
