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


class _Embedding:
    """What :class:`MLP` and :class:`EmbeddingTable` share: the parameter count,
    the call, and the optional L2 normalisation of the outputs with its backward pass."""

    normalize: bool
    params: list[FloatArray]

    @property
    def n_params(self) -> int:
        """Total number of scalar parameters."""
        return int(sum(p.size for p in self.params))

    def __call__(self, X: np.ndarray) -> FloatArray:
        return self.forward(X)[0]

    def _output(self, H: np.ndarray, cache: dict[str, Any]) -> tuple[FloatArray, dict[str, Any]]:
        """The outputs ``H``, normalised (with its factors in ``cache``) if asked."""
        if self.normalize:
            H, r = l2_normalize(H)
            cache["U"], cache["r"] = H, r
        return H, cache

    def _d_output(self, d_out: np.ndarray, cache: dict[str, Any]) -> np.ndarray:
        """``dL/dH`` of the outputs before the normalisation, given ``dL/d(out)``."""
        return l2_normalize_backward(d_out, cache["U"], cache["r"]) if self.normalize else d_out


class MLP(_Embedding):
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
        return self._output(H, {"inputs": inputs, "pre": pre})

    def _d_hidden(self, G: np.ndarray, cache: dict[str, Any], k: int) -> np.ndarray:
        """``G`` (with respect to the input of layer ``k > 0``) back through the
        activation of the hidden layer before it."""
        if self.activation == "tanh":
            return G * (1.0 - cache["inputs"][k] ** 2)
        return G * (cache["pre"][k - 1] > 0.0)

    def backward(self, d_out: np.ndarray, cache: dict[str, Any]) -> list[FloatArray]:
        """Gradients of the parameters given ``dL/d(out)`` (N, n)."""
        G = self._d_output(d_out, cache)
        n_layers = len(self.params) // 2
        grads: list[FloatArray] = [None] * len(self.params)  # type: ignore[list-item]
        for k in range(n_layers - 1, -1, -1):
            H = cache["inputs"][k]
            grads[2 * k] = self._matmul(H.T, G)
            grads[2 * k + 1] = G.sum(axis=0)
            if k > 0:
                G = self._d_hidden(self._matmul(G, self.params[2 * k].T), cache, k)
        return grads

    def input_gradient(self, d_out: np.ndarray, cache: dict[str, Any]) -> FloatArray:
        """``dL/dX`` for the batch of the cache (used by the gradient checks)."""
        G = self._d_output(d_out, cache)
        n_layers = len(self.params) // 2
        for k in range(n_layers - 1, -1, -1):
            G = G @ self.params[2 * k].T
            if k > 0:
                G = self._d_hidden(G, cache, k)
        return G


class EmbeddingTable(_Embedding):
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

    def forward(self, idx: np.ndarray) -> tuple[FloatArray, dict[str, Any]]:
        """Rows ``idx`` of the table (normalised if requested) and the cache."""
        idx = np.asarray(idx, dtype=np.int64)
        return self._output(self.params[0][idx], {"idx": idx})

    def backward(self, d_out: np.ndarray, cache: dict[str, Any]) -> list[FloatArray]:
        """Gradient of the table (dense; rows outside the batch are zero)."""
        grad = np.zeros_like(self.params[0])
        np.add.at(grad, cache["idx"], self._d_output(d_out, cache))
        return [grad]
