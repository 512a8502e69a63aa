"""The generated CLI reference names every subcommand (aliases and ``token``'s actions
included) and every flag and positional argument of each, with its help: walked here
from the parsers themselves, not through the generator's own walk."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

from docsite import cli_reference
from pilothouse.cli.main import build_parser


def subcommands(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield (*words, name), child
                yield from subcommands(child, (*words, name))


def sections(text: str) -> dict[str, str]:
    """The page's ``## `pilothouse ...``` sections by command."""
    parts = re.split(r"^## `(pilothouse[^`]*)`$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_subcommand_and_alias_has_a_section_or_is_named() -> None:
    text = cli_reference.markdown()
    found = sections(text)
    walked = list(subcommands(build_parser()))
    assert len(walked) > 15
    for words, _ in walked:
        name = " ".join(("pilothouse", *words))
        assert name in found or f"`{name}`" in text, f"{name} is not in the CLI reference"
    assert "pilothouse ps" not in found and "`pilothouse ps`" in found["pilothouse proxy-status"]
    assert {"pilothouse token issuer", "pilothouse token create"} <= set(found)


def test_every_flag_of_every_command_is_in_its_section() -> None:
    found = sections(cli_reference.markdown())
    assert "`--version`" in found["pilothouse"]
    for words, parser in [((), build_parser()), *subcommands(build_parser())]:
        name = " ".join(("pilothouse", *words))
        if name not in found:
            continue  # an alias, checked above
        section = found[name]
        for action in parser._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue
            if isinstance(action, argparse._SubParsersAction):
                continue
            for flag in action.option_strings:
                assert f"`{flag}`" in section, f"{name}: {flag} is not in the reference"
            if not action.option_strings:
                assert f"| `{action.metavar or action.dest}` |" in section, (name, action.dest)
            if action.help:
                first = action.help.split("%")[0].split()[:3]
                assert " ".join(first) in " ".join(section.split()), (name, action.dest)


def test_a_suppressed_flag_stays_out() -> None:
    section = sections(cli_reference.markdown())["pilothouse loadtest"]
    assert "`--worker`" not in section  # the processes loadtest starts for itself
