"""Unitree Go2 (``example-robot-data`` URDF, ``package://`` meshes resolved) standing
with implicit PD at dt = 10 ms for 10 s: one robot on a floor plane and one on a 2 x 2 m
height field of random bumps, in one model and one batched rollout (float32).

    python experiments/go2_stand.py [--contact relaxed] [--seconds 10]

Prints, per ground: base height, how far the base moved over the last half, tilt,
largest servo error, deepest contact, solver iterations; writes
``results/go2_stand_<contact>.json``. The model is ``jaxsim.robots.go2_standing``, the
rollout ``jaxsim.robots.go2_stand`` and the figures ``jaxsim.robots.standing_figures``;
``tests/test_go2.py`` runs the same rollout (relaxed contacts) and checks the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import time

from jaxsim.robots import go2_stand, standing_figures

KP, KV = 60.0, 3.0  # N m / rad, N m s / rad


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--contact", default="relaxed")
    p.add_argument("--dt", type=float, default=0.01)
    p.add_argument("--seconds", type=float, default=10.0)
    args = p.parse_args()
    t0 = time.time()
    traj, target = go2_stand(args.contact, args.dt, args.seconds, kp=KP, kv=KV)
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
