"""The README's settings table lists exactly the knobs Settings has, with their
variables, flags, types and defaults, so that the documentation cannot drift."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any, Literal

from pilothouse.cli.serve_args import FLAGS
from pilothouse.settings import Knob, knobs

README = Path(__file__).resolve().parents[3] / "README.md"
TYPE_WORDS = {
    int: {"int"},
    float: {"seconds", "number"},
    bool: {"bool"},
    str: {"string", "host:port", "path"},
}


def table() -> dict[str, list[str]]:
    """The settings table's rows by variable: [flag, type, default, meaning]."""
    text = README.read_text()
    section = text[text.index("### Settings\n") :]
    section = section[: section.index("\n## ")]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        if not line.startswith("| `PILOTHOUSE_"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
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
        return "`" + ",".join(default) + "`"
    if isinstance(default, float):
        return f"`{default:g}`"
    return f"`{default}`"


def type_fits(knob: Knob, words: str) -> bool:
    if knob.kind in TYPE_WORDS:
        return words in TYPE_WORDS[knob.kind]
    if typing.get_origin(knob.kind) is Literal:
        return words == " or ".join(f"`{c}`" for c in typing.get_args(knob.kind))
    return words.startswith(("list", "paths"))


def test_the_table_lists_exactly_the_knobs() -> None:
    assert set(table()) == {knob.env for knob in knobs()}


def test_each_row_has_the_knobs_type_and_default() -> None:
    rows = table()
    for knob in knobs():
        _, words, default, meaning = rows[knob.env]
        assert type_fits(knob, words), f"{knob.env}: type {words!r} for {knob.kind}"
        assert default.startswith(rendered(knob.default)), f"{knob.env}: default {default!r}"
        assert meaning, knob.env


def test_each_row_names_the_flag_that_sets_the_knob() -> None:
    rows = table()
    by_path = {path: dest for dest, path in FLAGS.items()}
    for knob in knobs():
        flag = rows[knob.env][0]
        dest = by_path.get(knob.path)
        if dest is None:
            assert flag == "", f"{knob.env} has no flag, the README names {flag!r}"
        else:
            named = re.match(r"`--([a-z-]+)", flag)
            assert named is not None, f"{knob.env}: the README names no flag"
            assert named.group(1).replace("-", "_") == dest, knob.env
