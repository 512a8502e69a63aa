"""Fuzz: broken and re-wired copies of the example mesh through ``pilothouse analyze``.

Whatever the files say, no exception escapes, the exit status is analyze's (0 or 79),
every line printed is one finding (``Level [CODE] (…) message``), and no analyzer fails
(IST0001 InternalError would mean a bug). Two kinds of input: files broken as people and
tools break them (:mod:`tests.fuzz.mesh_mutations`), and valid files whose names, hosts,
labels and namespaces are swapped for others, which rewires every reference the
analyzers follow.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pilothouse.cli.main import main
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.mesh_mutations import EXAMPLES, PYTHON_INTERNALS, ROOT, BrokenFile, mutated_file

FINDING = re.compile(r"^(Error|Warning|Info) \[(IST|PH)\d{4}\] ")
WORDS = ("reviews", "details", "ratings", "productpage", "bookinfo", "v1", "v2", "app", "istio")
REPLACEMENTS = (
    "reviews", "details", "x", "*", "*.bookinfo.svc.cluster.local", "istio-system",
    "bookinfo/reviews", "~", ".", "v9", "app", "version", "a" * 70, "detials", "mesh",
)  # fmt: skip


def analyze(mesh: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["analyze", str(mesh)])
    return code, out.getvalue()


def check(code: int, printed: str) -> None:
    assert code in (0, 79), printed
    for line in printed.splitlines():
        assert FINDING.match(line), line
        assert "[IST0001]" not in line, line
        assert not any(inner in line for inner in PYTHON_INTERNALS), line


@fuzz_settings(0.5)
@given(mutated_file())
def test_broken_files_are_findings(case: BrokenFile) -> None:
    with tempfile.TemporaryDirectory() as folder:
        mesh = Path(folder)
        shutil.copytree(ROOT / "examples", mesh, dirs_exist_ok=True)
        (original,) = mesh.rglob(case.example)
        original.unlink()
        original.with_suffix(case.suffix).write_bytes(case.data)
        check(*analyze(mesh))


@fuzz_settings(0.5)
@given(
    st.lists(
        st.tuples(st.sampled_from(WORDS), st.sampled_from(REPLACEMENTS)), min_size=1, max_size=4
    ),
    st.sampled_from(sorted(EXAMPLES)),
)
def test_rewired_references_are_analyzed(swaps: list[tuple[str, str]], name: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        mesh = Path(folder)
        shutil.copytree(ROOT / "examples", mesh, dirs_exist_ok=True)
        (file,) = mesh.rglob(name)
        text = file.read_text()
        for word, replacement in swaps:
            text = re.sub(rf"\b{re.escape(word)}\b", replacement, text, count=2)
        file.write_text(text)
        check(*analyze(mesh))
