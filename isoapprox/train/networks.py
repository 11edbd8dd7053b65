"""Small numpy networks with analytic backward passes.

See docs/dev/train_design.md ("isoapprox.train.networks: notes").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._typing import FloatArray, RNGLike
from .._validation import as_rng, check_int, check_option, check_positive
from ..exceptions import InvalidInputError
from ..losses import NORM_EPS, l2_normalize, l2_normalize_backward

__all__ = [
    "ACTIVATIONS",
    "NORM_EPS",
    "EmbeddingTable",
    "MLP",
    "l2_normalize",
    "l2_normalize_backward",
]

ACTIVATIONS = ("tanh", "relu")


class MLP:
    """Multilayer perceptron embedding with an analytic backward pass.

    Parameters
    ----------
    sizes : sequence of int
        ``(d_in, h_1, ..., h_k, n)``: input width, hidden widths, embedding
        dimension (at least two entries; ``(d_in, n)`` is a linear map).
    activation : {"tanh", "relu"}
        Nonlinearity after every hidden layer.
    normalize : bool, default False
        L2-normalise each output row (embeddings on the unit sphere).
    rng : None, int or Generator
        Source of the initial weights.

    Examples
    --------
    >>> net = MLP((4, 8, 2), rng=0)
    >>> out, cache = net.forward(np.ones((3, 4)))
    >>> out.shape, [g.shape for g in net.backward(np.ones_like(out), cache)]
    ((3, 2), [(4, 8), (8,), (8, 2), (2,)])
    """

    input_kind = "features"
    #: the matrix product of the passes; tests swap in another summation
    #: order to check that a result does not hang on the last bits of BLAS
    _matmul = staticmethod(np.matmul)

    def __init__(
        self,
        sizes: Sequence[int],
        *,
        activation: str = "tanh",
        normalize: bool = False,
        rng: RNGLike = None,
    ) -> None:
        sizes = tuple(sizes)
        if len(sizes) < 2:
            raise InvalidInputError(
                "`sizes` must list the input width and the embedding dimension at "
                "least "
                f"(d_in, ..., n); got {sizes!r}"
            )
        self.sizes = tuple(check_int(s, "sizes", minimum=1) for s in sizes)
        self.activation = check_option(activation, "activation", ACTIVATIONS)
        self.normalize = bool(normalize)
        gen = as_rng(rng)
        self.params: list[FloatArray] = []
        n_layers = len(self.sizes) - 1
        for k in range(n_layers):
            fan_in, fan_out = self.sizes[k], self.sizes[k + 1]
            last = k == n_layers - 1
            gain = 1.0 if (last or self.activation == "tanh") else np.sqrt(2.0)
            W = gen.normal(0.0, gain / np.sqrt(fan_in), size=(fan_in, fan_out))
            self.params += [W, np.zeros(fan_out)]

    @property
    def n_params(self) -> int:
        """Total number of scalar parameters."""
        return int(sum(p.size for p in self.params))

    def forward(self, X: np.ndarray) -> tuple[FloatArray, dict[str, Any]]:
        """Embeddings of a batch ``X`` (N, d_in) and the cache for :meth:`backward`."""
        H = X
        inputs, pre = [], []
        n_layers = len(self.params) // 2
        for k in range(n_layers):
            W, b = self.params[2 * k], self.params[2 * k + 1]
            inputs.append(H)
            Z = self._matmul(H, W) + b
            if k < n_layers - 1:
                pre.append(Z)
                H = np.tanh(Z) if self.activation == "tanh" else np.maximum(Z, 0.0)
            else:
                H = Z
        cache: dict[str, Any] = {"inputs": inputs, "pre": pre}
        if self.normalize:
            H, r = l2_normalize(H)
            cache["U"], cache["r"] = H, r
        return H, cache

    def __call__(self, X: np.ndarray) -> FloatArray:
        return self.forward(X)[0]

    def backward(self, d_out: np.ndarray, cache: dict[str, Any]) -> list[FloatArray]:
        """Gradients of the parameters given ``dL/d(out)`` (N, n)."""
        G = d_out
        if self.normalize:
            G = l2_normalize_backward(G, cache["U"], cache["r"])
        n_layers = len(self.params) // 2
        grads: list[FloatArray] = [None] * len(self.params)  # type: ignore[list-item]
        for k in range(n_layers - 1, -1, -1):
            H = cache["inputs"][k]
            grads[2 * k] = self._matmul(H.T, G)
            grads[2 * k + 1] = G.sum(axis=0)
            if k > 0:
                G = self._matmul(G, self.params[2 * k].T)
                if self.activation == "tanh":
                    G = G * (1.0 - cache["inputs"][k] ** 2)
                else:
                    G = G * (cache["pre"][k - 1] > 0.0)
        return grads

    def input_gradient(self, d_out: np.ndarray, cache: dict[str, Any]) -> FloatArray:
        """``dL/dX`` for the batch of the cache (used by the gradient checks)."""
        G = d_out
        if self.normalize:
            G = l2_normalize_backward(G, cache["U"], cache["r"])
        n_layers = len(self.params) // 2
        for k in range(n_layers - 1, -1, -1):
            G = G @ self.params[2 * k].T
            if k > 0:
                if self.activation == "tanh":
                    G = G * (1.0 - cache["inputs"][k] ** 2)
                else:
                    G = G * (cache["pre"][k - 1] > 0.0)
        return G


class EmbeddingTable:
    """A free embedding: one learnable vector per training sample.

    Parameters
    ----------
    n_items : int
        Number of rows (training samples).
    dim : int
        Embedding dimension ``n``.
    normalize : bool, default False
        L2-normalise the looked-up rows.
    init_scale : float, default 1.0
        Rows start as ``N(0, init_scale^2 / dim)`` vectors.
    rng : None, int or Generator
        Source of the initial rows.

    Notes
    -----
    The input of :meth:`forward` is an integer index array.  Nothing is
    shared between rows, so (unlike an MLP) hard negative mining cannot
    drag unrelated points along: a free table is the control experiment
    for collapse.

    Examples
    --------
    >>> t = EmbeddingTable(5, 2, rng=0)
    >>> out, cache = t.forward(np.array([0, 3]))
    >>> t.backward(np.ones_like(out), cache)[0][[0, 1, 3]].tolist()
    [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]
    """

    input_kind = "index"

    def __init__(
        self,
        n_items: int,
        dim: int,
        *,
        normalize: bool = False,
        init_scale: float = 1.0,
        rng: RNGLike = None,
    ) -> None:
        self.n_items = check_int(n_items, "n_items", minimum=1)
        self.dim = check_int(dim, "dim", minimum=1)
        self.normalize = bool(normalize)
        scale = check_positive(init_scale, "init_scale")
        gen = as_rng(rng)
        self.params: list[FloatArray] = [
            gen.normal(0.0, scale / np.sqrt(self.dim), size=(self.n_items, self.dim))
        ]

    @property
    def n_params(self) -> int:
        """Total number of scalar parameters."""
        return int(self.params[0].size)

    def forward(self, idx: np.ndarray) -> tuple[FloatArray, dict[str, Any]]:
        """Rows ``idx`` of the table (normalised if requested) and the cache."""
        idx = np.asarray(idx, dtype=np.int64)
        H = self.params[0][idx]
        cache: dict[str, Any] = {"idx": idx}
        if self.normalize:
            H, r = l2_normalize(H)
            cache["U"], cache["r"] = H, r
        return H, cache

    def __call__(self, idx: np.ndarray) -> FloatArray:
        return self.forward(idx)[0]

    def backward(self, d_out: np.ndarray, cache: dict[str, Any]) -> list[FloatArray]:
        """Gradient of the table (dense; rows outside the batch are zero)."""
        G = d_out
        if self.normalize:
            G = l2_normalize_backward(G, cache["U"], cache["r"])
        grad = np.zeros_like(self.params[0])
        np.add.at(grad, cache["idx"], G)
        return [grad]
