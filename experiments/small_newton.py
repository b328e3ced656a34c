"""Newton steps on small contact problems: what they would save where the step leaves
them out.

    python experiments/small_newton.py [--batch 64] [--steps 10] [--rounds 4] [--out results/small_newton.json]

The contact models pass the QP no low-rank factors, and so take no Newton steps, where
the Jacobian has at least half as many dof as rows (``contact.common.low_rank_factors``).
This script builds two such scenes in float32 with the default tolerance, 1e-6:

* ``box_and_ball``: a 0.1 m, 0.5 kg box and a 4 cm ball resting 0.5 mm deep on a floor
  (18 rows on 12 dof), started with random velocities of 0.5 m/s (standard
  deviation): sliding and spinning contacts from the first step;
* ``cube``: the same box alone at rest (12 rows on 6 dof).

For each it compiles ``--batch`` envs x ``--steps`` steps (``vmap`` of a rollout) as
the step is, and again with the factors passed whatever the size (the variant replaces
``low_rank_factors`` while its program is traced), and prints the compile CPU time,
the QP iterations (mean, the slowest env's per step averaged over the steps, max) and
the largest residual, then the steps/s of both programs in ``--rounds`` rounds that
alternate them (``benchutil.alternating_rates``) and the median ratio.
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
from benchutil import alternating_rates, machine_info
from jaxsim.contact import common

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "small_newton.json")
STEP_LOW_RANK_FACTORS = common.low_rank_factors


def factors_at_any_size(space):
    """``low_rank_factors`` without its size test."""
    return (space.J_Lt, None) if space.J_Lt is not None else (space.J, space.Minv_JT.T)


def scene(with_ball: bool) -> jaxsim.Model:
    b = jaxsim.ModelBuilder(timestep=2e-3)
    b.add_geom("world", "plane", (5, 5, 0.1), friction=(0.6, 0.6))
    b.add_body("box", pos=(0, 0, 0.0495), mass=0.5, inertia=(1e-3,) * 3)
    b.add_joint("box", "free")
    b.add_geom("box", "box", (0.05, 0.05, 0.05))
    if with_ball:
        b.add_body("ball", pos=(0.2, 0, 0.0395), mass=0.2, inertia=(2e-4,) * 3)
        b.add_joint("ball", "free")
        b.add_geom("ball", "sphere", (0.04,))
    return b.build(jnp.float32)


def run(name: str, model: jaxsim.Model, speed: float, batch: int, steps: int, rounds: int) -> dict:
    v = speed * jax.random.normal(jax.random.PRNGKey(0), (batch, model.nv))
    states = jax.vmap(lambda v: jaxsim.make_state(model, v=v))(v)
    calls, out = {}, {}
    for variant, factors in (("as the step is", STEP_LOW_RANK_FACTORS), ("Newton steps", factors_at_any_size)):
        common.low_rank_factors = factors
        jax.clear_caches()  # the step's inner programs are cached by model
        roll = jax.jit(jax.vmap(lambda s: jaxsim.rollout(model, s, jnp.zeros((steps, 0), model.dtype))))
        t0 = time.process_time()
        compiled = roll.lower(states).compile()
        compile_s = time.process_time() - t0
        _, traj = compiled(states)
        it = np.asarray(traj.solver.iterations)
        out[variant] = {"compile_cpu_s": compile_s, "iterations_mean": float(it.mean()),
                        "slowest_env_per_step": float(it.max(0).mean()), "iterations_max": int(it.max()),
                        "residual_max": float(np.asarray(traj.solver.residual).max())}
        calls[variant] = (compiled, (states,))
    common.low_rank_factors = STEP_LOW_RANK_FACTORS
    rates = alternating_rates(calls, batch * steps, rounds, 1.0)
    for variant, r in rates.items():
        out[variant]["steps_per_s"] = float(np.median(r))
    out["ratio"] = float(np.median(np.array(rates["Newton steps"]) / np.array(rates["as the step is"])))
    print(f"| {name} | " + " | ".join(
        f"{out[k]['iterations_mean']:.1f} / {out[k]['slowest_env_per_step']:.1f} / {out[k]['iterations_max']}"
        for k in ("as the step is", "Newton steps"))
        + f" | {out['as the step is']['compile_cpu_s']:.1f} / {out['Newton steps']['compile_cpu_s']:.1f}"
        + f" | {out['ratio']:.2f} |", flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--out", default=DEFAULT_OUT)
    args = p.parse_args()
    print("| scene | iterations as the step is: mean / slowest env / max | with Newton steps | "
          "compile CPU s, both | steps/s ratio |")
    print("|---|---|---|---|---|")
    out = {"machine": machine_info(), "batch": args.batch, "steps": args.steps, "scenes": {}}
    for name, with_ball, speed in (("box_and_ball", True, 0.5), ("cube", False, 0.0)):
        out["scenes"][name] = run(name, scene(with_ball), speed, args.batch, args.steps, args.rounds)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
