"""Implicit PD on the quadruped: implicit vs explicit PD servos at dt = 50, 20, 10 and
1 ms, beside MuJoCo (implicitfast) on the same MJCF, in one run.

For each dt and each PD law, 10 s of standing then 10 s of the walk
(``jaxsim.quadruped.gait_ctrl``) from the standing pose, float32, batch 1: whether it
stayed finite (and the step where it diverged), the trunk height and the mechanical
energy over time, the deepest penetration, and the wall time per simulated second;
then env-steps/s of the implicit model at batch 1024 (dt = 50 ms). MuJoCo runs the
same 20 s from ``jaxsim/assets/quadruped.xml`` at each dt with ``implicitfast``
(which takes the servos' damping implicitly, not their stiffness).

Run (from the repository root):

    python experiments/implicit_pd_quadruped.py [--out experiments/results/implicit_pd_quadruped.json]

Writes the JSON, a PNG beside it (``implicit_pd_quadruped.png``: trunk height and energy
over time) and prints a table. The documentation page (``docs/pages/constraints.md``)
shows a copy of the PNG, ``docs/pages/images/implicit_pd_quadruped.png``; this script
does not write there: copy the new PNG over it after a rerun.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim
from jaxsim import quadruped, scenes
from jaxsim.kinematics import forward_kinematics

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
DTS = (0.05, 0.02, 0.01, 0.001)
STAND, WALK = 10.0, 10.0  # s


def controls(model, dt: float) -> jnp.ndarray:
    n_stand, n_walk = int(round(STAND / dt)), int(round(WALK / dt))
    t = dt * jnp.arange(1, n_walk + 1)
    walk = jax.vmap(lambda s: quadruped.gait_ctrl(model, s))(t)
    return jnp.concatenate([jnp.zeros((n_stand, model.nu), model.dtype), walk])


def energy(model, q, v):
    """Kinetic plus gravitational energy (J) of one state (the servos' springs left out)."""
    kin = forward_kinematics(model, q)
    kinetic = 0.5 * v @ jaxsim.mass_matrix(model, kin) @ v
    return kinetic - jnp.sum(model.body_mass * (kin.body_com_w @ model.opt.gravity))


def run_jaxsim(dt: float, implicit: bool) -> dict:
    model = scenes.quadruped(dt, implicit_pd=implicit)
    ctrls = controls(model, dt)
    roll = jax.jit(jaxsim.rollout)
    t0 = time.perf_counter()
    jax.block_until_ready(roll(model, jaxsim.make_state(model), ctrls[:2]))
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    final, traj = jax.block_until_ready(roll(model, jaxsim.make_state(model), ctrls))
    wall = time.perf_counter() - t0
    q, v = np.asarray(traj.q), np.asarray(traj.v)
    finite = np.isfinite(q).all(1) & np.isfinite(v).all(1) & (np.abs(v).max(1) < 1e3)
    bad = int(np.flatnonzero(~finite)[0]) if (~finite).any() else None
    stride = max(1, int(round(0.05 / dt)))
    e = jax.jit(jax.vmap(lambda a, b: energy(model, a, b)))(traj.q[::stride], traj.v[::stride])
    depth = np.asarray(jnp.max(jnp.where(traj.contact.active, traj.contact.depth, 0.0), axis=-1))
    n_stand = int(round(STAND / dt))
    ok = slice(0, bad)
    return dict(dt=dt, law="implicit" if implicit else "explicit", diverged_at_step=bad,
                stand_height=[float(np.min(q[:n_stand][ok, 2])), float(np.max(q[:n_stand][ok, 2]))]
                if bad is None or bad > 0 else None,
                walk_height=[float(np.min(q[n_stand:bad, 2])), float(np.max(q[n_stand:bad, 2]))]
                if bad is None or bad > n_stand else None,
                max_depth_mm=float(np.nanmax(depth[ok]) * 1e3) if bad != 0 else None,
                wall_per_sim_s=wall / (STAND + WALK), compile_s=compile_s,
                iterations_mean=float(np.mean(np.asarray(traj.solver.iterations)[ok])),
                t=(dt * stride * np.arange(1, len(e) + 1)).tolist(), height=q[::stride, 2].tolist(),
                energy=np.asarray(e).tolist())


def run_mujoco(dt: float) -> dict:
    import mujoco

    mm = mujoco.MjModel.from_xml_string(quadruped.mjcf(timestep=dt))
    d = mujoco.MjData(mm)
    model = scenes.quadruped(dt)
    ctrls = np.asarray(controls(model, dt))
    heights, bad = [], None
    t0 = time.perf_counter()
    for k, u in enumerate(ctrls):
        d.ctrl[:] = u
        mujoco.mj_step(mm, d)
        if not np.all(np.isfinite(d.qvel)) or np.abs(d.qvel).max() > 1e3:
            bad = k
            break
        heights.append(d.qpos[2])
    wall = time.perf_counter() - t0
    n_stand = int(round(STAND / dt))
    h = np.asarray(heights)
    return dict(dt=dt, law="MuJoCo implicitfast", diverged_at_step=bad,
                stand_height=[float(h[:n_stand].min()), float(h[:n_stand].max())] if len(h) else None,
                walk_height=[float(h[n_stand:].min()), float(h[n_stand:].max())] if len(h) > n_stand else None,
                wall_per_sim_s=wall / (STAND + WALK))


def batch_throughput(batch: int = 1024, steps: int = 20) -> float:
    model = scenes.quadruped(0.05)
    states = jax.vmap(lambda _: jaxsim.make_state(model))(jnp.arange(batch))
    f = jax.jit(jax.vmap(lambda s: jaxsim.rollout(model, s, jnp.zeros((steps, model.nu)))[0]))
    jax.block_until_ready(f(states))
    t0 = time.perf_counter()
    jax.block_until_ready(f(states))
    return batch * steps / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=os.path.join(RESULTS, "implicit_pd_quadruped.json"))
    p.add_argument("--batch", type=int, default=1024)
    a = p.parse_args()
    rows = []
    for dt in DTS:
        for implicit in (True, False):
            rows.append(run_jaxsim(dt, implicit))
            print({k: v for k, v in rows[-1].items() if k not in ("t", "height", "energy")}, flush=True)
        rows.append(run_mujoco(dt))
        print(rows[-1], flush=True)
    throughput = batch_throughput(a.batch)
    print(f"implicit, dt = 50 ms, batch {a.batch}: {throughput:.0f} env-steps/s "
          f"({throughput * 0.05:.0f} simulated s per wall s)")
    print("\n| dt ms | law | diverged at step | standing trunk m | walking trunk m | max depth mm | wall s / sim s |")
    print("|---:|---|---:|---|---|---:|---:|")
    for r in rows:
        fmt = lambda x: "-" if x is None else f"{x[0]:.3f}-{x[1]:.3f}"  # noqa: E731
        print(f"| {r['dt'] * 1e3:g} | {r['law']} | {r['diverged_at_step'] if r['diverged_at_step'] is not None else '-'} | "
              f"{fmt(r.get('stand_height'))} | {fmt(r.get('walk_height'))} | "
              f"{r.get('max_depth_mm') if r.get('max_depth_mm') is None else round(r['max_depth_mm'], 1)} | "
              f"{r['wall_per_sim_s']:.3f} |")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump({"rows": rows, "batch_env_steps_per_s": throughput, "batch": a.batch, "jax": jax.__version__},
                  fh)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(12, 4))
    for r in rows:
        if "height" in r and r["law"] == "implicit":
            ax[0].plot(r["t"], r["height"], label=f"implicit {r['dt'] * 1e3:g} ms")
            ax[1].plot(r["t"], r["energy"], label=f"implicit {r['dt'] * 1e3:g} ms")
    ax[0].set(xlabel="t (s)", ylabel="trunk height (m)")
    ax[1].set(xlabel="t (s)", ylabel="kinetic + potential energy (J)")
    ax[0].legend(), ax[1].legend()
    fig.tight_layout()
    fig.savefig(a.out.replace(".json", ".png"), dpi=100)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
