"""The CLI reference: every subcommand and flag, read from ``pilothouse``'s argparse
parsers (:func:`pilothouse.cli.main.build_parser`) and written as Markdown.

A command is a :class:`Command` (its words, aliases, usage, description and options);
:func:`commands` walks the parser tree from ``pilothouse`` itself (``--version``) down,
sub-subcommands (``token issuer``) included,
and :func:`markdown` renders one section per command with a table of its options.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass

from pilothouse.cli.main import build_parser


@dataclass(frozen=True)
class Option:
    """One argument of a command: how it is written, its value, default and help."""

    flags: tuple[str, ...]
    """``("-n", "--namespace")``; empty for a positional argument."""
    metavar: str
    default: str
    help: str


@dataclass(frozen=True)
class Command:
    """One (sub)command of ``pilothouse``."""

    words: tuple[str, ...]
    """``("proxy-status",)``, ``("token", "create")``."""
    aliases: tuple[str, ...]
    summary: str
    usage: str
    description: str
    options: tuple[Option, ...]

    @property
    def name(self) -> str:
        return " ".join(("pilothouse", *self.words))


def commands() -> tuple[Command, ...]:
    """``pilothouse`` itself, then every command under it, in the order ``--help`` lists
    them."""
    root = build_parser()
    top = Command(
        words=(),
        aliases=(),
        summary="",
        usage=" ".join(root.format_usage().split())[len("usage: ") :],
        description=root.description or "",
        options=tuple(_options(root)),
    )
    return (top, *_walk(root, ()))


def _subcommands(
    parser: argparse.ArgumentParser,
) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> Iterator[Command]:
    children = _subcommands(parser)
    if children is None:
        return
    summaries = {choice.dest: choice.help or "" for choice in children._choices_actions}
    names: dict[int, list[str]] = {}
    for name, child in children.choices.items():
        names.setdefault(id(child), []).append(name)
    for name, child in children.choices.items():
        primary, *aliases = names[id(child)]
        if name != primary:
            continue
        path = (*words, name)
        yield Command(
            words=path,
            aliases=tuple(aliases),
            summary=summaries.get(name, ""),
            usage=" ".join(child.format_usage().split())[len("usage: ") :],
            description=child.description or "",
            options=tuple(_options(child)),
        )
        yield from _walk(child, path)


def _options(parser: argparse.ArgumentParser) -> Iterator[Option]:
    formatter = parser._get_formatter()
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(
            action, argparse._SubParsersAction | argparse._HelpAction
        ):
            continue
        metavar = ""
        if action.nargs != 0:
            metavar = formatter._metavar_formatter(action, action.dest.upper())(1)[0]
        default = action.default
        shown = "" if default in (None, False, [], "", argparse.SUPPRESS) else str(default)
        yield Option(
            flags=tuple(action.option_strings),
            metavar=metavar,
            default=shown,
            help=formatter._expand_help(action) if action.help else "",
        )


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def markdown() -> str:
    """The whole CLI reference, one ``##`` section per command."""
    parts: list[str] = []
    for command in commands():
        parts.append(f"## `{command.name}`\n")
        if command.aliases:
            also = ", ".join(
                f"`{' '.join(('pilothouse', *command.words[:-1], a))}`" for a in command.aliases
            )
            parts.append(f"Also {also}.\n")
        if command.summary:
            parts.append(f"{_cell(command.summary)[:1].upper()}{_cell(command.summary)[1:]}.\n")
        parts.append(f"```\n{command.usage}\n```\n")
        if command.description:
            parts.append(f"{_cell(command.description)}\n")
        if command.options:
            parts.append("| argument | value | default | help |\n|---|---|---|---|")
            for option in command.options:
                written = ", ".join(f"`{flag}`" for flag in option.flags) or _code(option.metavar)
                value = _code(option.metavar) if option.flags else ""
                parts.append(
                    f"| {written} | {value} | {_code(_cell(option.default))} | "
                    f"{_cell(option.help)} |"
                )
            parts.append("")
    return "\n".join(parts)
