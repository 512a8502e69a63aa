"""Hypothesis strategies that break the example mesh the ways people and tools do.

Each strategy starts from a real file of ``examples/`` (as YAML, or re-written as JSON)
and applies a few mutations: a YAML tag of any kind in front of a value, a value of
another type, a huge or long number, deep nesting, anchors and aliases (also undefined
ones and merge keys), truncation, stray bytes; then encodes it (UTF-8, with a BOM,
UTF-16, UTF-32, or with bytes that are not UTF-8). :func:`check_problems` holds what
every problem must say, whatever the input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from pilothouse.config.load import Problem

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_FILES = sorted((ROOT / "examples").rglob("*.yaml"))
EXAMPLES = {path.name: path.read_text() for path in EXAMPLE_FILES}

TAGS = (
    "!!bool", "!!timestamp", "!!binary", "!!set", "!!omap", "!!pairs", "!!int", "!!float",
    "!!null", "!!str", "!!map", "!!seq", "!!merge", "!!value", "!!yaml",
    "!!python/object:os.system", "!!python/object/apply:os.system", "!!python/name:os.system",
    "!!python/tuple", "!!python/str", "!!python/unicode", "!!python/bytes",
    "!foo", "!", "!<tag:yaml.org,2002:bool>", "!<tag:example.com,2000:app/x>", "!!",
)  # fmt: skip
OTHER_VALUES = (
    "true", "false", "null", "~", "[]", "{}", "1.5", "-1", "0", "''", '""', "[a, b]",
    "{a: 1}", "0x1F", "0o17", "0b101", ".inf", "-.inf", ".nan", "2024-01-01",
    "2024-13-45", "2001-12-14t21:59:43.10-05:00", "=", "<<", "1_000", "190:20:30", "yes",
    "NO", "'quoted'", "|\n  block", ">-\n  folded", "&", "*", "!", "%", "@x", "`x`",
)  # fmt: skip
STRAY_BYTES = (
    b"\xff", b"\xfe", b"\xc3", b"\xc3\x28", b"\x00", b"\x07", b"\xed\xa0\x80",
    b"\xef\xbb\xbf", b"\xf4\x90\x80\x80", b"\x80", b"\r", b"\t",
)  # fmt: skip
_FIELD = re.compile(r"^(\s*(?:-\s+)?\"?[\w.$-]+\"?\s*:[ \t]+)(\S.*?)(,?)$")
_SENTINEL = object()


def _field_lines(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if _FIELD.match(line)]


def huge_numbers() -> st.SearchStrategy[str]:
    digits = st.integers(19, 6000).map(lambda n: "9" * n)
    return st.one_of(
        digits,
        digits.map(lambda d: f"'{d}'"),
        digits.map(lambda d: f'"-{d}"'),
        digits.map(lambda d: f"1.{d}e+{d[:5]}"),
        digits.map(lambda d: f"{d}s"),
        digits.map(lambda d: f"'{d}ms'"),
        digits.map(lambda d: f"0x{d}"),
    )


def nested(depth: int, value: str, mapping: bool) -> str:
    if mapping:
        return "{a: " * depth + value + "}" * depth
    return "[" * depth + value + "]" * depth


@st.composite
def replacement(draw: st.DrawFn, value: str) -> str:
    """A new text for one field's value."""
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return f"{draw(st.sampled_from(TAGS))} {value}"
    if choice == 1:
        return draw(st.sampled_from(OTHER_VALUES))
    if choice == 2:
        return draw(huge_numbers())
    if choice == 3:
        return nested(draw(st.integers(1, 300)), value, draw(st.booleans()))
    if choice == 4:
        return f"{draw(st.sampled_from(TAGS))} {draw(st.sampled_from(OTHER_VALUES))}"
    return draw(st.sampled_from(("*nowhere", "&a " + value, "*a", "&a", "<<: *a")))


