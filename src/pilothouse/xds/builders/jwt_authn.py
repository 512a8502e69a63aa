"""The ``envoy.filters.http.jwt_authn`` filter a workload's RequestAuthentications become.

One provider per JWT rule (``origins-<n>``, in policy then rule order), its keys always
inline (``local_jwks``): those given in ``jwks`` (checked keys, public members only), or
those pilothouse fetched from ``jwksUri`` (:mod:`pilothouse.security.jwks`), so the
proxy needs no route to the issuer. Until a ``jwksUri`` has been fetched the resolver
answers a placeholder key set whose private key nobody holds, so the rule's tokens are
refused (401), never accepted unchecked (Envoy refuses a provider with an empty key
set). A rule with no key set at all (no resolver, or no inline key that passes) gets no
provider.

Every request is checked against any provider, or may carry no token
(``allow_missing``): a missing token passes, an invalid one is refused with 401. Each
provider writes the verified payload into the filter's dynamic metadata under the
issuer's name, which the RBAC filters read for ``requestPrincipals`` and the
``request.auth.*`` conditions (see :mod:`.rbac_rules`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Final

from envoy.extensions.filters.http.jwt_authn.v3 import (  # type: ignore[import-untyped]
    config_pb2,
)
from envoy.extensions.filters.network.http_connection_manager.v3 import (  # type: ignore[import-untyped]
    http_connection_manager_pb2 as hcm_pb2,
)

from pilothouse.config.json_web_key import BadKey, relayable_key_set
from pilothouse.push.inputs import ConfigRevision
from pilothouse.xds.builders.listener import typed

JWT_AUTHN_FILTER: Final = "envoy.filters.http.jwt_authn"
PROVIDER_PREFIX: Final = "origins-"


def jwt_rules(authentications: Sequence[ConfigRevision]) -> list[Any]:
    """Every JWT rule of the RequestAuthentications, in order."""
    return [rule for a in authentications for rule in a.config.spec.jwt_rules]  # type: ignore[attr-defined]


def accepted_issuers(authentications: Sequence[ConfigRevision]) -> tuple[str, ...]:
    """The issuers whose tokens the filter verifies, sorted, once each."""
    return tuple(sorted({rule.issuer for rule in jwt_rules(authentications)}))


def build_jwt_authn(
    authentications: Sequence[ConfigRevision], key_set: Callable[[str], str | None]
) -> config_pb2.JwtAuthentication | None:
    """The filter's config, or None without RequestAuthentications."""
    rules = jwt_rules(authentications)
    if not rules:
        return None
    config = config_pb2.JwtAuthentication(bypass_cors_preflight=True)
    requirements = []
    for number, rule in enumerate(rules):
        keys = inline_keys(rule.jwks) if rule.jwks else key_set(rule.jwks_uri)
        if not keys:
            continue
        name = f"{PROVIDER_PREFIX}{number}"
        config.providers[name].CopyFrom(_provider(rule, keys))
        requirements.append(config_pb2.JwtRequirement(provider_name=name))
    entry = config.rules.add()
    entry.match.prefix = "/"
    if requirements:
        requirements.append(config_pb2.JwtRequirement(allow_missing={}))
        entry.requires.requires_any.requirements.extend(requirements)
    else:
        entry.requires.allow_missing.SetInParent()
    return config


def inline_keys(text: str) -> str | None:
    """An inline ``jwks`` as it is relayed: its keys that pass the checks of
    :mod:`pilothouse.config.json_web_key` (validation refuses a rule with any other),
    public members only; None when none does."""
    try:
        checked = relayable_key_set(json.loads(text))
    except (ValueError, BadKey):
        return None
    return checked.text if checked.kept else None


def jwt_authn_filter(
    authentications: Sequence[ConfigRevision], key_set: Callable[[str], str | None]
) -> list[hcm_pb2.HttpFilter]:
    """The filter, or nothing without RequestAuthentications."""
    config = build_jwt_authn(authentications, key_set)
    if config is None:
        return []
    return [hcm_pb2.HttpFilter(name=JWT_AUTHN_FILTER, typed_config=typed(config))]


def _provider(rule: Any, keys: str) -> config_pb2.JwtProvider:
    provider = config_pb2.JwtProvider(
        issuer=rule.issuer,
        audiences=list(rule.audiences),
        forward=rule.forward_original_token,
        payload_in_metadata=rule.issuer,
        forward_payload_header=rule.output_payload_to_header,
        from_params=list(rule.from_params),
        from_cookies=list(rule.from_cookies),
    )
    provider.local_jwks.inline_string = keys
    for header in rule.from_headers:
        provider.from_headers.add(name=header.name, value_prefix=header.prefix)
    for claim in rule.output_claim_to_headers:
        provider.claim_to_headers.add(header_name=claim.header, claim_name=claim.claim)
    if rule.space_delimited_claims:
        provider.normalize_payload_in_metadata.space_delimited_claims.extend(
            rule.space_delimited_claims
        )
    return provider
