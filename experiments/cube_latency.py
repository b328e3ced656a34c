"""Where one cube env's time goes at batch 1: the step itself against the cost of a call.

bench_step.py times synchronous calls of 10 steps over a vmapped batch and returns the
whole State. At batch 1 that call's fixed cost (dispatch, waking the host thread, one
buffer per State leaf in and out) is of the order of the 10 steps themselves. This
script times, float32, on bench_step's settled cube (dt 2 ms, 4 contacts):

  scan, pipelined      10 steps in a lax.scan, calls queued back to back, q returned
  vmap batch 1         the same under vmap with a batch of 1
  sync, q out          each call waited for (bench_step's timing), q returned
  sync, State out      each call waited for, the whole State returned (bench_step)

Run from the repository root: ``python experiments/cube_latency.py``.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp

import jaxsim
from bench_step import SCENES
from jaxsim.io import load_mjcf
from jaxsim.xla_flags import use_fast_cpu_compile

STEPS = 10


def best_per_call(f, arg, calls: int, sync: bool) -> float:
    """Seconds per call of jit(f), best of 3 loops of ``calls`` calls."""
    g = jax.jit(f)
    jax.block_until_ready(g(arg))
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(calls):
            out = g(arg)
            if sync:
                jax.block_until_ready(out)
        jax.block_until_ready(out)
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def main() -> None:
    use_fast_cpu_compile()  # as the benchmarks
    model = load_mjcf(SCENES["cube"], dtype=jnp.float32)
    state = jaxsim.make_state(model)
    state = jax.jit(lambda s: jaxsim.rollout(model, s, jnp.zeros((500, 0)))[0])(state)  # settle 1 s
    batch1 = jax.tree.map(lambda x: x[None], state)
    final = lambda s: jaxsim.rollout(model, s, jnp.zeros((STEPS, 0)))[0]  # noqa: E731
    final_q = lambda s: final(s).q  # noqa: E731
    cases = [("scan, pipelined", final_q, state, False),
             ("vmap batch 1", jax.vmap(final_q), batch1, False),
             ("sync, q out", jax.vmap(final_q), batch1, True),
             ("sync, State out", jax.vmap(final), batch1, True)]
    print(f"cube, float32, {STEPS} steps a call, {len(jax.tree.leaves(state))} State leaves")
    for name, f, arg, sync in cases:
        sec = best_per_call(f, arg, 1000, sync)
        print(f"  {name:18s} {sec * 1e6:8.1f} us a call  {STEPS / sec:9.0f} steps/s")


if __name__ == "__main__":
    main()
