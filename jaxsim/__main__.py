"""``python -m jaxsim`` / ``jaxsim``: run the built-in demo scene and print a summary."""

from __future__ import annotations

import argparse
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import dynamics, scenes
from jaxsim.kinematics import forward_kinematics
from jaxsim.step import make_state, rollout


def demo(links: int, duration: float, dt: float, integrator: str) -> dict:
    """Simulate the n-link pendulum released at 60 degrees; return the summary."""
    model = scenes.pendulum(links, timestep=dt, integrator=integrator)
    state = make_state(model, q=scenes.pendulum_initial_q(model))
    steps = int(round(duration / dt))
    ctrls = jnp.zeros((steps, model.nu), model.dtype)
    run = jax.jit(rollout)
    t0 = time.perf_counter()
    jax.block_until_ready(run(model, state, ctrls))
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    final, traj = jax.block_until_ready(run(model, state, ctrls))
    wall = time.perf_counter() - t0

    def total_energy(q, v):
        k, p = dynamics.energy(model, forward_kinematics(model, q), v)
        return k + p

    e = np.asarray(jax.jit(jax.vmap(total_energy))(traj.q, traj.v))
    e0 = float(total_energy(state.q, state.v))
    tip = np.asarray(jax.jit(jax.vmap(lambda q: forward_kinematics(model, q).body_pos_w[-1]))(traj.q))
    e_rest = float(total_energy(jnp.zeros_like(state.q), jnp.zeros_like(state.v)))
    scale = max(e0 - e_rest, 1e-9)  # energy available above the hanging rest pose
    return dict(links=links, dt=dt, steps=steps, integrator=integrator, duration=duration,
                compile_s=compile_s, wall_s=wall, steps_per_s=steps / wall,
                realtime_factor=duration / wall, energy0=e0 - e_rest,
                energy_drift_max=float(np.max(np.abs(e - e0)) / scale),
                tip_min_z=float(tip[:, 2].min()), final_q=np.asarray(final.q),
                nonfinite=bool(final.nonfinite))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="jaxsim", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    d = sub.add_parser("demo", help="simulate the built-in n-link pendulum (default)")
    for p in (parser, d):
        p.add_argument("--links", type=int, default=6, help="number of pendulum links")
        p.add_argument("--duration", type=float, default=5.0, help="simulated seconds")
        p.add_argument("--dt", type=float, default=1e-3, help="time step, s")
        p.add_argument("--integrator", choices=("euler", "rk4"), default="euler")
    args = parser.parse_args(argv)
    for name in ("links", "duration", "dt"):
        if getattr(args, name) <= 0:
            parser.exit(2, f"jaxsim: error: --{name} must be positive, got {getattr(args, name)}\n")
    s = demo(args.links, args.duration, args.dt, args.integrator)
    print(f"jaxsim demo: {s['links']}-link pendulum released at 60 deg, contact-free, "
          f"{s['integrator']} dt={s['dt']:g} s, {s['duration']:g} s simulated ({s['steps']} steps)")
    print(f"  device             {jax.devices()[0].platform}, dtype float32")
    print(f"  compile            {s['compile_s']:.2f} s")
    print(f"  run                {s['wall_s']:.3f} s = {s['steps_per_s']:,.0f} steps/s "
          f"({s['realtime_factor']:.1f}x real time)")
    print(f"  energy             {s['energy0']:.4f} J above rest at start, max drift "
          f"{100 * s['energy_drift_max']:.3f} % of it")
    print(f"  tip lowest point   z = {s['tip_min_z']:.3f} m")
    print(f"  final joint angles {np.array2string(s['final_q'], precision=3)} rad")
    print(f"  non-finite values  {'YES' if s['nonfinite'] else 'none'}")
    return 1 if s["nonfinite"] else 0


if __name__ == "__main__":
    sys.exit(main())
