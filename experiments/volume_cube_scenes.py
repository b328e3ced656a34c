"""The two cube scenes of Wakisaka & Sugihara's contact-volume model (their section 4):
the contact volume against point contact at the vertices, float64:

  edge    0.1 m, 0.5 kg cube turned -15 deg about x and y, dropped from 0.4 m
  face    the same cube turned 15 deg about x, dropped from 0.2 m
  slab    the edge scene over the edge of a floor slab (a 0.4 x 0.4 x 0.2 m box, top
          at z = 0): the cube's lowest corner 1 cm past the slab's edge, its centre
          of mass over the slab, so that it lands with one of its edges across the
          slab's edge (the edge-to-edge contact of the contact-volume model, which
          no vertex sees)

dt 1 ms, 1.5 s, mu_s 0.5 and mu_k 0.3 on both geoms. Methods: ``contact="volume"``
and ``contact="relaxed"`` with ``edge_contacts=False`` (point contacts at the vertices
only; a cube on a plane has no others anyway). Per step:

  * penetration: how far the cube's lowest corner is below the floor, from ``q``
    (independent of either collision routine); over the slab, the boxes' overlap
    along their separating axis of least overlap (``slab_depth``, numpy);
  * total normal force: the sum of the slots' normal forces (``contact_forces``);
  * centre of pressure y, from the cube's centre: the volume's own
    (``ContactForces.cop_w``); for points the normal-force-weighted mean of the points.

Writes ``experiments/results/volume_cube_scenes.png`` (penetration, normal force and
CoP y over time, all three scenes) and ``volume_cube_scenes.json``, and prints the
table: deepest penetration, the mean normal force over the settled phase (t >= 1 s)
against m g, and the largest step-to-step jump of the CoP's y once the face is down
for good (tilt below 0.5 deg from then on), how many jumps exceed 2 mm, the CoP's mean
y while the face slides (Coulomb: mu_k times the half size ahead of the centre), and
the largest jump within two phases of that: the slide (20 ms after the face is down to
5 ms before the stop) and the stop (5 ms before to 20 ms after the cube first moves
slower than 1 mm/s), where Coulomb's own CoP falls from mu_k times the half size to 0,
and the CoP's largest distance from the centre over the 20 ms from the second step
after that one (Coulomb: 0 at rest; what is left rings before rest).

    python experiments/volume_cube_scenes.py

The documentation page (``docs/pages/contact/volume.md``) shows a copy of the PNG,
``docs/pages/images/volume_cube_scenes.png``; this script does not write there: copy
the new PNG over it after a rerun.
"""

from __future__ import annotations

import json
import os
import sys

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np

jax.config.update("jax_enable_x64", True)
matplotlib.use("Agg")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import jaxsim  # noqa: E402
from test_volume_model import (DT, METHODS, SCENES, SETTLED, cube_scene, slab_depth, slab_start, spec_quat,  # noqa: E402
                               spec_summary, spec_trace)

OUT = os.path.join(HERE, "results")
SECONDS = 1.5
A_HALF = 0.05  # m, the cube's half size: its height resting on the slab


