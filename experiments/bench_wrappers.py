"""Env-steps/s of a task under Brax's training wrap and under jaxsim's chunked one.

    python experiments/bench_wrappers.py ant quadruped_walk humanoid [--batch 256]

For each task, ``BATCH`` envs step ``STEPS`` env steps under uniformly random actions
in [-1, 1] inside one jitted ``lax.scan``, wrapped once by Brax's
``brax.envs.wrappers.training.wrap`` (one ``vmap`` over the batch) and once by
``jaxsim.envs.wrappers.wrap`` (the batch in ``parallel.default_chunk`` chunks), in
the same process; the best of three timed calls (after the compile) is reported,
with the mean QP iterations of an env step. The ant runs on Brax's ``ant.xml`` with
the observation and reward of Brax's ant (as ``train.py --backend mjx`` compares it).
Writes ``results/bench_wrappers.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import numpy as np

import jaxsim.envs
from jaxsim import parallel
from jaxsim.envs import wrappers
from jaxsim.xla_flags import use_fast_cpu_compile
from benchutil import machine_info

STEPS = 20
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "bench_wrappers.json")


def make_env(task: str):
    if task == "ant":
        import brax
        model = os.path.join(os.path.dirname(brax.__file__), "envs", "assets", "ant.xml")
        return jaxsim.envs.get("ant", model=model, include_cfrc_ext_in_observation=False, contact_cost_weight=0.0)
    return jaxsim.envs.get(task)


def rate(env, wrap, batch: int) -> dict:
    """Env-steps/s (best of three calls of STEPS steps) and QP iterations per env step."""
    wrapped = wrap(env, episode_length=1000)
    state = jax.jit(wrapped.reset)(jax.random.split(jax.random.PRNGKey(0), batch))

    @jax.jit
    def roll(state, key):
        def body(s, k):
            action = jax.random.uniform(k, (batch, env.action_size), env.sys.dtype, -1.0, 1.0)
            s = wrapped.step(s, action)
            return s, s.pipeline_state.solver.iterations
        return jax.lax.scan(body, state, jax.random.split(key, STEPS))

    t0 = time.perf_counter()
    state, _ = jax.block_until_ready(roll(state, jax.random.PRNGKey(1)))
    compile_s, best, iterations = time.perf_counter() - t0, np.inf, None
    for r in range(3):
        t0 = time.perf_counter()
        state, iterations = jax.block_until_ready(roll(state, jax.random.PRNGKey(2 + r)))
        best = min(best, time.perf_counter() - t0)
    return {"env_steps_per_s": batch * STEPS / best, "first_call_s": compile_s,
            "qp_iterations_per_env_step": float(np.mean(iterations))}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tasks", nargs="+")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--out", default=OUT)
    args = p.parse_args()
    use_fast_cpu_compile()
    from brax.envs.wrappers import training as brax_training

    out = {"machine": machine_info(), "batch": args.batch, "steps": STEPS, "tasks": {}}
    for task in args.tasks:
        env = make_env(task)
        row = {"chunk": parallel.default_chunk(env.sys)}
        for label, wrap in (("brax", brax_training.wrap), ("chunked", wrappers.wrap)):
            row[label] = rate(env, wrap, args.batch)
            print(f"{task:15s} {label:8s} chunk {row['chunk']}: {row[label]['env_steps_per_s']:9.0f} env-steps/s, "
                  f"{row[label]['qp_iterations_per_env_step']:.1f} QP iterations per env step", flush=True)
        out["tasks"][task] = row
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
