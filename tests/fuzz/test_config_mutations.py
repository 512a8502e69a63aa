"""Fuzz: broken copies of the example mesh through the Loader, the file source and the
``validate`` CLI. No exception escapes, every problem names its file and a line in it,
and the file source keeps the last good version of whatever it rejects."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pilothouse.cli.main import main
from pilothouse.config.load import Loader
from pilothouse.config.validation.report import Severity
from pilothouse.kinds.table import SCHEMAS
from pilothouse.sources.fs import FileSource
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.mesh_mutations import (
    EXAMPLES,
    PYTHON_INTERNALS,
    ROOT,
    BrokenFile,
    check_problems,
    line_count,
    mutated_file,
)

LOADER = Loader(SCHEMAS)


@fuzz_settings(1.0)
@given(mutated_file())
def test_loader_turns_every_mutation_into_problems(case: BrokenFile) -> None:
    name = f"mesh{case.suffix}"
    result = LOADER.load_bytes(case.data, name)
    check_problems(result.problems, name, line_count(case.data))
    for key in result.rejected:
        assert any(p.key == key for p in result.errors), key


@fuzz_settings(0.5)
@given(mutated_file())
def test_file_source_keeps_the_last_good_version_of_what_it_rejects(case: BrokenFile) -> None:
    """One example file's content replaced by a broken one; a JSON one is also renamed
    (``x.yaml`` to ``x.json``) in the same change."""
    with tempfile.TemporaryDirectory() as folder:
        mesh = Path(folder)
        shutil.copytree(ROOT / "examples", mesh, dirs_exist_ok=True)
        source = FileSource(mesh)
        source.load_all()
        before = {key: source.store.get(key) for key in source.store.keys()}
        (original,) = mesh.rglob(case.example)
        owned = set(source.statuses()[str(original)].objects)
        target = original.with_suffix(case.suffix)
        if target != original:
            original.unlink()
        target.write_bytes(case.data)
        source.reload(sorted({str(original), str(target)}))
        status = source.statuses()[str(target)]
        check_problems(status.problems, str(target), line_count(case.data))
        errors = [p for p in status.problems if p.severity is Severity.ERROR]
        contested = {p.key for p in errors if "duplicate" in p.message or "already" in p.message}
        for key, config in before.items():
            if key not in owned:
                assert source.store.get(key) == config, f"{key} of another file changed"
            elif any(p.key == key for p in errors) and key not in contested:
                assert source.store.get(key) == config, f"{key}: the last good version went"


_LINE = re.compile(r"^(?P<file>.+?):(?P<line>\d+): \S")


@fuzz_settings(0.5)
@given(st.lists(mutated_file(), min_size=1, max_size=3), st.booleans())
def test_validate_cli_reports_every_mutation(
    cases: list[BrokenFile], odd_name: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        lines: dict[str, int] = {}
        for index, case in enumerate(cases):
            stem = b"bad\xff" if odd_name and index == 0 else b"mesh"
            path = os.fsencode(folder) + b"/" + stem + str(index).encode() + case.suffix.encode()
            with open(path, "wb") as handle:
                handle.write(case.data)
            shown = os.fsdecode(path)
            shown = shown.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            lines[shown] = line_count(case.data)
        for output in ("json", "text"):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(["validate", "-o", output, folder])
            assert code in (0, 1), err.getvalue()
            assert not any(inner in err.getvalue() for inner in PYTHON_INTERNALS)
            if output == "json":
                report = json.loads(out.getvalue())
                assert report["valid"] is (code == 0)
                for problem in report["problems"]:
                    assert problem["file"] in lines, problem
                    assert 1 <= problem["line"] <= lines[problem["file"]], problem
                    assert problem["message"].strip()
                    assert not any(inner in problem["message"] for inner in PYTHON_INTERNALS)
            else:
                for line in out.getvalue().splitlines():
                    match = _LINE.match(line)
                    assert match is not None, line
                    assert match["file"] in lines, line
                    assert 1 <= int(match["line"]) <= lines[match["file"]], line


def test_the_mutations_start_from_the_example_mesh() -> None:
    """The strategies mutate real config: every example file loads cleanly as is."""
    assert len(EXAMPLES) >= 5
    for name, text in EXAMPLES.items():
        result = LOADER.load_text(text, name)
        assert result.ok and result.configs, name
