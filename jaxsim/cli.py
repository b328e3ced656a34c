"""The ``jaxsim`` command line: ``simulate`` a model file, ``demo`` the built-in scenes,
``bench`` the step benchmark. Bare ``jaxsim`` (or ``python -m jaxsim``) is the cube demo.

Bad input (missing file, unsupported element, bad option) ends with one line
``jaxsim: error: ...`` on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import math
import os
import runpy
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim import parallel, scenes
from jaxsim.step import make_state, rollout, step
from jaxsim.builder import ModelError
from jaxsim.xla_flags import use_fast_cpu_compile

SCENES = {
    "cube": "0.1 m, 0.5 kg cube turned -15 deg about x and y, dropped on its edge from 0.4 m",
    "pendulum": "6-link pendulum raised 60 deg above the ground, falling onto it",
}
MODEL_SUFFIXES = (".xml", ".mjcf", ".urdf")
FLOOR_NAME = "jaxsim_floor"


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit status 2."""


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise UsageError(f"--{name} must be positive, got {value:g}")


# ---------------------------------------------------------------- demo


def build_scene(scene: str, dt: float, integrator: str):
    """(model, initial state, name of the body whose height is reported)."""
    if scene == "cube":
        model = scenes.cube(height=0.4, euler_deg=(-15.0, -15.0, 0.0), timestep=dt, integrator=integrator)
        return model, make_state(model), "cube"
    model = scenes.pendulum(6, floor=True, timestep=dt, integrator=integrator)
    return model, make_state(model, q=scenes.pendulum_raised_q(model)), "link5"


def demo(scene: str, duration: float, dt: float, integrator: str) -> tuple[dict, object, object]:
    """Simulate ``scene`` for ``duration`` s; return (summary, model, trajectory)."""
    from jaxsim.kinematics import forward_kinematics

    model, state, body = build_scene(scene, dt, integrator)
    steps = int(round(duration / dt))
    ctrls = jnp.zeros((steps, model.nu), model.dtype)
    t0 = time.perf_counter()
    run = jax.jit(rollout).lower(model, state, ctrls).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    final, traj = jax.block_until_ready(run(model, state, ctrls))
    wall = time.perf_counter() - t0

    b = model.body_id(body)
    height = np.asarray(jax.jit(jax.vmap(lambda q: forward_kinematics(model, q).body_pos_w[b, 2]))(traj.q))
    depth = np.where(np.asarray(traj.contact.active), np.asarray(traj.contact.depth), 0.0)
    iters = np.asarray(traj.solver.iterations)
    active = np.asarray(final.contact.active)
    summary = dict(
        scene=scene, dt=dt, steps=steps, integrator=integrator, duration=duration,
        compile_s=compile_s, wall_s=wall, steps_per_s=steps / wall, body=body,
        height0=float(height[0]), height_min=float(height.min()), height_final=float(height[-1]),
        max_penetration=float(depth.max()), final_speed=float(np.abs(np.asarray(final.v)).max()),
        contacts_final=int(active.sum()),
        normal_force_final=float(np.asarray(final.contact.force_w[:, 2])[active].sum()),
        weight=float(np.asarray(model.body_mass).sum() * -float(model.opt.gravity[2])),
        iterations_mean=float(iters.mean()), iterations_max=int(iters.max()),
        overflow=int(final.overflow), nonfinite=bool(final.nonfinite))
    return summary, model, traj


def print_demo(s: dict) -> None:
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


def run_demo(args) -> int:
    for name in ("duration", "dt"):
        _positive(name, getattr(args, name))
    scene_names = list(SCENES) if args.scene == "all" else [args.scene]
    out_dir = getattr(args, "out", None)
    if out_dir:
        _viz()
        os.makedirs(out_dir, exist_ok=True)
    failed = False
    for scene in scene_names:
        s, model, traj = demo(scene, args.duration, args.dt, args.integrator)
        print_demo(s)
        if out_dir:
            from jaxsim import viz
            path = viz.save_html(viz.animate(model, traj, contacts=True, forces=True, title=f"jaxsim demo: {scene}"),
                                 os.path.join(out_dir, f"{scene}.html"))
            print(f"  viewer             {path}")
        failed |= s["nonfinite"]
    return 1 if failed else 0


