"""The contact QP on problems captured from real steps: iterations and accuracy.

    python experiments/bench_qp.py [--scenes cube cube@fresh ...] [--newton-steps N] [--out results/bench_qp.json]

For each scene a short float32 rollout runs with ``jaxsim.solver.qp.solve`` wrapped so
that every QP the step poses (H with its compliance, g, bounds, mu, the warm start,
H's low-rank factors) is copied to the host (``jax.debug.callback``; passes a
``skip`` flag turns off are left out). The captured problems are then solved again,
batched, with the solver's defaults (the scene's ``solver_tol``, 500 iterations, the
step's Jacobi blocks, eliminated servo rows and factors; ``--newton-steps``: another
cap on the Newton steps than ``qp.solve``'s default), and the script reports, per
scene, the distribution of

* iterations (mean, 99th percentile, max), the cost, and
* the natural-map residual ``||z - P(z - (H z + g))||_inf / ||z||_inf`` in variables
  ``z`` scaled by one Jacobi factor per cone block (the mean of its diagonal) and per
  other block, computed in float64 outside the solver (the same metric whatever
  scaling the solver uses inside), and the
  objective's gap to a float64 solve run to 1e-13: the accuracy.

Scenes (float32; ``SCENE@fresh`` starts from the file's pose with no settling, as
after a reset; ``SCENE:MODEL[/SOLVER]`` runs ``bench_step.py``'s scene under another
contact model whose solve uses the QP, e.g. ``boxes8:volume``,
``humanoid:springhead/qp``, ``boxes8:cone/anitescu-tasora``):

  cube, cube@fresh, boxes8, ant, humanoid   ``bench_step.py``'s scenes and starts
                                             (settled 1 s, the same small noise; ant
                                             and humanoid solve their 16 deepest
                                             contacts), 30 steps, 4 envs, ctrl 0
  quadruped_walk, go2_terrain, cube_push    the environments (``jaxsim.envs``),
                                             30 env steps of 4 envs, random actions
                                             in [-1, 1]

Run it before and after a change to the solver to compare the two on the same kind
of problems (the captured problems follow each version's own trajectories).
"""

from __future__ import annotations

import argparse
import json
import os

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

import jaxsim
import jaxsim.envs
from jaxsim.io import load_mjcf
from jaxsim.solver import qp
from bench_collision import random_states
from benchutil import machine_info

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "bench_qp.json")
SCENES = ["cube", "cube@fresh", "boxes8", "ant", "humanoid", "quadruped_walk", "go2_terrain", "cube_push",
          "boxes8:volume", "humanoid:springhead/qp", "boxes8:cone/anitescu-tasora"]
ENVS = ("quadruped_walk", "go2_terrain", "cube_push")
STEPS, BATCH = 30, 4
MAX_ITER = 500


class Capture:
    """While active, every ``qp.solve`` the step traces also sends its problem here."""

    def __init__(self):
        self.problems: list[dict] = []
        self._solve = qp.solve

    def _store(self, H, g, lower, upper, mu, x0, skip, U, W, block, cone, eliminate):
        arrays = [np.asarray(a) for a in (H, g, lower, upper, mu, x0, skip, U, W)]
        batched = arrays[0].ndim == 3
        for i in range(arrays[0].shape[0] if batched else 1):
            H, g, lower, upper, mu, x0, skip, U, W = (a[i] if batched else a for a in arrays)
            if not skip:
                self.problems.append(dict(H=H, g=g, lower=lower, upper=upper, mu=mu, x0=x0, U=U, W=W, block=block,
                                          cone=cone, eliminate=eliminate))

    def __enter__(self):
        jax.clear_caches()  # a step traced earlier would call the solver it was traced with

        def solve(problem, x0, tol, max_iter=200, block=1, adjoint="implicit", cone="circle", skip=None,
                  smoothing=0.0, eliminate=(), check_bounds=False, newton_steps=qp.NEWTON_STEPS):
            H = problem.H if problem.compliance is None else problem.H + jnp.diag(problem.compliance)
            flag = jnp.zeros((), bool) if skip is None else jnp.asarray(skip, bool)
            # the low-rank factors (qp.QP.factors; an empty W for U U^T, none: both empty)
            empty = jnp.zeros(H.shape[:-1] + (0,), H.dtype)
            U, W = problem.factors if getattr(problem, "factors", None) is not None else (empty, empty)
            W = empty if W is None else W
            jax.debug.callback(lambda *a: self._store(*a, block, cone, (eliminate, check_bounds)), H, problem.g,
                               problem.lower, problem.upper, problem.mu, x0, flag, U, W)
            return self._solve(problem, x0, tol, max_iter, block, adjoint, cone, skip, smoothing, eliminate,
                               check_bounds, newton_steps)
        qp.solve = solve
        return self

    def __exit__(self, *exc):
        qp.solve = self._solve


