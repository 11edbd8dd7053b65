"""
D*: the least diameter of P separated points
============================================

``D*(P, n, alpha)`` is the least diameter of ``P`` points of ``R^n`` at
pairwise distances ``>= alpha``.  It explains collapse under hard negative
mining: a batch of ``P`` classes can be triplet-separated at margin ``alpha``
only by spreading its class centres to a diameter ``>= D*(P, n, alpha)``,
which grows like ``alpha P^(1/n)``; a collapsed embedding sits at distance
``D*(P, n, alpha)`` from the ideal set while its batch-hard loss is only
``alpha``.  :func:`isoapprox.d_star` reads a proven bracket
``lower <= D* <= upper`` from a shipped table (``P <= 64``, ``n <= 16``) and
names the theorem or construction behind each end.
"""

import matplotlib.pyplot as plt
import numpy as np

import isoapprox as ia

for P, n in [(5, 2), (16, 2), (16, 3), (64, 8)]:
    r = ia.d_star(P, n, 1.0)
    print(f"D*({P}, {n}, 1) in [{r.lower:.4f}, {r.upper:.4f}]  exact={r.exact}\n"
          f"    lower: {r.lower_source}\n    upper: {r.upper_source}")

# %%
# The bracket against the number of classes, for a few dimensions.  The ends
# meet for ``P <= n + 1`` (a regular simplex) and, in the plane, up to
# ``P = 8`` (the planar theorems); beyond, in the plane they stay within
# 16 % of each other up to ``P = 64``, while in higher dimension the proven
# lower bounds are well below the best layouts known.

Ps = np.arange(2, 65)
fig, ax = plt.subplots(figsize=(6.5, 4.5))
for i, n in enumerate([2, 3, 4, 8]):
    rows = [ia.d_star(int(P), n, 1.0) for P in Ps]
    lower = np.array([r.lower for r in rows])
    upper = np.array([r.upper for r in rows])
    ax.fill_between(Ps, lower, upper, color=f"C{i}", alpha=0.3, lw=0)
    ax.plot(Ps, upper, color=f"C{i}", lw=1.2, label=f"n = {n}: upper (layout)")
    ax.plot(Ps, lower, color=f"C{i}", lw=1.2, ls="--")
ax.plot([], [], "k--", lw=1.2, label="proven lower bounds (dashed)")
ax.set_xlabel("P (points, or classes per batch)")
ax.set_ylabel("D*(P, n, 1)")
ax.set_title("Least diameter of P points at pairwise distance >= 1")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# A layout attaining the upper end is shipped too
# (:func:`isoapprox.d_star_witness`): here the 16 points in the plane.

W = ia.d_star_witness(16, 2, 1.0)
fig, ax = plt.subplots(figsize=(4, 4))
ax.scatter(*W.T, s=40)
ax.set_aspect("equal")
ax.set_title(f"16 points, pairwise >= 1, diameter {ia.diameter(W):.4f}", fontsize=10)
fig.tight_layout()
