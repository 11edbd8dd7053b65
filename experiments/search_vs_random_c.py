"""Does the adversarial search for a large ``c`` beat random sampling at the same budget?

For each seed: one :func:`isoapprox.batch.adversarial_search` with the
objective ``c`` (the certified lower end ``c_lower``, 8 solver starts per
evaluation) and ``--budget`` evaluations, against ``--budget`` Gaussian
configurations drawn by :func:`isoapprox.batch.generate` and scored by the
same objective.  ``N = 5`` in ``R^2``, labels 3 + 2, margin 0.5.

Usage::

    python experiments/search_vs_random_c.py [--budget 96] [--seeds 1 2]

Prints one line per seed: the search's best ``c_lower``, and the maximum and
median over the random draws.  Nothing is written.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from isoapprox.batch import adversarial_search, generate
from isoapprox.batch.expensive import c_lower_objective

CODES = np.array([0, 0, 0, 1, 1])
MARGIN = 0.5


def compare(seed: int, budget: int, population: int = 12) -> dict[str, float]:
    """Best ``c_lower`` of one search and of ``budget`` random draws."""
    res = adversarial_search("c", CODES, dim=2, margin=MARGIN, budget=budget,
                             population=population, restarts=1, rng=seed)
    X, y = generate("gaussian", 5, 2, 2, "balanced", range(budget), seed=seed, margin=MARGIN)
    v = c_lower_objective(X, y, MARGIN)
    return {"seed": seed, "search": float(res.values[0]), "random_max": float(np.nanmax(v)),
            "random_median": float(np.nanmedian(v))}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget", type=int, default=96)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    args = p.parse_args(argv)
    for s in args.seeds:
        r = compare(s, args.budget)
        print(f"seed {s}: search {r['search']:.4f}; random max {r['random_max']:.4f}, "
              f"median {r['random_median']:.4f} ({args.budget} evaluations each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
