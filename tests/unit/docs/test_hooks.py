"""The site's build hook: markers are filled or refused, and the first sidecar's block is
read from under its heading (the build compares the guide's with the README's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from docsite.hooks import FIRST_SIDECAR, FIRST_SIDECAR_PAGE, fill, first_sidecar

DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_a_marker_is_replaced_and_an_unknown_one_refused() -> None:
    filled = fill("before\n<!-- reference: settings -->\nafter\n")
    assert filled.startswith("before\n| environment |") and filled.endswith("\nafter\n")
    assert "<!--" not in filled
    with pytest.raises(ValueError, match="unknown reference marker 'setings'"):
        fill("<!-- reference: setings -->\n")


def test_the_first_sidecar_block_is_the_one_under_its_heading() -> None:
    text = f"```sh\nnot this\n```\n## {FIRST_SIDECAR}\n\nwords\n\n```sh\na \\\n  b\nc\n```\n"
    assert first_sidecar(text) == "a \\\n  b\nc\n"
    guide = (DOCS / FIRST_SIDECAR_PAGE).read_text()
    assert first_sidecar(guide).splitlines()[0] == ".venv/bin/pilothouse serve --config examples/"
