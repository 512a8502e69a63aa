"""Node mode: one agent serving several workloads of a node (the seed's Citadel Agent).

Each workload in the agent's config has its identity, its token, the uids its processes
run as, and its own SDS and xDS sockets. Behind the sockets each workload is a
:class:`~pilothouse.agent.sidecar_agent.SidecarAgent` of its own (its own key,
certificate and upstream connection, so pilothouse authorises each workload's stream
as that workload) on private sockets in a directory only the agent can enter; the
public sockets are :class:`~pilothouse.agent.peer_gate.PeerGate` s that let through only
callers whose peer uid the config gives that workload. A workload can therefore never
obtain another's certificate, not even by connecting to the other's socket.

With ``nodeIP`` (one address or several, comma-separated; ``--node-ip`` overrides it) the
agent also keeps its node's minimal set from pilothouse
(:class:`~pilothouse.agent.node_set.NodeSetClient`: the WorkloadEntries and Kubernetes
Pods at the node's addresses, the Services and policies selecting them, by delta
MCP-over-xDS, pushed only when a change concerns this node) and shows it on
``/debug/nodez`` of its status port. With ``nodeIdentity`` (the agent's own service
account and its token) the set comes over pilothouse's TLS port (``nodeSetAddress``,
by default the first of ``xdsAddresses``), and pilothouse gives it only the set of the
node that identity runs on (a WorkloadEntry or Pod of that account at the node's
address: the agent's own). Without it, ``nodeSetAddress`` is pilothouse's plaintext xDS
port (loopback).

Config (YAML)::

    xdsAddresses: [127.0.0.1:15012]
    rootCert: /var/run/secrets/istio/root-cert.pem
    trustDomain: cluster.local            # optional
    nodeIP: 10.0.0.7                      # optional: keep this node's set (below)
    nodeIdentity:                         # the agent's own identity, for its node's set
      namespace: istio-system
      serviceAccount: node-agent
      token: /var/run/agent/istio-token
    nodeSetAddress: 127.0.0.1:15012       # optional: default the first xdsAddress (TLS);
                                          # without nodeIdentity, the plaintext port
    workloads:
    - name: reviews
      namespace: shop
      serviceAccount: reviews
      uids: [1001]
      token: /var/run/agent/reviews/istio-token
      sdsSocket: /var/run/agent/reviews/sds
      xdsSocket: /var/run/agent/reviews/XDS
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pilothouse.agent.node_set import NodeSetClient
from pilothouse.agent.peer_gate import PeerGate
from pilothouse.agent.remote_authority import CaEndpoint
from pilothouse.agent.sidecar_agent import AgentOptions, SidecarAgent
from pilothouse.agent.status import StatusServer
from pilothouse.security.identity import SpiffeId
from pilothouse.security.workload_keys import KeyAlgorithm

log = logging.getLogger("pilothouse.agent.node")


class NodeConfigError(ValueError):
    """The node agent's config cannot be used; says where."""


@dataclass(frozen=True, slots=True)
class NodeWorkload:
    name: str
    identity: SpiffeId
    uids: frozenset[int]
    token: Path
    sds_socket: Path
    xds_socket: Path


@dataclass(frozen=True, slots=True)
class NodeIdentity:
    """The agent's own identity: how it proves, on the TLS port, which node it runs on."""

    identity: SpiffeId
    token: Path


@dataclass(frozen=True, slots=True)
class NodeConfig:
    xds_addresses: tuple[str, ...]
    root_cert: Path
    workloads: tuple[NodeWorkload, ...]
    server_name: str = ""
    node_ips: tuple[str, ...] = ()
    node_set_addresses: tuple[str, ...] = ()
    """Where the node set is served, tried in turn when one fails (empty: no node set)."""
    node_identity: NodeIdentity | None = None
    """Set: the node set comes over TLS from ``node_set_addresses``, proved with its token."""

    @property
    def node_set_address(self) -> str:
        """The first of ``node_set_addresses`` ("" when there is none)."""
        return self.node_set_addresses[0] if self.node_set_addresses else ""


