"""`pilothouse` imports only the module of the subcommand it runs, found by name in
``BY_NAME``: the table must name exactly what each subcommand module's parser registers,
aliases included (tests/integration/test_cli_lazy_imports.py runs the command)."""

from __future__ import annotations

import argparse

from pilothouse.cli.main import BY_NAME, SUBCOMMANDS, build_parser


def registered(parser: argparse.ArgumentParser) -> set[str]:
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(commands.choices)


def test_the_table_names_what_each_module_registers() -> None:
    for load in SUBCOMMANDS:
        named = {name for name, loader in BY_NAME.items() if loader is load}
        assert registered(build_parser(load)) == named, load.__name__
    assert registered(build_parser()) == set(BY_NAME)
