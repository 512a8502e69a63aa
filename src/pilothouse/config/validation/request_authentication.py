"""RequestAuthentication: one JWT rule per issuer, with where its keys and tokens come from."""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

from pilothouse.api.istio.security.v1beta1.request_authentication_pb2 import (
    JWTRule,
    RequestAuthentication,
)
from pilothouse.config.json_web_key import relayable_key_set
from pilothouse.config.validation.headers import header_name_problem
from pilothouse.config.validation.policy_target import check_policy_target
from pilothouse.config.validation.report import Report

# RFC 9110 token characters: what an HTTP header name may hold.
_HEADER_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def validate_request_authentication(spec: RequestAuthentication, report: Report) -> None:
    check_policy_target(
        spec.selector if spec.HasField("selector") else None,
        spec.targetRef if spec.HasField("targetRef") else None,
        spec.targetRefs,
        report,
    )
    issuers: dict[str, int] = {}
    for i, rule in enumerate(spec.jwt_rules):
        path = f"spec.jwtRules[{i}]"
        _check_rule(rule, path, report)
        if rule.issuer in issuers:
            report.error(
                f"{path}.issuer", f"issuer {rule.issuer!r} repeats jwtRules[{issuers[rule.issuer]}]"
            )
        issuers.setdefault(rule.issuer, i)


def jwks_uri_problem(uri: str) -> str | None:
    """What is wrong with a ``jwksUri`` (an http or https URL with a host), or None."""
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError as error:
        return f"jwksUri {uri!r} is not a valid URL: {error}"
    if parts.scheme not in ("http", "https"):
        return f"jwksUri {uri!r} must be an http or https URL"
    if not parts.hostname:
        return f"jwksUri {uri!r} has no host"
    if port == 0:
        return f"jwksUri {uri!r} has port 0"
    return None


def jwks_problems(text: str) -> list[str]:
    """What is wrong with an inline JSON Web Key Set: the document, or each key that would
    not be relayed (:mod:`pilothouse.config.json_web_key`); empty when nothing is."""
    try:
        document = json.loads(text)
    except ValueError as error:
        return [f"jwks is not valid JSON: {error}"]
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        return ['jwks must be a JSON object with a "keys" list']
    checked = relayable_key_set(document)
    problems = [f"jwks {dropped}" for dropped in checked.dropped]
    if not checked.kept and not problems:
        problems.append("jwks has no key")
    return problems


def _check_rule(rule: JWTRule, path: str, report: Report) -> None:
    if not rule.issuer:
        report.error(f"{path}.issuer", "issuer is required")
    for i, audience in enumerate(rule.audiences):
        if not audience:
            report.error(f"{path}.audiences[{i}]", "audience must not be empty")
    if rule.jwks_uri and rule.jwks:
        report.error(f"{path}.jwks", "set jwks or jwksUri, not both")
    if rule.jwks_uri:
        problem = jwks_uri_problem(rule.jwks_uri)
        if problem is not None:
            report.error(f"{path}.jwksUri", problem)
    elif rule.jwks:
        for problem in jwks_problems(rule.jwks):
            report.error(f"{path}.jwks", problem)
    for i, header in enumerate(rule.from_headers):
        name_problem = header_name_problem(header.name)
        if name_problem is not None:
            report.error(f"{path}.fromHeaders[{i}].name", name_problem)
    for field, json_name in (
        ("from_params", "fromParams"),
        ("from_cookies", "fromCookies"),
        ("space_delimited_claims", "spaceDelimitedClaims"),
    ):
        for i, value in enumerate(getattr(rule, field)):
            if not value:
                report.error(f"{path}.{json_name}[{i}]", "must not be empty")
    if rule.output_payload_to_header:
        _check_output_header(rule.output_payload_to_header, f"{path}.outputPayloadToHeader", report)
    for i, claim in enumerate(rule.output_claim_to_headers):
        at = f"{path}.outputClaimToHeaders[{i}]"
        _check_output_header(claim.header, f"{at}.header", report)
        if not claim.claim:
            report.error(f"{at}.claim", "claim must not be empty")
    if rule.HasField("timeout") and rule.timeout.ToTimedelta().total_seconds() <= 0:
        report.error(f"{path}.timeout", "timeout must be positive")


def _check_output_header(name: str, path: str, report: Report) -> None:
    if not name:
        report.error(path, "header name must not be empty")
    elif _HEADER_TOKEN.fullmatch(name) is None:
        report.error(path, f"{name!r} is not a valid HTTP header name")