def read_node_config(text: str, origin: str) -> NodeConfig:
    """The config in ``text``; NodeConfigError naming the field otherwise."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as problem:
        raise NodeConfigError(f"{origin}: not YAML: {problem}") from None
    if not isinstance(document, Mapping):
        raise NodeConfigError(f"{origin}: expected a mapping")
    addresses = document.get("xdsAddresses") or ["127.0.0.1:15012"]
    root = document.get("rootCert")
    entries = document.get("workloads")
    if not isinstance(addresses, list) or not all(isinstance(a, str) for a in addresses):
        raise NodeConfigError(f"{origin}: xdsAddresses must be a list of host:port")
    if not isinstance(root, str) or not root:
        raise NodeConfigError(f"{origin}: rootCert is required")
    if not isinstance(entries, list) or not entries:
        raise NodeConfigError(f"{origin}: workloads must list at least one workload")
    domain = str(document.get("trustDomain") or "cluster.local")
    workloads = tuple(_workload(entry, f"{origin}: workloads[{i}]", domain)
                      for i, entry in enumerate(entries))  # fmt: skip
    names = [w.name for w in workloads]
    if len(set(names)) != len(names):
        raise NodeConfigError(f"{origin}: workload names must be unique")
    owners: dict[int, str] = {}
    for workload in workloads:
        for uid in workload.uids:
            if uid in owners:
                raise NodeConfigError(
                    f"{origin}: uid {uid} is given to {owners[uid]} and {workload.name}: a "
                    "caller must map to one identity"
                )
            owners[uid] = workload.name
    node_ips = _node_ips(document.get("nodeIP"), f"{origin}: nodeIP")
    node_identity = _node_identity(document.get("nodeIdentity"), f"{origin}: nodeIdentity", domain)
    node_set_addresses = document.get("nodeSetAddress") or []
    if isinstance(node_set_addresses, str):
        node_set_addresses = [node_set_addresses]
    if not isinstance(node_set_addresses, list) or not all(
        isinstance(a, str) and a for a in node_set_addresses
    ):
        raise NodeConfigError(f"{origin}: nodeSetAddress must be host:port or a list of them")
    if node_identity is not None and not node_set_addresses:
        node_set_addresses = addresses  # the TLS ports, tried in turn as the xDS upstream does
    if node_ips and not node_set_addresses:
        raise NodeConfigError(
            f"{origin}: nodeIP needs nodeIdentity (the node set over the TLS port) or "
            "nodeSetAddress (pilothouse's plaintext xDS port)"
        )
    return NodeConfig(
        tuple(addresses),
        Path(root),
        workloads,
        str(document.get("serverName", "")),
        node_ips,
        tuple(node_set_addresses),
        node_identity,
    )


def _node_identity(entry: Any, where: str, domain: str) -> NodeIdentity | None:
    if entry is None:
        return None
    if not isinstance(entry, Mapping):
        raise NodeConfigError(f"{where}: expected a mapping (namespace, serviceAccount, token)")
    fields = {}
    for key in ("namespace", "serviceAccount", "token"):
        value = entry.get(key)
        if not isinstance(value, str) or not value:
            raise NodeConfigError(f"{where}.{key}: required (a string)")
        fields[key] = value
    identity = SpiffeId(domain, fields["namespace"], fields["serviceAccount"])
    return NodeIdentity(identity, Path(fields["token"]))


def _node_ips(value: Any, where: str) -> tuple[str, ...]:
    """``nodeIP``: one address, several comma-separated, or a list; () when absent."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise NodeConfigError(f"{where}: an address, or a list of addresses")
    return tuple(v.strip() for v in value)