# ---------------------------------------------------------------- simulate


def _viz():
    try:
        from jaxsim import viz
        import plotly  # noqa: F401
    except ImportError as e:
        raise UsageError(f"the viewer needs the visualization extra ({e}): run pip install -e '.[viz]' "
                         "in the jaxsim checkout, or pass --out - to skip the viewer") from None
    return viz


def _lowest_point(mujoco, m) -> float:
    """Lowest z of any geom's bounding box at qpos0, m."""
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    if m.ngeom == 0:
        return 0.0
    rot_z = d.geom_xmat.reshape(-1, 3, 3)[:, 2, :]  # (ngeom, 3): each local axis' world z
    center, half = m.geom_aabb[:, :3], m.geom_aabb[:, 3:]
    return float(np.min(d.geom_xpos[:, 2] + np.sum(rot_z * center, 1) - np.sum(np.abs(rot_z) * half, 1)))


def load_with_floor(path: str, dtype, urdf_options: dict | None = None, max_hull_vertices: int | None = None,
                    **options):
    """Load an MJCF/URDF file; if it has no floor (a plane or height field), add a plane
    under its lowest point at qpos0, so the model starts resting on it.

    Args:
      urdf_options: ``package_dirs``, ``balance_inertia``, ``floating_base``,
        ``self_collision`` of ``jaxsim.io.mjcf.urdf_spec`` (URDF files only).
      max_hull_vertices: cap on every mesh's convex hull (``jaxsim.io.load_mjcf``).

    Returns:
      (model, floor height or None if the file had its own floor).
    """
    from jaxsim.io import mjcf

    try:
        mujoco = mjcf._mujoco()
    except ImportError as e:  # core install without the mujoco extra
        raise UsageError(str(e)) from None
    if path.lower().endswith(".urdf"):
        urdf_options = dict(urdf_options or {}, max_hull_vertices=max_hull_vertices)

        def new_spec():
            return mjcf.urdf_spec(path, **urdf_options)
        m = mjcf.compile_urdf(path, **urdf_options)
    else:
        def new_spec():
            spec = mujoco.MjSpec.from_file(path)
            mjcf.limit_hull_vertices(spec, max_hull_vertices)
            return spec
        m = mjcf._compile(path, max_hull_vertices)
    ground = {int(mujoco.mjtGeom.mjGEOM_PLANE), int(mujoco.mjtGeom.mjGEOM_HFIELD)}
    if any(int(t) in ground for t in m.geom_type):
        return mjcf.from_mjmodel(m, dtype=dtype, **options), None
    mjcf._unsupported_checks(m)  # report what jaxsim cannot simulate before editing the file
    z = _lowest_point(mujoco, m)
    try:
        spec = new_spec()
        spec.worldbody.add_geom(name=FLOOR_NAME, type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05],
                                pos=[0, 0, z], rgba=[0.8, 0.8, 0.8, 1])
        m = spec.compile()
    except ValueError as e:
        raise ModelError(f"could not add a floor to {path}: {e}") from None
    return mjcf.from_mjmodel(m, dtype=dtype, **options), z


