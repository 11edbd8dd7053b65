"""Sphinx configuration of the isoapprox documentation site.

Build (from the repository root; ``pip install -e ".[docs]"`` first)::

    sphinx-build -W --keep-going -j auto -b html docs docs/_build/html

The API reference is generated from the docstrings (numpydoc): the pages under
``docs/api/`` other than ``index.rst`` are written here, at every build, from
the ``__all__`` of each public module, so that a new public name cannot be
left out.  The gallery (sphinx-gallery) runs ``examples/gallery/plot_*.py``
and draws their figures.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import sys
from pathlib import Path

from sphinx.pycode import ModuleAnalyzer

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))

import isoapprox  # noqa: E402

os.environ.setdefault("MPLBACKEND", "Agg")

project = "isoapprox"
author = "isoapprox developers"
copyright = "isoapprox developers"  # noqa: A001
release = isoapprox.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip"]
templates_path = ["_templates"]

# --- autodoc, autosummary, numpydoc ------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"  # the numpydoc Parameters sections give the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False
#: numpydoc's validation of the public API (any failure is a warning, and -W
#: makes it an error): a docstring at all (GL08), known sections (GL06) in
#: numpydoc's order (GL07), every parameter documented (PR01) and no unknown
#: one (PR02), in the signature's order (PR03), a Returns section where a
#: value is returned (RT01), one line
#: per returned value (RT02), Yields for a generator (YD01).  It covers the
#: names of ``isoapprox``'s ``__all__`` (the top-level API page) and leaves
#: out, by name: the members of its classes (``to_dict`` and the like), the
#: dataclasses, whose fields are documented as Attributes rather than
#: Parameters, and the subpackages' own pages, which get the checks of
#: SUBPACKAGE_CHECKS only (``check_subpackage_docstring`` below).
numpydoc_validation_checks = {"GL06", "GL07", "GL08", "PR01", "PR02", "PR03", "RT01", "RT02",
                              "YD01"}
#: what the subpackages' pages (the applications and their plumbing) are held
#: to: a docstring, known sections, no documented parameter that does not exist
SUBPACKAGE_CHECKS = {"GL06", "GL08", "PR02"}
#: the main entry points: each needs an Examples section (EX01; checked
#: at the start of the build, see ``check_examples`` below)
EXAMPLES_REQUIRED = (
    "nearest_ideal", "evaluate_theory", "empirical_constant", "diagnose",
    "batch_hard_loss", "triplet_loss", "isometric_error", "hausdorff_like",
    "d_star", "suggest_layout", "CollapseMonitor",
)


def _subpackage_pattern() -> str:
    """The names documented on the subpackages' own pages."""
    return r"^isoapprox\.(" + "|".join(m.split(".", 1)[1] for m in API_MODULES) + r")\."


def _validation_exclude() -> set[str]:
    import dataclasses

    out = {_subpackage_pattern(),  # the subpackages' own pages
           r"^isoapprox\.[A-Z]\w*\."}  # members of the top-level classes
    for name in isoapprox.__all__:
        obj = getattr(isoapprox, name)
        if inspect.isclass(obj) and dataclasses.is_dataclass(obj):
            out.add(rf"^isoapprox\.{name}$")
    return out

# --- MyST (the Markdown pages) ------------------------------------------------
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

# --- gallery --------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples" / "gallery"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "matplotlib_animations": False,
    "show_memory": False,
    "plot_gallery": "True",
    # run the examples in parallel with sphinx-build's -j (the numba kernels
    # compile in each worker; on a cold cache this is most of the build)
    "parallel": True,
}

# --- HTML -------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"isoapprox {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path: list[str] = []
html_show_sourcelink = False
# the whole site's navigation in the left sidebar of every page: the theme's
# own sidebar shows only the pages below the current top-level page, which
# leaves it empty on the guide pages (docs/_templates/sidebar-nav-site.html)
html_sidebars = {"**": ["sidebar-nav-site"]}


# --- the API reference pages, written from ``__all__`` -----------------------------
#: the public modules besides the top-level package, in the order of the
#: reference's table of contents, with their page titles
API_MODULES = {
    "isoapprox.toy": "The toy system",
    "isoapprox.diagnostics": "Diagnosis",
    "isoapprox.packing": "D* and packing bounds",
    "isoapprox.ideal": "Nearest ideal embeddings",
    "isoapprox.train": "The training harness",
    "isoapprox.batch": "Batch evaluation",
    "isoapprox.io": "Result and embedding files",
    "isoapprox.runs": "The run protocol of long work",
    "isoapprox.tolerances": "Tolerances",
}

#: sections of the top-level page: the subpackage or module (below
#: ``isoapprox``) that defines a name, and the section's title
TOP_SECTIONS = {
    "geometry": "Geometry",
    "losses": "Losses and triplet separation",
    "metrics": "Isometric error and Hausdorff-like distances",
    "thickness": "Thickness",
    "procrustes": "Minimax Procrustes",
    "packing": "D*: least diameter of separated points",
    "bracket": "Certified brackets",
    "ideal": "Nearest ideal and zero-loss embeddings",
    "theory": "The theory's checks",
    "diagnostics": "Diagnosis of an embedding",
    "monitor": "Watching a training loop",
    "_progress": "Progress reports",
    "exceptions": "Exceptions and warnings",
}


def _is_data(obj) -> bool:
    return not (inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj))


_ATTR_DOCS: dict[str, dict] = {}


def _attr_docs(modname: str) -> dict:
    """The ``#:`` comments of a module's source (cached; empty without source)."""
    if modname not in _ATTR_DOCS:
        try:
            _ATTR_DOCS[modname] = ModuleAnalyzer.for_module(modname).find_attr_docs()
        except Exception:  # noqa: BLE001 - no source to read: no comments
            _ATTR_DOCS[modname] = {}
    return _ATTR_DOCS[modname]


