"""Cost of one training step and of one digits cell (N = 128, n = 32, 2,000 steps).

Measures, in one run:

- the median time of one update (sample, forward, batch-hard loss and
  gradient, backward, SGD) and of one logged evaluation, with numba and BLAS
  limited to one thread (the harness's default) against the baseline of
  leaving both at their defaults; prints the ratio of medians;
- the extrapolated and the measured wall time of a whole cell;
- whether numba pays for the all-pairs gradient (all-triplet, contrastive
  and margin losses): ``pair_grad_kernel`` against the numpy broadcast
  ``einsum`` over an ``(N, N, n)`` difference array (which also needs
  ``8 N^2 n`` bytes), ratio of medians.

Usage::

    python benchmarks/train_step.py [--steps 2000] [--repeats 5] [--skip-cell]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from isoapprox.kernels import train as TK
from isoapprox.train import TrainConfig, Trainer, train
from isoapprox.train.trainer import limit_threads


def _numpy_pair_grad(X, S):
    diff = X[:, None, :] - X[None, :, :]
    D = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
    W = np.divide(S, D, out=np.zeros_like(S), where=D > 0)
    return np.einsum("ij,ijk->ik", W, diff)


def _median(f, *args, repeats=5, number=5):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            f(*args)
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def pair_grad_comparison(repeats: int) -> None:
    with limit_threads(1):
        for N, n in ((128, 32), (512, 32)):
            rng = np.random.default_rng(0)
            X = rng.normal(size=(N, n))
            S = rng.normal(size=(N, N))
            S = S + S.T
            if not np.allclose(TK.pair_grad_kernel(X, S), _numpy_pair_grad(X, S)):
                raise RuntimeError("pair gradient kernel and numpy disagree")
            a = _median(TK.pair_grad_kernel, X, S, repeats=repeats)
            b = _median(_numpy_pair_grad, X, S, repeats=repeats)
            print(
                f"  pair gradient N = {N:3d}, n = {n}: numba {1e3 * a:7.2f} ms, numpy "
                f"{1e3 * b:7.2f} ms, ratio {b / a:.1f}"
            )


def _median_step(
    cfg: TrainConfig, threads: int | None, repeats: int, n: int
) -> tuple[float, float]:
    tr = Trainer(cfg, seed=0)
    steps, evals = [], []
    with limit_threads(threads):
        tr.step()
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(n):
                tr.step()
            steps.append((time.perf_counter() - t0) / n)
            t0 = time.perf_counter()
            tr.evaluate()
            evals.append(time.perf_counter() - t0)
    return statistics.median(steps), statistics.median(evals)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--loss", default="batch_hard")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--skip-cell", action="store_true", help="only the per-step timings")
    args = p.parse_args(argv)
    cfg = TrainConfig(
        batch_size=args.batch_size,
        embedding_dim=args.dim,
        steps=args.steps,
        loss=args.loss,
        normalize=args.loss == "selectively_contrastive",
    )
    train(
        TrainConfig(batch_size=16, embedding_dim=4, steps=2, log_every=1), seed=0
    )  # warm-up
    one = _median_step(cfg, 1, args.repeats, 50)
    base = _median_step(cfg, None, args.repeats, 50)
    n_logs = args.steps // cfg.log_every + 2
    print(
        f"digits cell: N = {args.batch_size}, n = {args.dim}, loss {args.loss}, "
        f"MLP 64-64-{args.dim}"
    )
    print(
        f"  one update       : {1e3 * one[0]:8.3f} ms (1 thread)   "
        f"{1e3 * base[0]:8.3f} ms "
        f"(default threads)   ratio {base[0] / one[0]:.2f}"
    )
    print(
        f"  one evaluation   : {1e3 * one[1]:8.3f} ms (1 thread)   "
        f"{1e3 * base[1]:8.3f} ms "
        f"(default threads)   ratio {base[1] / one[1]:.2f}"
    )
    print(
        f"  extrapolated cell: {args.steps * one[0] + n_logs * one[1]:.2f} s "
        f"({args.steps} updates + {n_logs} evaluations)"
    )
    pair_grad_comparison(args.repeats)
    if not args.skip_cell:
        t0 = time.perf_counter()
        train(cfg, seed=0)
        print(f"  measured cell    : {time.perf_counter() - t0:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
