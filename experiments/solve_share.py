"""What the contact solve costs in a step, beside MJX: the step with the model's QP
settings against the same step with its QP cut to one iteration, in one process.

    python experiments/solve_share.py [--scene cube] [--batch 64] [--newton-steps 8 ...] [--out results/solve_share.json]

jaxsim's step is timed twice, with the model's ``solver_iterations`` and with 1 (so
the QP runs one iteration and its Newton steps: the rest of the step at full cost,
the solve at almost none), and MJX's ``mjx.step`` (Newton) on the same scene, 10 steps
a call, from bench_step.py's settled states with a zero warm start. The three are
timed in alternating rounds of at least 1 s each (4 by default) and the median is
reported with the ratios to MJX. The one-iteration step is not a setting to simulate
with (its impulses are one iteration's): it bounds what any faster solve can reach.
``--newton-steps N ...`` times the step with each of these caps on the QP's Newton
steps too (the point models' ``newton_steps``); each jaxsim row gives the mean and
largest QP iterations over the batch in the last step of its first call.
"""

from __future__ import annotations

import argparse
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim
from bench_collision import load_mjx
from bench_step import (LIMITED, jaxsim_init, jaxsim_steps, mjx_cholesky, mjx_init, mjx_plain, mjx_steps,
                        random_states, scene_xml, settle, settle_jaxsim)
from benchutil import alternating_rates, machine_info
from jaxsim.io import load_mjcf

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "solve_share.json")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scene", default="cube", help="a bench_step.py scene: cube, boxes8, ant, humanoid")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--newton-steps", type=int, nargs="*", default=[],
                   help="also time the step with these caps on the QP's Newton steps")
    p.add_argument("--out", default=DEFAULT_OUT)
    a = p.parse_args()
    xml = scene_xml(a.scene)
    opts = {"max_contacts": 48} if a.scene == "boxes8" else ({"max_contacts": 16} if a.scene in LIMITED else {})
    calls, iterations = {}, {}
    variants = [("jaxsim", {}), ("jaxsim, QP cut to 1 iteration", {"solver_iterations": 1})]
    variants += [(f"jaxsim, newton_steps={n}", {"newton_steps": n}) for n in a.newton_steps]
    for label, extra in variants:
        model = load_mjcf(xml, dtype=jnp.float32, **opts, **extra)
        states = jaxsim_init(model, random_states(settle_jaxsim(model, xml, 1.0), a.batch))
        f = jax.jit(jaxsim_steps(model, 10, None, jaxsim.parallel.batch_mesh(a.batch)))
        it = np.asarray(jax.block_until_ready(f(states)).solver.iterations)
        iterations[label] = {"mean": float(it.mean()), "max": int(it.max())}
        calls[label] = (f, (states,))
    mm, mx, dx = load_mjx(xml)
    settle(mm, 1.0)
    with mjx_cholesky(mjx_plain("auto", a.batch)):  # bench_step's MJX at this batch
        f = jax.jit(mjx_steps(mx, 10))
        d = mjx_init(dx, random_states(mm, a.batch))
        jax.block_until_ready(f(d))
    calls["MJX"] = (f, (d,))
    rates = alternating_rates(calls, a.batch * 10, a.rounds, 1.0)
    mjx_rate = float(np.median(rates["MJX"]))
    rows = []
    for key, rs in rates.items():
        med = float(np.median(rs))
        rows.append({"run": key, "steps_per_s": med, "over_mjx": med / mjx_rate, "rounds": rs,
                     "qp_iterations": iterations.get(key)})
        it = iterations.get(key)
        its = f"  QP iterations mean {it['mean']:.1f}, max {it['max']}" if it else ""
        print(f"{a.scene}, batch {a.batch}, {key:30s} {med:10.0f} steps/s  {med / mjx_rate:5.2f}x MJX{its}", flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump({"machine": machine_info(), "args": vars(a), "rows": rows}, fh, indent=1)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
