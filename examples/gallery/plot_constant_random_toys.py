"""
The constant c over random five-point toys
==========================================

The isometric approximation theorem, as the paper applies it, bounds the
Hausdorff-like distance of an embedding to the ideal set by its isometric
error: ``1/2 d_iso(E, F_TS) <= d_haus(E, F_TS) <= c d_iso(E, F_TS)``.  The
paper reports ``c = 0.53`` on its toy.  Here the empirical constant
``c(E) = d_haus / d_iso`` of :func:`isoapprox.empirical_constant`, with its
certified bracket, over a few random five-point embeddings of the plane
(``isoapprox batch`` runs such surveys at scale).
"""

import matplotlib.pyplot as plt
import numpy as np

import isoapprox as ia
from isoapprox.toy import PAPER_C

rng = np.random.default_rng(2024)
layouts = [np.array([0, 0, 0, 1, 1]), np.array([0, 0, 1, 1, 2])]
values, lows, highs = [], [], []
for i in range(16):
    E = rng.normal(size=(5, 2))
    y = layouts[i % 2]
    k = ia.empirical_constant(E, y, margin=0.0, rng=i)
    values.append(k.c)
    lows.append(k.c_lower)
    highs.append(k.c_upper)
c, lows, highs = np.array(values), np.array(lows), np.array(highs)
print(f"c: median {np.median(c):.3f}; the brackets span [{lows.min():.3f}, {highs.max():.3f}]")
print(f"share certified c <= {PAPER_C}: {np.mean(highs <= PAPER_C):.0%}")

# %%
# Each toy is one row: ``c`` (the ratio of the two computed distances) and
# its bracket ``[c_lower, c_upper]`` (most are a single point: both distances
# are certified), the floor ``1/2`` that the theorem guarantees and the
# paper's value.

order = np.argsort(c)
fig, ax = plt.subplots(figsize=(6, 4.5))
rows = np.arange(len(order))
ax.hlines(rows, lows[order], highs[order], color="C0", lw=3)
ax.plot(c[order], rows, "o", color="C0", ms=4, label="c(E) and its bracket")
ax.axvline(0.5, color="k", ls="--", lw=1, label="floor 1/2")
ax.axvline(PAPER_C, color="C3", ls=":", lw=1.5, label=f"paper: c = {PAPER_C}")
ax.set_xlabel("c = d_haus(E, F_TS) / d_iso(E, F_TS)")
ax.set_ylabel("random toy (sorted)")
ax.set_yticks([])
ax.legend(loc="lower right", fontsize=8)
fig.tight_layout()
