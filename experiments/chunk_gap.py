"""Is the gap between chunked and one-``vmap`` batches the solver's or the cache's?

    python experiments/chunk_gap.py [--batch 1024] [--chunk 128] [--out results/chunk_gap.json]

On a CPU ``bench_step.py`` steps boxes8 in chunks of 128 environments
(``parallel.default_chunk``), and at batch 1,024 that runs faster than one ``vmap``
over the whole batch. Two things could cause it: QP iterations spent on environments
that have already converged (which ``solver.compaction`` removes), or the memory of
1,024 QP matrices of 144 x 144 outgrowing the caches. This script times both layouts
twice: with the model's solver settings, and with the contact QP cut to one iteration
(``solver_iterations=1``), where no environment iterates longer than another. If the
ratio stays with one iteration, the gap is the batch's memory, not the solver.

jaxsim only (float32, 10 steps a call from bench_step's settled boxes8 states);
each layout and setting is timed in 4 alternating rounds of at least 2 s each, and
the median is reported.
"""

from __future__ import annotations

import argparse
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim
from bench_step import jaxsim_init, jaxsim_steps, random_states, scene_xml, settle_jaxsim
from benchutil import alternating_rates, machine_info
from jaxsim.io import load_mjcf

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "chunk_gap.json")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--chunk", type=int, default=128)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--out", default=DEFAULT_OUT)
    a = p.parse_args()
    xml = scene_xml("boxes8")
    calls = {}
    for cap in (None, 1):  # the model's solver_iterations, then one iteration
        model = load_mjcf(xml, dtype=jnp.float32, max_contacts=48,
                          **({} if cap is None else {"solver_iterations": cap}))
        states = jaxsim_init(model, random_states(settle_jaxsim(model, xml, 1.0), a.batch))
        for chunk in (a.chunk, None):
            f = jax.jit(jaxsim_steps(model, 10, chunk, jaxsim.parallel.batch_mesh(a.batch)))
            jax.block_until_ready(f(states))
            calls[cap, chunk] = (f, (states,))
    rates = alternating_rates(calls, a.batch * 10, a.rounds, 2.0)
    rows = []
    for cap in (None, 1):
        chunked, whole = np.median(rates[cap, a.chunk]), np.median(rates[cap, None])
        rows.append({"solver_iterations": cap or "model's", "chunked_steps_per_s": float(chunked),
                     "one_vmap_steps_per_s": float(whole), "ratio": float(chunked / whole),
                     "rounds_chunked": rates[cap, a.chunk], "rounds_one_vmap": rates[cap, None]})
        print(f"boxes8, batch {a.batch}, solver_iterations {cap or 'of the model'}: chunks of {a.chunk} "
              f"{chunked:.0f} steps/s, one vmap {whole:.0f}, ratio {chunked / whole:.2f}", flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump({"machine": machine_info(), "args": vars(a), "rows": rows}, fh, indent=1)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
