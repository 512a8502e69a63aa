"""Analysis messages printed as istioctl prints them: one line each, or ``-o json|yaml``
(a list of ``{code, level, origin, reference, message, documentationUrl}``), and the
exit status a ``--failure-threshold`` gives."""

from __future__ import annotations

import json
from collections.abc import Sequence

import yaml

from pilothouse.analysis.messages import Level, Message

EXIT_CLEAN = 0
EXIT_FOUND_ISSUES = 79
"""istioctl's ``ExitAnalyzerFoundIssues``: a message at or above the failure threshold."""

NO_ISSUES = "\u2714 No validation issues found when analyzing {0}."


def shown(messages: Sequence[Message], threshold: Level) -> list[Message]:
    """The messages at or above ``threshold`` (``--output-threshold``)."""
    return [m for m in messages if m.type.level.at_least(threshold)]


def exit_status(messages: Sequence[Message], failure: Level) -> int:
    failing = any(m.type.level.at_least(failure) for m in messages)
    return EXIT_FOUND_ISSUES if failing else EXIT_CLEAN


def render(messages: Sequence[Message], output: str, subject: str) -> str:
    """The text ``analyze -o output`` prints (``subject`` names what was analyzed)."""
    if output == "json":
        return json.dumps([m.as_dict() for m in messages], indent=2) + "\n"
    if output == "yaml":
        return yaml.safe_dump([m.as_dict() for m in messages], sort_keys=False)
    if not messages:
        return NO_ISSUES.format(subject) + "\n"
    return "".join(f"{m}\n" for m in messages)