@st.composite
def mutated_text(draw: st.DrawFn, text: str) -> str:
    """``text`` with one to three line-level mutations, maybe with aliases, maybe cut."""
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        candidates = _field_lines(lines)
        if not candidates:
            break
        index = draw(st.sampled_from(candidates))
        match = _FIELD.match(lines[index])
        assert match is not None
        head, value, comma = match.groups()
        lines[index] = head + draw(replacement(value)) + comma
    if draw(st.booleans()):
        # an anchor on one value, an alias (or a merge) on another
        candidates = _field_lines(lines)
        if len(candidates) >= 2:
            pair = st.lists(st.sampled_from(candidates), min_size=2, max_size=2, unique=True)
            first, second = sorted(draw(pair))
            one, two = _FIELD.match(lines[first]), _FIELD.match(lines[second])
            assert one is not None and two is not None
            lines[first] = one.group(1) + "&anchor " + one.group(2) + one.group(3)
            alias = draw(st.sampled_from(("*anchor", "!!bool *anchor", "[*anchor, *anchor]")))
            lines[second] = two.group(1) + alias + two.group(3)
    out = "\n".join(lines) + "\n"
    if draw(st.integers(0, 4)) == 0:
        out = out[: draw(st.integers(0, len(out)))]
    return out


@st.composite
def retyped(draw: st.DrawFn, documents: list[Any]) -> list[Any]:
    """The parsed documents with one node replaced by a value of another type."""
    paths: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, child in node.items():
                paths.append((node, key))
                walk(child)
        elif isinstance(node, list):
            for index, child in enumerate(node):
                paths.append((node, index))
                walk(child)

    for document in documents:
        walk(document)
    if paths:
        parent, key = draw(st.sampled_from(paths))
        parent[key] = draw(
            st.one_of(
                st.none(),
                st.booleans(),
                st.integers(-(2**70), 2**70),
                st.floats(allow_nan=True, allow_infinity=True),
                st.text(max_size=12),
                st.lists(st.integers(), max_size=3),
                st.dictionaries(st.text(max_size=4), st.integers(), max_size=3),
                st.integers(1, 200).map(lambda d: nested_value(d)),
            )
        )
    return documents


def nested_value(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def encoded(draw: st.DrawFn, text: str) -> bytes:
    """``text`` as the bytes of a file: an encoding, maybe a stray byte somewhere."""
    encoding = draw(st.sampled_from(("utf-8", "utf-8", "utf-8-sig", "utf-16", "utf-32",
                                     "utf-16-le", "latin-1")))  # fmt: skip
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError:
        data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 3)) == 0:
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from(STRAY_BYTES)) + data[at:]
    return data


@dataclass(frozen=True)
class BrokenFile:
    """A broken copy of the example file ``example`` (its name), as ``suffix`` text."""

    example: str
    suffix: str
    data: bytes


@st.composite
def mutated_file(draw: st.DrawFn) -> BrokenFile:
    """One broken example file, YAML or JSON."""
    name = draw(st.sampled_from(sorted(EXAMPLES)))
    text = EXAMPLES[name]
    if draw(st.booleans()):
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
        if draw(st.booleans()):
            documents = draw(retyped(documents))
        body: Any = documents[0] if len(documents) == 1 else {
            "apiVersion": "v1", "kind": "List", "items": documents}  # fmt: skip
        text = json.dumps(body, indent=2, allow_nan=True)
        suffix = ".json"
    else:
        suffix = ".yaml"
    return BrokenFile(name, suffix, draw(encoded(draw(mutated_text(text)))))


PYTHON_INTERNALS = (
    "Traceback",
    "set_int_max_str_digits",
    "Exceeds the limit",
    "codec can't",
    "object has no attribute",
    "internal error",
)


def line_count(data: bytes) -> int:
    """An upper bound on the lines of ``data`` in any encoding it might be read in."""
    counts = [data.count(b"\n") + data.count(b"\r")]
    for codec in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be", "utf-8"):
        text = data.decode(codec, errors="replace")
        counts.append(text.count("\n") + text.count("\r") + text.count("\x85")
                      + text.count("\u2028") + text.count("\u2029"))  # fmt: skip
    return max(counts) + 1


def check_problems(problems: Iterable[Problem], file: str, lines: int) -> None:
    """What every problem must give, whatever the input: the file, a line inside it, a
    message of its own, and no Python-internal text (``internal error`` means a
    catch-all caught a bug: the fuzzer reports it)."""
    for problem in problems:
        assert problem.file == file, problem
        assert problem.line is not None and 1 <= problem.line <= lines, problem
        assert problem.message.strip(), problem
        text = str(problem)
        assert not any(inner in text for inner in PYTHON_INTERNALS), text
        text.encode("utf-8")  # printable
