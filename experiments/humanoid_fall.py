"""gymnasium's humanoid released from its file pose (ctrl 0) falls onto the floor:
jaxsim next to MuJoCo C, the same MJCF, the same time step.

Prints, every ``--every`` steps, the torso height q[2] and the deepest penetration on
each side, then the worst penetrations jaxsim reached with the geom pair, the peak
upward speed, QP iterations and overflow. A simulator that lands a body without
sinking into the floor and without launching it keeps max penetration at millimetres
and q[2] below its start. Run from the repository root:

    python experiments/humanoid_fall.py [--seconds 1.0] [--max-contacts 16] [--float64]
"""

from __future__ import annotations

import argparse
import os

import gymnasium
import jax
import jax.numpy as jnp
import mujoco
import numpy as np

import jaxsim
from jaxsim.contact.space import slot_info
from jaxsim.io import load_mjcf

PATH = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "humanoid.xml")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--max-contacts", type=int, default=16, help="jaxsim max_contacts (0: all slots)")
    p.add_argument("--every", type=int, default=20, help="print every N steps")
    p.add_argument("--float64", action="store_true")
    a = p.parse_args()
    if a.float64:
        jax.config.update("jax_enable_x64", True)
    dtype = jnp.float64 if a.float64 else jnp.float32

    mm = mujoco.MjModel.from_xml_path(PATH)
    model = load_mjcf(PATH, dtype=dtype, max_contacts=a.max_contacts)
    steps = int(round(a.seconds / float(model.opt.timestep)))
    _, traj = jax.jit(jaxsim.rollout)(model, jaxsim.make_state(model), jnp.zeros((steps, model.nu), dtype))
    z = np.asarray(traj.q[:, 2])
    depth = np.asarray(jnp.max(jnp.where(traj.contact.active, traj.contact.depth, 0.0), axis=1))

    md = mujoco.MjData(mm)
    z_c, depth_c = np.zeros(steps), np.zeros(steps)
    for t in range(steps):
        mujoco.mj_step(mm, md)
        z_c[t] = md.qpos[2]
        depth_c[t] = max([-c.dist for c in md.contact[:md.ncon]] + [0.0])

    print(f"humanoid, dt {float(model.opt.timestep):g} s, {steps} steps, jaxsim max_contacts "
          f"{a.max_contacts}, {dtype.__name__}")
    print(f"{'step':>5s} {'t s':>6s} {'q2 jaxsim':>10s} {'q2 MuJoCo':>10s} {'depth jx mm':>12s} {'depth C mm':>11s}")
    for t in range(0, steps, a.every):
        print(f"{t:5d} {(t + 1) * float(model.opt.timestep):6.3f} {z[t]:10.4f} {z_c[t]:10.4f} "
              f"{depth[t] * 1e3:12.2f} {depth_c[t] * 1e3:11.2f}")

    info = slot_info(model.topo)
    worst = np.argsort(-depth)[:3]
    print("\ndeepest jaxsim penetrations (step: pair depth):")
    for t in worst:  # the slots of the step's own ContactState
        d = np.where(np.asarray(traj.contact.active[t]), np.asarray(traj.contact.depth[t]), -np.inf)
        i = int(np.argmax(d))
        print(f"  {t}: {mm.geom(int(info.geom1[i])).name} / {mm.geom(int(info.geom2[i])).name} "
              f"{d[i] * 1e3:.1f} mm")
    vz = np.asarray(traj.v[:, 2])
    it = np.asarray(traj.solver.iterations)
    print(f"max penetration: jaxsim {depth.max() * 1e3:.1f} mm, MuJoCo C {depth_c.max() * 1e3:.1f} mm; "
          f"peak upward speed jaxsim {vz.max():.2f} m/s; final q2 jaxsim {z[-1]:.3f} / MuJoCo "
          f"{z_c[-1]:.3f}; QP iterations mean {it.mean():.1f} max {it.max()}; overflow "
          f"{int(traj.overflow[-1])}; non-finite {bool(traj.nonfinite[-1])}")


if __name__ == "__main__":
    main()
