"""The scale guide's admission-control section states the defaults the settings have (the
settings reference is generated from the same tree; this checks the prose)."""

from __future__ import annotations

import re
from pathlib import Path

from pilothouse.settings import AdmissionSettings

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guides" / "scale.md"


def section() -> str:
    text = GUIDE.read_text()
    start = text.index("## Admission control\n")
    return " ".join(text[start : text.index("\n## ", start + 1)].split())


def stated(pattern: str) -> str:
    found = re.search(pattern, section())
    assert found is not None, f"the admission-control section does not state {pattern!r}"
    return found.group(1)


def test_the_section_states_the_defaults() -> None:
    defaults = AdmissionSettings()
    assert float(stated(r"`PILOTHOUSE_XDS_ADMISSION_RATE`, (\d+) new streams a second")) == (
        defaults.rate
    )
    assert int(stated(r"`PILOTHOUSE_XDS_ADMISSION_BURST` \((\d+)\)")) == defaults.burst
    assert float(stated(r"`PILOTHOUSE_XDS_ADMISSION_WAIT` \((\d+) s\)")) == defaults.wait
    assert stated(r"`PILOTHOUSE_XDS_ADMISSION_MAX_CONNECTIONS`, (off) by default") == "off"
    assert defaults.max_connections == 0
    held = int(stated(r"rate × wait streams \(([\d,]+)\) wait at a time").replace(",", ""))
    assert held == defaults.rate * defaults.wait


def test_the_reasons_name_the_default_wait_and_rate() -> None:
    defaults = AdmissionSettings()
    assert f"The {defaults.wait:g} s wait" in section()
    assert f"at {defaults.rate:g} a second" in section()
