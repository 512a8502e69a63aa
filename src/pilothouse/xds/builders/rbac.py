"""The RBAC filters a workload's AuthorizationPolicies become, in istiod's order.

One filter per action that has policies, evaluated CUSTOM, then AUDIT, then DENY, then
ALLOW (a request must pass each): ``envoy.filters.http.rbac`` on HTTP ports and
``envoy.filters.network.rbac`` (stat prefix ``tcp.``) on TCP ports. Each rule of each
policy is one RBAC policy named ``ns[<namespace>]-policy[<name>]-rule[<index>]``.

- No ALLOW policy: no ALLOW filter, every request that passes the others is allowed.
- ALLOW policies whose rules match nothing (none, or none this filter can check): an
  ALLOW filter without policies, which refuses every request.
- DENY policies refuse what a rule matches; a policy without rules refuses nothing.
- AUDIT policies only mark what they match (RBAC action LOG).
- CUSTOM policies delegate to an external authorizer (``provider``); pilothouse has no
  extension providers, so as istiod does for a provider it cannot find, it fails
  closed: what a CUSTOM rule matches is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from envoy.config.listener.v3 import listener_components_pb2  # type: ignore[import-untyped]
from envoy.config.rbac.v3 import rbac_pb2  # type: ignore[import-untyped]
from envoy.extensions.filters.http.rbac.v3 import (  # type: ignore[import-untyped]
    rbac_pb2 as http_rbac_pb2,
)
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2 as hcm_pb2,
)
from envoy.extensions.filters.network.rbac.v3 import (  # type: ignore[import-untyped]
    rbac_pb2 as network_rbac_pb2,
)

from pilothouse.api.istio.security.v1beta1.authorization_policy_pb2 import AuthorizationPolicy
from pilothouse.push.inputs import ConfigRevision
from pilothouse.xds.builders.listener import typed
from pilothouse.xds.builders.rbac_rules import RuleContext, build_policy

HTTP_RBAC_FILTER: Final = "envoy.filters.http.rbac"
NETWORK_RBAC_FILTER: Final = "envoy.filters.network.rbac"
TCP_STAT_PREFIX: Final = "tcp."

_Action = AuthorizationPolicy.Action
# (policy action, RBAC action) in evaluation order
_ORDER: Final = (
    (_Action.CUSTOM, rbac_pb2.RBAC.DENY),
    (_Action.AUDIT, rbac_pb2.RBAC.LOG),
    (_Action.DENY, rbac_pb2.RBAC.DENY),
    (_Action.ALLOW, rbac_pb2.RBAC.ALLOW),
)


def policy_name(namespace: str, name: str, rule: int) -> str:
    """istiod's name of one rule's RBAC policy."""
    return f"ns[{namespace}]-policy[{name}]-rule[{rule}]"


def rbac_configs(
    policies: Sequence[ConfigRevision], *, tcp: bool, issuers: tuple[str, ...] = ()
) -> list[rbac_pb2.RBAC]:
    """The RBAC rule sets, one per action present, in evaluation order."""
    found = []
    for action, rbac_action in _ORDER:
        chosen = [p.config for p in policies if _spec(p).action == action]
        if not chosen:
            continue
        allow = action == _Action.ALLOW
        rules = rbac_pb2.RBAC(action=rbac_action)
        for config in chosen:
            context = RuleContext(tcp, allow, issuers, config.namespace)
            for index, rule in enumerate(config.spec.rules):  # type: ignore[attr-defined]
                made = build_policy(rule, context)
                if made is not None:
                    name = policy_name(config.namespace, config.name, index)
                    rules.policies[name].CopyFrom(made)
        if rules.policies or rbac_action == rbac_pb2.RBAC.ALLOW:
            found.append(rules)
    return found


def http_rbac_filters(
    policies: Sequence[ConfigRevision], issuers: tuple[str, ...] = ()
) -> list[hcm_pb2.HttpFilter]:
    """``envoy.filters.http.rbac`` filters for an HTTP port."""
    return [
        hcm_pb2.HttpFilter(name=HTTP_RBAC_FILTER, typed_config=typed(http_rbac_pb2.RBAC(rules=r)))
        for r in rbac_configs(policies, tcp=False, issuers=issuers)
    ]


def network_rbac_filters(
    policies: Sequence[ConfigRevision],
) -> list[listener_components_pb2.Filter]:
    """``envoy.filters.network.rbac`` filters for a TCP port (before ``tcp_proxy``)."""
    return [
        listener_components_pb2.Filter(
            name=NETWORK_RBAC_FILTER,
            typed_config=typed(network_rbac_pb2.RBAC(rules=r, stat_prefix=TCP_STAT_PREFIX)),
        )
        for r in rbac_configs(policies, tcp=True)
    ]


def _spec(revision: ConfigRevision) -> Any:
    return revision.config.spec
