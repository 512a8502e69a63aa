"""What a WorkloadGroup's template makes of one workload outside Kubernetes: its
WorkloadEntry, its node id and the ``pilothouse agent`` command line that runs its
sidecar (``pilothouse workload entry configure`` writes them; no I/O here).

The entry is the group's template with the workload's address, named as istiod names an
auto-registered entry (``<group>-<address>``, here with every ``.`` and ``:`` written
``-`` so that the name is one DNS label and the node id's ``<name>.<namespace>`` stays
unambiguous). Its labels are the template's (the group's ``metadata.labels`` under the
template's own, as istiod merges them) plus ``security.istio.io/tlsMode: istio`` unless the
template sets that label: the workload runs behind a sidecar that speaks mutual TLS, and
this label is what makes its callers' clusters use it (what the sidecar injector puts on
a pod). The agent is given the same labels (``--label``), so the policies that select
the workload select its sidecar too, and the group's annotations (``--annotation``:
``proxy.istio.io/config`` applies as on a pod).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from google.protobuf import json_format

from pilothouse.api.istio.networking.v1alpha3 import workload_group_pb2
from pilothouse.config.model import Config
from pilothouse.kinds.workload_entry import KIND as WORKLOAD_ENTRY

TLS_MODE_LABEL: Final = "security.istio.io/tlsMode"
DEFAULT_TRUST_DOMAIN: Final = "cluster.local"
TOKEN_FILE: Final = "istio-token"
ROOT_FILE: Final = "root-cert.pem"
ENTRY_FILE: Final = "workloadentry.yaml"
AGENT_FILE: Final = "agent.sh"
SDS_SOCKET: Final = "sds"
XDS_SOCKET: Final = "XDS"
BOOTSTRAP_FILE: Final = "envoy.json"


@dataclass(frozen=True)
class AgentPorts:
    """Where the agent listens and dials: two agents on one machine need their own.
    (No ``__slots__``, so that the defaults stay readable as class attributes.)"""

    admin: int = 15000
    status: int = 15020
    xds_addresses: tuple[str, ...] = ("127.0.0.1:15012",)


@dataclass(frozen=True, slots=True)
class Workload:
    """One workload of a group: the group's template and what this workload adds."""

    group: str
    namespace: str
    address: str
    service_account: str
    template: Mapping[str, Any]
    """The template's proto3 JSON (camelCase, as written in YAML), without ``address``."""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    trust_domain: str = DEFAULT_TRUST_DOMAIN

    @classmethod
    def of_group(
        cls,
        group: Config,
        address: str,
        service_account: str = "",
        trust_domain: str = DEFAULT_TRUST_DOMAIN,
    ) -> Workload:
        """The workload at ``address`` of ``group`` (a WorkloadGroup Config); a
        ``service_account`` given here overrides the template's."""
        spec = group.spec
        if not isinstance(spec, workload_group_pb2.WorkloadGroup):
            raise TypeError(f"{group.kind} {group.namespace}/{group.name} is no WorkloadGroup")
        template = json_format.MessageToDict(spec.template)
        template.pop("address", None)
        labels = {**spec.metadata.labels, **spec.template.labels}
        labels.setdefault(TLS_MODE_LABEL, "istio")
        account = service_account or spec.template.service_account or "default"
        return cls(
            group=group.name,
            namespace=group.namespace,
            address=address,
            service_account=account,
            template=template,
            labels=dict(sorted(labels.items())),
            annotations=dict(sorted(spec.metadata.annotations.items())),
            trust_domain=trust_domain,
        )

    @property
    def entry_name(self) -> str:
        return f"{self.group}-{self.address.replace('.', '-').replace(':', '-')}"

    @property
    def node_id(self) -> str:
        return (
            f"sidecar~{self.address}~{self.entry_name}.{self.namespace}"
            f"~{self.namespace}.svc.cluster.local"
        )

    @property
    def identity(self) -> str:
        return f"spiffe://{self.trust_domain}/ns/{self.namespace}/sa/{self.service_account}"

    def entry(self) -> dict[str, Any]:
        """The WorkloadEntry manifest this workload will have."""
        spec: dict[str, Any] = {"address": self.address}
        spec.update((k, v) for k, v in self.template.items() if k != "labels")
        spec["labels"] = dict(self.labels)
        spec["serviceAccount"] = self.service_account
        return {
            "apiVersion": "networking.istio.io/v1",
            "kind": WORKLOAD_ENTRY.name,
            "metadata": {"name": self.entry_name, "namespace": self.namespace},
            "spec": spec,
        }

    def agent_command(self, directory: Path, ports: AgentPorts) -> list[list[str]]:
        """``pilothouse agent …`` for this workload, its files and sockets in
        ``directory`` (as written: relative stays relative), as lines of words: the
        node, the identity, the labels, the sockets, the ports."""
        identity = ["--service-account", self.service_account]
        if self.trust_domain != DEFAULT_TRUST_DOMAIN:
            identity += ["--trust-domain", self.trust_domain]
        identity += ["--token", str(directory / TOKEN_FILE)]
        identity += ["--root-cert", str(directory / ROOT_FILE)]
        labels = [w for k, v in self.labels.items() for w in ("--label", f"{k}={v}")]
        labels += [w for k, v in self.annotations.items() for w in ("--annotation", f"{k}={v}")]
        sockets = ["--sds-socket", str(directory / SDS_SOCKET)]
        sockets += ["--xds-socket", str(directory / XDS_SOCKET)]
        sockets += ["--bootstrap", str(directory / BOOTSTRAP_FILE)]
        dialled = [w for address in ports.xds_addresses for w in ("--xds-address", address)]
        ports_line = ["--admin-port", str(ports.admin), "--status-port", str(ports.status)]
        lines = [["pilothouse", "agent", "--node", self.node_id], identity, labels, sockets]
        return [line for line in (*lines, ports_line + dialled) if line]


def command_line(lines: Sequence[Sequence[str]]) -> str:
    """Lines of words as one shell command, each line but the first continued."""
    return " \\\n  ".join(" ".join(shlex.quote(w) for w in line) for line in lines)
