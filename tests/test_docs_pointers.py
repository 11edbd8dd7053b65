"""Every pointer from the package to the documentation leads somewhere.

Module docstrings say where their design notes are ("Design notes:
docs/dev/zero_loss_design.md, section ``isoapprox.ideal._line``"); when
notes move between pages, the pointers must move with them.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POINTER = re.compile(r"docs/([\w/]+\.md)(?:,\s*(?:section\s*)?``([^`]+)``)?")


def _pointers():
    for path in sorted((ROOT / "isoapprox").rglob("*.py")):
        for m in POINTER.finditer(path.read_text(encoding="utf-8")):
            yield path.relative_to(ROOT), m.group(1), m.group(2)


def test_pointers_name_a_page_and_one_of_its_headings():
    found = list(_pointers())
    assert found, "no pointer to docs/ found: the pattern is out of date"
    bad = []
    for source, page, section in found:
        doc = ROOT / "docs" / page
        if not doc.is_file():
            bad.append(f"{source}: docs/{page} does not exist")
            continue
        if section is None:
            continue
        headings = [line for line in doc.read_text(encoding="utf-8").splitlines()
                    if line.startswith("#")]
        if not any(section in h for h in headings):
            bad.append(f"{source}: docs/{page} has no heading naming {section!r}")
    assert not bad, "\n".join(bad)
