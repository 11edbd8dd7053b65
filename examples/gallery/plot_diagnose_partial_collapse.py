"""
Diagnosing a partially collapsed embedding
==========================================

In a *partial collapse* some classes have merged into one cluster while the
others stay apart.  The mean batch-hard loss hides it: the anchors of the
merged classes contribute the margin, the others nearly nothing.
:func:`isoapprox.diagnose` (the engine of ``isoapprox diagnose FILE``)
finds the merged classes by single linkage at a height tied to the margin,
checks the known collapse signatures and gives a verdict in words.
"""

import matplotlib.pyplot as plt
import numpy as np

import isoapprox as ia

rng = np.random.default_rng(7)
P, K, n = 8, 5, 3  # classes, samples per class, dimension
centres = 2.0 * rng.normal(size=(P, n))
centres[1:3] = centres[0]  # classes 0, 1 and 2 share one centre: they merge
y = np.repeat(np.arange(P), K)
E = centres[y] + 0.05 * rng.normal(size=(P * K, n))

report = ia.diagnose(E, y, options=ia.DiagnoseOptions(margin=0.2))
print(report["verdict"]["headline"])
print("signatures:", ", ".join(report["verdict"]["signatures"]))
print(f"batch-hard loss (mean) {ia.batch_hard_loss(E, y, margin=0.2):.4f}, margin 0.2")
print("violated triplets per class:", report["classes"]["violated"])

# %%
# Among what the report holds per class: the spread ratio, a class's
# diameter over the least distance from its points to another class's (above
# 1: the class is wider than its gap to a neighbour).  The merged classes
# stand out, and they alone violate triplets.

classes = report["classes"]
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 4))
centred = E - E.mean(axis=0)
_, _, Vt = np.linalg.svd(centred, full_matrices=False)
Z = centred @ Vt[:2].T  # the two leading principal directions
for c in range(P):
    pts = Z[y == c]
    ax0.scatter(*pts.T, s=18, color=plt.cm.tab10(c), label=f"class {c}")
ax0.set_title("the embedding (two principal directions)", fontsize=10)
ax0.legend(fontsize=7, ncol=2)
ax0.set_aspect("equal")

ax1.bar(classes["classes"], classes["spread_ratio"],
        color=[plt.cm.tab10(c) for c in classes["classes"]])
ax1.axhline(1.0, color="k", ls="--", lw=1)
ax1.set_yscale("log")
ax1.set_xlabel("class")
ax1.set_ylabel("class diameter / gap to the nearest class")
ax1.set_title("spread ratio per class", fontsize=10)
fig.tight_layout()

# %%
# The verdict's advice, as ``isoapprox diagnose`` prints it:

print(report["verdict"]["advice"])
