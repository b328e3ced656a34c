"""Impacts that converge as dt shrinks: SPEC section 3's cube scenes at dt = 1, 0.5,
0.25 and 0.125 ms, and on to 1/32 ms to show where the results go.

Scene A: the 0.1 m, 0.5 kg cube turned -15 deg about x and y, dropped from 0.4 m
(mu_s 0.5, mu_k 0.3, and a second run with mu_s = mu_k = 0.5). Scene B: turned 15 deg
about x, dropped from 0.2 m. Each run lasts 2 s (the cube is at rest well before).
Prints, per scene and dt, where the cube first touched (x, y), where it came to rest,
the distance between the two, the face it rests on (the body axis pointing down) and
the difference of the final position from the next smaller dt's; writes JSON.

    python experiments/impact_convergence.py [--float32] [--seconds 2]
"""

from __future__ import annotations

import argparse
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim
from jaxsim import scenes

SCENES = {
    "A: -15/-15 deg from 0.4 m, mu 0.5/0.3": dict(height=0.4, euler_deg=(-15.0, -15.0, 0.0), friction=(0.5, 0.3)),
    "A: -15/-15 deg from 0.4 m, mu 0.5/0.5": dict(height=0.4, euler_deg=(-15.0, -15.0, 0.0), friction=(0.5, 0.5)),
    "B: 15 deg about x from 0.2 m, mu 0.5/0.3": dict(height=0.2, euler_deg=(15.0, 0.0, 0.0), friction=(0.5, 0.3)),
}
DTS = (1e-3, 5e-4, 2.5e-4, 1.25e-4, 6.25e-5, 3.125e-5)
FACES = ("+x", "+y", "+z", "-x", "-y", "-z")


def run(params: dict, dt: float, seconds: float, dtype) -> dict:
    model = scenes.cube(timestep=dt, dtype=dtype, **params)
    steps = int(round(seconds / dt))
    _, traj = jax.jit(jaxsim.rollout)(model, jaxsim.make_state(model), jnp.zeros((steps, 0), dtype))
    q = np.asarray(traj.q, float)
    touched = np.asarray(traj.contact.active).any(-1) & (np.asarray(traj.contact.depth).max(-1) >= 0)
    first = int(np.argmax(touched))
    w, x, y, z = q[-1, 3:7]
    rot = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                    [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                    [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    down = np.concatenate([-rot[2], rot[2]])  # body +x, +y, +z, -x, -y, -z against -z_world
    return dict(dt=dt, landed=q[first, :2].tolist(), final=q[-1, :3].tolist(),
                slide_mm=1e3 * float(np.linalg.norm(q[-1, :2] - q[first, :2])),
                face=FACES[int(np.argmax(down))], final_speed=float(np.abs(np.asarray(traj.v[-1])).max()),
                iterations=float(np.mean(np.asarray(traj.solver.iterations))))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--float32", action="store_true")
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "impact_convergence.json"))
    a = p.parse_args()
    if not a.float32:
        jax.config.update("jax_enable_x64", True)
    dtype = jnp.float32 if a.float32 else jnp.float64
    out = {}
    for name, params in SCENES.items():
        rows = [run(params, dt, a.seconds, dtype) for dt in DTS]
        for r, nxt in zip(rows, rows[1:] + [None]):
            r["diff_to_next_mm"] = (None if nxt is None else
                                    1e3 * float(np.linalg.norm(np.subtract(r["final"][:2], nxt["final"][:2]))))
        out[name] = rows
        print(f"\n{name} ({jnp.dtype(dtype).name}, {a.seconds:g} s)")
        print("   dt ms  landed x, y mm     rest x, y mm      slide mm  face  |rest - next dt| mm  QP it/step")
        for r in rows:
            nxt = "-" if r["diff_to_next_mm"] is None else f"{r['diff_to_next_mm']:.2f}"
            print(f"  {1e3 * r['dt']:6.3f}  {1e3 * r['landed'][0]:6.1f} {1e3 * r['landed'][1]:6.1f}    "
                  f"{1e3 * r['final'][0]:7.1f} {1e3 * r['final'][1]:7.1f}    {r['slide_mm']:7.2f}  {r['face']:>4s}  "
                  f"{nxt:>18s}  {r['iterations']:8.1f}")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(dict(dtype=jnp.dtype(dtype).name, seconds=a.seconds, scenes=out), f, indent=1)
    print(f"\nwrote {a.out}")


if __name__ == "__main__":
    main()
