"""YAML and JSON text into raw objects that remember the file and line of every field.

This is the first step of loading: no schema knowledge, only structure. Each top-level
document (and each item of a ``kind: List``) becomes a :class:`RawObject` whose
``lines`` map gives the line of every field path (``spec.http[0].route``), so that later
stages can point at the exact line of a problem.

The reader is defensive: alias bombs, deep nesting and oversized input end in a
:class:`DocumentError` with a line number, never in a crash or a hang. A value that
cannot be a plain value (a YAML tag that does not fit it, a number too long, see
:mod:`pilothouse.config.scalars`) is a :class:`FieldProblem` of its own object: that
object is rejected by the loader while the others load. Whatever else goes wrong inside
one document becomes that document's error.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from pilothouse.config.flow_scalars import UNEXPECTED_COLON, FlowColonLoader
from pilothouse.config.scalars import ScalarProblem, collection_tag_problem, scalar_value

log = logging.getLogger("pilothouse.config")

MAX_DEPTH = 64
MAX_NODES = 1_000_000
_NODE_ALLOWANCE = 10_000
MAX_BYTES = 16 * 1024 * 1024

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class FieldProblem:
    """A field whose value could not be read (a YAML tag, a number too long)."""

    path: str
    line: int
    message: str


@dataclass(frozen=True, slots=True)
class RawObject:
    """One object as written: plain data plus where each part of it came from.

    ``problems`` lists fields that could not be read; their place in ``data`` holds the
    text as written, so that the object can still be named, and the loader rejects it.
    """

    data: Mapping[str, Any]
    file: str
    line: int
    lines: Mapping[str, int]
    problems: tuple[FieldProblem, ...] = ()

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
    """Split ``text`` into objects. Never raises: problems come back as errors.

    A text libyaml stops on at a colon inside a flow collection (``[1.2.3.4, 001:db8::]``)
    is read again as Kubernetes reads it (:mod:`pilothouse.config.flow_scalars`).
    """
    if len(text) > MAX_BYTES:
        return ReadResult((), (DocumentError(file, 1, f"file larger than {MAX_BYTES} bytes"),))
    result = _read(text, file, _Loader)
    if any(UNEXPECTED_COLON in error.message for error in result.errors):
        return _read(text, file, FlowColonLoader)
    return result


def _read(text: str, file: str, loader_type: type[yaml.SafeLoader]) -> ReadResult:
    objects: list[RawObject] = []
    errors: list[DocumentError] = []
    try:
        loader = loader_type(text)
    except UnicodeError as exc:  # lone surrogates: text that came from no valid file
        return ReadResult((), (DocumentError(file, _line_at(text, exc), _NOT_UNICODE),))
    except Exception:
        log.debug("YAML reader refused %s", file, exc_info=True)
        return ReadResult((), (DocumentError(file, 1, "cannot be read as YAML"),))
    try:
        while True:
            try:
                if not loader.check_node():
                    break
                node = loader.get_node()
            except yaml.MarkedYAMLError as exc:
                mark = exc.problem_mark or exc.context_mark
                line = mark.line + 1 if mark is not None else 1
                # the end of a text without a final newline is marked on the line after
                line = min(line, _last_line(text))
                errors.append(DocumentError(file, line, f"invalid YAML: {_yaml_reason(exc)}"))
                break
            except yaml.reader.ReaderError as exc:
                line = _line_at(text, exc)
                errors.append(DocumentError(file, line, f"invalid YAML: {_reader_reason(exc)}"))
                break
            except RecursionError:
                errors.append(DocumentError(file, 1, _TOO_DEEP))
                break
            except Exception:
                log.debug("YAML parser failed on %s", file, exc_info=True)
                errors.append(DocumentError(file, 1, "invalid YAML: cannot be parsed"))
                break
            if node is None:
                continue
            try:
                objects.extend(_objects_of(node, file, loader, _Budget(len(text))))
            except _Problem as problem:
                errors.append(DocumentError(file, problem.line, problem.message))
            except RecursionError:
                errors.append(DocumentError(file, node.start_mark.line + 1, _TOO_DEEP))
            except Exception as exc:  # a bug in this reader: this document's error only
                line = node.start_mark.line + 1
                log.debug("reading the document at %s:%d failed", file, line, exc_info=True)
                errors.append(DocumentError(file, line, internal_error("this document", exc)))
    finally:
        try:
            loader.dispose()
        except Exception:  # pragma: no cover - disposal is best effort
            log.debug("YAML reader disposal failed", exc_info=True)
    return ReadResult(tuple(objects), tuple(errors))


_NOT_UNICODE = "text is not valid Unicode (it holds lone surrogate code points)"
_TOO_DEEP = f"invalid YAML: nesting deeper than {MAX_DEPTH} levels"


def internal_error(what: str, exc: BaseException) -> str:
    """The message for an unexpected exception while reading ``what``: its type and the
    code it came from, never its Python-internal text."""
    where = ""
    trace = exc.__traceback__
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    if trace is not None:
        code = trace.tb_frame.f_code
        module = trace.tb_frame.f_globals.get("__name__", "?")
        where = f" in {module}.{code.co_name}"
    return (
        f"internal error while reading {what} ({type(exc).__name__}{where});"
        " it was skipped (the traceback is logged at debug level)"
    )


def _last_line(text: str) -> int:
    """The number of the last line of ``text``, counting YAML's line breaks."""
    breaks = text.count("\n") + text.count("\r") - text.count("\r\n")
    breaks += text.count("\x85") + text.count("\u2028") + text.count("\u2029")
    return breaks + 1


