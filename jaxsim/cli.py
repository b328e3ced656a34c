"""The ``jaxsim`` command line: ``simulate`` a model file, ``demo`` the built-in scenes.
Bare ``jaxsim`` (or ``python -m jaxsim``) is the cube demo.

``simulate`` and ``demo`` take ``--contact MODEL`` and ``--set KEY=VALUE`` for any
scene-wide option of ``ModelBuilder`` or parameter of the contact model
(``jaxsim.options``); they reach the loaders and scenes as keyword options.

Bad input (missing file, unsupported element, bad option or value, a number out of
range) ends with one line ``jaxsim: error: ...`` on stderr and exit status 2, never a
traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from jaxsim import contact as contact_models
from jaxsim import options as model_options
from jaxsim import parallel, scenes
from jaxsim.step import make_state, rollout, step
from jaxsim.names import current_name
from jaxsim.types import ModelError
from jaxsim.xla_flags import use_fast_cpu_compile

SCENES = {
    "cube": "0.1 m, 0.5 kg cube turned -15 deg about x and y, dropped on its edge from 0.4 m",
    "pendulum": "6-link pendulum raised 60 deg above the ground, falling onto it",
}
MODEL_SUFFIXES = (".xml", ".mjcf", ".urdf")
FLOOR_NAME = "jaxsim_floor"
MAX_INT32 = 2**31 - 1  # step counters are int32
MAX_STORED_BYTES = 2 * 2**30  # the viewer's frames (simulate), every step's state (demo)
MAX_FRAMES = 600  # frames of a viewer at most (``viz.animate``'s max_frames)
MAX_SHOW = 64  # envs side by side in a viewer at most


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit status 2."""


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


class _Parser(argparse.ArgumentParser):
    """argparse's errors (an unknown option, a bad choice or number) as one line."""

    def error(self, message):
        self.exit(2, f"jaxsim: error: {_one_line(message)} (see {self.prog} --help)\n")


def _positive(name: str, value: float) -> None:
    if not (value > 0 and math.isfinite(value)):
        raise UsageError(f"--{name} must be positive and finite, got {value:g}")


def _int_range(name: str, value: int, low: int, high: int = MAX_INT32) -> None:
    if not low <= value <= high:
        raise UsageError(f"--{name} must be at least {low} and at most {high}, got {value}")


def _steps(duration: float, dt: float) -> int:
    """Steps of ``duration`` s at ``dt``; at least 1, and few enough for an int32 counter."""
    n = duration / dt
    if not n < MAX_INT32 + 0.5:
        raise UsageError(f"--duration {duration:g} s at dt = {dt:g} s is {n:.3g} steps; at most {MAX_INT32} "
                         f"steps fit (--duration <= {MAX_INT32 * dt:.6g} s, or a larger time step)")
    return max(1, int(round(n)))


def _state_bytes(model) -> int:
    """Bytes of one environment's State."""
    shapes = jax.eval_shape(lambda: make_state(model))
    return sum(x.size * jnp.dtype(x.dtype).itemsize for x in jax.tree.leaves(shapes))


def _memory_bytes() -> int:
    """Memory of the devices (a GPU's limit) or of the host."""
    devices = jax.local_devices()
    try:
        limit = (devices[0].memory_stats() or {}).get("bytes_limit")
    except Exception:  # noqa: BLE001 - a backend without memory statistics
        limit = None
    if limit:
        return int(limit) * len(devices)
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


# ---------------------------------------------------------------- model options


