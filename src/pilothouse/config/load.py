"""Raw objects into validated `Config`s, with every problem pinned to a file and line.

This is the one path from text to config: the `validate` CLI, every source, the webhook
and `apply` all go through :func:`load_text` / :func:`load_object`. Invalid objects are
reported and skipped; their valid siblings load. An object's kind, apiVersion and
metadata are checked by :mod:`~pilothouse.config.object_meta`, its spec by its kind's
validator.

Faults stop here: whatever goes wrong while loading one object becomes that object's
problem, and whatever goes wrong with one text, that text's (with file and line where
known; the traceback is logged at debug level). No loader method raises, except
:meth:`Loader.load_strict`, whose :class:`ConfigError` carries the problems.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from google.protobuf.message import Message

from pilothouse.config.decode import decode_message
from pilothouse.config.documents import FieldProblem, RawObject, internal_error, read_documents
from pilothouse.config.encoding import EncodingProblem, decode_config
from pilothouse.config.model import EMPTY, Config, ConfigKey, Origin
from pilothouse.config.object_meta import (
    creation_time,
    metadata_problems,
    name_ok,
    name_problems,
    schema_of,
)
from pilothouse.config.problems import ConfigError, LoadResult, Problem, printable
from pilothouse.config.schema import Schema, SchemaSet
from pilothouse.config.validation.report import Finding, Report, Severity

__all__ = ["ConfigError", "LoadResult", "Loader", "Problem", "printable"]

log = logging.getLogger("pilothouse.config")

DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True, slots=True)
class Loader:
    """Loads text into Configs with one schema set and one default namespace.

    With ``skip_plain``, an object that is not Istio config is skipped (listed in
    :attr:`LoadResult.skipped`) instead of being an unknown kind: a plain Kubernetes kind
    the schema set knows (a Service, a Deployment) and any object of an API group that is
    neither served nor Istio's (``apps/v1``, ``example.com/v1``). An unknown kind of a
    served or Istio group (``telemetry.istio.io``) is still an error: it is Istio config
    that cannot be checked.
    """

    schemas: SchemaSet
    default_namespace: str = DEFAULT_NAMESPACE
    source: str = "file"
    skip_plain: bool = False

    def load_bytes(self, data: bytes, file: str) -> LoadResult:
        """Every object in the bytes of a file (UTF-8, or UTF-16/32 with a byte order
        mark); never raises."""
        try:
            text = decode_config(data)
        except EncodingProblem as problem:
            found = Problem(Severity.ERROR, file, problem.line, problem.message)
            return LoadResult(problems=(found,), unreadable=True)
        except Exception as exc:
            return _unreadable(file, exc)
        return self.load_text(text, file)

    def load_text(self, text: str, file: str) -> LoadResult:
        """Every object in ``text``; never raises."""
        try:
            read = read_documents(text, file)
            configs: list[Config] = []
            versions: list[str] = []
            problems = [Problem(Severity.ERROR, e.file, e.line, e.message) for e in read.errors]
            rejected: list[ConfigKey] = []
            skipped: list[RawObject] = []
            for raw in read.objects:
                if self.skip_plain and self.schemas.foreign(raw.data):
                    skipped.append(raw)
                    continue
                config, found, key = self.load_object(raw)
                problems.extend(found)
                if config is not None:
                    configs.append(config)
                    versions.append(str(raw.data.get("apiVersion")))
                elif key is not None:
                    rejected.append(key)
            return LoadResult(
                tuple(configs),
                tuple(problems),
                tuple(rejected),
                bool(read.errors),
                tuple(skipped),
                tuple(versions),
            )
        except Exception as exc:  # a bug: this text is unreadable, nothing else is touched
            return _unreadable(file, exc)

    def _shown(self, problems: list[Problem], key: ConfigKey | None) -> list[Problem]:
        """``problems`` naming the object by the kind its manifest says when its key's
        kind differs (the Gateway API's Gateway, kept as ``KubernetesGateway``)."""
        schema = self.schemas.by_kind(key.kind) if key is not None else None
        if schema is None or not schema.wire_kind:
            return problems
        return [dataclasses.replace(p, shown_kind=schema.wire_kind) for p in problems]

    def load_strict(self, text: str, file: str) -> tuple[Config, ...]:
        """Every object in ``text``, or :class:`ConfigError` if anything is invalid."""
        result = self.load_text(text, file)
        if not result.ok:
            raise ConfigError(result.errors)
        return result.configs

    def load_object(self, raw: RawObject) -> tuple[Config | None, list[Problem], ConfigKey | None]:
        """One object: the Config (or None), its problems, and its key when known.

        Never raises: an unexpected failure is this object's error (its key kept when it
        was known, so that a source keeps the object's last good version).
        """
        named: list[ConfigKey] = []
        try:
            config, found, key = self._load_object(raw, named)
            return config, self._shown(found, key), key
        except Exception as exc:
            key = named[-1] if named else None
            log.debug("loading the object at %s:%d failed", raw.file, raw.line, exc_info=True)
            message = internal_error("this object", exc)
            return None, [Problem(Severity.ERROR, raw.file, raw.line, message, key)], key

    def _load_object(
        self, raw: RawObject, named: list[ConfigKey]
    ) -> tuple[Config | None, list[Problem], ConfigKey | None]:
        data = raw.data

        def problem(path: str, message: str, key: ConfigKey | None = None) -> Problem:
            line = raw.line_of(path) if path else raw.line
            return Problem(Severity.ERROR, raw.file, line, message, key)

        def unreadable(key: ConfigKey | None) -> list[Problem]:
            return [_field_problem(raw, p, key) for p in raw.problems]

        schema, early = schema_of(self.schemas, data, problem)
        if schema is None:
            return None, unreadable(None) + early, None
        metadata = data.get("metadata")
        if not isinstance(metadata, Mapping):
            found = [problem("metadata", "metadata with a name is required")]
            return None, unreadable(None) + found, None
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            found = [problem("metadata", "metadata.name is required")]
            return None, unreadable(None) + found, None
        namespace = metadata.get("namespace", self.default_namespace)
        if not schema.namespaced:
            namespace = ""
        key = ConfigKey(schema.kind, str(namespace), name)
        named.append(key)
        if raw.problems:
            return None, unreadable(key), key
        found = metadata_problems(data, metadata, schema, key, problem)
        if found:
            return None, found, key
        spec, decode_problems = decode_message(data.get("spec"), schema.message)
        if spec is None:
            return (
                None,
                [problem(p.path, f"{p.path}: {p.message}", key) for p in decode_problems],
                key,
            )
        report = _validate(schema, spec, key.namespace, key.name)
        findings = [self._finding(raw, f, key) for f in report.findings]
        if not report.ok:
            return None, findings, key
        config = Config(
            kind=schema.kind,
            name=name,
            namespace=key.namespace,
            spec=spec,
            labels=MappingProxyType(dict(metadata.get("labels") or {})),
            annotations=MappingProxyType(dict(metadata.get("annotations") or {})),
            resource_version=str(metadata.get("resourceVersion") or ""),
            creation_time=creation_time(metadata.get("creationTimestamp")),
            origin=Origin(self.source, raw.file, raw.line),
        )
        return config, findings, key

    def load_message(
        self,
        schema: Schema,
        namespace: str,
        name: str,
        spec: Message,
        *,
        labels: Mapping[str, str] = EMPTY,
        annotations: Mapping[str, str] = EMPTY,
        resource_version: str = "",
        creation_time: datetime.datetime | None = None,
        origin: Origin | None = None,
    ) -> tuple[Config | None, list[Problem]]:
        """One object whose spec is already a decoded message (MCP, MCP-over-xDS).

        The same name checks and validator as :meth:`load_object`, without a trip
        through the JSON form; ``spec`` is kept, not copied. Problems carry the origin's
        file (no line: there is no text).
        """
        where = origin if origin is not None else Origin(self.source)
        if not schema.namespaced:
            namespace = ""
        try:
            return self._load_message(
                schema, namespace, name, spec, labels, annotations, resource_version,
                creation_time, where,
            )  # fmt: skip
        except Exception as exc:
            log.debug("loading %s %s/%s failed", schema.kind, namespace, name, exc_info=True)
            key = ConfigKey(schema.kind, namespace, name)
            message = internal_error("this object", exc)
            return None, [Problem(Severity.ERROR, where.file or where.source, None, message, key)]

    def _load_message(
        self,
        schema: Schema,
        namespace: str,
        name: str,
        spec: Message,
        labels: Mapping[str, str],
        annotations: Mapping[str, str],
        resource_version: str,
        creation_time: datetime.datetime | None,
        where: Origin,
    ) -> tuple[Config | None, list[Problem]]:
        if not name_ok(schema, namespace, name):
            key = ConfigKey(schema.kind, namespace, name)
            return None, [
                Problem(Severity.ERROR, where.file or where.source, None, message, key)
                for _path, message in name_problems(schema, key)
            ]
        report = _validate(schema, spec, namespace, name)
        problems: list[Problem] = []
        if report.findings:
            key = ConfigKey(schema.kind, namespace, name)
            problems = [
                Problem(
                    f.severity,
                    where.file or where.source,
                    None,
                    f"{f.path}: {f.message}" if f.path else f.message,
                    key,
                )
                for f in report.findings
            ]
            if not report.ok:
                return None, problems
        config = Config(
            kind=schema.kind,
            name=name,
            namespace=namespace,
            spec=spec,
            labels=MappingProxyType(dict(labels)) if labels else EMPTY,
            annotations=MappingProxyType(dict(annotations)) if annotations else EMPTY,
            resource_version=resource_version,
            creation_time=creation_time,
            origin=where,
        )
        return config, problems

    @staticmethod
    def _finding(raw: RawObject, finding: Finding, key: ConfigKey) -> Problem:
        message = f"{finding.path}: {finding.message}" if finding.path else finding.message
        line = raw.line_of(finding.path) if finding.path else raw.line
        return Problem(finding.severity, raw.file, line, message, key)


def _field_problem(raw: RawObject, found: FieldProblem, key: ConfigKey | None) -> Problem:
    return Problem(Severity.ERROR, raw.file, found.line, found.message, key)


def _unreadable(file: str, exc: Exception) -> LoadResult:
    """The result for a text whose loading failed unexpectedly: one error, nothing loaded,
    and marked unreadable so that sources keep what they had from it."""
    log.debug("loading %s failed", file, exc_info=True)
    message = internal_error("this file", exc)
    return LoadResult(problems=(Problem(Severity.ERROR, file, None, message),), unreadable=True)


def _validate(schema: Schema, spec: Message, namespace: str, name: str) -> Report:
    """The kind's validator over ``spec``; a crashing validator is an error, not a crash."""
    report = Report(namespace=namespace, name=name)
    try:
        schema.validator(spec, report)
    except Exception as exc:  # a validator bug must not take the loader down
        report.error("spec", f"validator failed: {type(exc).__name__}: {exc}")
    return report
