"""The raw-role check of the built documentation (.ci/check_raw_roles.py).

A Markdown page that writes a role the reStructuredText way shows it as text;
the check must find every such role and never a role shown on purpose, in a
code block or in inline code.
"""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "check_raw_roles.py"


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location("check_raw_roles", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CODE = '<code class="docutils literal notranslate"><span class="pre">{}</span></code>'


@pytest.mark.parametrize("html", [
    # what MyST makes of :func:`isoapprox.d_star` in running text
    "<p>see :func:" + CODE.format("isoapprox.d_star") + " for D*</p>",
    "<h3>What :class:" + CODE.format("Scenario") + " holds</h3>",
    "<td>:py:meth:" + CODE.format("CollapseMonitor.update") + "</td>",
    "<p>a role left whole: :mod:`isoapprox.io`</p>",
])
def test_a_raw_role_is_found(check, html):
    assert len(check.raw_roles(html)) == 1


@pytest.mark.parametrize("html", [
    # code samples and inline code that show the syntax on purpose
    '<div class="highlight"><pre>see :func:`isoapprox.d_star` and :class:`X`\n</pre></div>',
    "<p>write " + CODE.format(":func:`x`") + " in reStructuredText</p>",
    # prose with colons, and the MyST spelling
    "<p>the class: " + CODE.format("x") + ", a 3:1 ratio, {func} in MyST</p>",
    '<p><a class="reference internal" href="x.html"><code class="xref py py-func">'
    '<span class="pre">d_star()</span></code></a></p>',
])
def test_code_and_prose_are_not_raw_roles(check, html):
    assert check.raw_roles(html) == []


def test_main_fails_on_a_planted_role(check, tmp_path, capsys):
    (tmp_path / "good.html").write_text("<p>" + CODE.format(":func:`x`") + "</p>")
    assert check.main([str(tmp_path)]) == 0
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "bad.html").write_text("<p>:func:" + CODE.format("x") + "</p>")
    assert check.main([str(tmp_path)]) == 1
    assert "sub/bad.html: raw role" in capsys.readouterr().out
