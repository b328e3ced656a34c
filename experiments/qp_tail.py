"""The slowest contact QPs of a scene: what they are, and what a second round of Newton
steps would do for them.

    python experiments/qp_tail.py [--scene boxes8] [--envs 16] [--steps 60] [--batch 64] [--out results/qp_tail.json]

1. Problems are captured from ``--steps`` steps of ``--envs`` float32 envs
   (``bench_qp.py``'s capture and starts: 1 s settled plus small noise) and solved
   again with the solver's defaults. The tail is the problems that take more than
   ``TAIL`` iterations (under ``vmap`` a batch's loop runs as long as its slowest
   env's); the script counts how many of them start cold (a zero warm start: contacts
   that have just appeared) against all problems, and how many take fewer iterations
   with up to eight Newton steps than with two, and how many the same count (none of
   their Newton steps lowers the residual below the start's).
2. From the cold start of the slowest problem it takes Newton steps one after
   another, each kept whatever its residual (``qp._newton`` with no bound), and
   prints each step's gradient-mapping residual and objective above the optimum: how
   many steps such a problem needs when nothing rejects them.
3. The variant ``restart``: the default two Newton steps, at most ``RESTART_AFTER``
   projected-gradient iterations, up to ``RESTART_STEPS`` more Newton steps from
   there (none where the solve has converged), then the projected gradient to the
   end. On the captured problems: iterations and accuracy (natural-map residual and
   objective gap, as ``bench_qp.py``). On ``bench_step.py``'s settled batch of
   ``--batch`` envs: compile CPU time and steps/s of both solvers in alternating
   rounds in one process (10-step calls). The variant lives here only: it replaces
   ``qp._run`` while its programs are traced.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import bench_qp
import bench_step
from bench_collision import random_states
from benchutil import alternating_rates, machine_info
from compile_step import MAX_CONTACTS
from jaxsim.io import load_mjcf
from jaxsim.solver import compaction, qp

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "qp_tail.json")
TAIL = 30  # iterations
RESTART_AFTER, RESTART_STEPS = 10, 4
FREE_STEPS = 12  # Newton steps taken from the slowest problem's cold start
PLAIN_RUN = qp._run


def restart_run(problem, x0, tol, max_iter, block, cone, skip=False, eliminate=((), False),
                newton_steps=qp.NEWTON_STEPS):
    """``qp._run`` with a second round of Newton steps after ``RESTART_AFTER``
    projected-gradient iterations (module docstring, 3); problems that the plain solver
    starts without Newton steps (no factors, eliminated rows, friction boxes) go to it."""
    if eliminate[0] or problem.factors is None or cone != "circle":
        return PLAIN_RUN(problem, x0, tol, max_iter, block, cone, skip, eliminate, newton_steps)
    sqp, s = qp._scaled(problem, block)
    L_max, floor, skip = qp._lipschitz(sqp.H), qp._floor(problem.g.dtype), jnp.asarray(skip, bool)
    operands = (sqp._replace(factors=None), L_max, tol, skip)
    shrink = qp.TINY_STAGE_SHRINK if problem.g.shape[0] <= qp.TINY else compaction.STAGE_SHRINK

    def gradient_loop(c, cap):
        return compaction.while_loop(lambda ops, c: ~(qp.terminate(c, ops[2], cap) | ops[3]),
                                     lambda ops, c: qp.step(ops[0], ops[1], c, floor, cone), operands, c,
                                     shrink=shrink)
    c = qp.init(sqp, x0 / s, L_max, cone)
    c = qp._newton_steps(sqp, L_max, c, tol, skip, floor, block, min(newton_steps, max_iter))
    c = gradient_loop(c, min(RESTART_AFTER, max_iter))
    c = qp._newton_steps(sqp, L_max, c, tol, skip, floor, block, RESTART_STEPS)
    c = gradient_loop(c, max_iter)
    return qp.no_worse_than_zero(problem, c.x * s), qp.Stats(c.it, c.res)


def timed_batch(scene: str, batch: int) -> dict:
    """Compile CPU time and steps/s of the plain and the restart solvers (module
    docstring, 3), float32, settled states, alternating rounds."""
    xml = bench_step.scene_xml(scene)
    model = load_mjcf(xml, dtype=jnp.float32, max_contacts=MAX_CONTACTS.get(scene, 0))
    states = bench_step.jaxsim_init(model, random_states(bench_step.settle_jaxsim(model, xml, 1.0), batch))
    calls, out = {}, {}
    for name, run in (("plain", PLAIN_RUN), ("restart", restart_run)):
        qp._run = run
        jax.clear_caches()
        try:
            t0 = time.process_time()
            step10 = jax.jit(bench_step.jaxsim_steps(model, 10)).lower(states).compile()
            out[name] = {"compile_cpu_s": time.process_time() - t0}
        finally:
            qp._run = PLAIN_RUN
        settled = step10(step10(states))
        calls[name] = (step10, (settled,))
    for name, rates in alternating_rates(calls, 10 * batch, 6, 2.0).items():
        out[name].update(steps_per_s=float(np.median(rates)), rounds=[float(r) for r in rates])
    return out


def per_problem(problems: list[dict], tol: float, newton_steps: int) -> np.ndarray:
    """Iterations of each captured problem, solved in float32 with the defaults."""
    keys = ("H", "g", "lower", "upper", "mu", "x0", "U", "W")
    data = [jnp.asarray(np.stack([p[k] for p in problems]), jnp.float32) for k in keys]
    block, cone, (eliminate, check) = problems[0]["block"], problems[0]["cone"], problems[0]["eliminate"]

    def one(H, g, lo, up, mu, x0, U, W):
        factors = None if U.shape[-1] == 0 else (U, None if W.shape[-1] == 0 else W)
        return qp.solve(qp.QP(H, g, lo, up, mu, factors=factors), x0, tol, max_iter=bench_qp.MAX_ITER, block=block,
                        cone=cone, eliminate=eliminate, check_bounds=check, newton_steps=newton_steps)[1].iterations
    return np.asarray(jax.jit(jax.vmap(one))(*data))


def free_newton(p: dict) -> dict:
    """Newton steps from the problem's start, each kept (module docstring, 2), float64;
    with the scaled operator's condition number and the contacts that carry load and
    that slide at the optimum."""
    problem = qp.QP(*(jnp.asarray(p[k], jnp.float64) for k in ("H", "g", "lower", "upper", "mu")),
                    factors=(jnp.asarray(p["U"], jnp.float64), None))
    sqp, s = qp._scaled(problem, p["block"])
    L_max, floor = qp._lipschitz(sqp.H), qp._floor(jnp.float64)
    c = qp.init(sqp, jnp.asarray(p["x0"], jnp.float64) / s, L_max)
    best = c
    for _ in range(20_000):  # the optimum, by the projected gradient
        best = qp.step(sqp, L_max, best, floor)
        if float(best.res) < 1e-13:
            break
    eig = np.linalg.eigvalsh(np.asarray(sqp.H))
    x = np.asarray(best.x[: 3 * sqp.mu.shape[0]]).reshape(-1, 3)
    loaded = x[:, 0] > 1e-6 * np.max(x[:, 0])
    sliding = loaded & (np.linalg.norm(x[:, 1:], axis=1) >= (1 - 1e-6) * np.asarray(sqp.mu) * x[:, 0])
    objective = lambda c: float(c.x @ (0.5 * c.Hx + sqp.g))  # noqa: E731
    rows = []
    for k in range(FREE_STEPS + 1):
        rows.append({"step": k, "residual": float(qp._gradient_map_residual(sqp, L_max, c.x, c.Hx, floor)),
                     "objective_above_optimum": objective(c) - objective(best)})
        c, _ = qp._newton(sqp, L_max, c._replace(res=jnp.asarray(jnp.inf)), jnp.asarray(jnp.inf), 0.0,
                          jnp.zeros((), bool), floor, p["block"])
    return {"condition_number": float(eig[-1] / eig[0]), "contacts": int(x.shape[0]), "loaded": int(loaded.sum()),
            "sliding": int(sliding.sum()), "steps": rows}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scene", default="boxes8")
    p.add_argument("--envs", type=int, default=16)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch", type=int, default=64, help="batch of the timed steps")
    p.add_argument("--out", default=DEFAULT_OUT)
    a = p.parse_args()
    out = {"machine": machine_info(), "scene": a.scene, "envs": a.envs, "steps": a.steps, "tail": TAIL,
           "restart_after": RESTART_AFTER, "restart_steps": RESTART_STEPS}

    out["timed"] = timed_batch(a.scene, a.batch)  # float32 programs, before float64 is on
    out["timed"]["batch"] = a.batch
    for name, t in out["timed"].items():
        if isinstance(t, dict):
            print(f"{name:8s} batch {a.batch}: {t['steps_per_s']:,.0f} steps/s (median of {len(t['rounds'])} "
                  f"rounds), compile {t['compile_cpu_s']:.1f} s CPU", flush=True)

    bench_qp.BATCH, bench_qp.STEPS = a.envs, a.steps
    with bench_qp.Capture() as cap:
        tol = bench_qp.run_scene(a.scene)
        jax.effects_barrier()
    n = max({q["H"].shape[0] for q in cap.problems}, key=lambda k: sum(q["H"].shape[0] == k for q in cap.problems))
    problems = [q for q in cap.problems if q["H"].shape[0] == n]
    it2, it8 = per_problem(problems, tol, 2), per_problem(problems, tol, 8)
    cold = np.asarray([not np.any(q["x0"]) for q in problems])
    tail = it2 > TAIL
    out["problems"] = {"count": len(problems), "n": n, "cold_share_all": float(cold.mean()),
                       "tail_count": int(tail.sum()), "cold_share_tail": float(cold[tail].mean()),
                       "tail_same_with_8_newton_steps": int(np.sum(tail & (it2 == it8))),
                       "tail_fewer_with_8_newton_steps": int(np.sum(tail & (it8 < it2))),
                       "slowest_iterations": int(it2.max()), "slowest_cold": bool(cold[np.argmax(it2)])}
    print(json.dumps(out["problems"]), flush=True)

    jax.config.update("jax_enable_x64", True)  # the float64 references and residuals
    out["free_newton"] = free_newton(problems[int(np.argmax(it2))])
    slowest = out["free_newton"]
    print(f"slowest problem: condition number {slowest['condition_number']:.0f}; of {slowest['contacts']} contacts "
          f"{slowest['loaded']} loaded, {slowest['sliding']} sliding at the optimum")
    for r in slowest["steps"]:
        print(f"  Newton step {r['step']:2d}: residual {r['residual']:.1e}, objective above the optimum "
              f"{r['objective_above_optimum']:.1e}", flush=True)
    out["captured"] = {}
    for name, run in (("plain", PLAIN_RUN), ("restart", restart_run)):
        qp._run = run
        jax.clear_caches()
        try:
            out["captured"][name] = bench_qp.evaluate(problems, tol)
        finally:
            qp._run = PLAIN_RUN
        r = out["captured"][name]
        it, res, gap = r["iterations"], r["natural_map_residual"], r["objective_gap"]
        print(f"{name:8s} captured: iterations mean {it['mean']:.2f} p99 {it['p99']:.0f} max {it['max']}; "
              f"residual median {res['median']:.1e} p99 {res['p99']:.1e} max {res['max']:.1e}; "
              f"objective gap max {gap['max']:.1e}", flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
