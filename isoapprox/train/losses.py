"""Former home of the losses with gradients: every name of :mod:`isoapprox.losses`
(values, gradients and the registry :data:`~isoapprox.losses.registry.LOSSES`)
is importable from here too.
"""

from __future__ import annotations

from typing import Any

from .. import losses as _home

#: former name of :data:`isoapprox.losses.TRIPLET_REDUCTIONS` (the selectively
#: contrastive loss takes ``"sum"`` and ``"mean"``: its
#: :attr:`~isoapprox.losses.registry.LossSpec.reductions`)
REDUCTIONS = _home.TRIPLET_REDUCTIONS


def __getattr__(name: str) -> Any:
    return getattr(_home, name)
