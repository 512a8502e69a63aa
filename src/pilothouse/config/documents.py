"""YAML and JSON text into raw objects that remember the file and line of every field.

This is the first step of loading: no schema knowledge, only structure. Each top-level
document (and each item of a ``kind: List``) becomes a :class:`RawObject` whose
``lines`` map gives the line of every field path (``spec.http[0].route``), so that later
stages can point at the exact line of a problem.

The reader is defensive: alias bombs, deep nesting and oversized input end in a
:class:`DocumentError` with a line number, never in a crash or a hang.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

MAX_DEPTH = 64
MAX_NODES = 1_000_000
_NODE_ALLOWANCE = 10_000
MAX_BYTES = 16 * 1024 * 1024

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class RawObject:
    """One object as written: plain data plus where each part of it came from."""

    data: Mapping[str, Any]
    file: str
    line: int
    lines: Mapping[str, int]

    def line_of(self, path: str) -> int:
        """The line of ``path`` or of its nearest ancestor that has one."""
        candidate = _normalise(path)
        while candidate:
            found = self.lines.get(candidate)
            if found is not None:
                return found
            candidate = _parent(candidate)
        return self.line


@dataclass(frozen=True, slots=True)
class DocumentError:
    """A document that could not be read at all."""

    file: str
    line: int
    message: str


@dataclass(frozen=True, slots=True)
class ReadResult:
    objects: tuple[RawObject, ...]
    errors: tuple[DocumentError, ...]


class _Budget:
    """Counts nodes built so that alias expansion cannot blow up memory or time.

    Plain YAML needs at least a character per node, so a document may build at most
    as many nodes as the text has characters (plus an allowance), and never more than
    MAX_NODES: only aliases can exceed that.
    """

    def __init__(self, text_length: int) -> None:
        self.nodes = 0
        self.limit = min(MAX_NODES, text_length + _NODE_ALLOWANCE)


class _Problem(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def read_documents(text: str, file: str) -> ReadResult:
    """Split ``text`` into objects. Never raises: problems come back as errors."""
    if len(text) > MAX_BYTES:
        return ReadResult((), (DocumentError(file, 1, f"file larger than {MAX_BYTES} bytes"),))
    objects: list[RawObject] = []
    errors: list[DocumentError] = []
    try:
        loader = _Loader(text)
    except Exception as exc:  # the C reader refuses some inputs at construction
        return ReadResult((), (DocumentError(file, 1, f"cannot read: {exc}"),))
    try:
        while True:
            try:
                if not loader.check_node():
                    break
                node = loader.get_node()
            except yaml.MarkedYAMLError as exc:
                mark = exc.problem_mark or exc.context_mark
                line = mark.line + 1 if mark is not None else 1
                errors.append(DocumentError(file, line, f"invalid YAML: {_yaml_reason(exc)}"))
                break
            except (yaml.YAMLError, RecursionError, ValueError, TypeError) as exc:
                errors.append(DocumentError(file, 1, f"invalid YAML: {exc}"))
                break
            if node is None:
                continue
            try:
                objects.extend(_objects_of(node, file, loader, _Budget(len(text))))
            except _Problem as problem:
                errors.append(DocumentError(file, problem.line, problem.message))
    finally:
        loader.dispose()
    return ReadResult(tuple(objects), tuple(errors))


def _yaml_reason(exc: yaml.MarkedYAMLError) -> str:
    parts = [p for p in (exc.context, exc.problem) if p]
    return ", ".join(parts) if parts else "syntax error"


def _objects_of(
    node: yaml.Node, file: str, loader: yaml.SafeLoader, budget: _Budget
) -> Iterator[RawObject]:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null":
        return
    if not isinstance(node, yaml.MappingNode):
        raise _Problem(line, "a document must be a mapping (an object with apiVersion and kind)")
    lines: dict[str, int] = {}
    data = _build(node, "", lines, loader, 0, budget)
    assert isinstance(data, dict)
    if data.get("kind") == "List" and isinstance(data.get("items"), list):
        for index, item in enumerate(data["items"]):
            prefix = f"items[{index}]"
            item_line = lines.get(prefix, line)
            if not isinstance(item, dict):
                raise _Problem(item_line, f"{prefix}: a List item must be an object")
            item_lines = {
                key[len(prefix) + 1 :]: value
                for key, value in lines.items()
                if key.startswith(prefix + ".")
            }
            yield RawObject(item, file, item_line, item_lines)
        return
    yield RawObject(data, file, line, lines)


def _build(
    node: yaml.Node,
    path: str,
    lines: dict[str, int],
    loader: yaml.SafeLoader,
    depth: int,
    budget: _Budget,
) -> Any:
    line = node.start_mark.line + 1
    budget.nodes += 1
    if budget.nodes > budget.limit:
        raise _Problem(line, f"document expands to more than {budget.limit} nodes (alias bomb?)")
    if depth > MAX_DEPTH:
        raise _Problem(line, f"nesting deeper than {MAX_DEPTH} levels")
    if path:
        lines.setdefault(path, line)
    if isinstance(node, yaml.MappingNode):
        try:
            loader.flatten_mapping(node)
        except yaml.MarkedYAMLError as exc:
            raise _Problem(line, f"invalid merge key: {_yaml_reason(exc)}") from None
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = _key(key_node, loader)
            if key in result:
                raise _Problem(key_node.start_mark.line + 1, f"duplicate key {key!r}")
            child = f"{path}.{key}" if path else key
            lines[child] = key_node.start_mark.line + 1
            result[key] = _build(value_node, child, lines, loader, depth + 1, budget)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [
            _build(item, f"{path}[{index}]", lines, loader, depth + 1, budget)
            for index, item in enumerate(node.value)
        ]
    return _scalar(node, loader)


def _key(node: yaml.Node, loader: yaml.SafeLoader) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise _Problem(node.start_mark.line + 1, "mapping keys must be plain values")
    value = _scalar(node, loader)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_STR_TAG = "tag:yaml.org,2002:str"


def _scalar(node: yaml.Node, loader: yaml.SafeLoader) -> Any:
    if node.tag == _STR_TAG and isinstance(node, yaml.ScalarNode):
        return node.value  # most scalars: no need for the constructor's bookkeeping
    try:
        value = loader.construct_object(node, deep=True)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
        raise _Problem(node.start_mark.line + 1, f"bad value: {exc}") from None
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, set | tuple):
        return list(value)
    return value


def _normalise(path: str) -> str:
    """Turn map-entry brackets (``headers[x-user]``) into the dotted form lines use."""
    out: list[str] = []
    i = 0
    while i < len(path):
        char = path[i]
        if char == "[":
            end = path.find("]", i)
            if end < 0:
                out.append(path[i:])
                break
            inner = path[i + 1 : end]
            out.append(f"[{inner}]" if inner.isdigit() else f".{inner}")
            i = end + 1
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _parent(path: str) -> str:
    if path.endswith("]"):
        return path[: path.rfind("[")]
    dot = path.rfind(".")
    return path[:dot] if dot > 0 else ""
