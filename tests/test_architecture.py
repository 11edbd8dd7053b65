"""The package's architecture, enforced.

- the layers of ``[tool.importlinter]`` in ``pyproject.toml`` (core below
  applications below front ends, no cycle), checked by import-linter;
- imports at the top of modules: the only deferred imports are the heavy
  optional ones in :mod:`isoapprox._lazy` and, in the command modules, the
  applications a subcommand runs (``isoapprox --help`` stays fast);
- private stays private: a name with a leading underscore is never imported
  from another module (that an underscore module ``a.b._m`` is imported only
  from inside ``a.b`` is import-linter's ``private_modules`` contract).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "isoapprox"

#: modules allowed to import inside functions, with the reason
DEFERRED_OK = {
    "isoapprox._lazy": "the one home of the lazy heavy imports",
}
DEFERRED_OK_PREFIX = ("isoapprox.commands.",)  # applications imported when the subcommand runs


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        yield ".".join(parts), is_pkg, path


def _resolve(module: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_pkg:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _top_level_nodes(tree: ast.Module):
    """Import nodes at module level (also inside module-level ``if``/``try``)."""
    out = []
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, (ast.If, ast.Try)):
            stack.extend(node.body)
            stack.extend(getattr(node, "orelse", []))
            stack.extend(getattr(node, "finalbody", []))
            for h in getattr(node, "handlers", []):
                stack.extend(h.body)
    return out


def test_import_linter_contracts():
    # in a subprocess: import-linter reconfigures logging, which would leak into other tests
    script = ("import sys; from importlinter.cli import lint_imports; "
              f"sys.exit(lint_imports(config_filename={str(ROOT / 'pyproject.toml')!r}, "
              "no_cache=True, no_logo=True))")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_imports_at_module_top():
    deferred = []
    for module, _, path in _modules():
        if module in DEFERRED_OK or module.startswith(DEFERRED_OK_PREFIX):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {id(n) for n in _top_level_nodes(tree)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top:
                deferred.append(f"{module}:{node.lineno}")
    assert not deferred, f"imports inside functions (use isoapprox._lazy): {deferred}"


def test_private_names_stay_private():
    crossing = []
    for module, is_pkg, path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _resolve(module, is_pkg, node)
            for alias in node.names:
                full = f"{target}.{alias.name}"
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and not _is_module(full):
                    crossing.append(f"{module}:{node.lineno} imports {full}")
    assert not crossing, f"private names imported across modules: {crossing}"


def _is_module(dotted: str) -> bool:
    rel = Path(*dotted.split("."))
    return (ROOT / rel).with_suffix(".py").is_file() or (ROOT / rel / "__init__.py").is_file()


def test_import_loads_no_heavy_optional_module():
    """`import isoapprox` leaves the lazy imports of isoapprox._lazy unloaded."""
    heavy = ("cvxpy", "highspy", "matplotlib", "distributed", "sklearn", "mnist1d")
    script = f"import sys, isoapprox; print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
