"""AuthorizationPolicy and RequestAuthentication: which apply to a workload.

istiod's selection, for both kinds:

- a policy without a selector (or with empty ``matchLabels``) applies to every workload
  of its namespace, and in the mesh's root namespace to every workload of the mesh;
- a policy with a selector applies to the workloads of its namespace whose labels match,
  and in the root namespace to the matching workloads of every namespace;
- a policy with ``targetRef``/``targetRefs`` applies to what it targets (Kubernetes
  Gateways, Services): pilothouse has none of those, so such a policy selects no
  workload.

:class:`WorkloadAuthorization` is what one workload's listeners are built from: the
policies that apply (each as a :class:`~pilothouse.push.inputs.ConfigRevision`, so the
value names them as cache dependencies and compares by revision) and the JSON Web Key
Sets fetched for its JWT rules. It is a cache input of the inbound and gateway listeners.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds import authorization_policy, request_authentication
from pilothouse.push.inputs import ConfigRevision
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.registry.model import Labels

AUTHORIZATION_POLICY = authorization_policy.KIND.name
REQUEST_AUTHENTICATION = request_authentication.KIND.name

JwksLookup = Callable[[str], str | None]
"""The key set last fetched from a ``jwksUri``, or None while there is none."""


@dataclass(frozen=True, slots=True)
class WorkloadAuthorization:
    """The access-control inputs of one workload's listeners."""

    policies: tuple[ConfigRevision, ...] = ()
    """AuthorizationPolicies that apply, by namespace then name."""
    authentications: tuple[ConfigRevision, ...] = ()
    """RequestAuthentications that apply, by namespace then name."""
    jwks: tuple[tuple[str, str], ...] = ()
    """(jwksUri, key set) for every URI those name that has been fetched."""

    @property
    def empty(self) -> bool:
        return not self.policies and not self.authentications

    def key_set(self, uri: str) -> str | None:
        for known, text in self.jwks:
            if known == uri:
                return text
        return None


NO_AUTHORIZATION = WorkloadAuthorization()


class AuthorizationIndex:
    """The AuthorizationPolicies and RequestAuthentications of the mesh, by namespace."""

    def __init__(
        self,
        policies: Iterable[Config],
        authentications: Iterable[Config],
        mesh: MeshSettings,
        jwks: JwksLookup | None = None,
    ) -> None:
        self._root = mesh.root_namespace
        self._jwks = jwks or _no_jwks
        self._policies = _by_namespace(policies)
        self._authentications = _by_namespace(authentications)
        self.by_key: Mapping[ConfigKey, Config] = {
            c.key: c
            for found in (*self._policies.values(), *self._authentications.values())
            for c in found
        }
        self._memo: dict[tuple[str, Labels], WorkloadAuthorization] = {}

    def jwks_uris(self) -> frozenset[str]:
        """Every ``jwksUri`` the RequestAuthentications name."""
        return frozenset(
            uri for found in self._authentications.values() for c in found for uri in _uris(c)
        )

    def for_workload(self, namespace: str, labels: Labels) -> WorkloadAuthorization:
        """The policies that apply to a workload of ``namespace`` with ``labels``."""
        key = (namespace, labels)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self._select(namespace, labels)
        return found

    def _select(self, namespace: str, labels: Labels) -> WorkloadAuthorization:
        policies = self._pick(self._policies, namespace, labels)
        authentications = self._pick(self._authentications, namespace, labels)
        if not policies and not authentications:
            return NO_AUTHORIZATION
        uris = sorted({uri for c in authentications for uri in _uris(c)})
        jwks = tuple((uri, text) for uri in uris if (text := self._jwks(uri)) is not None)
        return WorkloadAuthorization(
            tuple(_revision(c) for c in policies),
            tuple(_revision(c) for c in authentications),
            jwks,
        )

    def _pick(
        self, table: Mapping[str, list[Config]], namespace: str, labels: Labels
    ) -> list[Config]:
        spaces = (self._root,) if namespace == self._root else (self._root, namespace)
        return [c for space in spaces for c in table.get(space, ()) if applies_to(c, labels)]

    def selects(self, key: ConfigKey, proxy: ProxyIdentity) -> bool:
        """Whether the policy ``key`` (if this index holds it) applies to ``proxy``'s
        workload (what :mod:`pilothouse.push.selected_workloads` asks of it)."""
        return selects(self.by_key.get(key), self._root, proxy.namespace, proxy.labels)


def applies_to(config: Config, labels: Labels) -> bool:
    """Whether a policy (of the workload's namespace or the root) applies to ``labels``."""
    spec: Any = config.spec
    if spec.HasField("targetRef") or len(spec.targetRefs):
        return False
    selector = dict(spec.selector.match_labels) if spec.HasField("selector") else {}
    return not selector or labels.matches(selector)


def selects(config: Config | None, root: str, namespace: str, labels: Labels) -> bool:
    """Whether ``config`` (a policy, or None) applies to a workload of ``namespace``."""
    if config is None or config.namespace not in (namespace, root):
        return False
    return applies_to(config, labels)


def _by_namespace(configs: Iterable[Config]) -> dict[str, list[Config]]:
    found: dict[str, list[Config]] = {}
    for config in configs:
        found.setdefault(config.namespace, []).append(config)
    for listed in found.values():
        listed.sort(key=lambda c: c.name)
    return found


def _uris(config: Config) -> Iterable[str]:
    spec: Any = config.spec
    return (rule.jwks_uri for rule in spec.jwt_rules if rule.jwks_uri and not rule.jwks)


def _revision(config: Config) -> ConfigRevision:
    made = ConfigRevision.of(config)
    assert made is not None
    return made


def _no_jwks(_uri: str) -> str | None:
    return None
