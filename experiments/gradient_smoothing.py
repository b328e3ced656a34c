"""What ``gradient_smoothing`` does to first-order gradients: their spread under random
perturbations against the shift of their mean away from the exact gradient's.

    python experiments/gradient_smoothing.py [--tasks push walk] [--values 0 0.01 0.1]
        [--samples 64] [--out DIR]

The setting of ``experiments/gradient_quality.py`` (its tasks, ``sigma`` and random
directions): at the task's ``initial_guess``, ``--samples`` perturbations ``w ~ N(0,
sigma^2)`` along each of the task's random unit directions ``u``, and per draw the
first-order directional derivative ``u . grad f(theta + w)``. The model's
``gradient_smoothing`` changes the derivative only, never ``f``, so every value sees
the same rollouts: the draws are shared, and the shift of a value's mean from the
exact gradient's (``gradient_smoothing`` 0) is measured pairwise, with the standard
error of the paired differences. Both are given relative to the exact mean's length
``|g|``:

* ``spread``: ``sqrt(sum over directions of the per-sample variance) / |g|``;
* ``shift``: ``|mean_s - mean_0| / |g|`` (the bias the smoothing adds to the exact
  gradient's, which ``gradient_quality.py`` measures against a zeroth-order reference).

One compile per task and contact setting (the Models with different values share a
program). Writes ``gradient_smoothing.json`` and a markdown table into ``--out``
(default ``experiments/results``).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from gradient_quality import CHUNK, RESULTS, TASKS, machine
from jaxsim.xla_flags import use_fast_cpu_compile

# task -> the contact settings studied (names from gradient_quality.TASKS)
SETTINGS = {"push": ("relaxed (default: K 1000/s, lambda 0.01)", "cone (exact; delta = dt)"),
            "walk": ("relaxed (default)",)}


def study(problem, sigma: float, directions: int, values: list, samples: int, seed: int = 0) -> list:
    """Per value of ``gradient_smoothing``: spread, shift from the exact mean and its
    standard error (module docstring), and the count of non-finite draws."""
    flat0, unflatten = ravel_pytree(problem.initial_guess())
    n, dtype = flat0.shape[0], flat0.dtype
    rng = np.random.default_rng(seed)
    U = np.stack([u / np.linalg.norm(u) for u in rng.normal(size=(directions, n))])  # (k, n)
    draws = -(-samples // CHUNK) * CHUNK
    z = rng.normal(size=(directions, draws)) * sigma

    @jax.jit
    def batch(model, w):  # (CHUNK, n) perturbations -> (CHUNK, k) directional derivatives
        p = copy.copy(problem)
        p.model = model

        def one(wi):
            return ravel_pytree(jax.grad(p.loss)(unflatten(flat0 + wi)))[0]
        return jax.vmap(one)(w) @ jnp.asarray(U.T, dtype)

    def derivatives(model) -> np.ndarray:  # (draws, k): direction j's derivative at its own draws
        out = np.zeros((draws, directions))
        for j in range(directions):
            w = z[j][:, None] * U[j][None, :]
            for k in range(0, draws, CHUNK):
                out[k:k + CHUNK, j] = np.asarray(batch(model, jnp.asarray(w[k:k + CHUNK], dtype)), np.float64)[:, j]
        return out

    opt = problem.model.opt
    rows, exact = [], None
    for value in values:
        model = problem.model.replace(opt=opt.replace(gradient_smoothing=jnp.asarray(value, opt.timestep.dtype)))
        t0 = time.perf_counter()
        d = derivatives(model)
        seconds = time.perf_counter() - t0
        finite = np.all(np.isfinite(d), 1)
        if exact is None:
            exact = d
        both = finite & np.all(np.isfinite(exact), 1)
        scale = float(np.linalg.norm(exact[both].mean(0)))
        diff = d[both] - exact[both]
        rows.append({"gradient_smoothing": value, "spread": float(np.sqrt(np.sum(d[finite].var(0))) / scale),
                     "shift": float(np.linalg.norm(diff.mean(0)) / scale),
                     "shift_se": float(np.sqrt(np.sum(diff.var(0)) / max(len(diff), 1)) / scale),
                     "nonfinite": int(np.sum(~finite)), "exact_mean_norm": scale, "seconds": seconds})
    return rows


def table(results: list) -> str:
    lines = ["| task | contact setting | gradient_smoothing (m/s) | spread | shift from exact (± s.e.) | "
             "non-finite |", "|---|---|---:|---:|---|---:|"]
    for r in results:
        for row in r["rows"]:
            lines.append(f"| {r['task']} | {r['setting']} | {row['gradient_smoothing']:g} | {row['spread']:.3g} | "
                         f"{row['shift']:.3f} ± {row['shift_se']:.3f} | {row['nonfinite']} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="+", choices=sorted(SETTINGS), default=sorted(SETTINGS))
    p.add_argument("--values", type=float, nargs="+", default=[0.0, 0.003, 0.01, 0.03, 0.1, 0.3],
                   help="gradient_smoothing values (m/s); the first must be 0, the exact gradient")
    p.add_argument("--samples", type=int, default=64, help="draws per direction")
    p.add_argument("--out", default=RESULTS)
    a = p.parse_args()
    if a.values[0] != 0 or any(v < 0 for v in a.values):
        p.error(f"--values must start at 0 and be >= 0, got {a.values}")
    use_fast_cpu_compile()
    os.makedirs(a.out, exist_ok=True)
    run = machine()
    results = []
    for task in a.tasks:
        factory, sigma, directions, settings = TASKS[task]
        for setting in SETTINGS[task]:
            options = dict(settings)[setting]
            rows = study(factory(**options), sigma, directions, a.values, a.samples)
            results.append({"task": task, "setting": setting, "options": options, "sigma": sigma,
                            "directions": directions, "rows": rows})
            for row in rows:
                print(f"{task:5s} {setting:42s} smoothing {row['gradient_smoothing']:6g} m/s: spread "
                      f"{row['spread']:.3g}, shift {row['shift']:.3f} ± {row['shift_se']:.3f}, "
                      f"{row['nonfinite']} non-finite", flush=True)
            with open(os.path.join(a.out, "gradient_smoothing.json"), "w") as f:
                json.dump({"machine": run, "args": vars(a), "results": results}, f, indent=1)
    with open(os.path.join(a.out, "gradient_smoothing.md"), "w") as f:
        f.write(table(results) + "\n")
    print(table(results))


if __name__ == "__main__":
    main()
