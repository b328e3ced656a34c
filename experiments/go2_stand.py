"""Unitree Go2 (``example-robot-data`` URDF, ``package://`` meshes resolved) standing
with implicit PD at dt = 10 ms for 10 s: one robot on a floor plane and one on a 2 x 2 m
height field of random bumps, in one model and one batched rollout (float32).

    python experiments/go2_stand.py [--contact relaxed] [--seconds 10]

Prints, per ground: base height, how far the base moved over the last half, tilt,
largest servo error, deepest contact, solver iterations; writes
``results/go2_stand_<contact>.json``. The model is ``jaxsim.robots.go2_standing``;
``tests/test_go2.py`` runs the same rollout (relaxed contacts) and checks the figures.
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
from jaxsim import robots

KP, KV = 60.0, 3.0  # N m / rad, N m s / rad


def stand(contact: str = "relaxed", dt: float = 0.01, seconds: float = 10.0):
    """One Go2 on the plane (x = 0) and one on the bump patch, 5-10 cm above their ground
    in the standing pose, held there by the servos for ``seconds``: one batched
    rollout. Returns (trajectory State (2, steps, ...), targets (12,))."""
    model, target = robots.go2_standing(dt, kp=KP, kv=KV, contact=contact)
    q = np.tile(np.asarray(model.qpos0), (2, 1))
    q[:, 7:] = target
    q[:, :3] = [[0.0, 0.0, 0.42], [robots.GO2_TERRAIN_X, 0.0, 0.5]]
    states = jax.vmap(lambda q: jaxsim.make_state(model, q=q, ctrl=jnp.asarray(target, model.dtype)))(
        jnp.asarray(q, model.dtype))
    steps = int(round(seconds / dt))
    ctrls = jnp.tile(jnp.asarray(target, model.dtype), (2, steps, 1))
    _, traj = jax.jit(jax.vmap(jaxsim.rollout, in_axes=(None, 0, 0)))(model, states, ctrls)
    return jax.block_until_ready(traj), target


def standing_figures(traj, target, g: int) -> dict:
    """Env ``g``'s figures over the second half of the rollout."""
    qg = np.asarray(traj.q[g])
    half = len(qg) // 2
    up = 1 - 2 * (qg[:, 4] ** 2 + qg[:, 5] ** 2)  # the base's z axis' world z
    it = np.asarray(traj.solver.iterations[g])
    depth = np.where(np.asarray(traj.contact.active[g]), np.asarray(traj.contact.depth[g]), 0.0)
    return {"finite": not bool(np.any(np.asarray(traj.nonfinite[g]))), "base_z": float(qg[-1, 2]),
            "moved_last_half_m": float(np.abs(qg[half:, :3] - qg[half, :3]).max()),
            "tilt_deg": float(np.degrees(np.arccos(np.clip(up[half:].min(), -1, 1)))),
            "servo_error_rad": float(np.abs(qg[half:, 7:] - target).max()),
            "depth_max_m": float(depth.max()), "iterations_mean": float(it.mean()),
            "iterations_max": int(it.max())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--contact", default="relaxed")
    p.add_argument("--dt", type=float, default=0.01)
    p.add_argument("--seconds", type=float, default=10.0)
    args = p.parse_args()
    t0 = time.time()
    traj, target = stand(args.contact, args.dt, args.seconds)
    wall = time.time() - t0
    out = {"contact": args.contact, "dt": args.dt, "seconds": args.seconds, "kp": KP, "kv": KV,
           "wall_s_with_compile": wall, "grounds": {}}
    print(f"Go2, implicit PD (kp {KP}, kv {KV}), dt {args.dt * 1e3:g} ms, {args.seconds:g} s, "
          f"contact={args.contact}; {wall:.1f} s wall with compile")
    print("| ground | finite | base z (m) | moved over last half (mm) | tilt (deg) | max servo error (rad) "
          "| deepest (mm) | QP iterations mean / max |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for g, ground in enumerate(("plane", "hfield")):
        row = standing_figures(traj, target, g)
        out["grounds"][ground] = row
        print(f"| {ground} | {row['finite']} | {row['base_z']:.4f} | {row['moved_last_half_m'] * 1e3:.2f} "
              f"| {row['tilt_deg']:.2f} | {row['servo_error_rad']:.3f} | {row['depth_max_m'] * 1e3:.2f} "
              f"| {row['iterations_mean']:.0f} / {row['iterations_max']} |")
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    path = os.path.join(os.path.dirname(__file__), "results", f"go2_stand_{args.contact.replace('/', '_')}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