def _chunk_fn(model, show, stride: int, frames: int, mesh):
    """jitted ``(states, steps_left) -> (states, frames_of_shown_envs, per_step_stats)``
    advancing the batch ``frames * stride`` steps (fewer at the end: steps past
    ``steps_left`` leave the states as they are); the states stay split over ``mesh``,
    and each device steps its envs in chunks on a CPU (``parallel.default_chunk``)."""
    vstep = parallel.chunked_vmap(step, (None, 0), parallel.default_chunk(model), mesh)

    def one(carry, _):
        states, left = carry
        states = jax.lax.cond(left > 0, lambda s: vstep(model, s), lambda s: s, states)
        depth = jnp.where(states.contact.active, states.contact.depth, 0.0)
        stats = (left > 0, jnp.max(depth, initial=0.0), states.solver.iterations,
                 jnp.sum(states.contact.active, axis=-1))
        return (states, left - 1), stats

    def frame(carry, _):
        carry, stats = jax.lax.scan(one, carry, None, length=stride)
        shown = jax.tree.map(lambda x: x[show], carry[0])
        return carry, (shown, stats)

    @jax.jit
    def chunk(states, left):
        (states, _), (shown, stats) = jax.lax.scan(frame, (states, left), None, length=frames)
        states = jax.lax.with_sharding_constraint(states, parallel.batch_sharding(mesh))
        return states, shown, jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), stats)

    return chunk


def initial_states(model, batch: int, noise: float, seed: int):
    """``batch`` States at qpos0: env 0 at rest, the others with joint velocities drawn
    from N(0, noise^2) (rad/s, m/s)."""
    v = noise * jax.random.normal(jax.random.PRNGKey(seed), (batch, model.nv), model.dtype)
    v = v.at[0].set(0.0)
    return jax.vmap(lambda v: make_state(model, v=v))(v)


