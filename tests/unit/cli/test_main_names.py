"""`pilothouse` imports only the module of the subcommand it runs, found by name in
``BY_NAME``: the table must name exactly what each subcommand module's parser registers,
aliases included (tests/integration/test_cli_lazy_imports.py runs the command); and the
index parser (top-level help, the version, a missing or mistyped subcommand) must answer
as the whole parser does."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from pilothouse.cli.main import BY_NAME, COMMANDS, SUBCOMMANDS, build_parser, index_parser


def registered(parser: argparse.ArgumentParser) -> set[str]:
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(commands.choices)


def test_the_table_names_what_each_module_registers() -> None:
    for load in SUBCOMMANDS:
        named = {name for name, loader in BY_NAME.items() if loader is load}
        assert registered(build_parser(load)) == named, load.__name__
    assert registered(build_parser()) == set(BY_NAME)


def test_the_index_names_every_subcommand_in_the_whole_parser_s_order() -> None:
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    listed = [(action.dest, action.help) for action in commands._choices_actions]
    assert listed == [(command.name, command.summary) for command in COMMANDS]
    assert registered(index_parser()) == set(BY_NAME)


def outcome(parser: argparse.ArgumentParser, words: list[str]) -> tuple[object, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        pytest.raises(SystemExit) as exited,
    ):
        parser.parse_args(words)
    return exited.value.code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "words", [[], ["--help"], ["-h"], ["--version"], ["serv"], ["proxy_status", "--help"]]
)
def test_the_index_parser_answers_as_the_whole_parser(words: list[str]) -> None:
    """What `pilothouse` prints and its exit code for top-level help, the version, and no
    or an unknown subcommand, whichever parser answers."""
    assert outcome(index_parser(), words) == outcome(build_parser(), words)
