"""``pilothouse analyze --impact FILE --admin URL``: what applying FILE would push.

The objects are read and validated here first (errors at ``file:line``, nothing is
asked), then handed to the running servers (:mod:`pilothouse.cli.impact_report`), which
answer with their own push planner which of their proxies the change would push and
what would change for each. ``apply --dry-run --admin URL`` asks the same for the
objects it would write (:func:`print_impact`).

Exit status: 0 when every server answered; 2 on usage errors, invalid objects, or a
server that could not answer (what the others answered is printed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Final, TextIO

from pilothouse.cli.admin_client import BadAdminAddress, admin_url
from pilothouse.cli.impact_report import ask_impact, gathered, render
from pilothouse.cli.validate import _files
from pilothouse.config.load import Loader, printable
from pilothouse.kinds.table import SCHEMAS

EXIT_OK: Final = 0
EXIT_TROUBLE: Final = 2


def run_impact(
    paths: Sequence[str],
    admins: Sequence[str],
    *,
    namespace: str,
    output: str,
    timeout: float,
    stdin: TextIO,
    out: TextIO,
    err: TextIO,
) -> int:
    """Read ``paths`` (``-``: ``stdin``), ask every server in ``admins``, print."""
    files, missing, unreadable = _files(list(paths))
    for path in missing:
        print(f"pilothouse analyze: {printable(path)}: no such file or directory", file=err)
    for problem in unreadable:
        print(f"error: {problem}", file=err)
    if missing or unreadable:
        return EXIT_TROUBLE
    loader = Loader(SCHEMAS, default_namespace=namespace, source="impact", skip_plain=True)
    texts: list[str] = []
    errors = 0
    for file in files:
        name = "<stdin>" if file == "-" else file
        try:
            text = stdin.read() if file == "-" else Path(file).read_text(errors="replace")
        except OSError as cannot:
            print(f"error: {printable(name)}: {cannot.strerror or cannot}", file=err)
            return EXIT_TROUBLE
        loaded = loader.load_text(text, name)
        for problem in loaded.problems:
            print(f"error: {problem}", file=err)
        errors += len(loaded.errors)
        texts.append(text)
    if errors:
        print(f"error: {errors} error(s): nothing was asked", file=err)
        return EXIT_TROUBLE
    return print_impact(
        "\n---\n".join(texts), admins, namespace=namespace, output=output,
        timeout=timeout, out=out, err=err,
    )  # fmt: skip


def print_impact(
    text: str,
    admins: Sequence[str],
    *,
    namespace: str,
    output: str,
    timeout: float,
    out: TextIO,
    err: TextIO,
) -> int:
    """Ask every server in ``admins`` the impact of the objects in ``text``; print the
    merged answer as ``output`` (``table``, ``json``, ``yaml``)."""
    try:
        urls = [admin_url(admin) for admin in admins]
    except BadAdminAddress as bad:
        print(f"error: {bad}", file=err)
        return EXIT_TROUBLE
    answers = asyncio.run(ask_impact(urls, text, namespace=namespace, timeout=timeout))
    asked = gathered(answers)
    for problem in asked.problems:
        print(f"error: {problem}", file=err)
    if len(asked.problems) < len(answers) or not answers:
        render(asked.answer, output, out)
    return EXIT_TROUBLE if asked.problems else EXIT_OK
