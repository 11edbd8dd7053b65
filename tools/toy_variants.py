"""The toy's numbers under every variant a machine of ours can differ by.

Gradient descent at a large learning rate turns last-bit differences into
other trajectories, so the README and docs/toy.md give the toy's numbers as
ranges over variants: every OpenBLAS kernel this CPU can run (SkylakeX
where it has AVX-512, Haswell, Sandybridge, Nehalem), numpy with its widest
SIMD paths switched off, and three relative perturbations of 1e-12 of the
initial weights and inputs.  This script runs ``isoapprox toy`` once per
variant (results only, no random toys: they do not depend on training) and
prints the ranges, with the variants each one covers::

    python tools/toy_variants.py --out /tmp/variants          # runs and tabulates
    python tools/toy_variants.py --out /tmp/variants --table  # tabulates existing runs

Each run takes about a minute on one core.  Which numbers are claims: the
outcomes, the merge order and that the collapse is sequential are asserted
by tests/test_toy_robust.py under every kernel .ci/kernels uses; the ranges
printed here are measurements, stated with the variants they cover.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path


def _cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _simd_off() -> str:
    """numpy's dispatched SIMD extensions this CPU has, but the baseline's."""
    code = ("from numpy._core._multiarray_umath import __cpu_dispatch__ as d, "
            "__cpu_features__ as f\non = [x for x in d if f.get(x)]\n"
            "print(' '.join(on[1:] if len(on) > 1 else on))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip()


def variants() -> list[tuple[str, dict[str, str], list[str]]]:
    """``(name, environment, extra toy arguments)`` of every variant this CPU can run."""
    flags = _cpu_flags()
    kernels = []
    if "avx512f" in flags:
        kernels.append("SkylakeX")
    if {"avx2", "fma"} <= flags:
        kernels.append("Haswell")
    if "avx" in flags:
        kernels.append("Sandybridge")
    kernels.append("Nehalem")
    out = [(k.lower(), {"OPENBLAS_CORETYPE": k}, []) for k in kernels]
    simd = _simd_off()
    if simd:
        out.append(("simd-off", {"NPY_DISABLE_CPU_FEATURES": simd}, []))
    out += [(f"perturbed-{k}", {}, ["--perturbation", "1e-12", "--perturbation-seed", str(k)])
            for k in (1, 2, 3)]
    return out


def run(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, env, extra in variants():
        out = folder / f"{name}.json"
        print(f"== {name} {' '.join(f'{k}={v}' for k, v in env.items())}", flush=True)
        subprocess.run([sys.executable, "-m", "isoapprox", "toy", "--no-figures",
                        "--n-random", "0", "--jobs", "1", "-q", "--overwrite",
                        "--out", str(out), *extra],
                       env={**os.environ, **env}, check=True, stdout=subprocess.DEVNULL)


def _range(values: list, fmt: str) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    return format(lo, fmt) if lo == hi else f"{format(lo, fmt)} to {format(hi, fmt)}"


def table(folder: Path) -> str:
    runs = {}
    for path in sorted(folder.glob("*.json")):
        res = json.loads(path.read_text())
        runs[path.stem] = {s["name"]: s for s in res["scenarios"]}
    if not runs:
        raise SystemExit(f"no results in {folder}")
    lines = [f"variants ({len(runs)}): {', '.join(runs)}"]
    names = ["collapse", "separate", "margin0"]
    for sc in names:
        rs = [r[sc] for r in runs.values() if sc in r]
        outcomes = sorted({r["outcome"] for r in rs})
        seq = sorted({bool(r["sequential"]) for r in rs})
        orders = {json.dumps(r["merge_order"]) for r in rs}
        first = [r["merge_events"][0][0] if r["merge_events"] else None for r in rs]
        last = [r["merge_events"][-1][0] if r["merge_events"] else None for r in rs]
        lines += [
            f"{sc}: outcome {'/'.join(outcomes)}; sequential {'/'.join(map(str, seq))}; "
            f"{len(orders)} merge order(s)",
            f"  first merge step {_range(first, 'd')}, last {_range(last, 'd')}; zero loss "
            f"from step {_range([r['zero_loss_step'] for r in rs], 'd')}",
            f"  final / initial diameter {_range([r['final_diameter_ratio'] for r in rs], '.2g')}"
            f"; final diameter {_range([r['final_diameter'] for r in rs], '.3g')}",
            f"  c: end {_range([r['c_final'] for r in rs], '.3f')}, max "
            f"{_range([r['c_max'] for r in rs], '.3f')}; uncertified steps "
            f"{_range([r['n_uncertified'] for r in rs], 'd')}",
        ]
        # c from the first merge on, over the logged steps
        after = []
        for path in sorted(folder.glob("*.json")):
            res = json.loads(path.read_text())
            s = next(x for x in res["scenarios"] if x["name"] == sc)
            if not s["merge_events"]:
                continue
            m0 = s["merge_events"][0][0]
            after += [t["c"] for t in res["records"]
                      if t["scenario"] == sc and t["step"] >= m0 and t["c"] is not None]
        if after:
            lines.append(f"  c from the first merge on: {_range(after, '.3f')}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="folder of the runs' results")
    p.add_argument("--table", action="store_true", help="only tabulate existing runs")
    args = p.parse_args(argv)
    if not args.table:
        run(args.out)
    print(table(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
