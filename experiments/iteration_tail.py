"""How much of a batch's QP work its slowest problems take, in the step as it runs.

    python experiments/iteration_tail.py [--scenes boxes8 ant humanoid] [--batch 64] [--steps 200] [--out results/iteration_tail.json]

Each scene (``bench_step.py``'s: its settled pose plus the same small noise, the same
``max_contacts``, float32, ctrl 0) runs ``--steps`` steps of ``--batch`` envs from
``make_state`` (no warm start at step 0, as after a reset) under one ``vmap``. Per env
and step it records the contact QP's iteration count (``State.solver.iterations``),
the active slots, the new ones (active now, while no slot of the same pair held the
same feature the step before: the slots the warm start cannot fill, as
``contact.stage.match_previous`` matches them) and the contacts dropped by full
buffers. It prints, per scene:

* iterations per step: mean, 99th percentile and max, over all steps and without
  step 0 (the reset);
* the tail: problems above ``TAIL`` iterations, their share of all problems and of
  all iterations (under ``vmap`` the solver's loops iterate only on the envs still
  running, so a batch costs about the sum of its iterations), and how many of them
  have new slots;
* step 0's share of all iterations.
"""

from __future__ import annotations

import argparse
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim
from bench_step import LIMITED, jaxsim_init, random_states, scene_xml, settle_jaxsim
from benchutil import machine_info
from jaxsim.contact.stage import slot_info
from jaxsim.io import load_mjcf

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "iteration_tail.json")
TAIL = 30  # iterations


def new_slots(model, before, after) -> jax.Array:
    """() int32: slots active ``after`` whose pair held no active slot of the same
    feature ``before`` (ContactStates of consecutive steps)."""
    count = jnp.zeros((), jnp.int32)
    for first, npair, nslot in slot_info(model.topo).groups:
        sl = slice(first, first + npair * nslot)
        now = after.active[sl].reshape(npair, nslot)
        same = ((after.feature[sl].reshape(npair, nslot, 1) == before.feature[sl].reshape(npair, 1, nslot))
                & before.active[sl].reshape(npair, 1, nslot) & now[:, :, None])
        count = count + jnp.sum(now & ~jnp.any(same, -1)).astype(jnp.int32)
    return count


def record(model, states, steps: int) -> dict:
    """Per (env, step) arrays of the batched rollout: iterations, active, new slots,
    dropped contacts."""
    def one(s):
        def body(s, _):
            n = jaxsim.step(model, s)
            return n, (n.solver.iterations, jnp.sum(n.contact.active), new_slots(model, s.contact, n.contact),
                       n.overflow - s.overflow)
        return jax.lax.scan(body, s, None, length=steps)[1]
    it, active, new, dropped = jax.jit(jax.vmap(one))(states)
    return {"iterations": np.asarray(it), "active": np.asarray(active), "new": np.asarray(new),
            "dropped": np.asarray(dropped)}


def _dist(x: np.ndarray) -> dict:
    return {"mean": float(x.mean()), "p99": float(np.percentile(x, 99)), "max": int(x.max())}


def summary(r: dict) -> dict:
    it, new = r["iterations"], r["new"]
    tail = it > TAIL
    return {"problems": int(it.size), "iterations": _dist(it), "iterations_after_reset": _dist(it[:, 1:]),
            "tail_problems": int(tail.sum()), "tail_share_of_problems": float(tail.mean()),
            "tail_share_of_iterations": float(it[tail].sum() / max(it.sum(), 1)),
            "tail_with_new_slots": int((tail & (new > 0)).sum()),
            "reset_share_of_iterations": float(it[:, 0].sum() / max(it.sum(), 1)),
            "active_mean": float(r["active"].mean()), "dropped_steps": int((r["dropped"] > 0).sum())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenes", nargs="+", default=["boxes8", "ant", "humanoid"])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--out", default=DEFAULT_OUT)
    a = p.parse_args()
    out = {"machine": machine_info(), "args": vars(a), "tail": TAIL, "scenes": {}}
    print(f"{'scene':10s} {'mean / p99 / max':>20s} {'after the reset':>20s} {'> ' + str(TAIL) + ' its':>9s} "
          f"{'their share of its':>19s} {'with new slots':>15s} {'reset share':>12s}")
    for scene in a.scenes:
        xml = scene_xml(scene)
        opts = {"max_contacts": 48} if scene == "boxes8" else ({"max_contacts": 16} if scene in LIMITED else {})
        model = load_mjcf(xml, dtype=jnp.float32, **opts)
        states = jaxsim_init(model, random_states(settle_jaxsim(model, xml, 1.0), a.batch))
        s = summary(record(model, states, a.steps))
        out["scenes"][scene] = s
        i, r = s["iterations"], s["iterations_after_reset"]
        print(f"{scene:10s} {i['mean']:8.2f} / {i['p99']:3.0f} / {i['max']:3d} {r['mean']:8.2f} / {r['p99']:3.0f} / "
              f"{r['max']:3d} {s['tail_problems']:9d} {s['tail_share_of_iterations']:19.1%} "
              f"{s['tail_with_new_slots']:15d} {s['reset_share_of_iterations']:12.1%}")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
