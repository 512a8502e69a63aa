"""What loading found wrong with the objects, as analysis messages: errors are IST0106
SchemaValidationError, warnings IST0133 SchemaWarning, each at its file and line."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pilothouse.analysis.messages import SCHEMA_VALIDATION_ERROR, SCHEMA_WARNING, Message
from pilothouse.config.model import Origin
from pilothouse.config.problems import Problem
from pilothouse.config.validation.report import Severity


def schema_messages(problems: Iterable[Problem]) -> Iterator[Message]:
    for problem in problems:
        kind = SCHEMA_VALIDATION_ERROR if problem.severity is Severity.ERROR else SCHEMA_WARNING
        origin = Origin("file", problem.file, problem.line) if problem.file else None
        yield Message(kind, (problem.message,), problem.key, origin)
