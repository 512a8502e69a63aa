"""What loading config found: :class:`Problem` (one problem, pinned to a file and line),
:class:`LoadResult` (the configs and problems of one text, and what was skipped) and
:class:`ConfigError`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pilothouse.config.documents import RawObject
from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.validation.report import Severity


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem with one object (or a whole document), ready to print.

    ``key`` is None when the object could not even be identified.
    """

    severity: Severity
    file: str | None
    line: int | None
    message: str
    key: ConfigKey | None = None
    shown_kind: str = ""
    """The kind to print when it is not the key's (the manifest's ``kind``)."""

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            file = printable(self.file)
            where = f"{file}:{self.line}: " if self.line is not None else f"{file}: "
        what = ""
        if self.key is not None:
            kind = self.shown_kind or self.key.kind
            what = f"{kind} {self.key.namespace}/{self.key.name}: "
        marker = "warning: " if self.severity is Severity.WARNING else ""
        return one_line(printable(f"{where}{what}{marker}{self.message}"))

    def as_dict(self) -> dict[str, Any]:
        return {
            "severity": str(self.severity),
            "file": printable(self.file) if self.file is not None else None,
            "line": self.line,
            "kind": printable(self.shown_kind or self.key.kind) if self.key else None,
            "namespace": printable(self.key.namespace) if self.key else None,
            "name": printable(self.key.name) if self.key else None,
            "message": printable(self.message),
        }


def printable(text: str) -> str:
    """``text`` safe to print in UTF-8: bytes of a file name that were not UTF-8 (kept as
    surrogates by the OS layer) become ``\\xff`` escapes, stray surrogates ``\\udcff``."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


_BREAKS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` with every control character but the tab escaped (``\\n``, ``\\x1e``…):
    a problem prints as one line, even when a field name in the file holds a line break
    (Python splits lines at ``\\x1c``–``\\x1e``, ``\\x85`` and ``\\u2028`` too)."""
    return _BREAKS.sub(_escape, text)


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


@dataclass(frozen=True, slots=True)
class LoadResult:
    """What came out of some text: valid configs, problems, and the keys of invalid objects."""

    configs: tuple[Config, ...] = ()
    problems: tuple[Problem, ...] = ()
    rejected: tuple[ConfigKey, ...] = field(default=())
    unreadable: bool = False
    """True when some document could not be parsed at all (bad YAML): the text as a whole
    is not trustworthy, and sources keep what they loaded from it before."""
    skipped: tuple[RawObject, ...] = ()
    """Objects that are not Istio config, skipped by a loader asked to skip them."""
    api_versions: tuple[str, ...] = ()
    """The apiVersion each of ``configs`` was written in (same order)."""

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity is Severity.ERROR)

    @property
    def ok(self) -> bool:
        return not self.errors


class ConfigError(Exception):
    """Raised by the strict loaders when any object is invalid; carries every problem."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems) or "invalid config")
