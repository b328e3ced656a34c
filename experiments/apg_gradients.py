"""Why analytic policy gradients struggle on a task: how the gradient of a rollout's
reward with respect to its actions grows with the horizon.

    python experiments/apg_gradients.py [--tasks cube_push quadruped_walk ant]
        [--horizons 4 8 16 32 64] [--envs 8] [--smoothing 0] [--out DIR]

APG (``brax.training.agents.apg``) descends the gradient of the summed reward of
``horizon_length`` steps through the simulator. Per task, from ``--envs`` resets and
small random actions (normal, standard deviation 0.1, clipped to the action range),
the script measures, per horizon ``H`` (float32, the training dtype):

* ``|d R_H / d a|``: the norm of the gradient of the summed reward ``R_H`` over all
  ``H x action_size`` actions (what APG's update follows);
* ``|d r_H / d a_0|``: the sensitivity of the last step's reward to the first action,
  the product of ``H`` step Jacobians. Growing by a constant factor per step means
  exploding Jacobians (a stiff or chaotic rollout); bounded means APG's trouble lies
  elsewhere (the horizon's reach, the reward's shape);
* the share of envs whose episode ended (``done``) within ``H`` steps, beyond which
  Brax's APG keeps stepping a terminated env.

Medians and maxima over the envs. One compile per task and horizon. Writes
``apg_gradients.json`` into ``--out`` (default ``experiments/results``).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim.envs
from jaxsim.xla_flags import use_fast_cpu_compile

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def measure(env, horizon: int, envs: int, seed: int = 0) -> dict:
    """The module docstring's figures for one task and horizon."""
    keys = jax.random.split(jax.random.PRNGKey(seed), envs + 1)
    actions = jnp.clip(0.1 * jax.random.normal(keys[0], (envs, horizon, env.action_size)), -1.0, 1.0)

    def rollout(state, a):  # rewards (H,), done flags (H,)
        def body(s, u):
            s = env.step(s, u)
            return s, (s.reward, s.done)
        return jax.lax.scan(body, state, a)[1]

    def one(key, a):
        state = env.reset(key)
        summed = lambda a: (lambda r, d: (jnp.sum(r), jnp.any(d > 0)))(*rollout(state, a))  # noqa: E731
        total, ended = jax.grad(summed, has_aux=True)(a)
        last = jax.grad(lambda a0: rollout(state, a.at[0].set(a0))[0][-1])(a[0])
        return jnp.linalg.norm(total), jnp.linalg.norm(last), ended

    fn = jax.jit(jax.vmap(one))
    t0 = time.perf_counter()
    total, last, ended = jax.block_until_ready(fn(keys[1:], actions))
    seconds = time.perf_counter() - t0
    total, last, ended = np.asarray(total, np.float64), np.asarray(last, np.float64), np.asarray(ended)
    return {"horizon": horizon, "grad_total_median": float(np.median(total)), "grad_total_max": float(np.max(total)),
            "grad_last_first_median": float(np.median(last)), "grad_last_first_max": float(np.max(last)),
            "nonfinite": int(np.sum(~np.isfinite(total) | ~np.isfinite(last))), "ended": float(np.mean(ended)),
            "seconds_with_compile": seconds}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="+", default=["cube_push", "quadruped_walk", "ant"], choices=jaxsim.envs.names())
    p.add_argument("--horizons", type=int, nargs="+", default=[4, 8, 16, 32, 64])
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--smoothing", type=float, default=0.0, help="the tasks' gradient_smoothing (m/s)")
    p.add_argument("--out", default=RESULTS)
    a = p.parse_args()
    if any(h < 1 for h in a.horizons) or a.envs < 1:
        p.error("--horizons and --envs must be >= 1")
    use_fast_cpu_compile()
    results = []
    for task in a.tasks:
        env = jaxsim.envs.get(task, **({"gradient_smoothing": a.smoothing} if a.smoothing else {}))
        for horizon in a.horizons:
            row = {"task": task, **measure(env, horizon, a.envs)}
            results.append(row)
            print(f"{task:15s} H {horizon:3d}: |dR/da| median {row['grad_total_median']:9.3g} max "
                  f"{row['grad_total_max']:9.3g} | |dr_H/da_0| median {row['grad_last_first_median']:9.3g} max "
                  f"{row['grad_last_first_max']:9.3g} | ended {row['ended']:.2f}, {row['nonfinite']} non-finite "
                  f"({row['seconds_with_compile']:.0f} s)", flush=True)
            os.makedirs(a.out, exist_ok=True)
            with open(os.path.join(a.out, "apg_gradients.json"), "w") as f:
                json.dump({"args": vars(a), "jax": jax.__version__, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                           "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
