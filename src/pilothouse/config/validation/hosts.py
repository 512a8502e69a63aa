"""Host names as Istio accepts them.

DNS-1123 labels, fully qualified and short host names, the `*.` wildcard prefix, how two
host patterns overlap, and the `namespace/host` entries of Gateway servers and Sidecar
egress listeners. Functions named ``*_problem`` return what is wrong, or None.
"""

from __future__ import annotations

import functools
import re
from typing import Literal

from pilothouse.config.validation.addresses import is_ip
from pilothouse.config.validation.report import Report

MAX_LABEL_LENGTH = 63
MAX_HOST_LENGTH = 255
MAX_SUBDOMAIN_LENGTH = 253

_DNS_LABEL = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9]*[A-Za-z0-9])?")
_LOWER_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"{_LOWER_LABEL}(?:\.{_LOWER_LABEL})*")


_LABEL_63 = r"[A-Za-z0-9](?:[-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
_PLAIN_HOST = re.compile(rf"(?:{_LABEL_63}\.)*{_LABEL_63}\.?")
_WILDCARD_HOST = re.compile(rf"\*(?:\.(?:{_LABEL_63}\.)*{_LABEL_63}\.?)?")
"""Host names that are certainly fine (the last label is checked apart): one regex
decides the common case, and :func:`host_problem` spells out what is wrong otherwise."""


@functools.lru_cache(maxsize=4096)
def is_dns_label(value: str) -> bool:
    """A DNS-1123 label: letters, digits and inner hyphens, at most 63 characters."""
    return len(value) <= MAX_LABEL_LENGTH and _DNS_LABEL.fullmatch(value) is not None


def is_dns_subdomain(value: str) -> bool:
    """A Kubernetes object name (DNS-1123 subdomain): lowercase labels joined by dots."""
    return len(value) <= MAX_SUBDOMAIN_LENGTH and _DNS_SUBDOMAIN.fullmatch(value) is not None


def host_problem(host: str, *, wildcard: bool = True) -> str | None:
    """What is wrong with ``host`` as a host name, or None.

    With ``wildcard`` the first label may be ``*`` (so ``*`` and ``*.example.com`` pass);
    a ``*`` anywhere else, or glued to other characters (``*foo.com``), never does. A
    trailing dot is allowed. The last label must not be all digits: an IP address is not
    a host name.
    """
    if (
        len(host) <= MAX_HOST_LENGTH
        and (
            _PLAIN_HOST.fullmatch(host) is not None
            or (wildcard and _WILDCARD_HOST.fullmatch(host) is not None)
        )
        and not host.rstrip(".").rpartition(".")[2].isdigit()
    ):
        return None
    if not host:
        return "host must not be empty"
    if len(host) > MAX_HOST_LENGTH:
        return f"host {host!r} is too long ({len(host)} characters, at most {MAX_HOST_LENGTH})"
    labels = host.split(".")
    if wildcard and labels[0] == "*":
        labels = labels[1:]
    if "*" in host and (not wildcard or any("*" in label for label in labels)):
        if not wildcard:
            return f"host {host!r} must not contain a wildcard"
        return f"host {host!r}: '*' is allowed only as the whole first label, as in '*.example.com'"
    if len(labels) > 1 and labels[-1] == "":
        labels = labels[:-1]
    for label in labels:
        if not is_dns_label(label):
            return (
                f"host {host!r} is not a valid DNS name (label {label!r} is not a DNS-1123 label)"
            )
    if labels and labels[-1].isdigit():
        return (
            f"host {host!r} is not a host name: its last label {labels[-1]!r} is all digits "
            "(IP addresses are not host names)"
        )
    return None


def is_wildcard(host: str) -> bool:
    return host.startswith("*")


def hosts_overlap(a: str, b: str) -> bool:
    """Whether some name matches both patterns (``*.com`` overlaps ``*.foo.com`` and ``a.com``)."""
    if is_wildcard(a) and is_wildcard(b):
        return a[1:].endswith(b[1:]) or b[1:].endswith(a[1:])
    if is_wildcard(a):
        return b.endswith(a[1:])
    if is_wildcard(b):
        return a.endswith(b[1:])
    return a == b


def host_within(inner: str, outer: str) -> bool:
    """Whether every name matched by ``inner`` is matched by ``outer``."""
    if is_wildcard(outer):
        suffix = outer[1:]
        return inner[1:].endswith(suffix) if is_wildcard(inner) else inner.endswith(suffix)
    return not is_wildcard(inner) and inner == outer


def check_host(
    host: str, path: str, report: Report, *, wildcard: bool = True, bare_star: bool = True
) -> bool:
    """Report an invalid host at ``path``; returns whether it was valid."""
    if host == "*" and wildcard and not bare_star:
        report.error(path, "the bare wildcard host '*' is not allowed here")
        return False
    problem = host_problem(host, wildcard=wildcard)
    if problem is not None:
        report.error(path, problem)
        return False
    return True


NamespacedHostOwner = Literal["gateway", "sidecar"]


def check_namespaced_host(
    entry: str, path: str, report: Report, *, owner: NamespacedHostOwner
) -> None:
    """Check a ``namespace/host`` entry (Gateway ``servers[].hosts``, Sidecar egress ``hosts``).

    The namespace part may be ``*`` (any), ``.`` (the object's own) or a namespace name;
    Sidecars also accept ``~`` (none) and ``~ns`` (exclude ns). Gateways accept a plain
    host without a namespace. The host part must be ``*`` or an FQDN with an optional
    ``*.`` prefix; short names are not allowed; Gateways also accept an IP address.
    """
    namespace, slash, dns_name = entry.partition("/")
    if not slash:
        if owner == "sidecar":
            report.error(path, f"host {entry!r} must have the form namespace/dnsName")
            return
        dns_name = entry
    else:
        if not namespace or not dns_name:
            report.error(path, f"host {entry!r}: namespace and dnsName must both be set")
            return
        if not _namespace_part_ok(namespace, owner):
            allowed = "'*', '.', '~', '~<namespace>'" if owner == "sidecar" else "'*', '.'"
            report.error(
                path,
                f"host {entry!r}: namespace {namespace!r} is not {allowed} or a namespace name",
            )
    if dns_name == "*":
        return
    if owner == "gateway" and is_ip(dns_name):
        return
    if "." not in dns_name:
        report.error(
            path,
            f"host {entry!r}: short name {dns_name!r} is not allowed here; use a fully "
            "qualified name such as reviews.default.svc.cluster.local",
        )
        return
    problem = host_problem(dns_name)
    if problem is not None:
        report.error(path, problem)


def _namespace_part_ok(namespace: str, owner: NamespacedHostOwner) -> bool:
    if namespace in ("*", "."):
        return True
    if owner == "sidecar" and namespace.startswith("~"):
        return namespace == "~" or is_dns_label(namespace[1:])
    return is_dns_label(namespace)
