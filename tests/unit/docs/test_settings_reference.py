"""The generated settings reference lists exactly the knobs Settings has, each with its
variable, the ``serve`` flag that sets it, its type, its default and a help text (every
field of the tree has a docstring), and the page asks for it."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any, Literal

from docsite import settings_reference
from docsite.hooks import fill
from pilothouse.cli.serve_args import FLAGS
from pilothouse.settings import Knob, knobs

PAGE = Path(__file__).resolve().parents[3] / "docs" / "reference" / "settings.md"
TYPE_WORDS = {
    int: {"int"},
    float: {"seconds or number"},
    bool: {"bool"},
    str: {"string"},
}


CELL = re.compile(r"((?:`[^`]*`|\\\||[^|`])*)\|")
"""A table cell up to its closing ``|``: a ``|`` inside a code span or escaped is text."""


def table(text: str) -> dict[str, list[str]]:
    """The table's rows by variable: [flag, type, default, help]."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        if not line.startswith("| `PILOTHOUSE_"):
            continue
        cells = [cell.strip() for cell in CELL.findall(line.strip()[1:])]
        assert len(cells) == 5, line
        name = cells[0].strip("`")
        assert name not in rows, f"{name} is listed twice"
        rows[name] = cells[1:]
    return rows


def rendered(default: Any) -> str:
    if isinstance(default, bool):
        return "`true`" if default else "`false`"
    if default in ("", ()):
        return "none"
    if isinstance(default, tuple):
        return "`" + ",".join(str(item) for item in default) + "`"
    if isinstance(default, float):
        return f"`{default:g}`"
    return f"`{default}`"


def type_fits(knob: Knob, words: str) -> bool:
    if knob.kind in TYPE_WORDS:
        return words in TYPE_WORDS[knob.kind]
    if typing.get_origin(knob.kind) is Literal:
        return words == " or ".join(f"`{c}`" for c in typing.get_args(knob.kind))
    return words.startswith(("list", "paths"))


def test_the_page_is_the_generated_table() -> None:
    text = PAGE.read_text()
    assert text.count("<!-- reference: settings -->") == 1
    assert settings_reference.markdown() in fill(text)


def test_the_table_lists_exactly_the_knobs() -> None:
    assert set(table(settings_reference.markdown())) == {knob.env for knob in knobs()}


def test_each_row_has_the_knobs_type_default_and_help() -> None:
    rows = table(settings_reference.markdown())
    for knob in knobs():
        _, words, default, help_text = rows[knob.env]
        assert type_fits(knob, words), f"{knob.env}: type {words!r} for {knob.kind}"
        assert default == rendered(knob.default), f"{knob.env}: default {default!r}"
        assert len(help_text) > 10, f"{knob.env}: its field in settings.py has no docstring"


def test_each_row_names_the_flag_that_sets_the_knob() -> None:
    rows = table(settings_reference.markdown())
    by_path = {path: dest for dest, path in FLAGS.items()}
    for knob in knobs():
        flag = rows[knob.env][0]
        dest = by_path.get(knob.path)
        if dest is None:
            assert flag == "", f"{knob.env} has no flag, the reference names {flag!r}"
        else:
            named = re.match(r"`--([a-z-]+)", flag)
            assert named is not None, f"{knob.env}: the reference names no flag"
            assert named.group(1).replace("-", "_") == dest, knob.env


def test_a_docstring_is_read_as_markdown() -> None:
    assert settings_reference.markdown_text("``a``, :mod:`b.c`,\n  d") == "`a`, `b.c`, d"
