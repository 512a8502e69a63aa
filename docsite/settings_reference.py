"""The settings reference: every knob of :class:`pilothouse.settings.Settings` with its
environment variable, the ``serve`` flag that sets it, its type, default and help.

The help is the field's own docstring in ``settings.py`` (read with :mod:`ast`, since
Python keeps no attribute docstrings at run time); the flag is the ``serve`` option
whose destination :data:`pilothouse.cli.serve_args.FLAGS` maps to the knob.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import itertools
import re
import textwrap
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pilothouse.cli.main import build_parser
from pilothouse.cli.serve_args import FLAGS
from pilothouse.settings import Settings, knobs

REPEATABLE = " (repeatable)"


@dataclass(frozen=True)
class Row:
    """One knob as the reference shows it."""

    env: str
    path: str
    flag: str
    """``--workers N``; empty when only the variable sets the knob."""
    type: str
    default: str
    help: str


def field_docs(tree: type[Any]) -> dict[str, str]:
    """``tree``'s field docstrings by field name (the string right after the field)."""
    source = textwrap.dedent(inspect.getsource(tree))
    (node,) = ast.parse(source).body
    assert isinstance(node, ast.ClassDef)
    docs: dict[str, str] = {}
    body = node.body
    for item, after in itertools.pairwise(body):
        if (
            isinstance(item, ast.AnnAssign)
            and isinstance(item.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[item.target.id] = markdown_text(after.value.value)
    return docs


def markdown_text(docstring: str) -> str:
    """A docstring's reStructuredText as one line of Markdown: ``literal`` and
    :role:`target` become code spans."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", " ".join(docstring.split()))
    return text.replace("``", "`")


def _all_docs(tree: type[Any], prefix: str, found: dict[str, str]) -> None:
    docs = field_docs(tree)
    hints = typing.get_type_hints(tree)
    for item in dataclasses.fields(tree):
        kind = hints[item.name]
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            _all_docs(kind, f"{prefix}{item.name}.", found)
        else:
            found[f"{prefix}{item.name}"] = docs.get(item.name, "")


def _serve_flags() -> dict[str, str]:
    """``serve``'s flags by destination, written with their value (``--workers N``)."""
    commands = build_parser()._subparsers
    assert commands is not None
    (choices,) = (a for a in commands._actions if isinstance(a, argparse._SubParsersAction))
    serve = choices.choices["serve"]
    flags: dict[str, str] = {}
    for action in serve._actions:
        if not action.option_strings:
            continue
        flag = action.option_strings[-1]
        if action.nargs != 0 and action.metavar:
            flag = f"{flag} {action.metavar}"
        if action.nargs != 0 and isinstance(action, argparse._AppendAction):
            flag = f"{flag}{REPEATABLE}"
        flags[action.dest] = flag
    return flags


def type_words(kind: Any) -> str:
    """How a knob's value is written in its variable."""
    if typing.get_origin(kind) is Literal:
        return " or ".join(f"`{choice}`" for choice in typing.get_args(kind))
    if typing.get_origin(kind) is tuple:
        item = typing.get_args(kind)[0]
        return "paths, `:`-separated" if item is Path else "list, `,`-separated"
    return {int: "int", float: "seconds or number", bool: "bool", str: "string"}[kind]


def default_words(default: Any) -> str:
    if isinstance(default, bool):
        return "`true`" if default else "`false`"
    if default in ("", ()):
        return "none"
    if isinstance(default, tuple):
        return "`" + ",".join(str(item) for item in default) + "`"
    if isinstance(default, float):
        return f"`{default:g}`"
    return f"`{default}`"


def rows() -> tuple[Row, ...]:
    """Every knob, in the order of the tree."""
    docs: dict[str, str] = {}
    _all_docs(Settings, "", docs)
    flags = _serve_flags()
    by_path = {path: flags[dest] for dest, path in FLAGS.items()}
    return tuple(
        Row(
            env=knob.env,
            path=knob.path,
            flag=by_path.get(knob.path, ""),
            type=type_words(knob.kind),
            default=default_words(knob.default),
            help=docs[knob.path],
        )
        for knob in knobs()
    )


def markdown() -> str:
    """The settings table."""
    lines = [
        "| environment | flag | type | default | help |",
        "|---|---|---|---|---|",
    ]
    for row in rows():
        written, repeatable, _ = row.flag.partition(REPEATABLE)
        flag = f"`{written}`{repeatable}" if row.flag else ""  # a table keeps a code span's |
        help_text = row.help.replace("|", "\\|")
        lines.append(f"| `{row.env}` | {flag} | {row.type} | {row.default} | {help_text} |")
    return "\n".join(lines) + "\n"
