"""Kubernetes-style labels and the workload selectors built from them."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from pilothouse.config.validation.hosts import MAX_LABEL_LENGTH, MAX_SUBDOMAIN_LENGTH
from pilothouse.config.validation.report import Report

_QUALIFIED_NAME = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_PREFIX_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_PREFIX = re.compile(rf"{_PREFIX_LABEL}(?:\.{_PREFIX_LABEL})*")


@functools.lru_cache(maxsize=4096)
def label_key_problem(key: str) -> str | None:
    """What is wrong with a label key (``[prefix/]name``), or None."""
    if not key:
        return "label key must not be empty"
    prefix, slash, name = key.rpartition("/")
    if slash and (
        not prefix or len(prefix) > MAX_SUBDOMAIN_LENGTH or not _PREFIX.fullmatch(prefix)
    ):
        return f"label key {key!r} has an invalid prefix {prefix!r} (must be a DNS subdomain)"
    if not name or _QUALIFIED_NAME.fullmatch(name) is None:
        return (
            f"label key {key!r} is invalid: the name must be alphanumeric characters, '-', '_' "
            "or '.', starting and ending with an alphanumeric character"
        )
    if len(name) > MAX_LABEL_LENGTH:
        return f"label key {key!r} is too long (name part at most {MAX_LABEL_LENGTH} characters)"
    return None


@functools.lru_cache(maxsize=4096)
def label_value_problem(value: str) -> str | None:
    """What is wrong with a label value, or None. The empty value is allowed."""
    if not value:
        return None
    if len(value) > MAX_LABEL_LENGTH:
        return f"label value {value!r} is too long (at most {MAX_LABEL_LENGTH} characters)"
    if _QUALIFIED_NAME.fullmatch(value) is None:
        return (
            f"label value {value!r} is invalid: alphanumeric characters, '-', '_' or '.', "
            "starting and ending with an alphanumeric character"
        )
    return None


def check_labels(labels: Mapping[str, str], path: str, report: Report) -> None:
    """Check every entry of a label map; entries are reported as ``path[key]``, in key order
    (sorted only when something is wrong: the first pass just looks)."""
    for key in labels:
        if label_key_problem(key) is not None or label_value_problem(labels[key]) is not None:
            break
    else:
        return
    for key in sorted(labels):
        key_problem = label_key_problem(key)
        value_problem = label_value_problem(labels[key])
        if key_problem is not None:
            report.error(f"{path}[{key}]", key_problem)
        if value_problem is not None:
            report.error(f"{path}[{key}]", value_problem)


def check_workload_selector(labels: Mapping[str, str], path: str, report: Report) -> None:
    """Check selector labels (``path`` is the label map, e.g. ``spec.selector.matchLabels``).

    Istio rejects wildcards and empty keys, and only warns about an empty selector because
    it then applies to every workload of the namespace.
    """
    if not labels:
        report.warn(
            path, "workload selector has no labels, so it selects every workload in the namespace"
        )
        return
    plain: dict[str, str] = {}
    for key in sorted(labels):
        if "*" in key or "*" in labels[key]:
            report.error(f"{path}[{key}]", "wildcards are not supported in workload selectors")
        else:
            plain[key] = labels[key]
    check_labels(plain, path, report)
