"""Did a refactor slow the step? jaxsim's step time at two commits, same run.

    python experiments/bench_refactor.py --before /path/to/old/checkout

Each (scene, batch, code) is timed in its own process with ``PYTHONPATH`` set to that
checkout, before and after alternating, on the scenes of ``bench_step.py`` (cube, ant,
humanoid with max_contacts 16) from the pose each version reaches after 0.5 s at rest
(``bench_step.settle_jaxsim``'s workload: resting contact). Prints the ratio after /
before of the time per step; JSON in ``experiments/results/bench_refactor.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def worker(scene: str, batch: int, steps: int, min_time: float) -> dict:
    import jax
    import jax.numpy as jnp

    import jaxsim
    from bench_step import LIMITED, jaxsim_steps, scene_xml
    from benchutil import bench
    from jaxsim.io import load_mjcf

    model = load_mjcf(scene_xml(scene), dtype=jnp.float32, **({"max_contacts": 16} if scene in LIMITED else {}))
    settle = int(round(0.5 / float(model.opt.timestep)))
    final, _ = jax.jit(jaxsim.rollout)(model, jaxsim.make_state(model), jnp.zeros((settle, model.nu)))
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), final)
    r = bench(jaxsim_steps(model, steps), (states,), min_time)
    return {"sec_per_step": r["sec_per_call"] / steps, "compile_s": r["compile_s"], "jaxsim": jaxsim.__file__}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", required=True, help="checkout of the earlier commit")
    p.add_argument("--after", default=ROOT, help="checkout of the later commit (default: this one)")
    p.add_argument("--scenes", nargs="+", default=["cube", "ant", "humanoid"])
    p.add_argument("--batches", nargs="+", type=int, default=[1, 64])
    p.add_argument("--steps", type=int, default=100, help="steps per timed call")
    p.add_argument("--min-time", type=float, default=2.0)
    p.add_argument("--out", default=os.path.join(HERE, "results", "bench_refactor.json"))
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker[0], int(a.worker[1]), a.steps, a.min_time)))
        return
    rows = []
    for scene in a.scenes:
        for batch in a.batches:
            row = {"scene": scene, "batch": batch}
            for label, tree in (("before", a.before), ("after", a.after)):
                env = dict(os.environ, PYTHONPATH=os.path.abspath(tree) + os.pathsep + HERE)
                out = subprocess.run([sys.executable, os.path.abspath(__file__), "--before", a.before,
                                      "--steps", str(a.steps), "--min-time", str(a.min_time),
                                      "--worker", scene, str(batch)], env=env, cwd="/",
                                     capture_output=True, text=True)
                if out.returncode:
                    raise RuntimeError(out.stderr[-3000:])
                row[label] = json.loads(out.stdout.strip().splitlines()[-1])
            row["ratio"] = row["after"]["sec_per_step"] / row["before"]["sec_per_step"]
            rows.append(row)
            print(f"{scene:9s} batch {batch:4d}: before {1e6 * row['before']['sec_per_step']:9.1f} us/step, "
                  f"after {1e6 * row['after']['sec_per_step']:9.1f} us/step, after/before {row['ratio']:.2f}",
                  flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump({"rows": rows, "before": os.path.abspath(a.before), "after": os.path.abspath(a.after)}, fh,
                  indent=1)


if __name__ == "__main__":
    main()
