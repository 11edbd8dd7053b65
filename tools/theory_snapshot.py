"""A bit-for-bit snapshot of the theory's numbers, to check that a refactor changes none.

A redesign of the package must leave every number unchanged.  This script
evaluates the theory on fixed inputs that reach every branch of
:func:`isoapprox.theory.evaluate_core` (the paper's toy with and without a
margin, a separated batch, a collapsed one, overlapping classes, a batch of 40
points in R^8 that the diagnosis subsamples, four classes in the plane), with
the ``quick`` and ``default`` efforts, through :func:`isoapprox.evaluate_theory`,
``diagnose_theory`` with ``certify="verdict"`` and ``"all"`` and
:func:`isoapprox.empirical_constant`, and stores every record (floats by their
``repr``, arrays by their bytes; timings left out)::

    python tools/theory_snapshot.py save /tmp/before.pkl   # on the old code
    python tools/theory_snapshot.py compare /tmp/before.pkl  # on the new code

``compare`` prints each record that differs (with the keys that do) and exits
1 when any does.  About two minutes on one core once the kernels are compiled.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from typing import Any

import numpy as np

import isoapprox as ia
from isoapprox.diagnostics.ideal_distance import diagnose_theory
from isoapprox.theory import TheoryOptions


def cases() -> list[tuple[str, np.ndarray, Any, float]]:
    """The fixed inputs: (name, E, y, margin)."""
    rng = np.random.default_rng(7)
    out = []
    E = rng.normal(size=(5, 2))
    y = [0, 0, 1, 1, 2]
    out.append(("toy5", E, y, 0.0))
    out.append(("toy5m", E, y, 0.3))
    E = rng.normal(size=(12, 3))
    y = np.repeat(np.arange(4), 3)
    out.append(("n12", E, y, 0.2))
    E = np.repeat(np.eye(3) * 3, 4, axis=0) + 0.01 * rng.normal(size=(12, 3))
    out.append(("sep", E, y, 0.5))
    E = 1e-4 * rng.normal(size=(12, 3))
    out.append(("coll", E, y, 0.2))
    E = rng.normal(size=(40, 8))
    y = np.repeat(np.arange(8), 5)
    out.append(("n40", E, y, 0.2))
    E = rng.normal(size=(8, 2))
    out.append(("p4n2", E, [0, 0, 1, 1, 2, 2, 3, 3], 0.1))
    return out


def _norm(o: Any) -> Any:
    """A comparable form: floats by repr, arrays by dtype, shape and bytes; no timings."""
    if isinstance(o, dict):
        return {k: _norm(v) for k, v in o.items() if k != "seconds"}
    if isinstance(o, (list, tuple)):
        return [_norm(v) for v in o]
    if isinstance(o, np.ndarray):
        return ("array", o.dtype.str, o.shape, o.tobytes())
    if isinstance(o, np.generic):
        return _norm(o.item())
    if isinstance(o, float):
        return ("float", repr(o))
    return o


def snapshot() -> dict[tuple[str, str, str], Any]:
    """Every record of every case, effort and entry point."""
    res = {}
    for name, E, y, m in cases():
        for effort in ("quick", "default"):
            opts = TheoryOptions(effort=effort, seed=3)
            r = ia.evaluate_theory(E, y, margin=m, options=opts, rng=3)
            d = r.to_dict()
            d.update(aligned=r.aligned, iso_emb=r.iso.embedding, haus_emb=r.haus.embedding)
            res[(name, effort, "theory")] = _norm(d)
            for certify in ("verdict", "all"):
                t = diagnose_theory(E, y, margin=m, options=opts, certify=certify)
                d = t.theory.to_dict()
                d.update(budget=t.budget, findings=list(t.findings), aligned=t.theory.aligned)
                res[(name, effort, certify)] = _norm(d)
            res[(name, effort, "constant")] = _norm(
                ia.empirical_constant(E, y, margin=m, rng=3).to_dict())
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=("save", "compare"))
    ap.add_argument("file", help="the snapshot (a pickle written by 'save')")
    args = ap.parse_args(argv)
    now = snapshot()
    if args.action == "save":
        with open(args.file, "wb") as fh:
            pickle.dump(now, fh)
        print(f"saved {len(now)} records to {args.file}")
        return 0
    with open(args.file, "rb") as fh:
        old = pickle.load(fh)
    bad = 0
    for key, rec in old.items():
        new = now.get(key)
        if rec != new:
            bad += 1
            keys = [k for k in rec if rec.get(k) != (new or {}).get(k)]
            print(f"differs: {key}: {keys[:10]}")
    print(f"compared {len(old)} records: {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
