"""Least diameter ``D*(P, n, alpha)`` of ``P`` points of ``R^n`` at distances ``>= alpha``.

The one home of ``D*``: :func:`d_star` is a pure function of ``(P, n,
margin)`` with a proven bracket and its sources, read from a shipped table
for ``P <= 64``, ``n <= 16`` (optimised layouts and constructions, each
ratio certified from its coordinates when the table was built) and computed
from closed formulas beyond it.  Lower bounds: :mod:`isoapprox.packing.bounds`;
constructions: :mod:`isoapprox.packing.constructions`; the table and its
sources: docs/dstar.md.  The proofs behind the table's lower ends are
produced and checked offline (``tools/packing_proofs.py`` and the tests),
not at run time.

This module only re-exports: the table and ``D*`` (``_dstar``), the
enclosing radius (``_radius``), the bounds of the applications
(``_classes``) and the layouts with a witness (``_search``).  Each validating
function has an unchecked core, ``compute_<name>`` (importable, not in
``__all__``), for callers whose arguments are already checked.
"""

from __future__ import annotations

from ._classes import (
    LOWER_BOUND_CURVES,
    class_representatives,
    compute_d_star_bracket,  # noqa: F401 (the unchecked cores: importable, not in __all__)
    compute_packing_distance_bound,  # noqa: F401
    compute_packing_radius_bound,  # noqa: F401
    compute_separated_distance_bound,  # noqa: F401
    compute_separated_radius_bound,  # noqa: F401
    d_star_bracket,
    lower_bound_curve,
    packing_distance_bound,
    packing_radius_bound,
    separated_class_count,
    separated_count,  # noqa: F401 (importable, not in __all__, as before)
    separated_distance_bound,
    separated_radius_bound,
)
from ._dstar import (
    BOUND_N_MAX,
    BOUND_P_MAX,
    DSTAR_N_MAX,
    DSTAR_P_MAX,
    LAYOUT_INT_STEP,  # noqa: F401
    WITNESS_P_MAX,  # noqa: F401
    WITNESS_SIZE_MAX,  # noqa: F401
    DStar,
    compute_d_star,  # noqa: F401
    compute_d_star_witness,  # noqa: F401
    d_star,
    d_star_witness,
    packing_lower_bound,
    table_entries,
    unit_lower_bound,
)
from ._radius import (  # noqa: F401
    RADIUS_P_MAX,
    compute_radius_lower_bound,
    compute_unit_radius_lower,
    radius_lower_bound,
    unit_radius_lower,
)
from ._search import PackingResult, min_separated_diameter

__all__ = [
    "BOUND_N_MAX",
    "BOUND_P_MAX",
    "DSTAR_N_MAX",
    "DSTAR_P_MAX",
    "DStar",
    "LOWER_BOUND_CURVES",
    "PackingResult",
    "class_representatives",
    "d_star",
    "d_star_bracket",
    "d_star_witness",
    "lower_bound_curve",
    "min_separated_diameter",
    "packing_distance_bound",
    "packing_lower_bound",
    "packing_radius_bound",
    "radius_lower_bound",
    "separated_class_count",
    "separated_distance_bound",
    "separated_radius_bound",
    "table_entries",
    "unit_lower_bound",
    "unit_radius_lower",
]
