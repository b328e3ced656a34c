"""How often ``friction.solve(..., "exact")`` with its defaults reaches a natural-map
residual of 1e-8 on the random local problems of ``tests/test_friction.py``: 1-8
contacts on 1-5 stacked bodies (``local_problem``) and random contact Jacobians on
6-30 dof (``random_jacobian_problem``), a third of them or more rank-deficient.
Float64, one problem after another under ``lax.map`` (each loop stops at its own
convergence). Per generator and seed range: problems above 1e-8 (seeds and
residuals, recomputed in NumPy by ``coulomb_residual``), the residuals' median /
99th percentile / max, and the sweeps (the solver's iterations less those of its
convex start; for a problem that reaches the last round, the QP iterations of that
round's accelerated start too) as mean / 99th percentile / max. Run from the
repository root:

    python experiments/exact_robustness.py [--stacked 0 13000] [--jacobian 0 3600]
        [--max-iter N] [--out experiments/results/exact_robustness.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from test_friction import coulomb_residual, local_problem, random_jacobian_problem  # noqa: E402

from jaxsim.solver import friction  # noqa: E402

TOL = 1e-8


def run(generator, seeds: range, max_iter: int | None) -> dict:
    W, q, mu = map(np.stack, zip(*(generator(s) for s in seeds)))

    def one(problem):
        W, q, mu = problem
        lower, upper = friction._bounds(q, mu, None, None)
        p = friction._Problem(W, q, mu, lower, upper)
        _, start_iterations = friction._convex_start(p, jnp.zeros_like(q), jnp.asarray(1e-10, q.dtype),
                                                     friction.SHIFT_PASSES, friction.SHIFT_QP_ITER)
        r, _, stats = friction.solve(W, q, mu, "exact", max_iter=max_iter)
        return r, stats.iterations - start_iterations

    t0 = time.perf_counter()
    r, sweeps = jax.jit(lambda *p: jax.lax.map(one, p))(W, q, mu)
    r, sweeps = np.asarray(r), np.asarray(sweeps)
    seconds = time.perf_counter() - t0
    res = np.array([coulomb_residual(W[i], q[i], mu[i], r[i]) for i in range(len(q))])
    above = np.flatnonzero(res > TOL)
    return {"seeds": [seeds.start, seeds.stop], "problems": len(seeds), "above_tol": len(above),
            "above_seeds": [int(seeds.start + i) for i in above], "above_residuals": res[above].tolist(),
            "residual_median": float(np.median(res)), "residual_p99": float(np.percentile(res, 99)),
            "residual_max": float(res.max()),
            "sweeps_mean": float(sweeps.mean()), "sweeps_p99": float(np.percentile(sweeps, 99)),
            "sweeps_max": int(sweeps.max()), "seconds": seconds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stacked", type=int, nargs=2, default=(0, 13000), metavar=("FIRST", "END"))
    ap.add_argument("--jacobian", type=int, nargs=2, default=(0, 3600), metavar=("FIRST", "END"))
    ap.add_argument("--max-iter", type=int, default=None, help="sweep cap (default: solve's)")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "exact_robustness.json"))
    a = ap.parse_args()
    out = {"tol": TOL, "max_iter": a.max_iter or friction.MAX_ITER["exact"]}
    for name, generator, seeds in (("stacked", local_problem, range(*a.stacked)),
                                   ("jacobian", random_jacobian_problem, range(*a.jacobian))):
        row = out[name] = run(generator, seeds, a.max_iter)
        print(f"{name:8s} seeds {seeds.start}-{seeds.stop - 1}: {row['problems'] - row['above_tol']:,} of "
              f"{row['problems']:,} reach {TOL:g}; above: seeds {row['above_seeds']} at "
              f"{np.round(row['above_residuals'], 5).tolist()}; residual median {row['residual_median']:.1e}, "
              f"p99 {row['residual_p99']:.1e}, max {row['residual_max']:.1e}; sweeps mean {row['sweeps_mean']:.2f}, "
              f"p99 {row['sweeps_p99']:.0f}, max {row['sweeps_max']} ({row['seconds']:.0f} s)", flush=True)
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