def _workload(entry: Any, where: str, domain: str) -> NodeWorkload:
    if not isinstance(entry, Mapping):
        raise NodeConfigError(f"{where}: expected a mapping")
    fields = {}
    for key in ("name", "namespace", "serviceAccount", "token", "sdsSocket", "xdsSocket"):
        value = entry.get(key)
        if not isinstance(value, str) or not value:
            raise NodeConfigError(f"{where}.{key}: required (a string)")
        fields[key] = value
    uids = entry.get("uids")
    if not isinstance(uids, list) or not uids or not all(type(u) is int and u >= 0 for u in uids):
        raise NodeConfigError(f"{where}.uids: a list of user ids is required")
    return NodeWorkload(
        name=fields["name"],
        identity=SpiffeId(domain, fields["namespace"], fields["serviceAccount"]),
        uids=frozenset(uids),
        token=Path(fields["token"]),
        sds_socket=Path(fields["sdsSocket"]),
        xds_socket=Path(fields["xdsSocket"]),
    )


class NodeAgent:
    """Every workload of the node, each behind its gates."""

    def __init__(
        self,
        config: NodeConfig,
        private_dir: Path,
        *,
        ttl: float = 86400.0,
        key: KeyAlgorithm = KeyAlgorithm.RSA,
        status: StatusServer | None = None,
    ) -> None:
        self.config = config
        self.private_dir = private_dir
        self.status = status
        self.node_set: NodeSetClient | None = None
        if config.node_ips:
            endpoint = None
            if config.node_identity is not None:
                endpoint = CaEndpoint(
                    config.node_set_address,
                    config.root_cert,
                    config.node_identity.token,
                    config.server_name,
                )
            self.node_set = NodeSetClient(
                config.node_set_addresses, config.node_ips, endpoint=endpoint
            )
            if status is not None:
                status.views["/debug/nodez"] = self.nodez
        self.workloads: dict[str, SidecarAgent] = {}
        self.gates: list[PeerGate] = []
        for workload in config.workloads:
            home = private_dir / workload.name
            options = AgentOptions(
                identity=workload.identity,
                xds_addresses=config.xds_addresses,
                ca=CaEndpoint(
                    config.xds_addresses[0], config.root_cert, workload.token, config.server_name
                ),
                sds_socket=home / "sds",
                xds_socket=home / "xds",
                ttl=ttl,
                key=key,
            )
            self.workloads[workload.name] = SidecarAgent(options)
            for public, private in ((workload.sds_socket, options.sds_socket),
                                    (workload.xds_socket, options.xds_socket)):  # fmt: skip
                self.gates.append(PeerGate(workload.name, public, private, workload.uids))
        self._stop = asyncio.Event()
        self.serving = asyncio.Event()

    async def run(self) -> None:
        self.private_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.private_dir, 0o700)
        try:
            async with asyncio.TaskGroup() as tasks:
                for agent in self.workloads.values():
                    tasks.create_task(agent.run())
                if self.node_set is not None:
                    tasks.create_task(self.node_set.run())
                if self.status is not None:
                    await self.status.start()
                for agent in self.workloads.values():
                    await agent.serving.wait()
                for gate in self.gates:
                    await gate.start()
                log.info("node agent serving", extra={"workloads": ",".join(self.workloads)})
                self.serving.set()
                await self._stop.wait()
                for agent in self.workloads.values():
                    agent.close()
                if self.node_set is not None:
                    self.node_set.close()
        finally:
            for gate in self.gates:
                await gate.close()
            if self.status is not None:
                await self.status.close()

    def nodez(self) -> dict[str, Any]:
        """``/debug/nodez``: the node's set, and for each workload of this agent's config
        the WorkloadEntries and Pods of the set that are it (same namespace and service
        account): an empty list is a workload pilothouse does not place on this node."""
        assert self.node_set is not None
        view = self.node_set.view()
        entries = self.node_set.workloads()
        view["managed"] = {
            workload.name: sorted(
                f"{entry.namespace}/{entry.name}"
                for entry in entries
                if entry.namespace == workload.identity.namespace
                and self.node_set.service_account(entry) == workload.identity.service_account
            )
            for workload in self.config.workloads
        }
        return view

    def close(self) -> None:
        self._stop.set()
