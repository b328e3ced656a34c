"""Kikuuwe & Brogliato's three friction formulations side by side (``contact="cone"``,
``solver`` exact / anitescu-tasora / nakaoka) on the same scenes:

  slide        a 0.1 m cube sliding at 1 m/s on the floor, mu 0.5 (dt 1 ms, 0.4 s):
               stopping distance against v^2 / (2 mu g), largest normal speed (hover)
  stick        the cube at rest on an incline with tan(theta) = 0.8 mu: drift (m)
  incline      tan(theta) = 1.5 mu: acceleration against g (sin - mu cos)
  boxes8       the 8 cubes of bench_step.py falling and tumbling (dt 2 ms, 1 s):
               final mean height (0.05 m at rest)
  humanoid     gymnasium's humanoid released from its file pose (1 s): final torso height

Per scene and formulation: the natural-map residual of every step (Siconos'
normalisation, ``State.solver.residual``: mean and max over the run), the solver's
iterations (exact: sweeps; anitescu-tasora: QP iterations; nakaoka: sweeps run),
steps/s of one env (jit, float64, CPU; compile excluded) and the scene's physical
check. Writes a JSON table and a PNG of the residual over time. Run from the
repository root:

    python experiments/friction_formulations.py [--out experiments/results/friction_formulations.json]

The documentation page (``docs/pages/contact/cone.md``) shows a copy of the PNG,
``docs/pages/images/cone_friction_residuals.png``; this script does not write there:
copy the new PNG over it after a rerun.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxsim  # noqa: E402
from jaxsim import scenes  # noqa: E402
from jaxsim.io import load_mjcf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_step import scene_xml  # noqa: E402

G, MU = 9.81, 0.5
METHODS = ("exact", "anitescu-tasora", "nakaoka")
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def cube_scene(method: str, tilt: float = 0.0, vx: float = 0.0):
    model = scenes.cube(timestep=1e-3, friction=(MU, MU), dtype=jnp.float64, contact="cone",
                        solver=method, gravity=(-G * np.sin(tilt), 0.0, -G * np.cos(tilt)))
    s = jaxsim.make_state(model)
    return model, s.replace(v=s.v.at[0].set(vx))


def mjcf_scene(name: str, method: str):
    model = load_mjcf(scene_xml(name), dtype=jnp.float64, contact="cone", solver=method,
                      max_contacts=48 if name == "boxes8" else 16)
    return model, jaxsim.make_state(model)


SCENES = {  # name: (builder, steps)
    "slide": (lambda m: cube_scene(m, vx=1.0), 400),
    "stick": (lambda m: cube_scene(m, tilt=np.arctan(0.8 * MU)), 400),
    "incline": (lambda m: cube_scene(m, tilt=np.arctan(1.5 * MU)), 400),
    "boxes8": (lambda m: mjcf_scene("boxes8", m), 500),
    "humanoid": (lambda m: mjcf_scene("humanoid", m), 333),
}


def check(name: str, model, q: np.ndarray, v: np.ndarray) -> tuple[str, float, float]:
    """(what, measured, expected) of a scene's physical check."""
    dt = float(model.opt.timestep)
    if name == "slide":
        return "stop distance m", float(q[-1, 0]), 1.0 / (2 * MU * G)
    if name == "stick":
        return "drift m", float(np.abs(q[:, 0]).max()), 0.0
    if name == "incline":
        t = np.arctan(1.5 * MU)
        accel = -(v[-1, 0] - v[99, 0]) / (dt * (len(v) - 100))
        return "accel m/s^2", float(accel), G * (np.sin(t) - MU * np.cos(t))
    if name == "boxes8":
        return "mean height m", float(np.mean(q[-1, 2::7])), 0.05
    return "torso height m", float(q[-1, 2]), float("nan")


def run(name: str, method: str) -> dict:
    build, steps = SCENES[name]
    model, state = build(method)

    @jax.jit
    def rollout(s):
        def body(s, _):
            s = jaxsim.step(model, s)
            return s, (s.q, s.v, s.solver.residual, s.solver.iterations)
        return jax.lax.scan(body, s, None, length=steps)

    t0 = time.perf_counter()
    jax.block_until_ready(rollout(state))
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    final, (q, v, res, its) = jax.block_until_ready(rollout(state))
    wall = time.perf_counter() - t0
    q, v, res, its = map(np.asarray, (q, v, res, its))
    what, got, want = check(name, model, q, v)
    vz = float(np.abs(v[:, 2]).max()) if name in ("slide", "stick", "incline") else float("nan")
    return dict(scene=name, method=method, steps=steps, steps_per_s=steps / wall, compile_s=compile_s,
                residual_mean=float(res.mean()), residual_max=float(res.max()), iterations_mean=float(its.mean()),
                iterations_max=int(its.max()), check=what, measured=got, expected=want, max_normal_speed=vz,
                nonfinite=bool(final.nonfinite), residual=res.tolist())


def table(rows: list[dict]) -> str:
    out = ["| scene | friction model | residual mean / max | iterations mean / max | steps/s | check | measured "
           "| expected | max |v_z| m/s |", "|---|---|---|---|---:|---|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['scene']} | {r['method']} | {r['residual_mean']:.1e} / {r['residual_max']:.1e} | "
                   f"{r['iterations_mean']:.1f} / {r['iterations_max']} | {r['steps_per_s']:.0f} | {r['check']} | "
                   f"{r['measured']:.5g} | {r['expected']:.5g} | {r['max_normal_speed']:.2g} |")
    return "\n".join(out)


def plot(rows: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(SCENES), figsize=(4 * len(SCENES), 3.2), sharey=True)
    for ax, name in zip(axes, SCENES):
        for r in rows:
            if r["scene"] == name:
                ax.semilogy(np.maximum(np.asarray(r["residual"]), 1e-17), label=r["method"], lw=1)
        ax.set_title(name)
        ax.set_xlabel("step")
    axes[0].set_ylabel("natural-map residual")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=os.path.join(RESULTS, "friction_formulations.json"))
    p.add_argument("--scenes", nargs="+", default=list(SCENES), choices=list(SCENES))
    a = p.parse_args()
    rows = []
    for name in a.scenes:
        for method in METHODS:
            rows.append(run(name, method))
            r = rows[-1]
            print(f"{name:9s} {method:16s} residual {r['residual_mean']:.1e}/{r['residual_max']:.1e} "
                  f"iters {r['iterations_mean']:.1f}/{r['iterations_max']} {r['steps_per_s']:.0f} steps/s "
                  f"{r['check']} {r['measured']:.5g} (expected {r['expected']:.5g}) |v_z| {r['max_normal_speed']:.2g}",
                  flush=True)
    print(table(rows))
    with open(a.out, "w") as fh:
        json.dump({"rows": rows, "jax": jax.__version__}, fh)
    png = os.path.splitext(a.out)[0] + ".png"
    plot(rows, png)
    print(f"wrote {a.out} and {png}")


if __name__ == "__main__":
    main()
