"""The n-link pendulum of Wakisaka & Sugihara's relaxed point contacts: relaxed point
contacts vs the plain rigid ("macroscopic") method.

The chain of ``scenes.pendulum(n, floor=True)`` (4 x 10 x 4 cm links of 0.3 kg, ground
mu_k = 0.4, mu_s = 1.0) starts straight, raised 60 degrees above the ground, falls and
comes to rest lying on it. For each method this script simulates 5 s at dt = 1 ms in
float64 and records

  * the normal forces of the tip link's four ground contacts over time (the paper's
    figures 5 and 6): ``experiments/results/relaxed_pendulum.png``;
  * wall time of the 5 simulated seconds (compiled, excluding compilation; best of 3)
    next to the paper's table (C on an i7-2720QM, 2011): relaxed 31.3 s, rigid 6.9 s;
  * the spread of the tip's four normal forces over the last second, QP iterations
    (mean / max per step), energy rise above its initial value, final speed.

Run from the repository root: ``python experiments/relaxed_pendulum.py [--links 6]``.
Results go to ``experiments/results/relaxed_pendulum.json`` and the PNG. The
documentation pages (``docs/pages/contact/relaxed.md`` and ``rigid.md``) show a copy
of the PNG, ``docs/pages/images/relaxed_pendulum_forces.png``; this script does not
write there: copy the new PNG over it after a rerun.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxsim  # noqa: E402
from jaxsim import scenes  # noqa: E402
from jaxsim.contact.space import slot_info  # noqa: E402
from jaxsim.dynamics import energy  # noqa: E402
from jaxsim.kinematics import forward_kinematics  # noqa: E402
from benchutil import machine_info  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
PAPER_WALL_S = {"relaxed": 31.3, "rigid": 6.9}  # Wakisaka & Sugihara's table 1, dt = 1 ms


def simulate(n: int, method: str, seconds: float, repeats: int = 3) -> dict:
    model = scenes.pendulum(n, floor=True, dtype=jnp.float64, contact=method)
    steps = int(round(seconds / float(model.opt.timestep)))
    state0 = jaxsim.make_state(model, q=scenes.pendulum_raised_q(model))
    ctrls = jnp.zeros((steps, model.nu), model.dtype)
    t0 = time.perf_counter()
    run = jax.jit(jaxsim.rollout).lower(model, state0, ctrls).compile()
    compile_s = time.perf_counter() - t0
    wall = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        final, traj = jax.block_until_ready(run(model, state0, ctrls))
        wall.append(time.perf_counter() - t0)

    tip = np.asarray(slot_info(model.topo).geom2) == model.geom_id(f"box{n - 1}")
    fz = np.asarray(traj.contact.force_w[:, tip, 2])  # (T, slots of the tip-ground pair)
    fz = np.where(np.asarray(traj.contact.active[:, tip]), fz, 0.0)
    e = np.asarray(jax.jit(jax.vmap(lambda q, v: sum(energy(model, forward_kinematics(model, q), v))))(
        traj.q, traj.v))
    e0 = float(sum(energy(model, forward_kinematics(model, state0.q), state0.v)))
    last = fz[-int(1.0 / float(model.opt.timestep)):]
    rest = last[:, last.mean(0) > 1e-6]
    iters = np.asarray(traj.solver.iterations)
    return {
        "method": method, "links": n, "steps": steps, "compile_s": compile_s, "wall_s": min(wall),
        "paper_wall_s": PAPER_WALL_S[method], "time": (np.arange(1, steps + 1) * float(model.opt.timestep)),
        "tip_fz": fz, "tip_contacts_at_rest": int(rest.shape[1]),
        "tip_fz_at_rest": rest[-1].tolist(),
        "tip_spread_last_second": float(np.max(np.ptp(rest, axis=1) / rest.mean(1))) if rest.size else None,
        "iterations_mean": float(iters.mean()), "iterations_max": int(iters.max()),
        "energy_rise_J": float(e.max() - e0), "energy_initial_J": e0, "energy_final_J": float(e[-1]),
        "final_max_speed": float(np.abs(np.asarray(final.v)).max()),
        "nonfinite": bool(final.nonfinite),
    }


def plot(results: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 1, figsize=(7, 2.8 * len(results)), sharex=True)
    for ax, r in zip(np.atleast_1d(axes), results):
        for k in range(r["tip_fz"].shape[1]):
            ax.plot(r["time"], r["tip_fz"][:, k], lw=0.8, label=f"contact {k}")
        ax.set_ylabel("normal force [N]")
        ax.set_title(f"{r['method']}: tip link's ground contacts ({r['links']}-link pendulum)")
        ax.set_ylim(bottom=-0.1, top=max(3.0, 1.2 * float(np.percentile(r["tip_fz"], 99.9))))
        ax.legend(loc="upper right", fontsize=7)
    np.atleast_1d(axes)[-1].set_xlabel("time [s]")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--links", type=int, default=6)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--out", default=os.path.join(RESULTS, "relaxed_pendulum.json"))
    a = p.parse_args()
    results = [simulate(a.links, m, a.seconds) for m in ("relaxed", "rigid")]
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    png = os.path.splitext(a.out)[0] + ".png"
    plot(results, png)

    print(f"{a.links}-link pendulum, {a.seconds} s at dt = 1 ms, float64, {jax.devices()[0].platform}")
    print("| method | wall (s) | paper (s, C, 2011) | compile (s) | QP iters mean / max | "
          "tip contacts at rest | tip force spread (last 1 s) | energy rise (J) | final max |v| |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        spread = "n/a" if r["tip_spread_last_second"] is None else f"{100 * r['tip_spread_last_second']:.2f} %"
        print(f"| {r['method']} | {r['wall_s']:.2f} | {r['paper_wall_s']} | {r['compile_s']:.1f} | "
              f"{r['iterations_mean']:.1f} / {r['iterations_max']} | {r['tip_contacts_at_rest']} | {spread} | "
              f"{r['energy_rise_J']:.2e} | {r['final_max_speed']:.1e} |")
    print(f"plot: {png}")
    keep = [{k: v for k, v in r.items() if k not in ("time", "tip_fz")} for r in results]
    with open(a.out, "w") as f:
        json.dump({"machine": machine_info(), "results": keep}, f, indent=2)


if __name__ == "__main__":
    main()
