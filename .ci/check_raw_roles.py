"""Fail when the built HTML shows a cross-reference role as literal text.

A Markdown (MyST) page that uses the reStructuredText spelling of a role,
``:func:`isoapprox.nearest_ideal```, does not get a link: the page shows the
role name followed by the code, ":func:" then ``isoapprox.nearest_ideal``.
MyST's spelling is ``{func}`isoapprox.nearest_ideal```.  Sphinx says nothing
about it, so this check reads the built pages instead.

What counts as a raw role: a role name between colons (``:func:``,
``:py:class:``, ``:ref:``, ...) in the running text of a page, directly
followed by inline code or a backtick.  Text inside ``<pre>``, ``<code>``,
``<script>``, ``<style>`` and ``<textarea>`` is not running text, so code
samples and inline code that show the syntax on purpose (a ``<pre>`` block
of rST, ``:func:`` written as inline code) never count.

Usage: ``python .ci/check_raw_roles.py docs/_build/html``; exit status 1 and
one line per raw role (page, role, the text around it) when there are any.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

#: the roles whose literal spelling is looked for
ROLES = ("func", "class", "meth", "mod", "attr", "data", "exc", "obj", "const",
         "ref", "doc", "term", "numref", "any", "math", "envvar", "option")
#: tags whose content is code, not running text
CODE_TAGS = frozenset({"pre", "code", "script", "style", "textarea"})
#: stands in the running text for an inline code element
CODE_MARK = "\x00"
RAW_ROLE = re.compile(
    r"(?<![\w:]):(?:py:)?(" + "|".join(ROLES) + r"):\s*(?=" + CODE_MARK + r"|`)")


class _RunningText(HTMLParser):
    """The text of a page outside code; each inline code becomes CODE_MARK."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0  # how many code-like elements enclose the current text
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in CODE_TAGS:
            if self.depth == 0:
                self.parts.append(CODE_MARK)
            self.depth += 1

    def handle_endtag(self, tag):
        if tag in CODE_TAGS and self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if not self.depth:
            self.parts.append(data)


def raw_roles(html: str) -> list[str]:
    """Each raw role of one page, with up to 40 characters on either side."""
    parser = _RunningText()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts)
    found = []
    for m in RAW_ROLE.finditer(text):
        around = text[max(0, m.start() - 40):m.end() + 40]
        found.append(" ".join(around.replace(CODE_MARK, "`...`").split()))
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python .ci/check_raw_roles.py BUILD_DIR", file=sys.stderr)
        return 2
    root = Path(argv[0])
    pages = sorted(root.rglob("*.html"))
    if not pages:
        print(f"check_raw_roles: no HTML pages under {root}", file=sys.stderr)
        return 2
    bad = 0
    for page in pages:
        for hit in raw_roles(page.read_text(encoding="utf-8")):
            bad += 1
            print(f"{page.relative_to(root)}: raw role: {hit}")
    if bad:
        print(f"check_raw_roles: {bad} raw role(s) in {root}: in a Markdown page write "
              "{func}`name`, not :func:`name`", file=sys.stderr)
        return 1
    print(f"check_raw_roles: no raw role in {len(pages)} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
