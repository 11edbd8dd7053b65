"""The numba kernels of ``isoapprox.ideal`` against loop references."""

from __future__ import annotations

import math

import numpy as np
import pytest

from isoapprox.ideal._problem import Problem
from isoapprox.kernels import ideal as K

from . import reference as ref
from .conftest import KERNEL_ATOL, KERNEL_RTOL, labelled_cloud

#: finite-difference check of analytic Jacobians: central differences with
#: step 1e-6 on O(1) data are accurate to about 1e-9 for these quadratics.
FD_STEP = 1e-6
FD_ATOL = 1e-6


def _rows_reference(x, M, n, E, kind, ri, rj, rk, rv, alpha, kappa):
    G = x[: M * n].reshape(M, n)
    t = x[M * n]
    r = x[M * n + 1:]
    out = []
    for kd, i, j, k, v in zip(kind, ri, rj, rk, rv, strict=True):
        if kd == 2:
            out.append(t - sum((G[i, d] - E[j, d]) ** 2 for d in range(n)))
            continue
        q = sum((G[i, d] - G[j, d]) ** 2 for d in range(n))
        if kd == 0:
            out.append((v + t) ** 2 - q)
        elif kd == 1:
            out.append(q - (v - t) * abs(v - t))
        elif kd == 3:
            out.append(r[k] ** 2 - q)
        elif alpha > 0:
            out.append(q - (r[k] + alpha) ** 2)
        else:
            out.append(q - (1 + kappa) * r[k] ** 2)
    return np.array(out)


def _program(rng, objective, alpha, collapsed=()):
    E, y = labelled_cloud(rng, 6, 2, 3)
    prob = Problem.build(E, y, alpha, objective, ref.diameter(E))
    return prob, prob.program(collapsed)


@pytest.mark.parametrize("objective", ["iso", "haus"])
@pytest.mark.parametrize("alpha", [0.0, 0.7])
@pytest.mark.parametrize("collapsed", [(), (0,)])
def test_epigraph_rows_and_jacobian(rng, objective, alpha, collapsed):
    prob, prog = _program(rng, objective, alpha, collapsed)
    M, n = prog.M, prob.n
    nv = M * n + 1 + prog.n_r
    x = rng.normal(size=nv)
    x[M * n:] = np.abs(x[M * n:]) + 0.1
    m = prog.kind.size
    c = np.empty(m)
    J = np.zeros((m, nv))
    args = (M, n, prob.E, prog.kind, prog.ri, prog.rj, prog.rk, prog.rv, prob.alpha, 1e-3)
    K.epigraph_rows(x, *args, True, c, J)
    np.testing.assert_allclose(c, _rows_reference(x, *args), rtol=KERNEL_RTOL, atol=KERNEL_ATOL)
    fd = np.zeros_like(J)
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = FD_STEP
        fd[:, k] = (_rows_reference(x + e, *args) - _rows_reference(x - e, *args)) / (2 * FD_STEP)
    np.testing.assert_allclose(J, fd, atol=FD_ATOL)


@pytest.mark.parametrize("alpha", [0.0, 0.7])
def test_augmented_lagrangian_gradient(rng, alpha):
    prob, prog = _program(rng, "iso", alpha)
    M, n = prog.M, prob.n
    nv = M * n + 1 + prog.n_r
    x = rng.normal(size=nv)
    x[M * n:] = np.abs(x[M * n:]) + 0.1
    lam = np.abs(rng.normal(size=prog.kind.size))
    args = (M, n, prob.E, prog.kind, prog.ri, prog.rj, prog.rk, prog.rv, prob.alpha, 0.0,
            lam, 3.0)
    g = np.zeros(nv)
    c = np.zeros(prog.kind.size)

    def f(z):
        return K.al_value_grad(z, *args, np.zeros(nv), np.zeros(prog.kind.size))

    v = K.al_value_grad(x, *args, g, c)
    rows = _rows_reference(x, *args[:-2])
    psi = [(-l * ci + 1.5 * ci * ci) if 3.0 * ci <= l else -l * l / 6.0
           for ci, l in zip(rows, lam, strict=True)]
    assert v == pytest.approx(x[M * n] + math.fsum(psi), rel=1e-12, abs=1e-12)
    fd = np.array([(f(x + FD_STEP * e) - f(x - FD_STEP * e)) / (2 * FD_STEP) for e in np.eye(nv)])
    np.testing.assert_allclose(g, fd, atol=1e-5)


@pytest.mark.parametrize("n_points,dim,n_classes", [(3, 1, 2), (6, 2, 3), (9, 3, 4)])
def test_values_slack_and_diameters_match_loops(rng, n_points, dim, n_classes):
    E, y = labelled_cloud(rng, n_points, dim, n_classes)
    G = E + rng.normal(size=E.shape)
    assert K.iso_value(E, G) == pytest.approx(ref.isometric_error(E, G), rel=KERNEL_RTOL,
                                              abs=KERNEL_ATOL)
    assert K.haus_value(E, G) == pytest.approx(ref.hausdorff_pointwise(E, G), rel=KERNEL_RTOL,
                                               abs=KERNEL_ATOL)
    for margin in (0.0, 0.5):
        sl = float(np.min(K.anchor_slack(G, y, margin)))
        assert sl == pytest.approx(ref.worst_slack(G, y, margin), rel=KERNEL_RTOL,
                                   abs=KERNEL_ATOL)
    P = int(y.max()) + 1
    diams = K.class_diameters(G, y, P)
    assert diams[-1] == pytest.approx(ref.diameter(G), rel=KERNEL_RTOL)
    for c in range(P):
        members = G[y == c]
        want = ref.diameter(members) if len(members) > 1 else 0.0
        assert diams[c] == pytest.approx(want, rel=KERNEL_RTOL, abs=KERNEL_ATOL)


def test_corner_cases_all_points_equal():
    E = np.zeros((4, 2))
    y = np.array([0, 0, 1, 1])
    assert K.iso_value(E, E) == 0.0
    assert K.haus_value(E, E) == 0.0
    assert np.min(K.anchor_slack(E, y, 0.0)) == 0.0
    assert np.min(K.anchor_slack(E, y, 1.0)) == -1.0
    assert K.three_point_bounds(E, y, 1.0)[0] == 1.0
