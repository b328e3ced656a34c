"""The mass matrix factored per kinematic tree against one dense factor, in one process.

    python experiments/block_factor_ab.py [--batch 64] [--rounds 5]

``kinematics.dof_blocks`` gives the step its per-tree blocks; the dense variant traces
the same step with one block over all dofs (one n x n Cholesky, as a single tree
gets). Both are compiled in the same process and timed from the same settled states
(``bench_step``'s eight boxes, max_contacts 48, 10 steps a call) in alternating rounds
(``benchutil.alternating_rates``), so the machine's drift between processes does not
enter the ratio. Also checks that the
two give the same final states. JSON in ``experiments/results/block_factor_ab.json``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim
from bench_step import jaxsim_steps, scene_xml
from benchutil import alternating_rates, machine_info
from jaxsim import dynamics
from jaxsim.io import load_mjcf

step_module = importlib.import_module("jaxsim.step")  # the module: ``jaxsim.step`` is the function
HERE = os.path.dirname(os.path.abspath(__file__))


def compiled(model, steps: int, states, dense: bool):
    """The jitted batched rollout, traced with per-tree blocks or with one dense block."""
    real = step_module.dof_blocks
    one = lambda topo: ((0, model.nv),)  # noqa: E731 - the dense factor's single block
    fn = jax.jit(jaxsim_steps(model, steps))
    jax.clear_caches()  # the inner jitted step would otherwise reuse its per-tree trace
    if dense:
        step_module.dof_blocks = dynamics.dof_blocks = one
    try:
        t0 = time.perf_counter()
        lowered = fn.lower(states).compile()
        compile_s = time.perf_counter() - t0
    finally:
        step_module.dof_blocks = dynamics.dof_blocks = real
        jax.clear_caches()
    return lowered, compile_s


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-time", type=float, default=2.0)
    p.add_argument("--out", default=os.path.join(HERE, "results", "block_factor_ab.json"))
    a = p.parse_args()

    model = load_mjcf(scene_xml("boxes8"), dtype=jnp.float32, max_contacts=48)
    settle = int(round(0.5 / float(model.opt.timestep)))
    final, _ = jax.jit(jaxsim.rollout)(model, jaxsim.make_state(model), jnp.zeros((settle, model.nu)))
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (a.batch,) + x.shape), final)

    per_tree, c_tree = compiled(model, a.steps, states, dense=False)
    dense, c_dense = compiled(model, a.steps, states, dense=True)
    q_tree, q_dense = per_tree(states).q, dense(states).q
    gap = float(jnp.max(jnp.abs(q_tree - q_dense)))

    rates = alternating_rates({"dense": (dense, (states,)), "per_tree": (per_tree, (states,))},
                              a.steps, a.rounds, a.min_time)
    rows = []
    for r, (dense_rate, tree_rate) in enumerate(zip(rates["dense"], rates["per_tree"])):
        rows.append({"dense_ms_per_step": 1e3 / dense_rate, "per_tree_ms_per_step": 1e3 / tree_rate,
                     "ratio": dense_rate / tree_rate})
        print(f"round {r}: dense {rows[-1]['dense_ms_per_step']:.2f} ms/step, per tree "
              f"{rows[-1]['per_tree_ms_per_step']:.2f} ms/step, per tree / dense {rows[-1]['ratio']:.3f}", flush=True)
    ratios = [row["ratio"] for row in rows]
    print(f"median per tree / dense {np.median(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f}); "
          f"compile {c_tree:.1f} s / {c_dense:.1f} s; max |q| difference after {a.steps} steps {gap:.2e}")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump({"machine": machine_info(), "args": vars(a), "rounds": rows, "median_ratio": float(np.median(ratios)),
                   "compile_s": {"per_tree": c_tree, "dense": c_dense}, "max_abs_q_difference": gap}, fh, indent=1)


if __name__ == "__main__":
    main()
