"""The command line every fleet benchmark shares: the mesh's shape, the fleet's channels,
fleet sizes, and turning the parsed arguments into the scenario's frozen options."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def fleet_parser(
    doc: str | None, *, services: int = 100, namespaces: int = 10, streams: int = 100
) -> argparse.ArgumentParser:
    """A parser described by the first paragraph of ``doc``, with the push fan-out mesh's
    shape (``--services``, ``--namespaces``, ``--endpoints``) and
    ``--streams-per-channel``."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--services", type=int, default=services)
    parser.add_argument("--namespaces", type=int, default=namespaces)
    parser.add_argument("--endpoints", type=int, default=2, help="WorkloadEntries per service")
    parser.add_argument(
        "--streams-per-channel",
        type=int,
        default=streams,
        help="proxies sharing one HTTP/2 connection (1: a connection each, as real sidecars)",
    )
    return parser


def sizes(text: str) -> tuple[int, ...]:
    """Fleet sizes given as ``500,1000,2000``."""
    found = tuple(int(part) for part in text.split(",") if part.strip())
    if not found or min(found) < 1:
        raise argparse.ArgumentTypeError("give fleet sizes like 500,1000,2000")
    return found


def parsed(
    parser: argparse.ArgumentParser,
    options: type[T],
    argv: Sequence[str] | None = None,
    **more: Any,
) -> T:
    """The scenario's options from the command line (each argument a field of the same
    name), ``more`` replacing or adding fields."""
    return options(**{**vars(parser.parse_args(argv)), **more})
