"""
The nearest ideal embedding of a five-point toy
===============================================

An embedding ``E`` is *ideal* (triplet-separated at margin ``alpha``) when
every anchor is closer to each point of its class than to any point of
another class, by at least ``alpha``.  :func:`isoapprox.nearest_ideal` finds
an ideal embedding nearest to ``E``, either in the isometric error ``d_iso``
(``objective="iso"``: pairwise distances change as little as possible) or in
the Hausdorff-like distance ``d_haus`` (``objective="haus"``: points move as
little as possible), with a certified bracket ``lower <= value <= upper``.
"""

import matplotlib.pyplot as plt
import numpy as np

import isoapprox as ia

X = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 0.2], [0.6, 1.0], [2.0, 0.5]])
labels = np.array([0, 0, 1, 1, 2])
print("separated:", ia.is_triplet_separated(X, labels, margin=0.0))

iso = ia.nearest_ideal(X, labels, margin=0.0, objective="iso", rng=0)
haus = ia.nearest_ideal(X, labels, margin=0.0, objective="haus", rng=0)
for name, res in [("iso", iso), ("haus", haus)]:
    print(f"d_{name}(X, F_TS) = {res.value:.6f} in [{res.lower:.6f}, {res.upper:.6f}],"
          f" certified: {res.certified}")

# %%
# ``d_iso`` compares distance matrices, so its nearest ideal embedding is only
# defined up to an isometry.  To draw it next to ``X`` we move it onto ``X`` by
# the rigid motion that minimises the largest displacement
# (:func:`isoapprox.minimax_procrustes`); the ``d_haus`` solution is already
# placed.

move = ia.minimax_procrustes(iso.embedding, X)  # x -> Q x + b
aligned = iso.embedding @ move.Q.T + move.b
colors = plt.cm.tab10(labels)

fig, axes = plt.subplots(1, 2, figsize=(9, 4), sharex=True, sharey=True)
for ax, F, title in [
    (axes[0], aligned, f"iso-nearest (aligned), d_iso = {iso.value:.3f}"),
    (axes[1], haus.embedding, f"haus-nearest, d_haus = {haus.value:.3f}"),
]:
    ax.scatter(*X.T, c=colors, s=60, marker="o", label="X")
    ax.scatter(*F.T, c=colors, s=60, marker="x", label="nearest ideal")
    for a, b in zip(X, F, strict=True):
        ax.annotate("", xy=b, xytext=a, arrowprops={"arrowstyle": "->", "color": "0.5"})
    ax.set_title(title, fontsize=10)
    ax.set_aspect("equal")
axes[0].legend(loc="upper left", fontsize=8)
fig.suptitle("Five points, three classes: the nearest triplet-separated embeddings")
fig.tight_layout()

# %%
# The empirical constant of the isometric approximation theorem,
# ``c = d_haus(X, F_TS) / d_iso(X, F_TS)``, is bracketed from both brackets;
# the theorem's lower floor is ``1/2``.

k = ia.empirical_constant(X, labels, margin=0.0, iso=iso, haus=haus)
print(f"c in [{k.c_lower:.4f}, {k.c_upper:.4f}]")