def simulate(args) -> int:
    path = args.model
    if not os.path.exists(path):
        raise UsageError(f"model file not found: {path}")
    if not path.lower().endswith(MODEL_SUFFIXES):
        raise UsageError(f"{path}: expected an MJCF (.xml) or URDF (.urdf) file")
    for name in ("duration", "fps"):
        _positive(name, getattr(args, name))
    if args.dt is not None:
        _positive("dt", args.dt)
    if args.batch < 1:
        raise UsageError(f"--batch must be at least 1, got {args.batch}")
    if args.noise < 0:
        raise UsageError(f"--noise must be >= 0, got {args.noise:g}")
    out = args.out or os.path.splitext(os.path.basename(path))[0] + ".html"
    if os.path.dirname(out) and not os.path.isdir(os.path.dirname(out)):
        raise UsageError(f"--out: directory {os.path.dirname(out)} does not exist")
    viz = _viz() if out != "-" else None
    if args.float64:
        jax.config.update("jax_enable_x64", True)
    dtype = jnp.float64 if args.float64 else jnp.float32
    options = {} if args.dt is None else {"timestep": args.dt}
    if args.max_contacts is not None:
        options["max_contacts"] = args.max_contacts
    if args.narrow_pairs is not None:
        options["narrow_pairs"] = args.narrow_pairs
    urdf_options = {"package_dirs": args.package_dir, "balance_inertia": args.balance_inertia,
                    "floating_base": args.floating_base, "self_collision": not args.no_self_collision}
    if not path.lower().endswith(".urdf") and (args.package_dir or args.balance_inertia or args.floating_base
                                                or args.no_self_collision):
        raise UsageError("--package-dir, --balance-inertia, --floating-base and --no-self-collision "
                         "apply to URDF files only")
    model, floor_z = load_with_floor(path, dtype, urdf_options, args.max_hull_vertices, **options)

    dt = float(model.opt.timestep)
    steps = max(1, int(round(args.duration / dt)))
    stride = max(1, int(round(1.0 / (args.fps * dt))))
    nframes = math.ceil(steps / stride)
    per_chunk = max(1, math.ceil(nframes / 50))  # ~50 progress-bar updates
    nchunks = math.ceil(nframes / per_chunk)
    show = np.arange(min(args.show, args.batch))
    name = os.path.basename(path)
    # envs split over every local device that divides the batch (jaxsim.parallel)
    mesh = parallel.batch_mesh(args.batch)
    states = parallel.shard_batch(initial_states(model, args.batch, args.noise, args.seed), mesh)
    print(f"jaxsim simulate {name}: {model.topo.nbody - 1} bodies, nv = {model.nv}, "
          f"{model.topo.ngeom} geoms, {states.contact.active.shape[-1]} contact slots"
          + (f", max_contacts {int(model.opt.max_contacts)}" if int(model.opt.max_contacts) else "")
          + (f"; no floor in the file: added a plane at z = {floor_z:.3f} m" if floor_z is not None else ""))
    print(f"  {args.batch} env(s) x {steps} steps of {dt:g} s ({steps * dt:g} s), "
          f"{model.opt.integrator}, {jax.devices()[0].platform} x {mesh.devices.size} "
          f"device(s), {jnp.dtype(dtype).name}"
          + (f", {envs} envs at a time per device" if (envs := parallel.default_chunk(model))
             and args.batch // mesh.devices.size > envs else ""))

    chunk = _chunk_fn(model, show, stride, per_chunk, mesh)
    t0 = time.perf_counter()
    chunk = chunk.lower(states, jnp.int32(steps)).compile()
    compile_s = time.perf_counter() - t0
    from tqdm.auto import tqdm

    shown, stats, left = [], [], steps
    t0 = time.perf_counter()
    with tqdm(total=steps, unit="step", desc="  simulating", leave=False, disable=args.quiet) as bar:
        for _ in range(nchunks):
            states, frames, s = chunk(states, jnp.int32(left))
            frames, s = jax.device_get((frames, s))
            shown.append(frames)
            stats.append(s)
            done = min(left, per_chunk * stride)
            left -= done
            bar.update(done)
    jax.block_until_ready(states)
    wall = time.perf_counter() - t0

    valid, depth, iters, active = (np.concatenate(x) for x in zip(*stats))
    depth, iters, active = depth[valid], iters[valid], active[valid]
    overflow = np.asarray(states.overflow)
    nonfinite = np.asarray(states.nonfinite)
    print(f"  compile            {compile_s:.1f} s")
    print(f"  run                {wall:.2f} s = {steps * args.batch / wall:,.0f} env-steps/s "
          f"({steps * dt * args.batch / wall:.2f} x real time over all envs)")
    print(f"  max penetration    {1e3 * depth.max(initial=0.0):.2f} mm")
    print(f"  contact QP         {iters.mean():.1f} iterations per step on average, {iters.max()} at most; "
          f"{active.mean():.1f} active contacts per env on average")
    print(f"  overflow           {int(overflow.sum())} contact(s) dropped "
          f"({int((overflow > 0).sum())} of {args.batch} envs)")
    print(f"  non-finite         {int(nonfinite.sum())} of {args.batch} envs"
          + (" -- NaN/inf: try a smaller --dt" if nonfinite.any() else ""))

    if viz is not None:
        # chunks hold (frames, shown envs, ...), the last padded past the end: keep nframes
        traj = jax.tree.map(lambda *x: np.swapaxes(np.concatenate(x)[:nframes], 0, 1), *shown)  # (S, F, ...)
        fig = viz.animate(model, traj, envs=list(range(len(show))), contacts=True, forces=True,
                          fps=args.fps, title=f"{name}: {len(show)} of {args.batch} env(s), jaxsim")
        viz.save_html(fig, out)
        print(f"  viewer             {out} ({os.path.getsize(out) / 1e6:.1f} MB, {nframes} frames, "
              f"{len(show)} env(s) side by side)")
    return 1 if nonfinite.any() else 0


# ---------------------------------------------------------------- bench


def bench(extra: list[str]) -> int:
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "experiments", "bench_step.py")
    if not os.path.exists(script):
        raise UsageError(f"jaxsim bench runs experiments/bench_step.py of a source checkout "
                         f"(pip install -e '.[bench]'); not found at {script}")
    argv, path = sys.argv, list(sys.path)
    sys.argv = [script] + list(extra)
    sys.path.insert(0, os.path.dirname(script))  # its sibling modules (benchutil, ...)
    try:
        runpy.run_path(script, run_name="__main__")
    except ImportError as e:
        raise UsageError(f"jaxsim bench needs the bench extra: pip install -e '.[bench]' ({e})") from None
    finally:
        sys.argv, sys.path = argv, path
    return 0


# ---------------------------------------------------------------- parser


def _demo_options(p, default_scene: str) -> None:
    choices = tuple(SCENES) + (("all",) if default_scene == "all" else ())
    p.add_argument("--scene", choices=choices, default=default_scene,
                   help="; ".join(f"{k}: {v}" for k, v in SCENES.items()))
    p.add_argument("--duration", type=float, default=2.0, help="simulated seconds")
    p.add_argument("--dt", type=float, default=1e-3, help="time step, s")
    p.add_argument("--integrator", choices=("euler", "rk4"), default="euler")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jaxsim", description=__doc__.split("\n\n")[0])
    _demo_options(p, "cube")  # bare `jaxsim`: the cube demo
    sub = p.add_subparsers(dest="command")

    s = sub.add_parser("simulate", help="simulate an MJCF/URDF file and write the 3-D viewer")
    s.add_argument("model", help="MJCF (.xml) or URDF (.urdf) file; a floor is added if it has none")
    s.add_argument("--duration", type=float, default=5.0, help="simulated seconds (default 5)")
    s.add_argument("--dt", type=float, default=None, help="time step, s (default: the file's)")
    s.add_argument("--batch", type=int, default=1, help="number of environments (vmap)")
    s.add_argument("--noise", type=float, default=0.1,
                   help="std of the initial joint velocities of envs 1.. (env 0 starts at rest)")
    s.add_argument("--seed", type=int, default=0, help="random seed of that noise")
    s.add_argument("--out", default=None,
                   help="viewer file (default: MODEL.html in the current directory; '-': none)")
    s.add_argument("--show", type=int, default=4, help="envs shown side by side in the viewer")
    s.add_argument("--fps", type=float, default=30.0, help="viewer frames per simulated second")
    s.add_argument("--max-contacts", type=int, default=None,
                   help="solve at most this many deepest contacts per step (0: all slots)")
    s.add_argument("--max-hull-vertices", type=int, default=None, metavar="N",
                   help="cap every mesh's convex hull at N vertices (MuJoCo's maxhullvert): robot "
                        "meshes give hulls of thousands, and hull-hull pairs cost O(V1 V2)")
    s.add_argument("--narrow-pairs", type=int, default=None, metavar="N",
                   help="per pair kind, only the N nearest pairs (bounding spheres) run the narrow "
                        "phase each step (0: all)")
    s.add_argument("--float64", action="store_true", help="simulate in float64 (default float32)")
    s.add_argument("--package-dir", action="append", default=[], metavar="DIR",
                   help="URDF: where package:// URIs are looked up first (repeatable; then "
                        "$ROS_PACKAGE_PATH and the directories above the file)")
    s.add_argument("--floating-base", action="store_true",
                   help="URDF: a free joint on the root link (a legged robot); default: welded to the world")
    s.add_argument("--balance-inertia", action="store_true",
                   help="URDF: make inertias that are not physically valid valid instead of failing")
    s.add_argument("--no-self-collision", action="store_true",
                   help="URDF: links collide with the floor and other geoms only, not with each other")
    s.add_argument("--quiet", action="store_true", help="no progress bar")

    d = sub.add_parser("demo", help="simulate the built-in contact scenes")
    _demo_options(d, "all")
    d.add_argument("--out", default=None, help="directory for one viewer file per scene")

    sub.add_parser("bench", help="the step benchmark, jaxsim vs MJX (experiments/bench_step.py; "
                   "arguments after `bench` go to it)", add_help=False)
    return p


def main(argv=None) -> int:
    use_fast_cpu_compile()  # before this process's first JAX computation
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["bench"]:
        argv, extra = argv[:1], argv[1:]
    p = parser()
    args = p.parse_args(argv)
    try:
        if args.command == "simulate":
            return simulate(args)
        if args.command == "bench":
            return bench(extra)
        return run_demo(args)
    except (UsageError, ModelError) as e:
        p.exit(2, f"jaxsim: error: {_one_line(e)}\n")
