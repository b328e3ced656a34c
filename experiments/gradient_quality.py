"""Gradient quality through contact: the bias and the variance of first-order and
zeroth-order estimates of a smoothed loss' gradient, per contact model and stiffness.

    python experiments/gradient_quality.py [--tasks push bounce walk] [--samples 32]
        [--reference 512] [--settings TEXT] [--out DIR]

The protocol is that of Suh, Simchowitz, Zhang and Tedrake, "Do Differentiable
Simulators Give Better Policy Gradients?" (ICML 2022). A policy-gradient or
randomized-smoothing optimizer descends the smoothed loss ``F(theta) = E_w f(theta +
w)``, ``w ~ N(0, sigma^2 I)``, whose gradient has two per-sample estimates:

* first order: ``g1 = grad f(theta + w)`` (jaxsim's gradient through the rollout);
* zeroth order: ``g0 = (f(theta + w) - f(theta)) w / sigma^2`` (an evolution
  strategy's, with the unperturbed loss as baseline).

``g0`` is unbiased for ``grad F`` whatever ``f`` is; ``g1`` is unbiased only where ``f``
is continuous and its derivative is the right one: a jump in ``f`` (a contact that
is made or not) or a derivative that follows a discretization artefact instead of the
trend (the impacts of ``jaxsim.trajopt.BounceProblem`` with ``impact_gradient="step"``)
biases it, however many samples are averaged. ``g1``'s spread is usually far smaller,
except where stiff contact makes ``f`` steep. Per task and contact setting, at the
task's ``initial_guess``, the script rolls out ``--reference`` antithetic draws (per
direction) for a reference ``grad F`` (zeroth order, with its standard error) and
``--samples`` further draws for the two estimates, and reports, relative to
``|grad F|``:

* ``mean's error``: ``|mean(g) - grad F|`` over the ``--samples`` draws: for ``g0``
  it is its spread over ``sqrt(samples)``; for ``g1`` a value clear of that and of
  the reference's own standard error (listed) is bias;
* ``spread``: the per-sample standard deviation ``sqrt(E |g - mean g|^2)``, so that
  ``spread / sqrt(n)`` is an n-sample average's error from variance.

It writes ``gradient_quality.json`` and a markdown table into ``--out`` (default
``experiments/results``).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from jaxsim.xla_flags import use_fast_cpu_compile

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
CHUNK = 32  # samples per vmapped call: one compiled program per setting


def _push(**options):
    from jaxsim.trajopt import CubePushProblem
    return CubePushProblem((0.20, 0.05, 20.0), **options)


def _bounce(**options):
    from jaxsim.trajopt import BounceProblem
    return BounceProblem((-0.40, 0.10, 0.45), **options)


def _walk(**options):
    from jaxsim.trajopt import QuadrupedGaitProblem
    return QuadrupedGaitProblem(**options)


# task: (problem factory, sigma (theta units), directions (0: the whole space), [(setting, options)])
TASKS = {
    "push": (_push, 0.05, 2, [
        ("relaxed (default: K 1000/s, lambda 0.01)", {}),
        ("relaxed, lambda 0.1 (softer)", {"contact_relaxation": 0.1}),
        ("relaxed, gradient_smoothing 0.01 m/s", {"gradient_smoothing": 0.01}),
        ("relaxed, gradient_smoothing 0.1 m/s", {"gradient_smoothing": 0.1}),
        ("cone (exact; delta = dt)", {"contact": "cone"}),
        ("cone, delta 0.05 s (softer)", {"contact": "cone", "delta": 0.05}),
        ("cone, gradient_smoothing 0.1 m/s", {"contact": "cone", "gradient_smoothing": 0.1}),
        ("springhead (QP)", {"contact": "springhead", "solver": "qp"}),
    ]),
    "bounce": (_bounce, 0.05, 0, [
        ("springhead, impact_gradient step", {"impact_gradient": "step"}),
        ("springhead, impact_gradient time_of_impact", {"impact_gradient": "time_of_impact"}),
        ("springhead, time_of_impact, 0.5 ms steps", {"impact_gradient": "time_of_impact", "timestep": 5e-4}),
    ]),
    "walk": (_walk, 0.02, 2, [
        ("relaxed (default)", {}),
        ("relaxed, lambda 0.1 (softer)", {"contact_relaxation": 0.1}),
        ("relaxed, gradient_smoothing 0.01 m/s", {"gradient_smoothing": 0.01}),
        ("relaxed, gradient_smoothing 0.1 m/s", {"gradient_smoothing": 0.1}),
        ("springhead (QP)", {"contact": "springhead", "solver": "qp"}),
    ]),
}


def estimate(problem, sigma: float, samples: int, reference: int, directions: int, seed: int = 0) -> dict:
    """First- and zeroth-order estimates at ``problem.initial_guess()`` and the
    reference gradient (module docstring), in the whole space of ``theta`` or, with
    ``directions`` > 0, along that many random unit directions ``u``, each a
    one-dimensional problem ``s -> f(theta + s u)`` (where the zeroth-order reference
    needs far fewer draws); one compiled program."""
    theta0 = problem.initial_guess()
    flat0, unflatten = ravel_pytree(theta0)
    n, dtype = flat0.shape[0], flat0.dtype

    @jax.jit
    def batch(w):  # (CHUNK, n) perturbations -> losses (CHUNK,) and gradients (CHUNK, n)
        def one(wi):
            f, g = jax.value_and_grad(problem.loss)(unflatten(flat0 + wi))
            return f, ravel_pytree(g)[0]
        return jax.vmap(one)(w)

    def run(w):
        fs, gs = [], []
        for k in range(0, w.shape[0], CHUNK):
            f, g = batch(jnp.asarray(w[k:k + CHUNK], dtype))
            fs.append(np.asarray(f, np.float64))
            gs.append(np.asarray(g, np.float64))
        return np.concatenate(fs), np.concatenate(gs)

    rng = np.random.default_rng(seed)
    half = -(-reference // CHUNK) * CHUNK // 2  # antithetic pairs: whole chunks of + and - draws
    draws = -(-samples // CHUNK) * CHUNK
    t0 = time.perf_counter()
    f0 = float(batch(jnp.zeros((CHUNK, n), dtype))[0][0])
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    bases = np.eye(n) if directions == 0 else [u / np.linalg.norm(u) for u in rng.normal(size=(directions, n))]
    spaces = [np.eye(n)] if directions == 0 else [u[None, :] for u in bases]  # (k, n) rows span the space
    refs, ref_vars, g1s, g0s = [], [], [], []
    for basis in spaces:
        k = basis.shape[0]
        z_half = rng.normal(size=(half, k)) * sigma
        f_ref, _ = run(np.concatenate([z_half, -z_half]) @ basis)
        plus, minus = f_ref[: z_half.shape[0]], f_ref[z_half.shape[0]:]
        antithetic = ((plus - minus) / (2 * sigma ** 2))[:, None] * z_half
        refs.append(antithetic.mean(0))
        ref_vars.append(np.sum(antithetic.var(0)) / antithetic.shape[0])
        z = rng.normal(size=(draws, k)) * sigma
        f_est, g = run(z @ basis)
        g1s.append(g @ basis.T)
        g0s.append(((f_est - f0) / sigma ** 2)[:, None] * z)
    per_sample_s = (time.perf_counter() - t0) / (len(spaces) * (2 * half + draws))
    grad_ref, g1, g0 = np.concatenate(refs), np.concatenate(g1s, 1), np.concatenate(g0s, 1)
    scale = float(np.linalg.norm(grad_ref))
    finite = np.all(np.isfinite(g1), axis=1)

    def stats(g):
        g = g[np.all(np.isfinite(g), axis=1)]
        return {"mean_error": float(np.linalg.norm(g.mean(0) - grad_ref) / scale),
                "spread": float(np.sqrt(np.sum(g.var(0))) / scale)}

    return {"n_params": int(n), "directions": directions, "sigma": sigma, "loss": f0, "grad_norm": scale,
            "reference_error": float(np.sqrt(np.sum(ref_vars)) / scale), "first_order": stats(g1),
            "zeroth_order": stats(g0), "nonfinite_first_order": int(np.sum(~finite)), "compile_s": compile_s,
            "seconds_per_sample": per_sample_s, "reference_pairs": int(half), "samples": int(draws)}


def machine() -> dict:
    """The JAX version, devices and date a result file records."""
    return {"jax": jax.__version__, "devices": [str(d) for d in jax.devices()],
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def table(results: list) -> str:
    lines = ["| task | contact setting | first order: mean's error / spread | zeroth order: mean's error / "
             "spread | reference error | samples | space |", "|---|---|---|---|---|---|---|"]
    for r in results:
        e = r["estimate"]
        lines.append(f"| {r['task']} | {r['setting']} | {e['first_order']['mean_error']:.3f} / "
                     f"{e['first_order']['spread']:.3g} | {e['zeroth_order']['mean_error']:.3f} / "
                     f"{e['zeroth_order']['spread']:.3g} | {e['reference_error']:.3f} | {e['samples']} | "
                     + (f"{e['directions']} directions of {e['n_params']} |" if e["directions"]
                        else f"all {e['n_params']} |"))
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="+", choices=sorted(TASKS), default=sorted(TASKS))
    p.add_argument("--samples", type=int, default=32, help="draws for the two estimates")
    p.add_argument("--reference", type=int, default=512,
                   help="rollouts for the reference gradient (half as many antithetic pairs), per direction")
    p.add_argument("--settings", default="", help="only the settings whose name contains this text")
    p.add_argument("--out", default=RESULTS)
    a = p.parse_args()
    use_fast_cpu_compile()

    os.makedirs(a.out, exist_ok=True)
    run = machine()
    results = []
    for task in a.tasks:
        factory, sigma, directions, settings = TASKS[task]
        for setting, options in settings:
            if a.settings not in setting:
                continue
            e = estimate(factory(**options), sigma, a.samples, a.reference, directions)
            results.append({"task": task, "setting": setting, "options": options, "estimate": e})
            with open(os.path.join(a.out, "gradient_quality.json"), "w") as f:  # after every setting
                json.dump({"machine": run, "args": vars(a), "results": results}, f, indent=1)
            print(f"{task:6s} {setting:45s} first order error {e['first_order']['mean_error']:.3f} spread "
                  f"{e['first_order']['spread']:.3g} | zeroth order error {e['zeroth_order']['mean_error']:.3f} "
                  f"spread {e['zeroth_order']['spread']:.3g} | reference error {e['reference_error']:.3f} "
                  f"(|grad F| {e['grad_norm']:.3g}, {e['nonfinite_first_order']} non-finite)", flush=True)
    with open(os.path.join(a.out, "gradient_quality.md"), "w") as f:
        f.write(table(results) + "\n")
    print(table(results))


if __name__ == "__main__":
    main()
