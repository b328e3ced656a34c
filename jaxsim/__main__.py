"""``python -m jaxsim`` / ``jaxsim``: simulate a built-in contact scene and print what
happened."""

from __future__ import annotations

import argparse
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import scenes
from jaxsim.step import make_state, rollout

SCENES = {
    "cube": "0.1 m, 0.5 kg cube turned -15 deg about x and y, dropped on its edge from 0.4 m",
    "pendulum": "6-link pendulum raised 60 deg above the ground, falling onto it",
}


def build(scene: str, dt: float, integrator: str):
    """(model, initial state, name of the body whose height is reported)."""
    if scene == "cube":
        model = scenes.cube(height=0.4, euler_deg=(-15.0, -15.0, 0.0), timestep=dt, integrator=integrator)
        return model, make_state(model), "cube"
    model = scenes.pendulum(6, floor=True, timestep=dt, integrator=integrator)
    return model, make_state(model, q=scenes.pendulum_raised_q(model)), "link5"


def demo(scene: str, duration: float, dt: float, integrator: str) -> dict:
    """Simulate ``scene`` for ``duration`` s; return the summary."""
    model, state, body = build(scene, dt, integrator)
    steps = int(round(duration / dt))
    ctrls = jnp.zeros((steps, model.nu), model.dtype)
    t0 = time.perf_counter()
    run = jax.jit(rollout).lower(model, state, ctrls).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    final, traj = jax.block_until_ready(run(model, state, ctrls))
    wall = time.perf_counter() - t0

    from jaxsim.kinematics import forward_kinematics
    b = model.body_id(body)
    height = np.asarray(jax.jit(jax.vmap(lambda q: forward_kinematics(model, q).body_pos_w[b, 2]))(traj.q))
    depth = np.where(np.asarray(traj.contact.active), np.asarray(traj.contact.depth), 0.0)
    iters = np.asarray(traj.solver.iterations)
    active = np.asarray(final.contact.active)
    return dict(scene=scene, dt=dt, steps=steps, integrator=integrator, duration=duration,
                compile_s=compile_s, wall_s=wall, steps_per_s=steps / wall, body=body,
                height0=float(height[0]), height_min=float(height.min()), height_final=float(height[-1]),
                max_penetration=float(depth.max()), final_speed=float(np.abs(np.asarray(final.v)).max()),
                contacts_final=int(active.sum()),
                normal_force_final=float(np.asarray(final.contact.force_w[:, 2])[active].sum()),
                weight=float(np.asarray(model.body_mass).sum() * -float(model.opt.gravity[2])),
                iterations_mean=float(iters.mean()), iterations_max=int(iters.max()),
                overflow=int(final.overflow), nonfinite=bool(final.nonfinite))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="jaxsim", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    d = sub.add_parser("demo", help="simulate a built-in contact scene (the default command)")
    for p in (parser, d):
        p.add_argument("--scene", choices=tuple(SCENES), default="cube",
                       help="; ".join(f"{k}: {v}" for k, v in SCENES.items()))
        p.add_argument("--duration", type=float, default=2.0, help="simulated seconds")
        p.add_argument("--dt", type=float, default=1e-3, help="time step, s")
        p.add_argument("--integrator", choices=("euler", "rk4"), default="euler")
    args = parser.parse_args(argv)
    for name in ("duration", "dt"):
        if not getattr(args, name) > 0:
            parser.exit(2, f"jaxsim: error: --{name} must be positive, got {getattr(args, name)}\n")
    s = demo(args.scene, args.duration, args.dt, args.integrator)
    print(f"jaxsim demo: {SCENES[s['scene']]}")
    print(f"  simulated          {s['duration']:g} s, {s['integrator']} dt = {s['dt']:g} s ({s['steps']} steps), "
          f"relaxed point contacts, {jax.devices()[0].platform}, float32")
    print(f"  compile            {s['compile_s']:.2f} s")
    print(f"  run                {s['wall_s']:.3f} s = {s['steps_per_s']:,.0f} steps/s")
    print(f"  {s['body']} height        {s['height0']:.4f} m at start, {s['height_min']:.4f} m lowest, "
          f"{s['height_final']:.4f} m at the end")
    print(f"  max penetration    {1e3 * s['max_penetration']:.3f} mm")
    print(f"  at the end         {s['contacts_final']} contacts carrying {s['normal_force_final']:.3f} N "
          f"(total weight {s['weight']:.3f} N), max |v| {s['final_speed']:.1e}")
    print(f"  contact QP         {s['iterations_mean']:.1f} iterations per step on average, "
          f"{s['iterations_max']} at most")
    print(f"  overflow           {s['overflow']} contact(s) dropped; non-finite values: "
          f"{'YES' if s['nonfinite'] else 'none'}")
    return 1 if s["nonfinite"] else 0


if __name__ == "__main__":
    sys.exit(main())
