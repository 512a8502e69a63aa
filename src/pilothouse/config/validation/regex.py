"""Regular expressions in Istio config: RE2 syntax (what Envoy runs) and a length cap."""

from __future__ import annotations

import re2

from pilothouse.config.validation.report import Report

# Istio's cap. Envoy limits RE2 *program size*, which is always larger than the pattern
# length; capping the length keeps expensive patterns out of the control plane and proxies.
MAX_REGEX_LENGTH = 1024


def regex_problem(pattern: str) -> str | None:
    """What is wrong with ``pattern`` as an RE2 regex, or None."""
    if not pattern:
        return "regex must not be empty"
    if len(pattern) > MAX_REGEX_LENGTH:
        return (
            f"regex is {len(pattern)} characters long; at most {MAX_REGEX_LENGTH} are allowed "
            "(a guard against costly patterns)"
        )
    options = re2.Options()
    options.log_errors = False
    try:
        re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        return (
            f"regex {pattern!r} is not valid RE2 ({reason}); Istio and Envoy use RE2 syntax, "
            "which has no lookaround or backreferences"
        )
    return None


def check_regex(pattern: str, path: str, report: Report) -> bool:
    problem = regex_problem(pattern)
    if problem is not None:
        report.error(path, problem)
        return False
    return True