def run_scene(name: str) -> float:
    """Roll the scene out (module docstring); returns the model's solver_tol."""
    if name in ENVS:
        env = jaxsim.envs.get(name)
        states = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), BATCH))

        def body(s, key):
            a = jax.random.uniform(key, (BATCH, env.action_size), env.sys.dtype, -1.0, 1.0)
            return jax.vmap(env.step)(s, a), None
        jax.jit(lambda s: jax.lax.scan(body, s, jax.random.split(jax.random.PRNGKey(1), STEPS))[0])(states)
        return float(env.sys.opt.solver_tol)
    import bench_step
    plain, _, start = name.partition("@")
    base, _, contact = plain.partition(":")
    contact, _, solver = contact.partition("/")
    xml = bench_step.scene_xml(base)
    limit = {"boxes8": {"max_contacts": 48}, "ant": {"max_contacts": 16}, "humanoid": {"max_contacts": 16}}
    options = dict(limit.get(base, {}), **({"contact": contact} if contact else {}),
                   **({"solver": solver} if solver else {}))
    model = load_mjcf(xml, **options)
    mm = bench_step.settle_jaxsim(model, xml, 1.0) if start != "fresh" else mujoco.MjModel.from_xml_string(xml)
    q = random_states(mm, BATCH)
    states = jax.vmap(lambda qi: jaxsim.make_state(model, qi))(q)
    jax.jit(jax.vmap(lambda s: jax.lax.scan(lambda s, _: (jaxsim.step(model, s), None), s, None,
                                              length=STEPS)[0]))(states)
    return float(model.opt.solver_tol)


def evaluate(problems: list[dict], tol: float, newton_steps: int = qp.NEWTON_STEPS) -> dict:
    """Solve the captured problems (the most common size) in float32 with the solver's
    defaults; iterations and accuracy (module docstring)."""
    n = max({p["H"].shape[0] for p in problems}, key=lambda k: sum(p["H"].shape[0] == k for p in problems))
    problems = [p for p in problems if p["H"].shape[0] == n]
    block, cone, (eliminate, check) = problems[0]["block"], problems[0]["cone"], problems[0]["eliminate"]
    keys = ("H", "g", "lower", "upper", "mu", "x0", "U", "W")
    data64 = {k: jnp.asarray(np.stack([p.get(k, np.zeros(p["H"].shape[:1] + (0,))) for p in problems]), jnp.float64)
              for k in keys}
    data32 = {k: v.astype(jnp.float32) for k, v in data64.items()}

    def solve(d, tol_, max_iter):
        def one(H, g, lo, up, mu, x0, U, W):
            factors = None if U.shape[-1] == 0 else (U, None if W.shape[-1] == 0 else W)
            return qp.solve(qp.QP(H, g, lo, up, mu, factors=factors), x0, tol_, max_iter=max_iter, block=block,
                            cone=cone, eliminate=eliminate, check_bounds=check, newton_steps=newton_steps)
        return jax.vmap(one)(*(d[k] for k in keys))
    x, stats = solve(data32, tol, MAX_ITER)
    reference, _ = solve({**data64, "U": data64["U"][..., :0], "W": data64["W"][..., :0]}, 1e-13, 20_000)

    def natural_map(H, g, lo, up, mu, x):
        # one Jacobi scale per cone (its diagonal's mean), whatever the solver's scaling:
        # the metric is the same for every version of the solver
        d, positive = qp._block_diagonal(H, block, mu.shape[0])
        s = jnp.where(positive, 1.0 / jnp.sqrt(jnp.where(positive, d, 1.0)), 1.0)
        z = x / s
        r = z - qp.project(z - (s * (H @ x) + s * g), lo / s, up / s, mu, cone)
        return jnp.max(jnp.abs(r)) / jnp.maximum(jnp.max(jnp.abs(z)), 1e-12)

    def objective(H, g, x):
        return 0.5 * x @ (H @ x) + g @ x

    x64 = x.astype(jnp.float64)
    residual = np.asarray(jax.vmap(natural_map)(data64["H"], data64["g"], data64["lower"], data64["upper"],
                                                data64["mu"], x64))
    f, f_ref = (np.asarray(jax.vmap(objective)(data64["H"], data64["g"], y)) for y in (x64, reference))
    gap = (f - f_ref) / np.maximum(np.abs(f_ref), 1e-12)
    it = np.asarray(stats.iterations)

    def dist(a):
        return {"median": float(np.median(a)), "p99": float(np.percentile(a, 99)), "max": float(np.max(a))}
    return {"problems": len(problems), "n": n, "tol": tol,
            "iterations": {"mean": float(it.mean()), "p99": float(np.percentile(it, 99)), "max": int(it.max()),
                           "at_cap": int(np.sum(it >= MAX_ITER))},
            "natural_map_residual": dist(residual), "objective_gap": dist(gap)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenes", nargs="+", default=SCENES)
    p.add_argument("--newton-steps", type=int, default=qp.NEWTON_STEPS,
                   help="cap on the QP's Newton steps when the captured problems are solved again")
    p.add_argument("--out", default=DEFAULT_OUT)
    args = p.parse_args()
    out = {"machine": machine_info(), "newton_steps": args.newton_steps, "scenes": {}}
    captured = {}
    for name in args.scenes:  # in float32, as users run them
        with Capture() as cap:
            tol = run_scene(name)
            jax.effects_barrier()
        captured[name] = (cap.problems, tol)
    jax.config.update("jax_enable_x64", True)  # for the float64 reference and residuals
    print("| scene | problems | n | iterations mean / p99 / max | natural-map residual median / p99 / max "
          "| objective gap max |")
    print("|---|---|---|---|---|---|")
    for name, (problems, tol) in captured.items():
        r = evaluate(problems, tol, args.newton_steps)
        out["scenes"][name] = r
        it, res = r["iterations"], r["natural_map_residual"]
        print(f"| {name} | {r['problems']} | {r['n']} | {it['mean']:.1f} / {it['p99']:.0f} / {it['max']} | "
              f"{res['median']:.1e} / {res['p99']:.1e} / {res['max']:.1e} | {r['objective_gap']['max']:.1e} |",
              flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
