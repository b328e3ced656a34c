"""How long a batched step takes to compile, and how large XLA's program is.

    python experiments/compile_step.py [--scenes ant@1024 humanoid@1024 ...] [--out results/compile_step.json]

For each ``SCENE@BATCH`` (``bench_step.py``'s scenes, float32, its contact limits)
it lowers ``jax.jit(jax.vmap(step))`` over BATCH states and reports the process CPU
time of XLA's compile and the line count of the optimized HLO, a measure of the
program's size that does not depend on the machine's load. XLA's flags are the
environment's (none: XLA's defaults, as a user's script gets them).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp

import jaxsim
from bench_step import scene_xml
from benchutil import machine_info
from jaxsim.io import load_mjcf

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "compile_step.json")
MAX_CONTACTS = {"boxes8": 48, "ant": 16, "humanoid": 16}


def measure(scene: str, batch: int) -> dict:
    model = load_mjcf(scene_xml(scene), dtype=jnp.float32, max_contacts=MAX_CONTACTS.get(scene, 0))
    states = jax.vmap(lambda _: jaxsim.make_state(model))(jnp.arange(batch))
    lowered = jax.jit(jax.vmap(lambda s: jaxsim.step(model, s))).lower(states)
    t0 = time.process_time()
    compiled = lowered.compile()
    cpu = time.process_time() - t0
    return {"scene": scene, "batch": batch, "compile_cpu_s": cpu, "optimized_hlo_lines": compiled.as_text().count("\n")}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenes", nargs="+", default=["cube@1024", "ant@1024", "humanoid@1024", "boxes8@64"])
    p.add_argument("--out", default=DEFAULT_OUT)
    a = p.parse_args()
    rows = []
    for item in a.scenes:
        scene, _, batch = item.partition("@")
        rows.append(measure(scene, int(batch or 1)))
        r = rows[-1]
        print(f"{scene:<10} batch {r['batch']:>6}: compile {r['compile_cpu_s']:6.1f} s CPU, "
              f"optimized HLO {r['optimized_hlo_lines']:,} lines", flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"machine": machine_info(), "xla_flags": os.environ.get("XLA_FLAGS", ""), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
