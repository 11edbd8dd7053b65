"""First-order optimisers that update a list of numpy arrays in place.

- :class:`SGD`: ``v <- mu v + g + wd p``; ``p <- p - lr v`` (PyTorch's
  convention; ``nesterov=True`` uses ``p <- p - lr (g + wd p + mu v)``).
- :class:`Adam`: Kingma & Ba with bias correction; ``weight_decay`` is
  decoupled (AdamW, Loshchilov & Hutter): ``p <- p - lr wd p`` besides the
  Adam step, so decay does not pass through the adaptive scaling.

Both are deterministic (no randomness) and keep their state per parameter.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._validation import check_nonnegative, check_option, check_positive
from ..exceptions import InvalidInputError

__all__ = ["OPTIMIZERS", "SGD", "Adam", "make_optimizer"]

OPTIMIZERS = ("sgd", "adam")


def _check_grads(params: Sequence[np.ndarray], grads: Sequence[np.ndarray]) -> None:
    if len(grads) != len(params):
        raise InvalidInputError(
            f"`grads` must hold one array per parameter ({len(params)}); got "
            f"{len(grads)}"
        )
    for k, (p, g) in enumerate(zip(params, grads, strict=True)):
        if g.shape != p.shape:
            raise InvalidInputError(
                f"`grads[{k}]` must have the shape of its parameter {p.shape}; got "
                f"{g.shape}"
            )


class SGD:
    """Stochastic gradient descent with momentum and weight decay.

    Parameters
    ----------
    params : list of ndarray
        Updated in place by :meth:`step`.
    lr : float
        Learning rate ``> 0``.
    momentum : float, default 0.0
        ``0 <= mu < 1``.
    weight_decay : float, default 0.0
        L2 penalty ``wd`` added to the gradient.
    nesterov : bool, default False
        Nesterov momentum.

    Examples
    --------
    >>> p = [np.array([1.0])]
    >>> opt = SGD(p, lr=0.5)
    >>> opt.step([2.0 * p[0]]); p[0].tolist()
    [0.0]
    """

    def __init__(
        self,
        params: list[np.ndarray],
        *,
        lr: float,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        self.params = params
        self.lr = check_positive(lr, "lr")
        self.momentum = check_nonnegative(momentum, "momentum")
        if self.momentum >= 1.0:
            raise InvalidInputError(f"`momentum` must be < 1; got {momentum!r}")
        self.weight_decay = check_nonnegative(weight_decay, "weight_decay")
        self.nesterov = bool(nesterov)
        self.velocity = [np.zeros_like(p) for p in params]

    def step(self, grads: Sequence[np.ndarray]) -> None:
        """One update with the gradients ``grads`` (same order as ``params``)."""
        _check_grads(self.params, grads)
        for p, g, v in zip(self.params, grads, self.velocity, strict=True):
            if self.weight_decay:
                g = g + self.weight_decay * p
            if self.momentum:
                v *= self.momentum
                v += g
                d = g + self.momentum * v if self.nesterov else v
            else:
                d = g
            p -= self.lr * d


class Adam:
    """Adam with bias correction and decoupled weight decay (AdamW).

    Parameters
    ----------
    params : list of ndarray
        Updated in place by :meth:`step`.
    lr : float, default 1e-3
        Learning rate ``> 0``.
    betas : (float, float), default (0.9, 0.999)
        Decay rates of the first and second moments, in ``[0, 1)``.
    eps : float, default 1e-8
        Added to the root of the second moment.
    weight_decay : float, default 0.0
        Decoupled decay: ``p <- p - lr * weight_decay * p`` each step.

    Examples
    --------
    >>> p = [np.array([1.0, -1.0])]
    >>> opt = Adam(p, lr=0.1)
    >>> opt.step([np.array([3.0, -0.01])]); np.round(p[0], 6).tolist()
    [0.9, -0.9]
    """

    def __init__(
        self,
        params: list[np.ndarray],
        *,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        self.params = params
        self.lr = check_positive(lr, "lr")
        b1, b2 = (check_nonnegative(b, "betas") for b in betas)
        if b1 >= 1.0 or b2 >= 1.0:
            raise InvalidInputError(f"`betas` must lie in [0, 1); got {tuple(betas)!r}")
        self.betas = (b1, b2)
        self.eps = check_positive(eps, "eps")
        self.weight_decay = check_nonnegative(weight_decay, "weight_decay")
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, grads: Sequence[np.ndarray]) -> None:
        """One update with the gradients ``grads`` (same order as ``params``)."""
        _check_grads(self.params, grads)
        self.t += 1
        b1, b2 = self.betas
        c1 = 1.0 - b1**self.t
        c2 = 1.0 - b2**self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v, strict=True):
            m *= b1
            m += (1.0 - b1) * g
            v *= b2
            v += (1.0 - b2) * (g * g)
            if self.weight_decay:
                p -= self.lr * self.weight_decay * p
            p -= self.lr * (m / c1) / (np.sqrt(v / c2) + self.eps)


def make_optimizer(
    name: str,
    params: list[np.ndarray],
    *,
    lr: float,
    momentum: float = 0.9,
    weight_decay: float = 0.0,
) -> SGD | Adam:
    """``"sgd"`` (with ``momentum``) or ``"adam"`` (``momentum`` is beta1)."""
    name = check_option(name, "optimizer", OPTIMIZERS)
    if name == "sgd":
        return SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    return Adam(params, lr=lr, betas=(momentum, 0.999), weight_decay=weight_decay)
