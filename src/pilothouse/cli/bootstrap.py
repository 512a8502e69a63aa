"""`pilothouse bootstrap`: print a bootstrap that connects a proxy to pilothouse.

Envoy (default): ADS over gRPC (``--delta`` for DELTA_GRPC, ``--rest`` for REST-JSON
polling), ``set_node_on_first_message_only``, Istio's ``xds-grpc`` cluster. With
``--grpc``, a bootstrap JSON for grpcio's proxyless xDS client (``GRPC_XDS_BOOTSTRAP``).
The node id is the Istio form ``type~ip~pod.namespace~namespace.svc.cluster.local``.
An Envoy bootstrap whose admin port is known (``--admin-port`` other than 0) carries
it in node metadata ``ENVOY_ADMIN_ADDRESS`` (``pilothouse inspect --sample`` reads it).

``--xds-tls-root FILE`` points the ``xds-grpc`` cluster at the TLS port (default
address ``127.0.0.1:15012``) trusting that root; the proxy proves who it is with
``--xds-tls-cert``/``--xds-tls-key`` or with ``--xds-token-file`` (a JWT, written
into the bootstrap as ``authorization: Bearer`` metadata). A sidecar bootstrapped so gets
a workload certificate; unless ``--label security.istio.io/tlsMode=istio`` says its
WorkloadEntry carries that label, a note says callers use mutual TLS only where it does.

ProxyConfig (:mod:`pilothouse.cli.bootstrap_proxy_config`): with ``--config`` paths and
``--config-source`` addresses (ProxyConfig objects; :mod:`pilothouse.cli.bootstrap_inputs`),
``--mesh`` (``defaultConfig``, ``rootNamespace``) and ``--annotation`` (the pod's
``proxy.istio.io/config``), the proxy's effective settings are applied: ``ISTIO_META_*``
variables become node metadata, ``proxyAdminPort`` the admin port (unless
``--admin-port`` is given), and ``--envoy-args`` prints Envoy's arguments
(``--concurrency N``) instead of the bootstrap. The EnvoyFilters among the same objects
that select the proxy have their BOOTSTRAP MERGEs merged into an Envoy bootstrap
(:mod:`pilothouse.xds.builders.envoy_patch_bootstrap`), each named on standard error.
Without these flags the output is unchanged. Every file a flag names is checked before
anything is printed (:mod:`pilothouse.cli.bootstrap_files`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from pilothouse.addresses import AddressError, parse_host_port
from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTls, XdsTransport
from pilothouse.bootstrap.grpc import grpc_bootstrap
from pilothouse.cli.bootstrap_files import checked_file
from pilothouse.cli.bootstrap_inputs import (
    BootstrapInputError,
    configs_from_sources,
    configs_in_paths,
)
from pilothouse.cli.bootstrap_proxy_config import AppliedProxyConfig, read_applied
from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config
from pilothouse.environment import SettingsError, from_environment
from pilothouse.inspector.admin_address import ENVOY_ADMIN_ADDRESS
from pilothouse.push.proxy import BadNode, ProxyType, parse_node
from pilothouse.settings import AdminSettings, Settings, XdsSettings
from pilothouse.xds.builders.envoy_patch_bootstrap import (
    BootstrapPatchError,
    patched_envoy_bootstrap,
)

ADMIN_HOST = "127.0.0.1"
"""Where the bootstrapped Envoy's admin API listens."""
DEFAULT_ADMIN_PORT = 15000
"""Its port when neither ``--admin-port`` nor ``proxyAdminPort`` says (Istio's)."""
TLS_MODE_LABEL = "security.istio.io/tlsMode"
TLS_MODE_ISTIO = "istio"
TLS_MODE_NOTE = (
    "pilothouse bootstrap: note: this sidecar gets a workload certificate, and callers use"
    f" mutual TLS to it only where its WorkloadEntry is labelled {TLS_MODE_LABEL}:"
    f" {TLS_MODE_ISTIO} (as the sidecar injector labels pods); --label"
    f" {TLS_MODE_LABEL}={TLS_MODE_ISTIO} says it is"
)
"""Said when a sidecar bootstrapped over TLS is not labelled as one that speaks mTLS."""
DEFAULT_SOURCE_TIMEOUT = 10.0
"""How long a ``--config-source`` may take to sync, in seconds."""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "bootstrap",
        help="print an Envoy (or proxyless gRPC) bootstrap for a node",
        description="Print a bootstrap that connects a proxy to pilothouse.",
    )
    parser.add_argument(
        "--node", required=True, help="Istio node id: type~ip~pod.ns~ns.svc.cluster.local"
    )
    parser.add_argument(
        "--xds-address",
        metavar="HOST:PORT",
        help=f"pilothouse's xDS address (default {XdsSettings.address}; with --rest its "
        f"admin address, default {AdminSettings.address})",
    )
    parser.add_argument(
        "--admin-port",
        type=int,
        default=None,
        help=f"Envoy's admin port on 127.0.0.1 (named in metadata {ENVOY_ADMIN_ADDRESS} "
        "unless 0: chosen by the kernel; default: the ProxyConfig's proxyAdminPort, else "
        f"{DEFAULT_ADMIN_PORT})",
    )
    parser.add_argument("--cluster", default="istio-proxy", help="Envoy node.cluster")
    parser.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a workload label, in node metadata LABELS (repeatable; e.g. istio=ingressgateway"
        " for a gateway that Gateway selectors pick)",
    )
    proxy_config = parser.add_argument_group(
        "ProxyConfig and EnvoyFilter BOOTSTRAP patches (what of them the bootstrap applies)"
    )
    proxy_config.add_argument(
        "--config",
        action="append",
        default=[],
        type=Path,
        metavar="PATH",
        help="a file or directory of Istio YAML whose ProxyConfig and EnvoyFilter objects "
        "apply (repeatable)",
    )
    proxy_config.add_argument(
        "--config-source",
        action="append",
        default=[],
        metavar="ADDRESS",
        help="a config source whose ProxyConfig and EnvoyFilter objects apply, as for serve: "
        "etcd://host:port/prefix, k8s://, xds://host:port, mcp://host:port (repeatable)",
    )
    proxy_config.add_argument(
        "--config-timeout",
        type=float,
        default=DEFAULT_SOURCE_TIMEOUT,
        metavar="SECONDS",
        help=f"how long a --config-source may take to sync (default {DEFAULT_SOURCE_TIMEOUT:g})",
    )
    proxy_config.add_argument(
        "--mesh",
        type=Path,
        metavar="FILE",
        help="Istio mesh config: its defaultConfig and rootNamespace",
    )
    proxy_config.add_argument(
        "--annotation",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a pod annotation (repeatable); proxy.istio.io/config holds a ProxyConfig",
    )
    proxy_config.add_argument(
        "--envoy-args",
        action="store_true",
        help="print Envoy's command-line arguments the ProxyConfig implies (--concurrency N)"
        " instead of the bootstrap",
    )
    flavour = parser.add_mutually_exclusive_group()
    flavour.add_argument("--delta", action="store_true", help="DELTA_GRPC ADS")
    flavour.add_argument(
        "--rest", action="store_true", help="REST-JSON polling (to the admin port)"
    )
    flavour.add_argument("--grpc", action="store_true", help="grpcio proxyless bootstrap JSON")
    tls = parser.add_argument_group("TLS port (Envoy over gRPC only)")
    tls.add_argument(
        "--xds-tls-root",
        metavar="FILE",
        help="connect to the TLS port trusting this root (<ca dir>/root-cert.pem); "
        f"the default address becomes {XdsSettings.tls_address}",
    )
    tls.add_argument("--xds-tls-cert", metavar="FILE", help="client certificate chain (PEM)")
    tls.add_argument("--xds-tls-key", metavar="FILE", help="client private key (PEM)")
    tls.add_argument(
        "--xds-token-file",
        metavar="FILE",
        help="a JWT sent as 'authorization: Bearer <token>' (written into the bootstrap)",
    )
    tls.add_argument(
        "--xds-server-name",
        metavar="NAME",
        help="the name pilothouse's certificate must carry (default: the xDS host)",
    )
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        proxy = parse_node(args.node)
    except BadNode as problem:
        print(f"pilothouse bootstrap: {problem}", file=sys.stderr)
        return 2
    default_address = XdsSettings.tls_address if args.xds_tls_root else XdsSettings.address
    address = args.xds_address or (AdminSettings.address if args.rest else default_address)
    try:
        xds = parse_host_port(address, "--xds-address", dial=True)
    except AddressError as problem:
        print(f"pilothouse bootstrap: {problem}", file=sys.stderr)
        return 2
    metadata: dict[str, Any] = {"NAMESPACE": proxy.namespace}
    labels = dict(label.partition("=")[::2] for label in args.label)
    if any(not key for key in labels) or any("=" not in label for label in args.label):
        print("pilothouse bootstrap: --label must be KEY=VALUE", file=sys.stderr)
        return 2
    if labels:
        metadata["LABELS"] = labels
    annotations = dict(item.partition("=")[::2] for item in args.annotation)
    if any(not key for key in annotations) or any("=" not in a for a in args.annotation):
        print("pilothouse bootstrap: --annotation must be KEY=VALUE", file=sys.stderr)
        return 2
    try:
        configs = _configs(args)
        applied = read_applied(
            args.config, args.mesh, annotations, proxy.namespace, labels, configs=configs
        )
    except BootstrapInputError as problem:
        print(f"pilothouse bootstrap: {problem}", file=sys.stderr)
        return 2
    if args.envoy_args:
        print(" ".join(applied.envoy_args()))
        return 0
    if args.xds_tls_root and (args.grpc or args.rest):
        print("pilothouse bootstrap: --xds-tls-root is for Envoy over gRPC", file=sys.stderr)
        return 2
    if args.grpc:
        _apply_metadata(applied, metadata)
        document = grpc_bootstrap(
            node_id=args.node, server_uri=address, node_cluster=args.cluster,
            metadata=metadata,
        )  # fmt: skip
        print(json.dumps(document, indent=2))
        return 0
    transport = XdsTransport.SOTW
    if args.delta:
        transport = XdsTransport.DELTA
    elif args.rest:
        transport = XdsTransport.REST
    admin_port = args.admin_port
    if admin_port is None:
        admin_port = applied.settings.admin_port or DEFAULT_ADMIN_PORT
    if 0 < admin_port < 65536:
        metadata[ENVOY_ADMIN_ADDRESS] = f"{ADMIN_HOST}:{admin_port}"
    _apply_metadata(applied, metadata)
    try:
        xds_tls = _xds_tls(args)
        options = EnvoyBootstrapOptions(
            node_id=args.node, node_cluster=args.cluster, node_metadata=metadata,
            xds_host=xds.host, xds_port=xds.port, admin_host=ADMIN_HOST,
            admin_port=admin_port,
            transport=transport, xds_tls=xds_tls,
        )  # fmt: skip
    except (ValueError, OSError) as problem:
        print(f"pilothouse bootstrap: {problem}", file=sys.stderr)
        return 2
    mesh = MeshSettings(root_namespace=applied.root_namespace)
    try:
        patched = patched_envoy_bootstrap(options, configs, mesh)
    except (BadNode, BootstrapPatchError) as problem:
        print(f"pilothouse bootstrap: {problem}", file=sys.stderr)
        return 2
    document = patched.document
    for name in patched.applied:
        print(f"pilothouse bootstrap: EnvoyFilter {name}: merged", file=sys.stderr)
    for note in patched.skipped:
        print(f"pilothouse bootstrap: EnvoyFilter {note}", file=sys.stderr)
    unlabelled = labels.get(TLS_MODE_LABEL) != TLS_MODE_ISTIO
    if xds_tls is not None and proxy.type is ProxyType.SIDECAR and unlabelled:
        print(TLS_MODE_NOTE, file=sys.stderr)
    if applied.envoy_args():
        print(f"pilothouse bootstrap: run Envoy with {' '.join(applied.envoy_args())}"
              " (--envoy-args prints them)", file=sys.stderr)  # fmt: skip
    if args.output == "json":
        print(json.dumps(document, indent=2))
    else:
        print(yaml.safe_dump(document, sort_keys=False), end="")
    return 0


