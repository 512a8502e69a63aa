"""The ``serve`` command line: its flags, and the settings they and the environment give.

Flags win over ``PILOTHOUSE_*`` variables; :data:`FLAGS` names the setting each flag
sets (the settings reference, ``docs/reference/settings.md``, is generated from it).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Final

from pilothouse.addresses import AddressError, parse_host_port
from pilothouse.cli.store_session import add_etcd_arguments
from pilothouse.environment import SettingsError, from_environment
from pilothouse.settings import (
    AdminSettings,
    AuthSettings,
    CaSettings,
    ControlZSettings,
    Settings,
    WebhookSettings,
    XdsSettings,
    knobs,
)


def add_arguments(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """The ``serve`` subcommand and its flags; the caller sets what it runs."""
    parser = commands.add_parser(
        "serve",
        help="serve the mesh config over xDS",
        description="Load Istio config from directories, keep it current, serve it over xDS.",
    )
    parser.add_argument(
        "--config",
        action="append",
        type=Path,
        metavar="DIR",
        help="a directory of Istio YAML (repeatable; default ./mesh if present)",
    )
    parser.add_argument(
        "--config-source",
        action="append",
        metavar="ADDRESS",
        help="a config source: fs:///dir, xds://host:port, mcp://host:port, "
        "etcd://host:port[,host:port...]/prefix or k8s://[?namespace=NS&labelSelector=SEL] "
        "(repeatable)",
    )
    add_etcd_arguments(parser)
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="the kubeconfig of k8s:// sources (default: the pod's service account)",
    )
    parser.add_argument(
        "--write-status",
        action="store_true",
        help="write validation messages into the status of Istio objects of k8s:// sources, "
        "and the Gateway API's conditions into its objects of k8s:// and etcd:// sources",
    )
    parser.add_argument(
        "--mesh", type=Path, metavar="FILE", help="Istio mesh config (MeshConfig or ConfigMap)"
    )
    parser.add_argument(
        "--role",
        choices=("all", "config-server"),
        help="all (default): serve proxies and config; config-server: config only (MCP)",
    )
    parser.add_argument(
        "--accept-mcp-sources",
        action="store_true",
        help="serve MCP ResourceSink so that config sources can dial in (reverse mode)",
    )
    parser.add_argument(
        "--mcp-sink-address", metavar="HOST:PORT", help="dial out to an MCP ResourceSink"
    )
    parser.add_argument(
        "--sink-meta", action="append", metavar="K=V", help="metadata for the dial-out stream"
    )
    parser.add_argument("--xds-address", metavar="HOST:PORT", help=f"default {XdsSettings.address}")
    parser.add_argument(
        "--xds-tls-address",
        metavar="HOST:PORT",
        help=f"TLS xDS and the certificate service (default {XdsSettings.tls_address}; "
        "an empty value turns it off)",
    )
    parser.add_argument(
        "--ca-dir",
        type=Path,
        metavar="DIR",
        help=f"the CA directory: plugged-in CA files, or where the self-signed root is kept "
        f"(default {CaSettings.dir})",
    )
    parser.add_argument(
        "--jwt-issuer",
        action="append",
        metavar="ISSUER=JWKS_FILE",
        help="trust bearer tokens from ISSUER, verified with the keys in JWKS_FILE (repeatable)",
    )
    parser.add_argument(
        "--local-issuer-dir",
        metavar="DIR",
        help=f"the local token issuer trusted without --jwt-issuer while it exists (default "
        f"{AuthSettings.local_issuer_dir}; whoever can read its key can mint any identity; "
        "an empty value turns it off)",
    )
    parser.add_argument(
        "--jwks-allowed-host",
        action="append",
        metavar="HOST|CIDR",
        help="a host name, address or CIDR a RequestAuthentication jwksUri may lead to although "
        "it is loopback, private or this host's own (repeatable; default: none)",
    )
    parser.add_argument(
        "--wasm-allowed-host",
        action="append",
        metavar="HOST|CIDR",
        help="a host name, address or CIDR a WasmPlugin http(s) url may lead to although it "
        "is loopback, private or this host's own (repeatable; default: none)",
    )
    parser.add_argument(
        "--secrets",
        type=Path,
        metavar="DIR",
        help="gateway credentials <name>.crt + <name>.key [+ <name>-cacert.crt], "
        "served over SDS as kubernetes://<name> and followed on change",
    )
    parser.add_argument(
        "--sds-server-keys",
        action="store_true",
        default=None,
        help="make workload keys on the server and serve them over SDS to proxies without "
        "a node agent (weaker: the server then knows those keys; default off)",
    )
    parser.add_argument(
        "--admin-address",
        metavar="HOST:PORT",
        help=f"HTTP for /ready and REST xDS; default {AdminSettings.address}",
    )
    parser.add_argument(
        "--webhook-address",
        metavar="HOST:PORT",
        help="HTTPS validation webhook, with --webhook-cert/-key "
        f"(default {WebhookSettings.address})",
    )
    parser.add_argument(
        "--webhook-cert", type=Path, metavar="FILE", help="webhook certificate (PEM)"
    )
    parser.add_argument(
        "--webhook-key", type=Path, metavar="FILE", help="webhook private key (PEM)"
    )
    parser.add_argument(
        "--ctrlz-address",
        metavar="HOST:PORT",
        help=f"ControlZ pages (default {ControlZSettings.address}; off for none)",
    )
    parser.add_argument(
        "--log-level",
        metavar="LEVELS",
        help="info (default), or per scope as istiod: default:info,xds:debug",
    )
    parser.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="serving processes sharing the ports (default 1: this process serves)",
    )
    return parser


FLAGS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "config": "config_dirs",
        "config_source": "config_sources",
        "mesh": "mesh_file",
        "role": "role",
        "log_level": "log_level",
        "workers": "workers",
        "xds_address": "xds.address",
        "xds_tls_address": "xds.tls_address",
        "ca_dir": "ca.dir",
        "jwt_issuer": "auth.jwt_issuers",
        "local_issuer_dir": "auth.local_issuer_dir",
        "jwks_allowed_host": "xds.jwks_allowed_hosts",
        "wasm_allowed_host": "xds.wasm_allowed_hosts",
        "secrets": "sds.secrets_dir",
        "sds_server_keys": "sds.server_keys",
        "admin_address": "admin.address",
        "ctrlz_address": "ctrlz.address",
        "webhook_address": "webhook.address",
        "webhook_cert": "webhook.cert",
        "webhook_key": "webhook.key",
        "accept_mcp_sources": "mcp.accept_sources",
        "mcp_sink_address": "mcp.sink_address",
        "sink_meta": "mcp.sink_meta",
        "kubeconfig": "kube.kubeconfig",
        "write_status": "kube.write_status",
        "etcd_ca_file": "etcd.ca_file",
        "etcd_cert_file": "etcd.cert_file",
        "etcd_key_file": "etcd.key_file",
        "etcd_user": "etcd.user",
        "etcd_password": "etcd.password",
    }
)
"""Each ``serve`` flag (by its argparse dest) and the knob it sets."""


def settings_from(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Settings:
    """Defaults, then ``PILOTHOUSE_*`` variables, then flags (flags win).

    Raises :class:`SettingsError` for an unknown ``PILOTHOUSE_*`` variable, a bad value,
    or values a part of the tree refuses together (an admission burst of 0, say).
    """
    overrides = from_environment(environ)
    for dest, path in FLAGS.items():
        value = getattr(args, dest, None)
        if value is None or value is False or value == []:
            continue  # not given (an empty string is given: --xds-tls-address "" is off)
        if isinstance(value, list):
            value = tuple(value)
        elif isinstance(value, Path):
            value = str(value)
        overrides[path] = value
    try:
        settings = Settings().with_overrides(overrides)
    except ValueError as problem:
        raise SettingsError(str(problem)) from None
    check_addresses(settings, args)
    return settings


ADDRESSES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "xds.address": "xds_address",
        "xds.tls_address": "xds_tls_address",
        "admin.address": "admin_address",
        "ctrlz.address": "ctrlz_address",
        "webhook.address": "webhook_address",
        "mcp.sink_address": "mcp_sink_address",
    }
)
"""Every address knob of ``serve`` and its flag (by argparse dest)."""

_OFF_WORDS: Final = frozenset({"", ControlZSettings.OFF})
_DIALLED: Final = frozenset({"mcp.sink_address"})
_MAY_BE_OFF: Final = frozenset({"xds.tls_address", "ctrlz.address", "mcp.sink_address"})


def address_knob_name(path: str, args: argparse.Namespace | None = None) -> str:
    """What an address knob is called in a message: its flag when the flag was given
    (or no environment variable could have set it), else its ``PILOTHOUSE_*`` variable."""
    dest = ADDRESSES[path]
    flag = "--" + dest.replace("_", "-")
    if args is not None and getattr(args, dest, None) is None:
        return next(knob.env for knob in knobs() if knob.path == path)
    return flag


def check_addresses(settings: Settings, args: argparse.Namespace | None = None) -> None:
    """Every address knob parsed (:func:`pilothouse.addresses.parse_host_port`);
    :class:`SettingsError` names the first one that is not an address."""
    for path in ADDRESSES:
        part, _, leaf = path.partition(".")
        value: str = getattr(getattr(settings, part), leaf)
        if path in _MAY_BE_OFF and value.strip().lower() in _OFF_WORDS:
            continue
        try:
            parse_host_port(value, address_knob_name(path, args), dial=path in _DIALLED)
        except AddressError as problem:
            raise SettingsError(str(problem)) from None
