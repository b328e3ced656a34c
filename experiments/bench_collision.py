"""Collision-stage throughput: jaxsim (``collide``) vs MuJoCo MJX (``mjx.collision``).

For each scene and batch size this times one jitted, vmapped evaluation of
"kinematics + collision" on a batch of configurations and reports contact
evaluations per second (batch * calls / seconds; one evaluation = all candidate
geom pairs of one environment):

  * jaxsim -- ``collide(model, forward_kinematics(model, q))``, returns ``contacts.depth``
  * MJX    -- ``mjx.collision(mx, mjx.kinematics(mx, d.replace(qpos=q)))``, returns
              ``contact.dist``

Both sides return only their contact distance array, so XLA cannot drop the
narrow phase (it may drop e.g. jaxsim's contact frames, which depth does not need).
Scenes (MJCF strings below, float32):

  box_plane      a 0.1 m free cube resting on a plane, 1 mm deep (4 contacts)
  box_box        two free 0.1 m cubes, no plane: the upper one rotated 30 deg about
                 z, 1 mm into the lower one (edge-edge contacts)
  capsule_plane  a free capsule (r 2 cm, half-length 10 cm) lying on a plane, 1 mm deep
  boxes8         8 free 0.1 m cubes at fixed pseudo-random poses on / just above the
                 floor, touching their neighbours (8 box-plane + 28 box-box candidate
                 pairs; at rest 8 cube pairs touch, at most 3 mm deep)
  box_box_volume jaxsim only (no MJX equivalent): kinematics + the intersection
                 polyhedron ``polyhedra.intersect`` of the two cubes of ``box_box``
                 (half-spaces from ``polyhedra.box_halfspaces``, expressed about the
                 midpoint of the two cubes), returns volume and centroid

Each batch element is the scene's resting pose (``qpos0``) plus small random
perturbations (0.5 mm on positions, ~0.01 rad on orientations; the same states for
both simulators). Before timing, the number of active contacts per environment at
the resting pose is printed for both sides (jaxsim: ``contacts.active``; MJX:
``contact.dist < 0``). Each timed call is followed by ``jax.block_until_ready``;
compilation is timed separately and excluded. If MJX rejects a scene, the reason is
printed and stored and only jaxsim is timed.

Run (from the repository root):

    python experiments/bench_collision.py                 # full run
    python experiments/bench_collision.py --quick         # smoke test
    python experiments/bench_collision.py --scenes boxes8 --batches 1 256 --min-time 2

Results are printed as a table and written as JSON (default
``experiments/results/bench_collision.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

import jaxsim
from jaxsim.collision.driver import collide
from jaxsim.io import load_mjcf
from benchutil import bench, machine_info, parse_common

try:
    from jaxsim.collision import polyhedra as volume
    VOLUME_ERROR = None if hasattr(volume, "intersect") and hasattr(volume, "box_halfspaces") \
        else "jaxsim.collision.polyhedra has no intersect/box_halfspaces"
except Exception as e:  # noqa: BLE001 -- the module is being written: report, do not fail
    volume, VOLUME_ERROR = None, f"import jaxsim.collision.polyhedra failed: {e!r}"

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                           "bench_collision.json")
HALF = 0.05  # half-extent of the 0.1 m cubes
PEN = 0.001  # resting penetration


def _box_body(name: str, pos, quat=(1.0, 0.0, 0.0, 0.0)) -> str:
    p = " ".join(f"{x:.6f}" for x in pos)
    q = " ".join(f"{x:.6f}" for x in quat)
    return (f'<body name="{name}" pos="{p}" quat="{q}"><freejoint/>'
            f'<geom type="box" size="{HALF} {HALF} {HALF}" mass="1"/></body>')


def _mjcf(bodies: str, plane: bool = True) -> str:
    floor = '<geom name="floor" type="plane" size="2 2 0.1"/>' if plane else ""
    return f"<mujoco><worldbody>{floor}{bodies}</worldbody></mujoco>"


def _quat_z(deg: float):
    h = np.radians(deg) / 2
    return (np.cos(h), 0.0, 0.0, np.sin(h))


# 8 cubes: pose (x, y, z), quat (w, x, y, z). Made once by rejection sampling (then
# rounded): cubes near a 4 x 2 grid 0.108 m apart with +-1 cm jitter, yaw within
# +-22.5 deg, tilt of a few degrees, lowest vertex between 1 mm below and 2 mm above the
# floor; each new cube had to touch an earlier one, with at most 3 mm penetration. At
# rest MuJoCo finds 28 contacts: 13 box-plane and 15 box-box (8 touching cube pairs).
BOXES8 = (
    ((-0.1416, -0.0796, 0.0516), (0.98733, -0.0053, 0.0072, -0.15846)),
    ((-0.0290, -0.0581, 0.0497), (0.99850, 0.00074, -0.00186, 0.05468)),
    ((0.0741, -0.0351, 0.0518), (0.99994, -0.00133, -0.0001, -0.01067)),
    ((0.1745, -0.0435, 0.0512), (0.99962, -0.00141, 0.00155, -0.02738)),
    ((-0.1510, 0.0344, 0.0492), (0.99919, -0.00069, 0.00016, 0.04018)),
    ((-0.0484, 0.0431, 0.0498), (1.00000, -0.00001, 0.00002, -0.00015)),
    ((0.0559, 0.0718, 0.0507), (0.99898, -0.00036, -0.00703, -0.04465)),
    ((0.1559, 0.0718, 0.0519), (0.99949, -0.00168, -0.0019, -0.03179)),
)


SCENES = {
    "box_plane": _mjcf(_box_body("box", (0, 0, HALF - PEN))),
    "box_box": _mjcf(_box_body("lower", (0, 0, HALF))
                     + _box_body("upper", (0, 0, 3 * HALF - PEN), _quat_z(30)), plane=False),
    "capsule_plane": _mjcf('<body name="capsule" pos="0 0 0.019"><freejoint/>'
                           '<geom type="capsule" size="0.02 0.1" euler="0 90 0" mass="1"/></body>'),
    "boxes8": _mjcf("".join(_box_body(f"box{i}", p, q) for i, (p, q) in enumerate(BOXES8))),
}
VOLUME_SCENE = "box_box_volume"
ALL_SCENES = (*SCENES, VOLUME_SCENE)


def random_states(mm, batch: int, seed: int = 0):
    """(batch, nq) float32: ``qpos0`` + 0.5 mm position noise, quaternions perturbed by
    ~0.01 rad and renormalized (free and ball joints); element 0 is not special."""
    rng = np.random.default_rng(seed)
    q = np.tile(mm.qpos0, (batch, 1))
    for j in range(mm.njnt):
        adr, jt = mm.jnt_qposadr[j], mm.jnt_type[j]
        if jt == mujoco.mjtJoint.mjJNT_FREE:
            q[:, adr:adr + 3] += 5e-4 * rng.standard_normal((batch, 3))
            adr += 3
        if jt in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
            quat = q[:, adr:adr + 4] + 5e-3 * rng.standard_normal((batch, 4))
            q[:, adr:adr + 4] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
        else:
            q[:, adr] += 1e-2 * rng.standard_normal(batch)
    return jnp.asarray(q, jnp.float32)


def mjx_contact(d):
    """``d.contact`` without the deprecation warning of newer MJX (``d._impl.contact``)."""
    impl = getattr(d, "_impl", None)
    if impl is not None and hasattr(impl, "contact"):
        return impl.contact
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return d.contact


def jaxsim_fn(model):
    """q (nq,) -> contacts.depth (ncon,)."""
    return lambda q: collide(model, jaxsim.forward_kinematics(model, q)).depth


def volume_fn(model):
    """q (nq,) -> (volume, centroid) of the intersection of geoms 0 and 1 (two boxes)."""
    def f(q):
        kin = jaxsim.forward_kinematics(model, q)
        pos, rot, size = kin.geom_pos_w[:2], kin.geom_rot_w[:2], model.geom_size[:2]
        mid = 0.5 * (pos[0] + pos[1])  # planes about a nearby origin (float32 offsets)
        na, da = volume.box_halfspaces(size[0], pos[0] - mid, rot[0])
        nb, db = volume.box_halfspaces(size[1], pos[1] - mid, rot[1])
        poly = volume.intersect(na, da, nb, db)
        return poly.volume, poly.centroid + mid
    return f


def load_mjx(xml: str):
    """(MjModel, mjx.Model, mjx.Data); Newton solver (MJX rejects PGS, MuJoCo's default)."""
    mm = mujoco.MjModel.from_xml_string(xml)
    mm.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    mx = mjx.put_model(mm)
    return mm, mx, mjx.make_data(mx)


def contact_counts(name: str, model, mm, mjx_f) -> dict:
    """Active contacts per env at the resting pose (qpos0) on each side, and max depth.

    ``mjx_f``: q -> MJX Contact (or None). MJX fills every slot of a touching box-box
    pair (4), repeating points, so its distinct contact positions are counted too.
    MuJoCo (C) itself is the reference.
    """
    q0 = jnp.asarray(mm.qpos0, jnp.float32)
    c = jax.jit(lambda q: collide(model, jaxsim.forward_kinematics(model, q)))(q0)
    active = np.asarray(c.active)
    depth = np.asarray(c.depth)
    out = {"jaxsim": {"active": int(active.sum()), "slots": int(active.size),
                      "max_depth": float(depth[active].max()) if active.any() else None}}
    md = mujoco.MjData(mm)
    mujoco.mj_forward(mm, md)
    dist_c = np.asarray(md.contact.dist[:md.ncon])
    out["mujoco"] = {"active": int((dist_c < 0).sum()), "ncon": int(md.ncon),
                     "max_depth": float(-dist_c.min()) if md.ncon else None}
    if mjx_f is not None:
        con = jax.jit(mjx_f)(q0)
        dist, pos = np.asarray(con.dist), np.asarray(con.pos)
        on = dist < 0
        distinct = len({tuple(x) for x in np.round(pos[on] / 1e-6).astype(np.int64)})
        out["mjx"] = {"active": int(on.sum()), "distinct": distinct, "slots": int(dist.size),
                      "max_depth": float(-dist.min()) if on.any() else None}
    line = (f"  contacts {name:14s} at rest: jaxsim {out['jaxsim']['active']:3d} active "
            f"of {out['jaxsim']['slots']:3d} slots")
    if "mjx" in out:
        m = out["mjx"]
        line += (f", MJX {m['active']:3d} (dist < 0; {m['distinct']} distinct) "
                 f"of {m['slots']:3d} slots")
    line += f", MuJoCo {out['mujoco']['active']:3d}"
    fmt = lambda x: "n/a" if x is None else f"{x * 1e3:.3f}"  # noqa: E731
    line += (f"; max depth (mm) jaxsim {fmt(out['jaxsim']['max_depth'])}"
             + (f", MJX {fmt(out['mjx']['max_depth'])}" if "mjx" in out else "")
             + f", MuJoCo {fmt(out['mujoco']['max_depth'])}")
    print(line, flush=True)
    return out


def print_table(rows: list[dict]) -> None:
    head = (f"{'scene':15s} {'batch':>6s} {'jaxsim evals/s':>15s} {'MJX evals/s':>13s} "
            f"{'jaxsim/MJX':>11s} {'jaxsim ms':>10s} {'MJX ms':>9s} {'compile s (jx/mjx)':>19s}")
    print(head)
    print("-" * len(head))
    for r in rows:
        j, m = r["jaxsim"], r.get("mjx")
        has_m = m is not None and "evals_per_s" in m
        me = f"{m['evals_per_s']:13.4g}" if has_m else f"{'n/a':>13s}"
        ratio = f"{r['jaxsim_over_mjx']:11.2f}" if has_m else f"{'-':>11s}"
        mms = f"{m['sec_per_call'] * 1e3:9.3f}" if has_m else f"{'-':>9s}"
        comp = f"{j['compile_s']:.1f}/" + (f"{m['compile_s']:.1f}" if has_m else "-")
        print(f"{r['scene']:15s} {r['batch']:6d} {j['evals_per_s']:15.4g} {me} {ratio} "
              f"{j['sec_per_call'] * 1e3:10.3f} {mms} {comp:>19s}")


def _report(scene, batch, who, r):
    print(f"  {scene:14s} batch {batch:5d} {who:6s}: {r['evals_per_s']:11.4g} evals/s"
          f"  ({r['sec_per_call'] * 1e3:8.3f} ms/call, {r['calls']} calls,"
          f" compile {r['compile_s']:.1f} s)", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenes", nargs="+", default=list(ALL_SCENES), choices=ALL_SCENES)
    a = parse_common(p, DEFAULT_OUT)

    info = machine_info()
    print(f"jax {info['jax']} on {info['jax_devices']}, mujoco {info['mujoco']}, "
          f"mjx {info['mujoco_mjx']}, {info['cpu_count']} CPUs, "
          f"load {info['loadavg_at_start'][0]:.2f}")
    t_start = time.perf_counter()
    rows, counts, skipped = [], {}, {}
    for name in a.scenes:
        if name == VOLUME_SCENE:
            if VOLUME_ERROR is not None:
                print(f"{name}: SKIPPED ({VOLUME_ERROR})")
                skipped[name] = VOLUME_ERROR
                continue
            xml = SCENES["box_box"]
        else:
            xml = SCENES[name]
        model = load_mjcf(xml, dtype=jnp.float32)
        mm = mujoco.MjModel.from_xml_string(xml)
        print(f"{name}: nq={mm.nq} ngeom={mm.ngeom} nbody={mm.nbody}")
        if name == VOLUME_SCENE:
            fns = {"jaxsim": jax.vmap(volume_fn(model))}
            mjx_reason = "no MJX equivalent of the intersection polyhedron"
            v0, _ = jax.jit(volume_fn(model))(jnp.asarray(mm.qpos0, jnp.float32))
            # exact: octagon (square minus 4 corner triangles cut by the 30-deg square) x depth
            t = np.radians(30)
            corner = 0.5 * HALF**2 * (1 - np.tan(t / 2)) * (1 - np.tan(np.pi / 4 - t / 2))
            exact = float(((2 * HALF) ** 2 - 4 * corner) * PEN)
            print(f"  volume at rest: jaxsim {float(v0):.5e} m^3, exact {exact:.5e} m^3 "
                  f"(rel. err {abs(float(v0) - exact) / exact:.1e})")
            counts[name] = {"volume_at_rest": float(v0), "exact_volume": exact}
        else:
            fns = {"jaxsim": jax.vmap(jaxsim_fn(model))}
            mjx_reason = None
            mjx_one = None
            try:
                _, mx, dx = load_mjx(xml)
                mjx_one = lambda q, mx=mx, dx=dx: mjx_contact(  # noqa: E731
                    mjx.collision(mx, mjx.kinematics(mx, dx.replace(qpos=q))))
                jax.eval_shape(mjx_one, jnp.asarray(mm.qpos0, jnp.float32))  # trace: may reject
                fns["mjx"] = jax.vmap(lambda q, f=mjx_one: f(q).dist)
            except Exception as e:  # noqa: BLE001 -- MJX rejects some geom pairs
                mjx_reason = f"MJX rejected the scene: {type(e).__name__}: {e}"
                mjx_one = None
                print(f"  !!! {mjx_reason}; timing jaxsim only")
            counts[name] = contact_counts(name, model, mm, mjx_one)
        if mjx_reason is not None:
            skipped[name] = mjx_reason
        for batch in a.batches:
            q = random_states(mm, batch)
            row = {"scene": name, "batch": batch}
            for who, f in fns.items():
                r = bench(f, (q,), a.min_time)
                r["evals_per_s"] = batch / r["sec_per_call"]
                row[who] = r
                _report(name, batch, who, r)
            if "mjx" in row:
                row["jaxsim_over_mjx"] = row["jaxsim"]["evals_per_s"] / row["mjx"]["evals_per_s"]
            else:
                row["mjx"] = {"unsupported": mjx_reason}
                row["jaxsim_over_mjx"] = None
            rows.append(row)
    wall = time.perf_counter() - t_start

    print()
    print_table(rows)
    print(f"\n(evals/s = batch * calls / s, one eval = all pairs of one env; "
          f"ratio > 1: jaxsim faster; total {wall:.0f} s)")
    for name, why in skipped.items():
        print(f"  {name}: {'skipped' if name == VOLUME_SCENE and VOLUME_ERROR else 'MJX not timed'}"
              f": {why}")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump({"machine": info, "args": vars(a), "wall_s": wall, "scenes_mjcf": SCENES,
                   "contact_counts": counts, "mjx_skipped": skipped, "results": rows},
                  fh, indent=2)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