def _configs(args: argparse.Namespace) -> list[Config]:
    """The ProxyConfig and EnvoyFilter objects of ``--config`` and ``--config-source``."""
    found = configs_in_paths(args.config)
    if args.config_source:
        if not args.config_timeout > 0:
            raise BootstrapInputError("--config-timeout must be a positive number of seconds")
        try:
            settings = Settings().with_overrides(from_environment())
        except SettingsError as problem:
            raise BootstrapInputError(str(problem)) from None
        found += configs_from_sources(args.config_source, settings, args.config_timeout)
    return found


def _apply_metadata(applied: AppliedProxyConfig, metadata: dict[str, Any]) -> None:
    """``ISTIO_META_*`` variables into ``metadata``; notes on what is not applied."""
    extra, notes = applied.node_metadata(metadata)
    metadata.update(extra)
    for note in applied.notes + notes:
        print(f"pilothouse bootstrap: {note}", file=sys.stderr)


def _xds_tls(args: argparse.Namespace) -> XdsTls | None:
    """The TLS options, or None; ValueError (or OSError reading the token) otherwise."""
    given = (args.xds_tls_cert, args.xds_tls_key, args.xds_token_file, args.xds_server_name)
    if not args.xds_tls_root:
        if any(given):
            raise ValueError("--xds-tls-cert, --xds-tls-key, --xds-token-file and "
                             "--xds-server-name need --xds-tls-root")  # fmt: skip
        return None
    token = ""
    if args.xds_token_file:
        token = checked_file(args.xds_token_file, "--xds-token-file", "token").strip()
    checked_file(args.xds_tls_root, "--xds-tls-root", "certificate")
    if args.xds_tls_cert:
        checked_file(args.xds_tls_cert, "--xds-tls-cert", "certificate")
    if args.xds_tls_key:
        checked_file(args.xds_tls_key, "--xds-tls-key", "key")
    return XdsTls(
        root_file=str(Path(args.xds_tls_root).resolve()),
        cert_file=str(Path(args.xds_tls_cert).resolve()) if args.xds_tls_cert else "",
        key_file=str(Path(args.xds_tls_key).resolve()) if args.xds_tls_key else "",
        token=token,
        server_name=args.xds_server_name or "",
    )
