"""Validation findings: what a validator says about one object, with the field path it concerns."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Severity(StrEnum):
    """How serious a finding is: errors reject the object, warnings only inform."""

    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Finding:
    """One message about one field of an object.

    ``path`` is written from the object's top, the way users read YAML:
    ``spec.http[0].route[1].weight``. An empty path means the object as a whole.
    """

    severity: Severity
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        marker = "warning: " if self.severity is Severity.WARNING else ""
        return f"{marker}{where}{self.message}"


@dataclass(slots=True)
class Report:
    """Collects the findings for one object while validators walk it.

    Validators receive the object's namespace and name through the report so that
    rules depending on them (``.`` in exportTo, the Sidecar's own namespace) need no
    extra arguments.
    """

    namespace: str = "default"
    name: str = ""
    findings: list[Finding] = field(default_factory=list)

    def error(self, path: str, message: str) -> None:
        self.findings.append(Finding(Severity.ERROR, path, message))

    def warn(self, path: str, message: str) -> None:
        self.findings.append(Finding(Severity.WARNING, path, message))

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.WARNING]

    @property
    def ok(self) -> bool:
        return not self.errors