def _settings(args, flags: dict, contact: str | None) -> dict:
    """ModelBuilder options from ``--contact``, ``--set KEY=VALUE`` and the command's
    own flags for options.

    Args:
      args: the parsed arguments.
      flags: option -> (its flag, the flag's value or None when not given).
      contact: the contact model whose parameters ``--set`` may name when
        ``--contact`` is not given (None: any model's; the loader then checks them
        against the file's model).

    Raises:
      UsageError: a malformed ``--set``, an unknown key or a bad value (naming the
        key and what is allowed), or an option given twice.
    """
    raw: dict = {}
    for item in getattr(args, "set", None) or []:
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise UsageError(f"--set expects KEY=VALUE, got {item!r}; {model_options.allowed(args.contact or contact)}")
        raw[key] = text
    out: dict = {}
    if args.contact is not None:
        out["contact"] = contact = args.contact
    if "contact" in raw:
        value = _parse_setting("contact", raw.pop("contact"), None)
        if args.contact is not None and value != args.contact:
            raise UsageError(f"--contact {args.contact} and --set contact={value} disagree; give the contact "
                             "model once")
        out["contact"] = contact = value
    for key, text in raw.items():
        value = _parse_setting(key, text, contact)
        if current_name(key) != key:
            print(f"jaxsim: warning: --set {key}: a former name; use {current_name(key)}", file=sys.stderr)
            key = current_name(key)
        if key in out:
            raise UsageError(f"--set {key}: given twice (also under its former name)")
        out[key] = value
    for key, (flag, value) in flags.items():
        if value is None:
            continue
        if key in out:
            raise UsageError(f"{key} is set by both {flag} and --set {key}=...; give it once")
        out[key] = value
    return out


def _parse_setting(key: str, text: str, contact: str | None):
    try:
        return model_options.parse(key, text, contact)
    except ModelError as e:
        raise UsageError(f"--set {key}={text}: {e}") from None


def contact_label(model) -> str:
    """The Model's contact model and the parameters it sets to other than their
    defaults, e.g. ``relaxed (contact_relaxation 0.02)``."""
    changed = []
    for f in dataclasses.fields(model.contact_params):
        value, default = getattr(model.contact_params, f.name), f.default
        if f.metadata.get("static"):
            if value != default:
                changed.append(f"{f.name} {value}")
        elif not np.allclose(np.asarray(value, np.float64), default, rtol=1e-6, atol=0.0):
            changed.append(f"{f.name} {np.asarray(value).tolist():g}" if np.ndim(value) == 0
                           else f"{f.name} {np.asarray(value).tolist()}")
    return model.opt.contact + (f" ({', '.join(changed)})" if changed else "")


# ---------------------------------------------------------------- demo


def build_scene(scene: str, **options):
    """A demo scene.

    Args:
      scene: a key of ``SCENES``.
      **options: ModelBuilder options and contact-model parameters (``demo_options``).

    Returns:
      (model, initial state, name of the body whose height is reported).
    """
    if scene == "cube":
        model = scenes.cube(height=0.4, euler_deg=(-15.0, -15.0, 0.0), **options)
        return model, make_state(model), "cube"
    model = scenes.pendulum(6, floor=True, **options)
    return model, make_state(model, q=scenes.pendulum_raised_q(model)), "link5"


def demo_options(args) -> dict:
    """The demo's ModelBuilder options from its arguments (``--dt``, ``--integrator``,
    ``--contact``, ``--set``), the names checked against the selected contact model."""
    options = _settings(args, {"timestep": ("--dt", args.dt), "integrator": ("--integrator", args.integrator)},
                        args.contact or model_options.default_contact())
    model_options.check_names(options, options.get("contact", model_options.default_contact()))
    return options