def _data_source(package: str, name: str) -> str | None:
    """The module whose source documents the constant ``package.name`` (``#:``).

    Looks first in ``package``, then in every module of isoapprox that holds
    the same object under that name; None when no source documents it.
    """
    obj = getattr(importlib.import_module(package), name)
    candidates = [package] + [m.name for m in pkgutil.walk_packages(
        isoapprox.__path__, "isoapprox.") if not m.name.endswith("__main__")]
    for modname in candidates:
        if ("", name) not in _attr_docs(modname):
            continue
        try:
            mod = importlib.import_module(modname)
        except ImportError:  # an optional dependency is missing: not this one
            continue
        if getattr(mod, name, None) is obj:
            return modname
    return None


def _autosummary(names: list[str]) -> str:
    rows = "\n".join(f"   {n}" for n in names)
    return f".. autosummary::\n   :toctree: generated/\n\n{rows}\n"


def _constants(package: str, names: list[str]) -> str:
    """``autodata`` of each constant; its value shown when a short literal."""
    out = []
    for n in names:
        obj = getattr(importlib.import_module(package), n)
        shown = isinstance(obj, (int, float, str, tuple)) and len(repr(obj)) <= 60
        src = _data_source(package, n)
        if src is None:  # no ``#:`` comment in the source: name and value only
            value = f"   :value: {obj!r}\n" if shown else ""
            out.append(f".. py:data:: {package}.{n}\n{value}")
            continue
        out.append(f".. autodata:: {src}.{n}\n" + ("" if shown else "   :no-value:\n"))
        if src != package:
            out.append(f"   Importable as ``{package}.{n}``.\n")
    return "\n".join(out)


def _page(title: str, body: str) -> str:
    return f"{title}\n{'=' * len(title)}\n\n{body}"


def write_api_pages(app=None) -> None:
    """Write ``docs/api/*.rst`` (but ``index.rst``) from the modules' ``__all__``."""
    api = DOCS / "api"
    pages: dict[str, str] = {}
    top = [n for n in isoapprox.__all__ if n != "__version__"]
    top_ids = {id(getattr(isoapprox, n)) for n in top if not _is_data(getattr(isoapprox, n))}
    groups: dict[str, list[str]] = {k: [] for k in TOP_SECTIONS}
    for n in sorted(top, key=str.lower):
        part = getattr(isoapprox, n).__module__.split(".")[1]
        if part not in groups:
            raise RuntimeError(f"docs/conf.py: no section of the API page for {n} ({part})")
        groups[part].append(n)
    body = [
        "Every name below is importable from the top-level package "
        "(``import isoapprox as ia``).\n\n.. currentmodule:: isoapprox\n",
        ".. automodule:: isoapprox\n   :no-members:\n",
    ]
    for part, title in TOP_SECTIONS.items():
        if groups[part]:
            body.append(f"{title}\n{'-' * len(title)}\n\n{_autosummary(groups[part])}")
    pages["isoapprox"] = _page("isoapprox", "\n".join(body))
    for modname, title in API_MODULES.items():
        mod = importlib.import_module(modname)
        names = list(mod.__all__)
        shared = [n for n in names if not _is_data(getattr(mod, n))
                  and id(getattr(mod, n)) in top_ids]
        own = sorted((n for n in names if n not in shared), key=str.lower)
        code = [n for n in own if not _is_data(getattr(mod, n))]
        data = [n for n in own if _is_data(getattr(mod, n))]
        body = [f".. automodule:: {modname}\n   :no-members:\n",
                f".. currentmodule:: {modname}\n"]
        if shared:
            refs = ", ".join(f":obj:`isoapprox.{n}`" for n in sorted(shared, key=str.lower))
            body.append(f"Also exported by the top-level package, and documented "
                        f"there: {refs}.\n")
        if code:
            body.append(f"Functions and classes\n---------------------\n\n{_autosummary(code)}")
        if data:
            body.append(f"Constants\n---------\n\n{_constants(modname, data)}")
        pages[modname] = _page(f"``{modname}``: {title}", "\n".join(body))
    for name, text in pages.items():
        path = api / f"{name}.rst"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


write_api_pages()
numpydoc_validation_exclude = _validation_exclude()


def check_examples(app) -> None:
    """Warn (an error under -W) for a main entry point without Examples."""
    from numpydoc.validate import validate
    from sphinx.util import logging

    log = logging.getLogger("isoapprox.docs")
    for name in EXAMPLES_REQUIRED:
        codes = {code for code, _ in validate(f"isoapprox.{name}")["errors"]}
        if "EX01" in codes:
            log.warning("[numpydoc] isoapprox.%s: EX01 no Examples section (a main "
                        "entry point: docs/conf.py, EXAMPLES_REQUIRED)", name)


def check_subpackage_docstring(app, what, name, obj, options, lines) -> None:
    """Validate a subpackage page's object against SUBPACKAGE_CHECKS."""
    import re

    from numpydoc.validate import validate
    from sphinx.util import logging

    if what not in ("function", "class", "method", "exception"):
        return
    if not re.match(_subpackage_pattern(), name):
        return
    try:
        errors = validate(name)["errors"]
    except Exception:  # noqa: BLE001 - not importable by that name: nothing to check
        return
    bad = [f"  {code}: {msg}" for code, msg in errors if code in SUBPACKAGE_CHECKS]
    if bad:
        logging.getLogger("isoapprox.docs").warning(
            "[numpydoc] Validation warnings for %r:\n%s", name, "\n".join(bad))


def setup(app) -> None:
    app.connect("builder-inited", check_examples)
    app.connect("autodoc-process-docstring", check_subpackage_docstring)
