"""The contact-volume model's step time next to the relaxed point model's, same run.

    python experiments/bench_volume.py --batches 1 64 1024

The scene is a 0.5 kg cube resting on the floor (``tests/test_volume_model.py``), in
float32, settled for 0.5 s before timing. Each (model, batch) times ``--steps`` steps
of a vmapped rollout, best of 3, and reports us/step, env-steps/s and the solver
iterations of the last step. JSON in ``experiments/results/bench_volume.json``.
(MJX has no contact-volume model; ``bench_step.py`` holds the MJX comparisons.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import jax
import jax.numpy as jnp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import jaxsim  # noqa: E402
from test_volume_model import cube_scene  # noqa: E402


def time_steps(model, batch: int, steps: int) -> tuple[float, int]:
    """(seconds per step, solver iterations of the last step of env 0)."""
    final, _ = jax.jit(jaxsim.rollout)(model, jaxsim.make_state(model), jnp.zeros((250, model.nu)))
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), final)
    run = jax.jit(jax.vmap(lambda s: jaxsim.rollout(model, s, jnp.zeros((steps, model.nu)))[0]))
    out = jax.block_until_ready(run(states))
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        jax.block_until_ready(run(states))
        best = min(best, time.perf_counter() - t0)
    return best / steps, int(out.solver.iterations[0])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batches", nargs="+", type=int, default=[1, 64, 1024])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--out", default=os.path.join(HERE, "results", "bench_volume.json"))
    args = p.parse_args(argv)
    rows = []
    for batch in args.batches:
        r = {}
        for name in ("volume", "relaxed"):
            model = cube_scene(name)
            model = jax.tree.map(lambda x: x.astype(jnp.float32) if getattr(x, "dtype", None) == jnp.float64 else x,
                                 model)
            r[name] = time_steps(model, batch, args.steps)
        (tv, iv), (tp, ip) = r["volume"], r["relaxed"]
        rows.append(dict(batch=batch, volume_us=tv * 1e6, relaxed_us=tp * 1e6, volume_env_steps_s=batch / tv,
                         ratio=tv / tp, volume_iterations=iv, relaxed_iterations=ip))
        print(f"batch {batch:5d}: volume {tv * 1e6:9.1f} us/step ({batch / tv:8.0f} env-steps/s, {iv} it), "
              f"relaxed {tp * 1e6:9.1f} us/step ({ip} it), volume/relaxed {tv / tp:.2f}", flush=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(dict(device=str(jax.devices()[0]), rows=rows), f, indent=1)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
