"""Springhead's contact model (SPEC section 4): bounces, and its two solvers.

1. Heights over time (float64, dt 1 ms, 2.5 s) of balls (r 5 cm) dropped from 1 m with
   restitution e = 0.2, 0.5, 0.8 and impact threshold V_th = 1 m/s, one with e = 0.5 and
   V_th = 10 m/s (no bounce: the impact at 4.4 m/s is "resting"), and 10 cm cubes dropped
   from 0.2 m flat and onto an edge (e = 0.5, V_th = 1 m/s). Table: first apex against
   e^2 h, measured above the surface. These run the QP (``solver="qp"``), whose corner
   forces on a flat-landing cube are symmetric.
2. The QP against Springhead's projected Gauss-Seidel (``solver="pgs"``, the default: 15
   sweeps, warm start 0.7) on the same scenes: rebound e, corner-force spread of a
   resting box (started 5 mm deep: the velocity-level correction launches it upward,
   at dt 1 ms it coasts out to 0.26 mm deep and rests there), sliding distance against
   v^2 / (2 mu g), iterations and residuals (QP: relative step; PGS: relative change of
   the last sweep) per
   step, and steps/s (float32, batch 1 and 64, 500 steps per call, best of 3 after
   compiling).

Run from the repository root: ``python experiments/springhead_bounce.py``. Results go to
``experiments/results/springhead_bounce.json`` and ``.png``.
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
from benchutil import machine_info  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
G, R, A, H = 9.81, 0.05, 0.05, 1.0  # gravity, ball radius, box half size, ball drop height
BOX_DROP = 0.2
# solver configurations compared: the QP, Springhead's 15 sweeps, and 100 sweeps
SOLVERS = {"qp": dict(solver="qp"), "pgs": dict(solver="pgs"), "pgs x100": dict(solver="pgs", sweeps=100)}


def scene(shape: str, e: float, impact_threshold: float, dtype=jnp.float64, tilt=0.0, lift=H, **options):
    """A ball or cube (1 kg) whose lowest point is ``lift`` above the floor."""
    b = jaxsim.ModelBuilder(timestep=1e-3, contact="springhead", impact_threshold=impact_threshold, **options)
    b.add_geom("world", "plane", (5, 5, 0.1), friction=(0.6, 0.4), restitution=e)
    low = R if shape == "sphere" else A * (np.cos(tilt) + np.sin(tilt))
    inertia = 0.4 * R * R if shape == "sphere" else 2 * A * A / 3
    b.add_body("body", pos=(0, 0, lift + low), quat=(np.cos(tilt / 2), np.sin(tilt / 2), 0, 0), mass=1.0,
               inertia=(inertia,) * 3)
    b.add_joint("body", "free")
    b.add_geom("body", shape, (R,) if shape == "sphere" else (A, A, A), friction=(0.6, 0.4), restitution=e)
    return b.build(dtype), low


def first_apex(z: np.ndarray, vz: np.ndarray) -> float:
    """Highest point after the first step that leaves the body rising (nan: none)."""
    k = int(np.argmax(vz > 0.05))
    return float(z[k:].max()) if vz[k] > 0.05 else float("nan")


def bounces(steps: int) -> tuple[list, dict]:
    cases = [("ball", "sphere", e, 1.0, 0.0, H) for e in (0.2, 0.5, 0.8)]
    cases += [("ball", "sphere", 0.5, 10.0, 0.0, H), ("box flat", "box", 0.5, 1.0, 0.0, BOX_DROP),
              ("box on edge", "box", 0.5, 1.0, np.deg2rad(30), BOX_DROP)]
    rows, curves = [], {}
    for label, shape, e, vth, tilt, lift in cases:
        model, low = scene(shape, e, vth, tilt=tilt, lift=lift, solver="qp")
        _, traj = jax.jit(jaxsim.rollout)(model, jaxsim.make_state(model), jnp.zeros((steps, 0)))
        z = np.asarray(traj.q[:, 2]) - low  # lowest point at rest (flat) above the floor
        apex = first_apex(z, np.asarray(traj.v[:, 2]))
        name = f"{label}, e {e}, V_th {vth:g}"
        curves[name] = z
        # e^2 h for the ball and the flat box; an edge impact turns energy into spin
        predicted = None if tilt else (e * e * lift if vth < np.sqrt(2 * G * lift) else 0.0)
        rows.append(dict(case=name, drop_m=lift, apex_m=0.0 if np.isnan(apex) else apex, predicted_m=predicted,
                         spin_after_rad_s=float(np.abs(np.asarray(traj.v[:, 3:])).max())))
    return rows, curves


def solver_runs(steps: int) -> dict:
    """Accuracy, iterations and residuals of both solvers on three float64 scenes."""
    out = {}
    for name, options in SOLVERS.items():
        r = {}
        ball, _ = scene("sphere", 0.5, 1.0, **options)
        _, traj = jax.jit(jaxsim.rollout)(ball, jaxsim.make_state(ball), jnp.zeros((steps, 0)))
        vz = np.asarray(traj.v[:, 2])
        k = int(np.argmax(vz > 0))
        r["rebound_e"] = float(-vz[k] / vz[k - 1])
        rest, _ = scene("box", 0.5, 10.0, lift=-0.005, **options)  # started 5 mm deep
        final, traj = jax.jit(jaxsim.rollout)(rest, jaxsim.make_state(rest), jnp.zeros((steps, 0)))
        f = np.asarray(final.contact.force_w)[:, 2][np.asarray(final.contact.active)]
        r["rest_depth_mm"] = float(1e3 * (A - float(final.q[2])))
        r["rest_corner_spread"] = float((f.max() - f.min()) / f.mean())
        r["rest_force_sum_over_mg"] = float(f.sum() / G)
        it, res = np.asarray(traj.solver.iterations), np.asarray(traj.solver.residual)
        slide, _ = scene("box", 0.5, 10.0, lift=0.0, **options)
        state = jaxsim.make_state(slide, v=jnp.zeros(6).at[1].set(2.0))
        final, traj2 = jax.jit(jaxsim.rollout)(slide, state, jnp.zeros((steps, 0)))
        r["slide_m"], r["slide_predicted_m"] = float(final.q[1]), 4.0 / (2 * 0.4 * G)
        it = np.concatenate([it, np.asarray(traj2.solver.iterations)])
        res = np.concatenate([res, np.asarray(traj2.solver.residual)])
        r["iterations_mean"], r["iterations_max"] = float(it.mean()), int(it.max())
        r["residual_mean"], r["residual_max"] = float(res.mean()), float(res.max())
        out[name] = r
    return out


def throughput(batch: int, steps: int = 500) -> dict:
    """Steps/s of a resting cube (float32) with each solver, batch envs vmapped."""
    out = {}
    for name, options in SOLVERS.items():
        model, _ = scene("box", 0.5, 10.0, dtype=jnp.float32, lift=0.0, **options)
        states = jax.vmap(lambda _: jaxsim.make_state(model))(jnp.arange(batch))
        run = jax.jit(jax.vmap(lambda s: jaxsim.rollout(model, s, jnp.zeros((steps, 0), jnp.float32))[0]))
        jax.block_until_ready(run(states))
        best = min(_timed(run, states) for _ in range(3))
        out[name] = batch * steps / best
    return out


def _timed(run, states) -> float:
    t = time.perf_counter()
    jax.block_until_ready(run(states))
    return time.perf_counter() - t


def plot(curves: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for name, z in curves.items():
        ax = axes[0] if name.startswith("ball") else axes[1]
        ax.plot(1e-3 * np.arange(1, len(z) + 1), z, label=name)
    for ax, title in zip(axes, ("balls from 1 m", "10 cm cubes from 0.2 m")):
        ax.set(title=title, xlabel="time (s)", ylabel="lowest point above the floor (m)")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.suptitle("Springhead's contact model: restitution above the impact threshold")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=2500)
    p.add_argument("--out", default=os.path.join(RESULTS, "springhead_bounce.json"))
    a = p.parse_args()
    rows, curves = bounces(a.steps)
    print(f"{'case':34s} {'drop m':>7s} {'apex m':>8s} {'e^2 h':>8s} {'error':>7s} {'max |w| rad/s':>14s}")
    for r in rows:
        pred = r["predicted_m"]
        err = f"{(r['apex_m'] - pred) / pred:7.2%}" if pred else "      -"
        pred = "       -" if pred is None else f"{pred:8.4f}"
        print(f"{r['case']:34s} {r['drop_m']:7.2f} {r['apex_m']:8.4f} {pred} {err} "
              f"{r['spin_after_rad_s']:14.3f}")
    solvers = solver_runs(2000)
    speed = {b: throughput(b) for b in (1, 64)}
    print(f"\n{'solver':8s} {'rebound e':>9s} {'rest mm':>8s} {'spread':>8s} {'sum/mg':>8s} {'slide m':>8s} "
          f"{'pred m':>7s} {'iter mean/max':>14s} {'residual mean/max':>20s} {'steps/s b1':>11s} {'b64':>10s}")
    for s, r in solvers.items():
        print(f"{s:8s} {r['rebound_e']:9.5f} {r['rest_depth_mm']:8.4f} {r['rest_corner_spread']:8.2%} "
              f"{r['rest_force_sum_over_mg']:8.5f} {r['slide_m']:8.4f} {r['slide_predicted_m']:7.4f} "
              f"{r['iterations_mean']:7.2f}/{r['iterations_max']:<6d} "
              f"{r['residual_mean']:9.2e}/{r['residual_max']:.2e} "
              f"{speed[1][s]:11.0f} {speed[64][s]:10.0f}")
    os.makedirs(RESULTS, exist_ok=True)
    plot(curves, a.out.replace(".json", ".png"))
    with open(a.out, "w") as f:
        json.dump({"machine": machine_info(), "bounces": rows, "solvers": solvers,
                   "steps_per_s": {str(b): v for b, v in speed.items()}}, f, indent=2)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
