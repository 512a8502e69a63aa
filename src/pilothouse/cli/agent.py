"""`pilothouse agent`: the node agent for one workload (istio-agent's job).

It makes the workload's private key on this node, sends only a CSR to pilothouse's
certificate service (proving the workload with ``--token`` or, for renewals, its
current certificate), serves SDS (``default``, ``ROOTCA``) on ``--sds-socket`` and
proxies Envoy's ADS stream on ``--xds-socket`` to pilothouse's TLS port over one
connection authenticated with the workload certificate (failing over between the
``--xds-address`` replicas). Unless ``--no-envoy``, it writes Envoy's bootstrap
(``--bootstrap``) pointing at those sockets, starts Envoy with istio-agent's flags
(``--concurrency`` from the effective ProxyConfig), serves ``/healthz/ready`` on
``--status-port`` and drains Envoy on SIGTERM. The identity is
``spiffe://<trust domain>/ns/<namespace>/sa/<service account>`` from the node id's
namespace and ``--service-account``.

Node mode (``--workloads FILE``, :mod:`pilothouse.agent.node_agent`): one agent for
several workloads of a node, each with its own sockets, a caller admitted only when its
peer uid is one the file gives that workload. With ``nodeIP`` in the file (or
``--node-ip``) it keeps its node's minimal set from pilothouse and shows it on
``/debug/nodez`` of ``--status-port``.

Before anything else it waits for its root file to exist and parse, at most
``--root-cert-timeout`` seconds (:mod:`pilothouse.agent.root_cert`).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

from pilothouse.addresses import AddressError, parse_host_port
from pilothouse.agent.envoy_bootstrap import agent_bootstrap
from pilothouse.agent.envoy_process import EnvoyCommand, EnvoyProcess
from pilothouse.agent.node_agent import NodeAgent, read_node_config
from pilothouse.agent.remote_authority import CaEndpoint
from pilothouse.agent.root_cert import TIMEOUT as ROOT_TIMEOUT
from pilothouse.agent.root_cert import RootCertUnusable, wait_for_root
from pilothouse.agent.sidecar_agent import AgentOptions, SidecarAgent
from pilothouse.agent.status import StatusServer
from pilothouse.bootstrap.envoy import EnvoyBootstrapOptions, XdsTransport
from pilothouse.cli.bootstrap_proxy_config import ProxyConfigInputError, read_applied
from pilothouse.inspector.admin_address import ENVOY_ADMIN_ADDRESS
from pilothouse.push.proxy import BadNode, parse_node
from pilothouse.security.identity import SpiffeId
from pilothouse.security.workload_keys import KeyAlgorithm

log = logging.getLogger("pilothouse.agent")

TOKEN = "./var/run/secrets/tokens/istio-token"
ROOT = "./var/run/secrets/istio/root-cert.pem"
SDS_SOCKET = "./var/run/secrets/workload-spiffe-uds/socket"
XDS_SOCKET = "./etc/istio/proxy/XDS"
BOOTSTRAP = "./etc/istio/proxy/envoy-rev.json"
STATE_DIR = "./var/run/pilothouse-agent"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "agent",
        help="run the node agent: local key, SDS and xDS over Unix sockets, Envoy",
        description="Run the node agent for one workload (istio-agent's role).",
    )
    parser.add_argument(
        "--node", help="Istio node id: type~ip~pod.ns~ns.svc.cluster.local (one workload)"
    )
    parser.add_argument(
        "--workloads",
        type=Path,
        metavar="FILE",
        help="node mode: serve every workload of this YAML file, each on its own sockets, "
        "callers told apart by their peer uid (instead of --node; no Envoy is started)",
    )
    parser.add_argument(
        "--node-ip",
        default="",
        metavar="IP[,IP…]",
        help="node mode: this node's addresses (overrides the file's nodeIP); the agent "
        "keeps the node's set from pilothouse and shows it on /debug/nodez",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(STATE_DIR),
        help=f"node mode: the agent's private sockets (default {STATE_DIR})",
    )
    parser.add_argument("--service-account", default="default", help="the workload's account")
    parser.add_argument("--trust-domain", default="cluster.local")
    parser.add_argument(
        "--xds-address",
        action="append",
        default=[],
        metavar="HOST:PORT",
        help="pilothouse's TLS xDS port (repeatable: replicas, tried in turn; default "
        "127.0.0.1:15012)",
    )
    parser.add_argument(
        "--ca-address", metavar="HOST:PORT", help="the CSR service (default: the first xDS one)"
    )
    parser.add_argument("--root-cert", default=ROOT, help=f"pilothouse's root (default {ROOT})")
    parser.add_argument(
        "--root-cert-timeout",
        type=float,
        default=ROOT_TIMEOUT,
        metavar="SECONDS",
        help="at start, wait this long for the root file (--root-cert, or the --workloads "
        f"file's rootCert) to exist and parse, then exit 1 (default {ROOT_TIMEOUT:g}; 0: "
        "wait forever)",
    )
    parser.add_argument("--token", default=TOKEN, help=f"a JWT file, read per CSR ({TOKEN})")
    parser.add_argument("--server-name", default="", help="name pilothouse's cert must carry")
    parser.add_argument("--sds-socket", default=SDS_SOCKET, type=Path)
    parser.add_argument("--xds-socket", default=XDS_SOCKET, type=Path)
    parser.add_argument("--cert-ttl", type=float, default=86400.0, help="SECRET_TTL, seconds")
    parser.add_argument("--grace-ratio", type=float, default=0.5, help="rotate at this life left")
    parser.add_argument("--key", choices=[k.value for k in KeyAlgorithm], default="rsa")
    envoy = parser.add_argument_group("Envoy")
    envoy.add_argument("--no-envoy", action="store_true", help="serve the sockets only")
    envoy.add_argument("--envoy-binary", default="", help="Envoy (default: envoy on PATH)")
    envoy.add_argument("--bootstrap", default=BOOTSTRAP, type=Path, help="where it is written")
    envoy.add_argument("--admin-port", type=int, default=15000, help="Envoy's admin port")
    envoy.add_argument("--status-port", type=int, default=15020, help="/healthz/ready port")
    envoy.add_argument("--drain-duration", type=float, default=45.0, help="--drain-time-s")
    envoy.add_argument(
        "--termination-drain-duration", type=float, default=5.0, help="drain on SIGTERM, s"
    )
    envoy.add_argument("--label", action="append", default=[], metavar="KEY=VALUE")
    envoy.add_argument("--config", action="append", default=[], type=Path, metavar="PATH",
                       help="Istio YAML whose ProxyConfig objects apply (repeatable)")  # fmt: skip
    envoy.add_argument("--mesh", type=Path, metavar="FILE", help="mesh config (defaultConfig)")
    envoy.add_argument("--annotation", action="append", default=[], metavar="KEY=VALUE")
    envoy.add_argument("--log-level", default="", help="Envoy's -l")
    envoy.add_argument(
        "--xds-transport",
        choices=("delta", "sotw"),
        default="delta",
        help="Envoy's ADS to the agent: delta (Istio's default) or sotw",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        if args.root_cert_timeout < 0:
            raise ValueError("--root-cert-timeout must be 0 (wait forever) or more seconds")
        agent = build_node(args) if args.workloads else build(args)
    except (ValueError, OSError, AddressError, BadNode, ProxyConfigInputError) as problem:
        print(f"pilothouse agent: {problem}", file=sys.stderr)
        return 2
    return asyncio.run(_serve(agent, args.root_cert_timeout))


def build_node(args: argparse.Namespace) -> NodeAgent:
    """Node mode: the agent for every workload of ``--workloads``."""
    if args.node:
        raise ValueError("give --node (one workload) or --workloads (node mode), not both")
    path: Path = args.workloads
    config = read_node_config(path.read_text(encoding="utf-8"), str(path))
    for address in config.xds_addresses:
        parse_host_port(address, "xdsAddresses", dial=True)
    if args.node_ip:
        ips = tuple(ip.strip() for ip in args.node_ip.split(",") if ip.strip())
        config = dataclasses.replace(config, node_ips=ips)
        if not config.node_set_address:
            raise ValueError(
                "--node-ip needs nodeIdentity (the TLS port) or nodeSetAddress (the "
                "plaintext port) in the --workloads file"
            )
    for address in config.node_set_addresses:
        parse_host_port(address, "nodeSetAddress", dial=True)
    status = StatusServer("127.0.0.1", args.status_port) if config.node_ips else None
    return NodeAgent(
        config,
        args.state_dir.absolute(),
        ttl=args.cert_ttl,
        key=KeyAlgorithm(args.key),
        status=status,
    )


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    if any("=" not in item or not item.partition("=")[0] for item in items):
        raise ValueError(f"{flag} must be KEY=VALUE")
    return dict(item.partition("=")[::2] for item in items)


def build(args: argparse.Namespace) -> SidecarAgent:
    """The agent the flags describe (no I/O but reading the ProxyConfig inputs)."""
    if not args.node:
        raise ValueError("--node is required (or --workloads for node mode)")
    proxy = parse_node(args.node)
    identity = SpiffeId(args.trust_domain, proxy.namespace, args.service_account)
    addresses = args.xds_address or ["127.0.0.1:15012"]
    for address in addresses:
        parse_host_port(address, "--xds-address", dial=True)
    ca_address = args.ca_address or addresses[0]
    parse_host_port(ca_address, "--ca-address", dial=True)
    token = Path(args.token) if args.token else None
    endpoint = CaEndpoint(ca_address, Path(args.root_cert), token, args.server_name)
    options = AgentOptions(
        identity=identity,
        xds_addresses=tuple(addresses),
        ca=endpoint,
        sds_socket=args.sds_socket.absolute(),
        xds_socket=args.xds_socket.absolute(),
        ttl=args.cert_ttl,
        grace_ratio=args.grace_ratio,
        key=KeyAlgorithm(args.key),
    )
    if args.no_envoy:
        return SidecarAgent(options)
    labels = _pairs(args.label, "--label")
    annotations = _pairs(args.annotation, "--annotation")
    applied = read_applied(args.config, args.mesh, annotations, proxy.namespace, labels)
    metadata: dict[str, Any] = {
        "NAMESPACE": proxy.namespace,
        "SERVICE_ACCOUNT": args.service_account,
        ENVOY_ADMIN_ADDRESS: f"127.0.0.1:{args.admin_port}",
    }
    if labels:
        metadata["LABELS"] = labels
    extra, notes = applied.node_metadata(metadata)
    metadata.update(extra)
    for note in applied.notes + notes:
        log.info(note)
    bootstrap = agent_bootstrap(
        EnvoyBootstrapOptions(
            node_id=args.node,
            node_metadata=metadata,
            admin_port=args.admin_port,
            transport=XdsTransport(args.xds_transport),
        ),
        options.xds_socket,
        options.sds_socket,
    )
    binary = args.envoy_binary or shutil.which("envoy") or "envoy"
    command = EnvoyCommand(
        binary=binary,
        bootstrap_path=args.bootstrap.absolute(),
        admin_port=args.admin_port,
        drain_duration=args.drain_duration,
        termination_drain_duration=args.termination_drain_duration,
        concurrency=applied.settings.concurrency,
        log_level=args.log_level,
    )
    status = StatusServer("127.0.0.1", args.status_port)
    return SidecarAgent(options, envoy=EnvoyProcess(command, bootstrap), status=status)


async def _serve(agent: SidecarAgent | NodeAgent, root_timeout: float) -> int:
    loop = asyncio.get_running_loop()
    root = agent.config.root_cert if isinstance(agent, NodeAgent) else agent.options.ca.root_file
    waiting = asyncio.ensure_future(wait_for_root(root, root_timeout))
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, waiting.cancel)
    try:
        await waiting
    except asyncio.CancelledError:
        return 0  # stopped while waiting
    except RootCertUnusable as problem:
        print(f"pilothouse agent: {problem}", file=sys.stderr)
        return 1
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, agent.close)
    await agent.run()
    if isinstance(agent, SidecarAgent) and agent.envoy_exit is not None:
        print(f"pilothouse agent: Envoy exited with status {agent.envoy_exit}", file=sys.stderr)
        return 1
    return 0