def demo(scene: str, duration: float, **options) -> tuple[dict, object, object]:
    """Simulate ``scene`` for ``duration`` s; return (summary, model, trajectory).

    Args:
      scene: a key of ``SCENES``.
      duration: simulated seconds.
      **options: as for ``build_scene``.
    """
    from jaxsim.kinematics import forward_kinematics

    model, state, body = build_scene(scene, **options)
    dt, integrator = float(model.opt.timestep), model.opt.integrator
    steps = _steps(duration, dt)
    per_step = _state_bytes(model)
    if steps * per_step > MAX_STORED_BYTES:  # the rollout keeps every step's state
        most = MAX_STORED_BYTES // per_step
        raise UsageError(f"--duration {duration:g} s is {steps} steps of {per_step / 1e3:.1f} kB each, which the "
                         f"demo keeps in memory; at most {most} steps ({MAX_STORED_BYTES / 1e9:.1f} GB): "
                         f"--duration <= {most * dt:.6g} s")
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
        scene=scene, dt=dt, steps=steps, integrator=integrator, duration=duration, contact=contact_label(model),
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
          f"{jax.devices()[0].platform}, float32")
    print(f"  contact model      {s['contact']}")
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
    _positive("duration", args.duration)
    if args.dt is not None:
        _positive("dt", args.dt)
    options = demo_options(args)
    scene_names = list(SCENES) if args.scene == "all" else [args.scene]
    out_dir = getattr(args, "out", None)
    if out_dir:
        _viz()
        os.makedirs(out_dir, exist_ok=True)
    failed = False
    for scene in scene_names:
        s, model, traj = demo(scene, args.duration, **options)
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

    def batch_totals(valid, depth, iters, active):  # per step, over the batch
        return valid, depth, jnp.sum(iters, -1), jnp.max(iters, -1), jnp.sum(active, -1)

    # the viewer's envs and the per-step totals come back whole on every process (a
    # batch split over several processes has no process holding all of it)
    whole = NamedSharding(mesh, PartitionSpec())

    @jax.jit
    def chunk(states, left):
        (states, _), (shown, stats) = jax.lax.scan(frame, (states, left), None, length=frames)
        states = jax.lax.with_sharding_constraint(states, parallel.batch_sharding(mesh))
        totals = batch_totals(*jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:]), stats))
        return states, *jax.lax.with_sharding_constraint((shown, totals), whole)

    return chunk


def initial_states(model, batch: int, noise: float, seed: int, rows: slice | None = None):
    """``batch`` States at qpos0 (or only those of ``rows``): env 0 at rest, the others
    with joint velocities drawn from N(0, noise^2) (rad/s, m/s), env i's from its own
    key (``parallel.env_keys``), whatever the number of processes."""
    keys = parallel.env_keys(seed, batch, rows)
    index = np.arange(batch)[rows if rows is not None else slice(None)]
    v = noise * jax.vmap(lambda k: jax.random.normal(k, (model.nv,), model.dtype))(keys)
    v = jnp.where(index[:, None] == 0, 0.0, v)
    return jax.vmap(lambda v: make_state(model, v=v))(v)


def _check_simulate_args(args) -> None:
    """Reject a missing file and numbers out of range, naming the argument."""
    path = args.model
    if not os.path.exists(path):
        raise UsageError(f"model file not found: {path}")
    if not path.lower().endswith(MODEL_SUFFIXES):
        raise UsageError(f"{path}: expected an MJCF (.xml) or URDF (.urdf) file")
    for name in ("duration", "fps"):
        _positive(name, getattr(args, name))
    if args.dt is not None:
        _positive("dt", args.dt)
    _int_range("batch", args.batch, 1)
    if not (args.noise >= 0 and math.isfinite(args.noise)):
        raise UsageError(f"--noise must be >= 0 and finite, got {args.noise:g}")
    _int_range("seed", args.seed, 0, 2**32 - 1)
    _int_range("show", args.show, 1, MAX_SHOW)
    for name, low in (("max_contacts", 0), ("narrow_pairs", 0), ("max_hull_vertices", 4)):
        if getattr(args, name) is not None:
            _int_range(name.replace("_", "-"), getattr(args, name), low)
    if not path.lower().endswith(".urdf") and (args.package_dir or args.balance_inertia or args.floating_base
                                                or args.no_self_collision):
        raise UsageError("--package-dir, --balance-inertia, --floating-base and --no-self-collision "
                         "apply to URDF files only")


def simulate_options(args) -> dict:
    """simulate's ModelBuilder options from its arguments (``--dt``,
    ``--max-contacts``, ``--narrow-pairs``, ``--contact``, ``--set``); the loader
    checks the names against the contact model that runs (the file's unless
    ``--contact``)."""
    return _settings(args, {"timestep": ("--dt", args.dt), "max_contacts": ("--max-contacts", args.max_contacts),
                            "narrow_pairs": ("--narrow-pairs", args.narrow_pairs)}, None)


