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

Which policies apply to a workload is a value in the resource cache, under
:class:`AuthorizationInputs`: the workload's labels and the :class:`CandidatePolicies` of
its namespace (every policy of the namespace and of the root, by revision). The index
only groups the candidates by namespace; a selection outlives the PushContext it was
first made for, and an edit evicts the selections of the policies it changes. The key
sets are not part of it: they are looked up for each workload, as the last fetch left
them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pilothouse.config.mesh import MeshSettings
from pilothouse.config.model import Config, ConfigKey
from pilothouse.kinds import authorization_policy, request_authentication
from pilothouse.push.cache import ResourceCache
from pilothouse.push.inputs import ConfigRevision, FrozenInputs
from pilothouse.push.proxy import ProxyIdentity
from pilothouse.registry.model import Labels

AUTHORIZATION_POLICY = authorization_policy.KIND.name
REQUEST_AUTHENTICATION = request_authentication.KIND.name

JwksLookup = Callable[[str], str | None]
"""The key set last fetched from a ``jwksUri``, or None while there is none."""


@dataclass(frozen=True, slots=True, eq=False)
class WorkloadAuthorization(FrozenInputs):
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


@dataclass(frozen=True, slots=True, eq=False)
class CandidatePolicies(FrozenInputs):
    """What may apply to a workload of one namespace: the policies of the root namespace
    then of the namespace, each by name."""

    policies: tuple[ConfigRevision, ...]
    authentications: tuple[ConfigRevision, ...]

    @property
    def empty(self) -> bool:
        return not self.policies and not self.authentications


NO_CANDIDATES = CandidatePolicies((), ())


@dataclass(frozen=True, slots=True)
class AuthorizationInputs:
    """What decides which policies apply to a workload: its namespace's candidates and
    its labels."""

    candidates: CandidatePolicies
    labels: Labels


@dataclass(frozen=True, slots=True)
class PolicySelection:
    """The candidates that apply to a workload (key sets not yet added), and the
    ``jwksUri``s their rules name, sorted."""

    authorization: WorkloadAuthorization
    uris: tuple[str, ...]


NOTHING_SELECTED = PolicySelection(NO_AUTHORIZATION, ())


def select_policies(inputs: AuthorizationInputs) -> PolicySelection:
    """The candidates that apply to ``inputs.labels``."""
    candidates, labels = inputs.candidates, inputs.labels
    policies = tuple(p for p in candidates.policies if applies_to(p.config, labels))
    authentications = tuple(a for a in candidates.authentications if applies_to(a.config, labels))
    if not policies and not authentications:
        return NOTHING_SELECTED
    uris = tuple(sorted({uri for a in authentications for uri in _uris(a.config)}))
    return PolicySelection(WorkloadAuthorization(policies, authentications), uris)


class AuthorizationIndex:
    """The AuthorizationPolicies and RequestAuthentications of the mesh, by namespace."""

    def __init__(
        self,
        policies: Iterable[Config],
        authentications: Iterable[Config],
        mesh: MeshSettings,
        jwks: JwksLookup | None = None,
    ) -> None:
        root = self._root = mesh.root_namespace
        self._jwks = jwks or _no_jwks
        by_policies = _by_namespace(policies)
        by_authentications = _by_namespace(authentications)
        self.by_key: Mapping[ConfigKey, Config] = {
            c.key: c
            for found in (*by_policies.values(), *by_authentications.values())
            for c in found
        }
        self._uris = frozenset(
            uri for found in by_authentications.values() for c in found for uri in _uris(c)
        )

        def candidates(spaces: tuple[str, ...]) -> CandidatePolicies:
            return CandidatePolicies(
                tuple(_revision(c) for space in spaces for c in by_policies.get(space, ())),
                tuple(_revision(c) for space in spaces for c in by_authentications.get(space, ())),
            )

        root_only = candidates((root,))
        self._root_only = NO_CANDIDATES if root_only.empty else root_only
        self._by_namespace: Mapping[str, CandidatePolicies] = {
            space: candidates((root, space))
            for space in {*by_policies, *by_authentications}
            if space != root
        }

    def jwks_uris(self) -> frozenset[str]:
        """Every ``jwksUri`` the RequestAuthentications name."""
        return self._uris

    def candidates(self, namespace: str) -> CandidatePolicies:
        """What may apply to a workload of ``namespace`` (see :class:`CandidatePolicies`)."""
        return self._by_namespace.get(namespace, self._root_only)

    def for_workload(
        self, namespace: str, labels: Labels, cache: ResourceCache
    ) -> WorkloadAuthorization:
        """The policies that apply to a workload of ``namespace`` with ``labels`` (chosen
        once per distinct candidates and labels, kept in ``cache``), with the key sets
        last fetched for the URIs they name (looked up now: a lookup is what asks for a
        URI's first fetch)."""
        candidates = self.candidates(namespace)
        if candidates.empty:
            return NO_AUTHORIZATION
        inputs = AuthorizationInputs(candidates, labels)
        selected = cache.value(inputs, lambda: select_policies(inputs))
        if not selected.uris:
            return selected.authorization
        lookup = self._jwks
        jwks = tuple((uri, text) for uri in selected.uris if (text := lookup(uri)) is not None)
        chosen = selected.authorization
        return WorkloadAuthorization(chosen.policies, chosen.authentications, jwks)

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
