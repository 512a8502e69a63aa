"""Node mode: one agent serving several workloads of a node (the seed's Citadel Agent).

Each workload in the agent's config has its identity, its token, the uids its processes
run as, and its own SDS and xDS sockets. Behind the sockets each workload is a
:class:`~pilothouse.agent.sidecar_agent.SidecarAgent` of its own (its own key,
certificate and upstream connection, so pilothouse authorises each workload's stream
as that workload) on private sockets in a directory only the agent can enter; the
public sockets are :class:`~pilothouse.agent.peer_gate.PeerGate` s that let through only
callers whose peer uid the config gives that workload. A workload can therefore never
obtain another's certificate, not even by connecting to the other's socket.

Config (YAML)::

    xdsAddresses: [127.0.0.1:15012]
    rootCert: /var/run/secrets/istio/root-cert.pem
    trustDomain: cluster.local            # optional
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

from pilothouse.agent.peer_gate import PeerGate
from pilothouse.agent.remote_authority import CaEndpoint
from pilothouse.agent.sidecar_agent import AgentOptions, SidecarAgent
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
class NodeConfig:
    xds_addresses: tuple[str, ...]
    root_cert: Path
    workloads: tuple[NodeWorkload, ...]
    server_name: str = ""


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
    return NodeConfig(tuple(addresses), Path(root), workloads, str(document.get("serverName", "")))


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
    ) -> None:
        self.config = config
        self.private_dir = private_dir
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
                for agent in self.workloads.values():
                    await agent.serving.wait()
                for gate in self.gates:
                    await gate.start()
                log.info("node agent serving", extra={"workloads": ",".join(self.workloads)})
                self.serving.set()
                await self._stop.wait()
                for agent in self.workloads.values():
                    agent.close()
        finally:
            for gate in self.gates:
                await gate.close()

    def close(self) -> None:
        self._stop.set()
