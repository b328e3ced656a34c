"""Spheres under the contact-volume model: point fallback or a polyhedral stand-in?

A 4 cm, 0.2 kg ball launched along x at 1 m/s on the floor (mu 0.5, dt 2 ms, 1 s,
float64) three ways:

  sphere / relaxed   the point model (the reference: slides, then rolls at 5/7 v0)
  sphere / volume    contact="volume": the sphere's pair keeps its point slot
  icosahedron / volume   a 20-face convex hull with the same circumradius, as the
                     polyhedral approximation would give it (volume slots)

Printed: distance after 1 s, final speed and angular speed, and the time per step
(batch 1, float32, best of 3). The numbers decide what the volume model does with
round shapes (docs/pages/contact/volume.md).

    python experiments/volume_round_shapes.py
"""

from __future__ import annotations

import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim
from jaxsim import ModelBuilder, scenes

jax.config.update("jax_enable_x64", True)
R, MASS, V0, DT, STEPS = 0.04, 0.2, 1.0, 2e-3, 500
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "volume_round_shapes.json")


def ball(contact: str, hull: bool, dtype):
    b = ModelBuilder(timestep=DT, contact=contact)
    b.add_geom("world", "plane", (5, 5, 0.1), friction=(0.5, 0.5))
    inertia = 0.4 * MASS * R ** 2
    if hull:  # starts on a vertex, R above the floor, and drops onto a face
        vert, face = scenes.icosahedron()
        b.add_body("ball", pos=(0, 0, R), mass=MASS, inertia=(inertia,) * 3)
        b.add_joint("ball", "free")
        b.add_geom("ball", "convex", vertices=vert * R, faces=face, friction=(0.5, 0.5))
    else:
        b.add_body("ball", pos=(0, 0, R), mass=MASS, inertia=(inertia,) * 3)
        b.add_joint("ball", "free")
        b.add_geom("ball", "sphere", (R,), friction=(0.5, 0.5))
    return b.build(dtype)


def main() -> int:
    rows = {}
    for name, contact, hull in (("sphere / relaxed", "relaxed", False), ("sphere / volume", "volume", False),
                                ("icosahedron / volume", "volume", True)):
        model = ball(contact, hull, jnp.float64)
        s0 = jaxsim.make_state(model, v=jnp.zeros(6).at[0].set(V0))
        final, _ = jax.jit(jaxsim.rollout)(model, s0, jnp.zeros((STEPS, 0)))
        m32 = ball(contact, hull, jnp.float32)
        run = jax.jit(lambda s, m=m32: jaxsim.rollout(m, s, jnp.zeros((STEPS, 0)))[0])
        s32 = jaxsim.make_state(m32, v=jnp.zeros(6, jnp.float32).at[0].set(V0))
        jax.block_until_ready(run(s32))
        best = min(_timed(run, s32) for _ in range(3)) / STEPS
        v = np.asarray(final.v)
        rows[name] = dict(distance_m=float(final.q[0]), speed_m_s=float(np.linalg.norm(v[:3])),
                          spin_rad_s=float(np.linalg.norm(v[3:])), us_per_step=best * 1e6,
                          nonfinite=bool(final.nonfinite))
        r = rows[name]
        print(f"{name:22s} distance {r['distance_m']:.3f} m, speed {r['speed_m_s']:.3f} m/s, spin "
              f"{r['spin_rad_s']:.2f} rad/s, {r['us_per_step']:.1f} us/step (float32, batch 1)", flush=True)
    print(f"rolling without slip after the slide: v = 5/7 v0 = {5 / 7 * V0:.3f} m/s")
    with open(OUT, "w") as f:
        json.dump(rows, f, indent=1)
    print("wrote", OUT)
    return 0


def _timed(run, s):
    t0 = time.perf_counter()
    jax.block_until_ready(run(s))
    return time.perf_counter() - t0


if __name__ == "__main__":
    raise SystemExit(main())
