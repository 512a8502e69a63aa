"""The `pilothouse` command: one subcommand per module in this package."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pilothouse import __version__
from pilothouse.cli import (
    agent,
    analyze,
    apply,
    bootstrap,
    delete,
    get,
    inspector,
    loadtest,
    proxy_config,
    proxy_status,
    serve,
    tokens,
    validate,
    version,
    workload_entry,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pilothouse",
        description="A service-mesh control plane: Istio config in, xDS and MCP out.",
    )
    parser.add_argument("--version", action="version", version=f"pilothouse {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    validate.add_parser(commands)
    serve.add_parser(commands)
    bootstrap.add_parser(commands)
    tokens.add_parser(commands)
    loadtest.add_parser(commands)
    proxy_status.add_parser(commands)
    proxy_config.add_parser(commands)
    inspector.add_parser(commands)
    apply.add_parser(commands)
    get.add_parser(commands)
    delete.add_parser(commands)
    agent.add_parser(commands)
    analyze.add_parser(commands)
    version.add_parser(commands)
    workload_entry.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    code = args.run(args)
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