def main() -> int:
    steps = int(round(SECONDS / DT))
    run = jax.jit(jaxsim.rollout)
    results, traces = {}, {}
    for scene, (angles, height) in SCENES.items():
        for method, options in METHODS.items():
            model = cube_scene(pos=(0, 0, height), quat=spec_quat(*angles), dt=DT, **options)
            _, traj = run(model, jaxsim.make_state(model), jnp.zeros((steps, 0)))
            assert not bool(traj.nonfinite[-1]), (scene, method)
            traces[scene, method] = tr = spec_trace(model, traj)
            results[f"{scene}/{method}"] = spec_summary(tr)
    print(f"{'scene':6s} {'method':9s} {'max pen. mm':>11s} {'F_n/mg (t>=1s)':>15s} {'face down s':>12s} "
          f"{'max CoP-y jump mm':>18s} {'jumps > 2 mm':>13s} {'sliding CoP-y mm':>17s} "
          f"{'jump sliding mm':>16s} {'stop s':>7s} {'jump at stop mm':>16s} {'off centre after mm':>20s}")
    for key, r in results.items():
        scene, method = key.split("/")
        fmt = lambda x, f: "-" if x is None else format(x, f)  # noqa: E731
        print(f"{scene:6s} {method:9s} {r['max_penetration_mm']:11.3f} {r['settled_over_mg']:15.4f} "
              f"{fmt(r['face_down_s'], '.3f'):>12s} {fmt(r['max_cop_jump_mm'], '.3f'):>18s} "
              f"{r['cop_jumps_over_2mm']:13d} {fmt(r['sliding_cop_y_mm'], '.2f'):>17s} "
              f"{fmt(r['slide_cop_jump_mm'], '.3f'):>16s} {fmt(r['stop_s'], '.3f'):>7s} "
              f"{fmt(r['stop_cop_jump_mm'], '.2f'):>16s} {fmt(r['after_stop_cop_mm'], '.3f'):>20s}")
    print(f"Coulomb: a face sliding with mu_k = 0.3 has its CoP mu_k x half size = {0.3 * A_HALF * 1e3:.1f} mm ahead")
    for method, options in METHODS.items():
        pos, quat = slab_start()
        model = cube_scene(pos=pos, quat=quat, dt=DT, slab=True, **options)
        _, traj = run(model, jaxsim.make_state(model), jnp.zeros((steps, 0)))
        assert not bool(traj.nonfinite[-1]), ("slab", method)
        tr = spec_trace(model, traj)
        tr["penetration"] = np.maximum(slab_depth(traj), 0.0)
        traces["slab", method] = tr
        results[f"slab/{method}"] = dict(max_penetration_mm=float(tr["penetration"].max() * 1e3),
                                         final_height_m=float(traj.q[-1, 2]))
        print(f"slab   {method:9s} {results[f'slab/{method}']['max_penetration_mm']:11.3f}   final height "
              f"{results[f'slab/{method}']['final_height_m']:.3f} m (on the slab: {A_HALF})")
    for scene in SCENES:
        ratio = results[f"{scene}/volume"]["settled_normal_force"] / results[f"{scene}/vertices"]["settled_normal_force"]
        print(f"{scene}: settled normal force volume / vertices = {ratio:.4f}")
        results[f"{scene}/force_ratio"] = ratio
    _plot(traces, os.path.join(OUT, "volume_cube_scenes.png"))
    with open(os.path.join(OUT, "volume_cube_scenes.json"), "w") as f:
        json.dump(results, f, indent=1)
    print("wrote", os.path.join(OUT, "volume_cube_scenes.png"), "and volume_cube_scenes.json")
    return 0


def _plot(traces: dict, path: str) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 3, figsize=(15, 7.5), sharex=True)
    for col, scene in enumerate(list(SCENES) + ["slab"]):
        for method, style in (("vertices", dict(color="tab:orange", lw=1.0)), ("volume", dict(color="tab:blue", lw=1.4))):
            tr = traces[scene, method]
            t = np.arange(1, len(tr["normal_force"]) + 1) * DT
            axes[0, col].plot(t, tr["penetration"] * 1e3, label=method, **style)
            axes[1, col].plot(t, tr["normal_force"], label=method, **style)
            axes[2, col].plot(t, tr["cop_y"] * 1e3, label=method, **style)
        angles, height = SCENES.get(scene, SCENES["edge"])
        where = " over a slab's edge" if scene == "slab" else ""
        axes[0, col].set_title(f"{scene}: {angles[0]} deg about x, {angles[1]} about y, from {height} m{where}",
                               fontsize=9)
        axes[1, col].axhline(0.5 * 9.81, color="gray", lw=0.6, ls=":")
        axes[1, col].set_ylim(0, 20)
        axes[2, col].set_xlabel("t (s)")
        axes[2, col].set_xlim(0.15, 0.65)  # nothing moves after
    axes[0, 0].set_ylabel("penetration (mm)")
    axes[1, 0].set_ylabel("total normal force (N)")
    axes[2, 0].set_ylabel("centre of pressure y - com y (mm)")
    axes[0, 0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)


if __name__ == "__main__":
    sys.exit(main())
