"""What ``apply`` and ``delete -f`` read: manifests from files and directories, each object
validated and kept together with the document it came from, and kubectl's names for kinds.

A manifest set is valid only as a whole: :func:`read_manifests` returns every problem of
every file (with file and line) and the caller writes nothing when there is one.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pilothouse.config.documents import MAX_BYTES, read_documents
from pilothouse.config.encoding import EncodingProblem, decode_config
from pilothouse.config.load import Loader, Problem
from pilothouse.config.model import Config, ConfigKey
from pilothouse.config.schema import Schema, SchemaSet
from pilothouse.config.validation.report import Severity
from pilothouse.kinds.table import KINDS
from pilothouse.sources.fs_tree import RootUnavailable, reason_of, scan_tree

SHORT_NAMES: Mapping[str, str] = MappingProxyType(
    {short: kind.name for kind in KINDS if kind.served for short in kind.short_names}
)
"""Istio's CRD short names (``kubectl get vs``), as each kind declares them."""


@dataclass(frozen=True, slots=True)
class Manifest:
    """One object read from a file: as written (``data``), and as validated (``config``)."""

    data: Mapping[str, Any]
    config: Config
    file: str
    line: int


@dataclass(frozen=True, slots=True)
class ManifestSet:
    manifests: tuple[Manifest, ...]
    problems: tuple[Problem, ...]
    keys: tuple[ConfigKey, ...]
    """Every object that could be named, valid or not (what ``delete -f`` needs)."""

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity is Severity.ERROR)


def manifest_files(paths: Sequence[str]) -> tuple[list[str], list[Problem]]:
    """Every file named or under a directory named (sorted per directory)."""
    files: list[str] = []
    problems: list[Problem] = []
    for raw in paths:
        path = Path(raw)
        if raw == "-":
            files.append(raw)
        elif path.is_dir():
            try:
                tree = scan_tree(path)
            except RootUnavailable as gone:
                problems.append(Problem(Severity.ERROR, raw, None, f"cannot read: {gone.reason}"))
                continue
            files.extend(tree.files)
            for folder, why in sorted(tree.unreadable.items()):
                problems.append(Problem(Severity.ERROR, folder, None, f"cannot read: {why}"))
        elif path.exists():
            files.append(raw)
        else:
            problems.append(Problem(Severity.ERROR, raw, None, "no such file or directory"))
    return files, problems


def read_manifests(paths: Sequence[str], loader: Loader) -> ManifestSet:
    """Every object of every file, validated; duplicates across files are errors."""
    files, problems = manifest_files(paths)
    manifests: list[Manifest] = []
    keys: list[ConfigKey] = []
    seen: dict[ConfigKey, str] = {}
    for file in files:
        name = "<stdin>" if file == "-" else file
        try:
            if file == "-":
                data = sys.stdin.buffer.read(MAX_BYTES + 1)
            else:
                with open(file, "rb") as handle:
                    data = handle.read(MAX_BYTES + 1)
            text = decode_config(data)
        except OSError as problem:
            problems.append(
                Problem(Severity.ERROR, name, None, f"cannot read: {reason_of(problem)}")
            )
            continue
        except EncodingProblem as problem:
            problems.append(Problem(Severity.ERROR, name, problem.line, problem.message))
            continue
        read = read_documents(text, name)
        problems.extend(Problem(Severity.ERROR, e.file, e.line, e.message) for e in read.errors)
        for raw in read.objects:
            config, found, key = loader.load_object(raw)
            problems.extend(found)
            if key is not None:
                keys.append(key)
            if config is None:
                continue
            where = f"{name}:{raw.line}"
            if config.key in seen:
                message = f"duplicate object: also defined at {seen[config.key]}"
                problems.append(Problem(Severity.ERROR, name, raw.line, message, config.key))
                continue
            seen[config.key] = where
            manifests.append(Manifest(raw.data, config, name, raw.line))
    return ManifestSet(tuple(manifests), tuple(problems), tuple(dict.fromkeys(keys)))


def resolve_kind(text: str, schemas: SchemaSet) -> Schema | None:
    """The kind a user means: ``VirtualService``, ``virtualservice``, ``virtualservices``,
    ``vs``, or any of those followed by ``.networking.istio.io`` (``gateways`` alone is
    Istio's; the Gateway API's is ``gateways.gateway.networking.k8s.io``)."""
    name, _, group = text.partition(".")
    wanted = SHORT_NAMES.get(name.lower(), name).lower()
    for schema in schemas:
        if group and group != schema.group:
            continue
        if wanted in (schema.kind.lower(), schema.manifest_kind.lower(), schema.plural.lower()):
            return schema
    return None


class UnknownKind(ValueError):
    """A KIND the store commands do not know; the message is kubectl's, with a hint."""


def resolve_kinds(text: str, schemas: SchemaSet) -> list[Schema]:
    """The kinds a comma-separated list names (``vs,dr``), without repeats; UnknownKind
    for the first that names none, with the nearest short name or kind."""
    found: list[Schema] = []
    for word in (w.strip() for w in text.split(",")):
        schema = resolve_kind(word, schemas) if word else None
        if schema is None:
            names = sorted({*SHORT_NAMES, *(s.kind.lower() for s in schemas)})
            close = difflib.get_close_matches(word.lower(), names, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UnknownKind(f'the server doesn\'t have a resource type "{word}"{hint}')
        if schema not in found:
            found.append(schema)
    return found


def resource(schema: Schema, *, plural: bool = False) -> str:
    """kubectl's name of a kind: ``virtualservice.networking.istio.io`` (or the plural)."""
    kind = schema.plural if plural else schema.manifest_kind.lower()
    return f"{kind}.{schema.group}"
