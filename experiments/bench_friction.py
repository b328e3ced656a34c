"""The cone model's local friction problems, captured from real steps: time, sweeps and
accuracy of each friction method.

    python experiments/bench_friction.py [--scene boxes8] [--steps 10] [--batch 64]
                                         [--out results/bench_friction.json]

A float32 rollout of ``bench_step.py``'s scene under ``contact="cone", solver="exact"``
(settled 1 s with that model, the same small noise, ``--batch`` envs, ``--steps``
steps) runs with ``jaxsim.solver.friction.solve`` wrapped so that every problem the
step poses (W, q, mu, the warm start, the row bounds and W's low-rank factor) is
copied to the host (``jax.debug.callback``). The problems are then solved again,
batched in groups of ``--batch`` (``vmap``, as in a batched step) with the step's
settings, by each method, exact with and without the factors, and the script
prints per configuration:

* microseconds per problem (same run, so the ratios are what matters),
* iterations (exact: sweeps plus its start's QP iterations; mean, 99th percentile,
  max) and the mean over groups of the group's maximum (what a plain ``vmap`` pays),
* the natural-map residual ``friction.residual`` (median, 99th percentile, max) and
  how many problems end above the step's tolerance.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim
from jaxsim.io import load_mjcf
from jaxsim.solver import friction
from bench_collision import random_states
from benchutil import machine_info

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "bench_friction.json")
LIMIT = {"boxes8": {"max_contacts": 48}, "ant": {"max_contacts": 16}, "humanoid": {"max_contacts": 16}}
KEYS = ("W", "q", "mu", "r0", "lower", "upper", "U")


def capture(scene: str, steps: int, batch: int) -> tuple[dict, dict]:
    """The problems of the rollout (module docstring), stacked, and the step's settings."""
    import bench_step
    xml = bench_step.scene_xml(scene)
    model = load_mjcf(xml, contact="cone", solver="exact", **LIMIT.get(scene, {}))
    q = random_states(bench_step.settle_jaxsim(model, xml, 1.0), batch)
    problems = []
    original = friction.solve

    def store(*arrays):
        arrays = [np.asarray(a) for a in arrays]
        problems.extend(zip(*arrays) if arrays[0].ndim == 3 else [tuple(arrays)])

    def solve(W, q, mu, method="exact", **kw):
        jax.debug.callback(store, W, q, mu, kw["r0"], kw["lower"], kw["upper"], kw["factors"][0])
        return original(W, q, mu, method, **kw)

    jax.clear_caches()  # the settling rollout was traced with the unwrapped solver
    friction.solve = solve
    try:
        states = jax.vmap(lambda qi: jaxsim.make_state(model, qi))(q)
        rollout = jax.vmap(lambda s: jax.lax.scan(lambda s, _: (jaxsim.step(model, s), None), s, None,
                                                  length=steps)[0])
        jax.block_until_ready(jax.jit(rollout)(states))
    finally:
        friction.solve = original
    p, opt = model.contact_params, model.opt
    settings = {"tol": float(jnp.maximum(p.sweep_tol, 100 * jnp.finfo(jnp.float32).eps)),
                "max_iter": int(p.sweeps), "start_passes": int(p.start_passes),
                "start_tol": float(opt.solver_tol), "start_iterations": int(opt.solver_iterations),
                "qp_tol": float(opt.solver_tol), "qp_iterations": int(opt.solver_iterations)}
    return {k: np.stack(v) for k, v in zip(KEYS, zip(*problems))}, settings


def evaluate(data: dict, s: dict, method: str, factors: bool, batch: int) -> dict:
    exact = method == "exact"

    def one(W, q, mu, r0, lower, upper, U):
        return friction.solve(W, q, mu, method, tol=s["tol"] if exact else s["qp_tol"],
                              max_iter=s["max_iter"] if exact else s["qp_iterations"], r0=r0, lower=lower,
                              upper=upper, start_passes=s["start_passes"], start_tol=s["start_tol"],
                              start_iterations=s["start_iterations"], factors=(U, None) if factors else None)[2]
    f = jax.jit(jax.vmap(one))
    groups = len(data["q"]) // batch
    args = [jnp.asarray(data[k][:groups * batch].reshape((groups, batch) + data[k].shape[1:])) for k in KEYS]
    jax.block_until_ready(f(*(a[0] for a in args)))
    t0 = time.perf_counter()
    stats = jax.block_until_ready([f(*(a[g] for a in args)) for g in range(groups)])
    seconds = time.perf_counter() - t0
    it = np.concatenate([np.asarray(st.iterations) for st in stats])
    res = np.concatenate([np.asarray(st.residual) for st in stats])

    def dist(a):
        return {"median": float(np.median(a)), "p99": float(np.percentile(a, 99)), "max": float(np.max(a))}
    return {"method": method, "factors": factors, "us_per_problem": 1e6 * seconds / (groups * batch),
            "iterations": {"mean": float(it.mean()), "p99": float(np.percentile(it, 99)), "max": int(it.max()),
                           "group_max_mean": float(it.reshape(groups, batch).max(1).mean())},
            "residual": dist(res), "above_tol": int(np.sum(res > s["tol"])), "problems": int(groups * batch)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scene", default="boxes8")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--out", default=DEFAULT_OUT)
    a = ap.parse_args()
    data, settings = capture(a.scene, a.steps, a.batch)
    print(f"{a.scene}: {len(data['q'])} problems of n = {data['q'].shape[1]}, factor k = {data['U'].shape[2]}; "
          f"settings {settings}")
    rows = [evaluate(data, settings, method, factors, a.batch)
            for method, factors in (("anitescu-tasora", True), ("exact", True), ("exact", False))]
    print(f"{'method':16s} {'factors':>7s} {'us/problem':>10s}  iterations mean/p99/max (group max)   "
          f"residual median/p99/max   above tol")
    for r in rows:
        i, res = r["iterations"], r["residual"]
        print(f"{r['method']:16s} {str(r['factors']):>7s} {r['us_per_problem']:10.0f}  {i['mean']:6.1f} / {i['p99']:5.0f}"
              f" / {i['max']:5d} ({i['group_max_mean']:6.1f})   {res['median']:.1e} / {res['p99']:.1e} / "
              f"{res['max']:.1e}   {r['above_tol']}/{r['problems']}")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump({"machine": machine_info(), "scene": a.scene, "steps": a.steps, "batch": a.batch,
                   "settings": settings, "rows": rows}, fh, indent=1)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
