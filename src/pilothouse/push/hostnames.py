"""Host names as Istio config uses them: short-name resolution and wildcard matching.

A VirtualService or DestinationRule may name a host by its short name (``reviews``);
Istio reads it relative to the namespace of the config that wrote it
(``reviews.<namespace>.svc.<domain suffix>``). Wildcards are a leading ``*.`` or a
bare ``*``.
"""

from __future__ import annotations

DEFAULT_DOMAIN_SUFFIX = "cluster.local"


def resolve_host(host: str, namespace: str, domain_suffix: str = DEFAULT_DOMAIN_SUFFIX) -> str:
    """The fully qualified form of ``host`` as written in a config of ``namespace``."""
    if host == "*" or host.startswith("*") or "." in host:
        return host
    return f"{host}.{namespace}.svc.{domain_suffix}"


def host_matches(pattern: str, hostname: str) -> bool:
    """Whether ``pattern`` (possibly ``*`` or ``*.suffix``) covers ``hostname``.

    A wildcard hostname is covered by a pattern only if the pattern is at least as wide
    (``*.example.com`` covers ``*.api.example.com``).
    """
    if pattern == "*" or pattern == hostname:
        return True
    if pattern.startswith("*."):
        suffix = pattern[1:]
        return hostname.endswith(suffix) and len(hostname) > len(suffix)
    return False


def specificity(pattern: str) -> tuple[int, int]:
    """Sort key: exact hosts first, then longer wildcards (more specific) first."""
    if pattern.startswith("*"):
        return (1, -len(pattern))
    return (0, -len(pattern))
