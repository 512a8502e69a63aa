"""Which node's set an authenticated caller may have, on the TLS port.

On the plaintext xDS port (loopback unless told otherwise, as ADS there) the node-set
service asks no identity. On the TLS port every stream is authenticated first (a client
certificate or a bearer token, the port's :class:`CallerGuard`), and then authorised by
where its caller runs: the node agent's own identity (its service account, say
``istio-system/node-agent``) must run **at every address the stream names**, as a
WorkloadEntry at that address or a Kubernetes Pod whose ``status.hostIP`` it is (a
DaemonSet's Pod on that node). So an agent gets its own node's set and no other's; the
registry, not the agent, says where it runs. A caller asking for another node's set is
refused ``PERMISSION_DENIED``, naming the address and the caller; one that cannot be
authenticated, ``UNAUTHENTICATED``. A root-namespace identity is not special here: the
rule is the node, and pilothouse replicas sync through MCP, not node sets.

The check is made when the stream names its node (its first request), as istiod checks
a proxy's identity when its stream opens.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import grpc

from pilothouse.nodesets.membership import NodeSetIndex
from pilothouse.security.identity import Caller


class CallerGuard(Protocol):
    """The TLS port's authentication, as the node-set service uses it."""

    def caller(self, context: grpc.aio.ServicerContext[Any, Any]) -> Caller:
        """The authenticated caller; raises ``Unauthenticated`` otherwise."""
        ...

    def refused(self, kind: str, context: grpc.aio.ServicerContext[Any, Any], reason: str) -> None:
        """Record a refusal (``unauthenticated``, ``permission_denied``) of the call."""
        ...


class NodeSetDenied(PermissionError):
    """The caller may not have the set it asked for; the message says why."""


def node_denial(index: NodeSetIndex, addresses: Iterable[str], caller: Caller) -> str | None:
    """Why ``caller`` may not have the set of the node at ``addresses``, or None."""
    for address in sorted(addresses):
        if not any(
            index.runs_at(address, identity.namespace, identity.service_account)
            for identity in caller.identities
        ):
            names = ", ".join(str(identity) for identity in caller.identities)
            return (
                f"the node set of {address} is for a node agent running there; the caller "
                f"({names}) runs as no workload at {address}"
            )
    return None