def load_model(args):
    """simulate's Model from its arguments, without simulating.

    Returns:
      (model, floor height or None if the file had its own floor, dtype).
    """
    _check_simulate_args(args)
    if args.float64:
        jax.config.update("jax_enable_x64", True)
    dtype = jnp.float64 if args.float64 else jnp.float32
    urdf_options = {"package_dirs": args.package_dir, "balance_inertia": args.balance_inertia,
                    "floating_base": args.floating_base, "self_collision": not args.no_self_collision}
    model, floor_z = load_with_floor(args.model, dtype, urdf_options, args.max_hull_vertices,
                                     **simulate_options(args))
    return model, floor_z, dtype


def simulate(args) -> int:
    path = args.model
    _check_simulate_args(args)
    # one of several processes when the distributed environment is set (python -m
    # jaxsim.launch, srun, mpirun): the batch is split over every process's devices,
    # and process 0 alone prints and writes
    several = parallel.initialize()
    writer = jax.process_index() == 0
    if not writer:
        sys.stdout, args.quiet = open(os.devnull, "w"), True
    out = args.out or os.path.splitext(os.path.basename(path))[0] + ".html"
    if os.path.dirname(out) and not os.path.isdir(os.path.dirname(out)):
        raise UsageError(f"--out: directory {os.path.dirname(out)} does not exist")
    viz = _viz() if out != "-" else None
    model, floor_z, dtype = load_model(args)

    dt = float(model.opt.timestep)
    steps = _steps(args.duration, dt)
    # frames every 1/fps s, at most MAX_FRAMES of them
    per_frame = 1.0 / (args.fps * dt) if args.fps * dt > 0 else math.inf
    stride = max(1, math.ceil(steps / MAX_FRAMES), int(round(min(per_frame, steps))))
    nframes = math.ceil(steps / stride)
    per_chunk = max(1, math.ceil(nframes / 50))  # ~50 progress-bar updates
    nchunks = math.ceil(nframes / per_chunk)
    show = np.arange(min(args.show, args.batch) if viz is not None else 0)
    env_bytes = _state_bytes(model)
    if args.batch * env_bytes > (memory := _memory_bytes()):
        raise UsageError(f"--batch {args.batch}: the states alone take {args.batch * env_bytes / 1e9:.3g} GB, more "
                         f"than the {memory / 1e9:.3g} GB here; at most {memory // env_bytes}")
    if nframes * show.size * env_bytes > MAX_STORED_BYTES:
        most = MAX_STORED_BYTES // (nframes * env_bytes)
        raise UsageError(f"--show {show.size}: the viewer's {nframes} frames of {show.size} env(s) take "
                         f"{nframes * show.size * env_bytes / 1e9:.3g} GB; at most {most} env(s) "
                         f"({MAX_STORED_BYTES / 1e9:.1f} GB)" + ("" if most else ", or --out - for no viewer"))
    name = os.path.basename(path)
    # envs split over every device that divides the batch (jaxsim.parallel); with
    # several processes, over all of theirs, each process making its own envs' states
    mesh = parallel.global_mesh(args.batch) if several else parallel.batch_mesh(args.batch)
    rows = parallel.process_rows(args.batch, mesh)
    states = parallel.from_process_rows(initial_states(model, args.batch, args.noise, args.seed, rows), mesh)
    print(f"jaxsim simulate {name}: {model.topo.nbody - 1} bodies, nv = {model.nv}, "
          f"{model.topo.ngeom} geoms, {states.contact.active.shape[-1]} contact slots"
          + (f", max_contacts {int(model.opt.max_contacts)}" if int(model.opt.max_contacts) else "")
          + (f"; no floor in the file: added a plane at z = {floor_z:.3f} m" if floor_z is not None else ""))
    print(f"  {args.batch} env(s) x {steps} steps of {dt:g} s ({steps * dt:g} s), "
          f"{model.opt.integrator}, contact model {contact_label(model)}, "
          f"{jax.devices()[0].platform} x {mesh.devices.size} device(s)"
          + (f" in {jax.process_count()} processes" if several else "") + f", {jnp.dtype(dtype).name}"
          + (f", {envs} envs at a time per device" if (envs := parallel.default_chunk(model))
             and args.batch // mesh.devices.size > envs else ""))

    chunk = _chunk_fn(model, show, stride, per_chunk, mesh)
    t0 = time.perf_counter()
    chunk = chunk.lower(states, jnp.int32(steps)).compile()
    compile_s = time.perf_counter() - t0
    from tqdm.auto import tqdm

    # per-step statistics reduced chunk by chunk: memory does not grow with the steps
    shown, left = [], steps
    depth_max, iters_sum, iters_max, active_sum, counted = 0.0, 0, 0, 0, 0
    t0 = time.perf_counter()
    with tqdm(total=steps, unit="step", desc="  simulating", leave=False, disable=args.quiet) as bar:
        for _ in range(nchunks):
            states, frames, s = chunk(states, jnp.int32(left))
            frames, (valid, depth, iters, iters_top, active) = jax.device_get((frames, s))
            if viz is not None and writer:  # the viewer's frames: kept by the process that writes it
                shown.append(frames)
            if valid.any():
                depth_max = max(depth_max, float(depth[valid].max()))
                iters_sum, iters_max = iters_sum + int(iters[valid].sum()), max(iters_max, int(iters_top[valid].max()))
                active_sum, counted = active_sum + int(active[valid].sum()), counted + int(valid.sum()) * args.batch
            done = min(left, per_chunk * stride)
            left -= done
            bar.update(done)
    jax.block_until_ready(states)
    wall = time.perf_counter() - t0

    overflow, nonfinite = parallel.gather((states.overflow, states.nonfinite))
    print(f"  compile            {compile_s:.1f} s")
    print(f"  run                {wall:.2f} s = {steps * args.batch / wall:,.0f} env-steps/s "
          f"({steps * dt * args.batch / wall:.2f} x real time over all envs)")
    print(f"  max penetration    {1e3 * depth_max:.2f} mm")
    print(f"  contact QP         {iters_sum / max(counted, 1):.1f} iterations per step on average, {iters_max} at "
          f"most; {active_sum / max(counted, 1):.1f} active contacts per env on average")
    print(f"  overflow           {int(overflow.sum())} contact(s) dropped "
          f"({int((overflow > 0).sum())} of {args.batch} envs)")
    print(f"  non-finite         {int(nonfinite.sum())} of {args.batch} envs"
          + (" -- NaN/inf: try a smaller --dt" if nonfinite.any() else ""))

    if viz is not None and writer:
        # chunks hold (frames, shown envs, ...), the last padded past the end: keep nframes
        traj = jax.tree.map(lambda *x: np.swapaxes(np.concatenate(x)[:nframes], 0, 1), *shown)  # (S, F, ...)
        fig = viz.animate(model, traj, envs=list(range(len(show))), contacts=True, forces=True,
                          fps=args.fps, max_frames=MAX_FRAMES,
                          title=f"{name}: {len(show)} of {args.batch} env(s), jaxsim")
        viz.save_html(fig, out)
        print(f"  viewer             {out} ({os.path.getsize(out) / 1e6:.1f} MB, {nframes} frames, "
              f"{len(show)} env(s) side by side)")
    return 1 if nonfinite.any() else 0


# ---------------------------------------------------------------- parser


def _model_options(p) -> None:
    """``--contact`` and ``--set``: the options of the Model simulated."""
    p.add_argument("--contact", choices=sorted(contact_models.MODELS), default=None, metavar="MODEL",
                   help=f"the contact model, one of {', '.join(sorted(contact_models.MODELS))} (default: the "
                        f"file's, else {model_options.default_contact()})")
    p.add_argument("--set", action="append", default=None, metavar="KEY=VALUE",
                   help="a scene-wide option of jaxsim.ModelBuilder or a parameter of the contact model; "
                        "repeatable. Values: numbers, comma-separated vectors (gravity=0,0,-9.81), true/false, "
                        f"names. Scene options: {', '.join(model_options.scene_options())}. Parameters: "
                        + "; ".join(f"{m}: {', '.join(model_options.contact_params(m)) or '-'}"
                                    for m in sorted(contact_models.MODELS)))


def _demo_options(p, default_scene: str) -> None:
    choices = tuple(SCENES) + (("all",) if default_scene == "all" else ())
    p.add_argument("--scene", choices=choices, default=default_scene,
                   help="; ".join(f"{k}: {v}" for k, v in SCENES.items()))
    p.add_argument("--duration", type=float, default=2.0, help="simulated seconds")
    p.add_argument("--dt", type=float, default=None, help="time step, s (default 0.001)")
    p.add_argument("--integrator", choices=("euler", "rk4"), default=None, help="default euler")
    _model_options(p)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="jaxsim", description=__doc__.split("\n\n")[0])
    _demo_options(p, "cube")  # bare `jaxsim`: the cube demo
    sub = p.add_subparsers(dest="command")

    s = sub.add_parser("simulate", help="simulate an MJCF/URDF file and write the 3-D viewer")
    s.add_argument("model", help="MJCF (.xml) or URDF (.urdf) file; a floor is added if it has none")
    s.add_argument("--duration", type=float, default=5.0, help="simulated seconds (default 5)")
    s.add_argument("--dt", type=float, default=None, help="time step, s (default: the file's)")
    s.add_argument("--batch", type=int, default=1, help="number of environments (vmap)")
    s.add_argument("--noise", type=float, default=0.1,
                   help="std of the initial joint velocities of envs 1.. (env 0 starts at rest)")
    s.add_argument("--seed", type=int, default=0, help="random seed of that noise (0 to 2^32 - 1)")
    s.add_argument("--out", default=None,
                   help="viewer file (default: MODEL.html in the current directory; '-': none)")
    s.add_argument("--show", type=int, default=4,
                   help=f"envs shown side by side in the viewer (1 to {MAX_SHOW}; at most --batch)")
    s.add_argument("--fps", type=float, default=30.0,
                   help=f"viewer frames per simulated second (at most {MAX_FRAMES} frames in all)")
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
    _model_options(s)

    d = sub.add_parser("demo", help="simulate the built-in contact scenes")
    _demo_options(d, "all")
    d.add_argument("--out", default=None, help="directory for one viewer file per scene")
    return p


def build_model(argv):
    """The Model that ``jaxsim ARGV`` (``simulate`` or ``demo``: its first scene) would
    simulate, built without simulating.

    Raises:
      UsageError, ModelError: bad arguments, as ``main`` reports them.
    """
    args = parser().parse_args(list(argv))
    if args.command == "simulate":
        return load_model(args)[0]
    scene = next(iter(SCENES)) if args.scene == "all" else args.scene
    return build_scene(scene, **demo_options(args))[0]


def _show_warning(message, category, filename, lineno, file=None, line=None, _default=warnings.showwarning):
    """jaxsim's own warnings (a MuJoCo feature replaced, ...) as one line each."""
    if filename.startswith(os.path.dirname(os.path.abspath(__file__))):
        print(f"jaxsim: warning: {_one_line(message)}", file=sys.stderr if file is None else file)
    else:
        _default(message, category, filename, lineno, file, line)


def main(argv=None) -> int:
    use_fast_cpu_compile()  # before this process's first JAX computation
    argv = sys.argv[1:] if argv is None else list(argv)
    p = parser()
    args = p.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            if args.command == "simulate":
                return simulate(args)
            return run_demo(args)
    except (UsageError, ModelError) as e:
        p.exit(2, f"jaxsim: error: {_one_line(e)}\n")
    except jax.errors.JaxRuntimeError as e:
        if "RESOURCE_EXHAUSTED" not in str(e):
            raise
        hint = "--batch, --max-contacts or --narrow-pairs" if args.command == "simulate" else "--duration"
        p.exit(2, f"jaxsim: error: out of memory ({_one_line(e)[:200]}); try a smaller {hint}\n")