def _line_at(text: str, exc: BaseException) -> int:
    position = getattr(exc, "position", None)
    if not isinstance(position, int):
        position = getattr(exc, "start", None)
    if not isinstance(position, int):
        return 1
    return text.count("\n", 0, position) + 1


def _reader_reason(exc: yaml.reader.ReaderError) -> str:
    character = exc.character
    if isinstance(character, int):
        return f"character #x{character:04x} is not allowed in YAML"
    return "bytes that are not text"


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
    problems: list[FieldProblem] = []
    data = _build(node, "", lines, loader, 0, budget, problems)
    assert isinstance(data, dict)
    if data.get("kind") == "List" and isinstance(data.get("items"), list):
        # A problem outside the items concerns them all; one inside an item, that item.
        shared = tuple(p for p in problems if not p.path.startswith("items["))
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
            own = tuple(
                FieldProblem(p.path[len(prefix) + 1 :], p.line, p.message)
                for p in problems
                if p.path.startswith(prefix + ".")
            )
            yield RawObject(item, file, item_line, item_lines, shared + own)
        return
    yield RawObject(data, file, line, lines, tuple(problems))


def _build(
    node: yaml.Node,
    path: str,
    lines: dict[str, int],
    loader: yaml.SafeLoader,
    depth: int,
    budget: _Budget,
    problems: list[FieldProblem],
) -> Any:
    line = node.start_mark.line + 1
    budget.nodes += 1
    if budget.nodes > budget.limit:
        raise _Problem(line, f"document expands to more than {budget.limit} nodes (alias bomb?)")
    if depth > MAX_DEPTH:
        raise _Problem(line, f"nesting deeper than {MAX_DEPTH} levels")
    if path:
        lines.setdefault(path, line)
    if isinstance(node, yaml.ScalarNode):
        try:
            return scalar_value(node, loader)
        except ScalarProblem as problem:
            where = lines.get(path, line)  # the key's line, also for an alias
            problems.append(FieldProblem(path, where, _field_message(path, problem.message)))
            return node.value
    refused = collection_tag_problem(node)
    if refused is not None:
        problems.append(FieldProblem(path, line, _field_message(path, refused)))
    if isinstance(node, yaml.MappingNode):
        try:
            loader.flatten_mapping(node)
        except yaml.MarkedYAMLError as exc:
            raise _Problem(line, f"invalid merge key: {_yaml_reason(exc)}") from None
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            key, refused = _key(key_node, loader)
            if key in result:
                raise _Problem(key_line, f"duplicate key {key!r}")
            child = f"{path}.{key}" if path else key
            lines[child] = key_line
            if refused is not None:
                problems.append(FieldProblem(child, key_line, _field_message(child, refused)))
            result[key] = _build(value_node, child, lines, loader, depth + 1, budget, problems)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [
            _build(item, f"{path}[{index}]", lines, loader, depth + 1, budget, problems)
            for index, item in enumerate(node.value)
        ]
    raise _Problem(line, f"unexpected YAML node {type(node).__name__}")


def _key(node: yaml.Node, loader: yaml.SafeLoader) -> tuple[str, str | None]:
    """A mapping key as text, and why it cannot be used as written (None when it can)."""
    if not isinstance(node, yaml.ScalarNode):
        raise _Problem(node.start_mark.line + 1, "mapping keys must be plain values")
    try:
        value = scalar_value(node, loader)
    except ScalarProblem as problem:
        return str(node.value), f"key: {problem.message}"
    if value is None:
        return "null", None
    if isinstance(value, bool):
        return ("true" if value else "false"), None
    return str(value), None


def _field_message(path: str, message: str) -> str:
    return f"{path}: {message}" if path else message


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
