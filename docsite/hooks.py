"""The MkDocs hook (``hooks:`` in ``mkdocs.yml``) that fills the reference pages.

A page asks for a generated part with a marker line, ``<!-- reference: NAME -->``,
where NAME is ``cli``, ``settings`` or ``metrics``; the hook replaces the line with that
part, generated from the code as the site is built. A marker naming nothing known
fails the build.

The first sidecar's commands are written twice, on the README's front page (which
``tests/e2e/test_readme_first_sidecar.py`` runs as written) and in the getting-started
guide: the build fails when the two blocks differ.

It also brings ``BENCHMARKS.md`` (which ``make bench`` writes at the top of the
repository) and its plots into the site as ``benchmarks.md``, read where they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

from docsite import cli_reference, metrics_reference, settings_reference

GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_reference.markdown,
    "settings": settings_reference.markdown,
    "metrics": metrics_reference.markdown,
}
ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = "BENCHMARKS.md"
BENCHMARKS_PAGE = "benchmarks.md"
FIRST_SIDECAR = "A first sidecar, with something to curl"
FIRST_SIDECAR_PAGE = "guides/getting-started.md"
MARKER = re.compile(r"^<!-- reference: ([a-z]+) -->$", re.M)


def fill(markdown: str) -> str:
    """``markdown`` with each marker replaced by its generated part."""

    def generated(found: re.Match[str]) -> str:
        name = found.group(1)
        if name not in GENERATORS:
            raise ValueError(f"unknown reference marker {name!r}: one of {sorted(GENERATORS)}")
        return GENERATORS[name]()

    return MARKER.sub(generated, markdown)


def first_sidecar(markdown: str) -> str:
    """The ``sh`` block under the first-sidecar heading of a page."""
    section = markdown[markdown.index(f" {FIRST_SIDECAR}\n") :]
    block = section[section.index("```sh\n") + len("```sh\n") :]
    return block[: block.index("```")]


def on_page_markdown(markdown: str, page: Page, **_: Any) -> str:
    if page.file.src_uri == FIRST_SIDECAR_PAGE:
        readme = (ROOT / "README.md").read_text()
        if first_sidecar(markdown) != first_sidecar(readme):
            raise ValueError(
                f"{FIRST_SIDECAR_PAGE}: the first sidecar's commands differ from the README's"
            )
    return fill(markdown)


def on_files(files: Files, config: MkDocsConfig, **_: Any) -> Files:
    files.append(File.generated(config, BENCHMARKS_PAGE, abs_src_path=str(ROOT / BENCHMARKS)))
    for plot in sorted(ROOT.glob("BENCHMARKS-*.png")):
        files.append(File.generated(config, plot.name, abs_src_path=str(plot)))
    return files
