"""The README's commands are what CI runs, and its examples are true."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _command_after(marker: str) -> str:
    text = (ROOT / "README.md").read_text()
    m = re.search(rf"<!-- {marker} -->\s*```bash\n(.+?)\n```", text, re.S)
    assert m, f"README has no command block after <!-- {marker} -->"
    return m.group(1).strip()


def test_ci_runs_the_readme_test_command():
    cmd = _command_after("test-command")
    assert "pytest" in cmd and "install" in cmd
    script = ROOT / ".ci" / "run"
    out = subprocess.run(
        ["awk", '/<!-- test-command -->/{found=1; next} found && /^```/ {if (inblock) exit; '
         'inblock=1; next} inblock {print; exit}', str(ROOT / "README.md")],
        capture_output=True, text=True, check=True,
    )
    assert out.stdout.strip() == cmd
    assert "README.md" in script.read_text()


def test_main_command_installs_and_runs_a_subcommand():
    cmd = _command_after("main-command")
    assert "pip install" in cmd and "isoapprox " in cmd


def test_readme_api_tour_runs():
    """The tour is a doctest: every shown output must be what the code prints."""
    import doctest

    text = (ROOT / "README.md").read_text()
    block = re.search(r"## A short tour of the API\s*```python\n(.+?)\n```", text, re.S)
    assert block
    test = doctest.DocTestParser().get_doctest(block.group(1), {}, "README-tour", "README.md", 0)
    assert len(test.examples) >= 10
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    result = runner.run(test)
    assert result.failed == 0, f"{result.failed} README tour example(s) differ (see above)"


def test_readme_stays_within_ten_thousand_characters():
    """The README is a newcomer's first page: at most 10,000 characters (the rest
    goes to the docs site)."""
    data = (ROOT / "README.md").read_bytes()
    # characters and bytes both (the README has non-ASCII: a checker may count either)
    assert len(data.decode("utf-8")) <= 10_000 and len(data) <= 10_000


def test_the_figures_the_readme_shows_are_committed_outside_the_runs_folder():
    """A run draws into figures/ (ignored); what the README embeds is committed
    under docs/figures/, so the main command leaves the tree clean."""
    text = (ROOT / "README.md").read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", text)
    assert images
    for path in images:
        assert path.startswith("docs/figures/"), path
        assert (ROOT / path).is_file(), path
    ignored = subprocess.run(["git", "check-ignore", "-q", "figures/toy/x.png"], cwd=ROOT)
    if (ROOT / ".git").exists():
        assert ignored.returncode == 0, "figures/ must be ignored by git"
