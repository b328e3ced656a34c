"""Unitree Go2 (``example-robot-data`` URDF, ``package://`` meshes resolved) standing
with implicit PD at dt = 10 ms for 10 s: one robot on a floor plane and one on a 2 x 2 m
height field of random bumps, in one model and one batched rollout (float32).

    python experiments/go2_stand.py [--contact relaxed] [--seconds 10]

Prints, per ground: base height, how far the base moved over the last half, tilt,
largest servo error, deepest contact, solver iterations; writes
``results/go2_stand_<contact>.json``. (Too long for the test suite's budget: one
compile and 2 x 1000 steps cost about a minute on two CPU cores.)
"""

from __future__ import annotations

import argparse
import json
import os
import time
from importlib import metadata

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

import jaxsim
from jaxsim.io import mjcf

KP, KV = 60.0, 3.0  # N m / rad, N m s / rad
POSE = {"hip": 0.0, "thigh": 0.8, "calf": -1.5}  # rad: Unitree's standing pose
FIELD_X = 3.0  # m: the height field's centre; the plane robot stands at x = 0


def go2_model(contact: str, dt: float):
    """Go2 (links colliding with the terrain only) with a position servo on each of its
    12 joints (its URDF effort limits as force ranges), a floor plane, and a 2 x 2 m
    height field of random bumps (up to 5 cm, 5 cm cells) raised 5 cm at x = 3."""
    robots = metadata.distribution("example-robot-data").locate_file(
        "cmeel.prefix/share/example-robot-data/robots")
    spec = mjcf.urdf_spec(os.path.join(str(robots), "go2_description/urdf/go2.urdf"), floating_base=True,
                          self_collision=False)
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05], name="floor")
    n = 41
    X, Y = np.meshgrid(np.linspace(-1, 1, n), np.linspace(-1, 1, n))
    heights = 0.5 + 0.3 * np.sin(5 * X) * np.cos(4 * Y) + 0.1 * np.random.default_rng(0).uniform(-1, 1, (n, n))
    spec.add_hfield(name="bumps", size=[1.0, 1.0, 0.05, 0.05], nrow=n, ncol=n, userdata=list(heights.ravel()))
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_HFIELD, hfieldname="bumps", name="terrain",
                            pos=[FIELD_X, 0, 0.05])
    for joint in spec.joints[1:]:  # after the floating base
        limit = np.array(joint.actfrcrange)
        joint.actfrclimited = mujoco.mjtLimited.mjLIMITED_FALSE  # the servo's force range instead
        spec.add_actuator(name=joint.name, target=joint.name, trntype=mujoco.mjtTrn.mjTRN_JOINT,
                          forcelimited=mujoco.mjtLimited.mjLIMITED_TRUE, forcerange=limit,
                          gaintype=mujoco.mjtGain.mjGAIN_FIXED, gainprm=[KP] + [0] * 9,
                          biastype=mujoco.mjtBias.mjBIAS_AFFINE, biasprm=[0, -KP, -KV] + [0] * 7)
    m = spec.compile()
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) for a in range(m.nu)]
    target = np.array([POSE[name.split("_")[1]] for name in names])
    return mjcf.from_mjmodel(m, timestep=dt, implicit_pd=True, contact=contact), target


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--contact", default="relaxed")
    p.add_argument("--dt", type=float, default=0.01)
    p.add_argument("--seconds", type=float, default=10.0)
    args = p.parse_args()
    model, target = go2_model(args.contact, args.dt)
    q = np.tile(np.asarray(model.qpos0), (2, 1))
    q[:, 7:] = target
    q[:, :3] = [[0.0, 0.0, 0.42], [FIELD_X, 0.0, 0.5]]  # feet 5-10 cm above their ground
    states = jax.vmap(lambda q: jaxsim.make_state(model, q=q, ctrl=jnp.asarray(target, model.dtype)))(
        jnp.asarray(q, model.dtype))
    steps = int(round(args.seconds / args.dt))
    ctrls = jnp.tile(jnp.asarray(target, model.dtype), (2, steps, 1))
    t0 = time.time()
    _, traj = jax.jit(jax.vmap(jaxsim.rollout, in_axes=(None, 0, 0)))(model, states, ctrls)
    jax.block_until_ready(traj.q)
    wall = time.time() - t0
    out = {"contact": args.contact, "dt": args.dt, "seconds": args.seconds, "kp": KP, "kv": KV,
           "wall_s_with_compile": wall, "grounds": {}}
    print(f"Go2, implicit PD (kp {KP}, kv {KV}), dt {args.dt * 1e3:g} ms, {args.seconds:g} s, "
          f"contact={args.contact}; {wall:.1f} s wall with compile")
    print("| ground | finite | base z (m) | moved over last half (mm) | tilt (deg) | max servo error (rad) "
          "| deepest (mm) | QP iterations mean / max |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for g, ground in enumerate(("plane", "hfield")):
        qg = np.asarray(traj.q[g])
        half = len(qg) // 2
        moved = np.abs(qg[half:, :3] - qg[half, :3]).max()
        up = 1 - 2 * (qg[:, 4] ** 2 + qg[:, 5] ** 2)  # the base's z axis' world z
        tilt = np.degrees(np.arccos(np.clip(up[half:].min(), -1, 1)))
        err = np.abs(qg[half:, 7:] - target).max()
        depth = float(np.where(np.asarray(traj.contact.active[g]), np.asarray(traj.contact.depth[g]), 0).max())
        it = np.asarray(traj.solver.iterations[g])
        row = {"finite": not bool(np.any(np.asarray(traj.nonfinite[g]))), "base_z": float(qg[-1, 2]),
               "moved_last_half_m": float(moved), "tilt_deg": float(tilt), "servo_error_rad": float(err),
               "depth_max_m": depth, "iterations_mean": float(it.mean()), "iterations_max": int(it.max())}
        out["grounds"][ground] = row
        print(f"| {ground} | {row['finite']} | {row['base_z']:.4f} | {moved * 1e3:.2f} | {tilt:.2f} | {err:.3f} "
              f"| {depth * 1e3:.2f} | {it.mean():.0f} / {it.max()} |")
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    path = os.path.join(os.path.dirname(__file__), "results", f"go2_stand_{args.contact.replace('/', '_')}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
