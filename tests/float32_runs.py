"""Float32 runs for the tests, each in a fresh process: the suite's conftest turns on
float64 for the reference tests, and switching JAX back to 32 bits inside one process
(``jax.enable_x64(False)``) leaves int32 constants in JAX's caches that break the next
float64 test there. The tests call ``run(kind, arg)``; this file prints one JSON line.

    python tests/float32_runs.py random mixed
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

TOPOLOGIES = {  # one topology (one compile) per test; together every pair kind
    "mixed": ("box", "capsule", "hull", "sphere"),
    "polytopes": ("box", "box", "hull", "hull"),
    "round": ("capsule", "capsule", "sphere", "sphere"),
}
# the other contact models' runs: their solvers, not the collision code, are under test,
# and stacked boxes (face contacts of four points each) load a solver most; leaving the
# hull and capsule pairs out also halves the compile of each run
SOLVER_TOPOLOGY = ("box", "box", "box", "sphere")
# scenes per run: the suite's share (experiments/robustness.py runs 1,000 scenes)
SCENES = {"mixed": 8, "polytopes": 6, "round": 10}  # 24 (polytope collision costs most)
OTHER_MODEL_SCENES = 4  # "solver:rigid", "solver:penalty": the other contact models, fewer scenes
VOLUME_SCENES = 1  # "polytopes:volume" (every polyhedral pair kind): hull-hull volumes cost ~10 ms a step on CPU
VOLUME_SEED, VOLUME_STEPS = 1001, 400  # a scene drawn with a 5 ms step: 400 steps are 2 s of landing and tumbling
EXACT_SCENES = 3  # "solver:cone/exact": exact Coulomb's sweeps and Newton steps cost ~4x the others
STEPS = 1000  # 0.5-5 s: every scene lands, tumbles and mostly comes to rest
EVERY = 2  # health checked every 2 steps


def run(kind: str, arg: str = "") -> dict:
    """Run ``kind`` in a float32 process and return its results."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    if kind == "random":
        # batches of scenes for thousands of steps: XLA's optimizing level, not the
        # suite's fast-compiling one (conftest), pays off here (the single-scene runs
        # are faster at the suite's level)
        flags = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith(
            ("--xla_backend_optimization_level", "--xla_llvm_disable_expensive_passes"))]
        env["XLA_FLAGS"] = " ".join(flags + ["--xla_backend_optimization_level=1"])
    out = subprocess.run([sys.executable, os.path.abspath(__file__), kind, arg], env=env,
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"float32 run {kind} {arg} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def random_scenes(arg: str) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxsim
    from jaxsim import diagnostics, scenes
    from jaxsim.types import batch_models

    name, _, contact = arg.partition(":")
    names = sorted(TOPOLOGIES)
    shapes = SOLVER_TOPOLOGY if name == "solver" else TOPOLOGIES[name]
    count = {"volume": VOLUME_SCENES, "cone/exact": EXACT_SCENES}.get(contact, OTHER_MODEL_SCENES) if contact \
        else SCENES[name]
    if contact == "volume":
        seeds, steps = [VOLUME_SEED], VOLUME_STEPS
    else:  # each topology its own block of seeds, "solver" the block after the named ones
        block = names.index(name) if name in names else len(names)
        seeds, steps = [1000 * block + i for i in range(count)], STEPS
    contact, _, friction_model = contact.partition("/")  # "cone/nakaoka": a cone friction model
    options = {"contact": contact} if contact else {}
    if friction_model:
        options["solver"] = friction_model
    built = [scenes.random_drop(shapes, s, dtype=jnp.float32, **options) for s in seeds]
    models = batch_models([m for m, _, _ in built])
    states = jax.vmap(lambda m, q, v: jaxsim.make_state(m, q=q, v=v))(
        models, jnp.stack([q for _, q, _ in built]), jnp.stack([v for _, _, v in built]))
    final, h = jax.jit(jax.vmap(lambda m, s: diagnostics.monitor(m, s, steps, every=EVERY)))(models, states)
    bound = diagnostics.energy_bound(models, h)
    masses = np.asarray(models.body_mass)[:, 1:]
    return dict(seeds=seeds, dtype=str(final.q.dtype), mass_ratio=float(masses.max() / masses.min()),
                nonfinite=np.asarray(h.nonfinite).tolist(), energy_rise=np.asarray(h.energy_rise).tolist(),
                energy_bound=np.asarray(bound).tolist(), depth_max=np.asarray(h.depth_max).max(-1).tolist(),
                deep_time=np.asarray(h.deep_time).max(-1).tolist(),
                slot_ratio=np.asarray(h.slot_depth_ratio).max(-1).tolist())


def overlapping_starts(_: str) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxsim
    from jaxsim import diagnostics

    b = jaxsim.ModelBuilder(timestep=2e-3)
    b.add_geom("world", "plane", (0, 0, 0), name="floor")
    b.add_body("sunk", "world", pos=(0, 0, 0.0), mass=1.0, inertia=(1e-3, 1e-3, 1e-3))  # half in the floor
    b.add_joint("sunk", "free")
    b.add_geom("sunk", "box", (0.05, 0.05, 0.05))
    b.add_body("low", "world", pos=(0.5, 0, 0.05), mass=2.0, inertia=(2e-3, 2e-3, 2e-3))
    b.add_joint("low", "free")
    b.add_geom("low", "box", (0.05, 0.05, 0.05))
    b.add_body("high", "world", pos=(0.5, 0, 0.1), mass=0.5, inertia=(5e-4, 5e-4, 5e-4))  # half in "low"
    b.add_joint("high", "free")
    b.add_geom("high", "sphere", (0.05,))
    model = b.build(jnp.float32)
    steps = 400
    _, traj = jax.jit(jaxsim.rollout)(model, jaxsim.make_state(model), jnp.zeros((steps, 0)))
    depth = jax.jit(jax.vmap(lambda q: diagnostics.penetration(model, jaxsim.forward_kinematics(model, q))))(traj.q)
    speed = np.linalg.norm(np.asarray(traj.v).reshape(steps, 3, 6)[..., :3], axis=-1)
    return dict(dtype=str(traj.q.dtype), cap=float(model.contact_params.max_depenetration_speed),
                depth_first=float(np.asarray(depth)[0].max()), depth_last=float(np.asarray(depth)[-1].max()),
                speed_max=float(speed.max()), nonfinite=bool(traj.nonfinite[-1]))


def spinning_body(_: str) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxsim
    from jaxsim import diagnostics

    out = {}
    for implicit in (True, False):
        b = jaxsim.ModelBuilder(timestep=2e-3, gravity=(0, 0, 0), implicit_gyroscopic=implicit)
        b.add_body("c", "world", pos=(0, 0, 1), mass=0.1, inertia=(3.9e-5, 3.9e-5, 2.0e-5))
        b.add_joint("c", "free")
        b.add_geom("c", "capsule", (0.021, 0.014))
        model = b.build(jnp.float32)
        state = jaxsim.make_state(model, v=jnp.asarray([0, 0, 0, -31.0, -186.0, 154.0]))
        _, traj = jax.jit(jaxsim.rollout)(model, state, jnp.zeros((2000, 0)))
        e = np.asarray(jax.vmap(lambda q, v: diagnostics.total_energy(model, state.replace(q=q, v=v)))(traj.q, traj.v))
        key = "implicit" if implicit else "explicit"
        out[key] = dict(e0=float(diagnostics.total_energy(model, state)), finite=bool(np.isfinite(e).all()),
                        e_max=float(np.nanmax(np.where(np.isfinite(e), e, np.inf))))
    return out


def humanoid_landing(_: str) -> dict:
    import gymnasium
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxsim
    from jaxsim.contact.space import slot_info
    from jaxsim.dynamics import energy
    from jaxsim.io import load_mjcf

    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", "humanoid.xml")
    model = load_mjcf(path, dtype=jnp.float32, max_contacts=16)
    roll, ctrls = jax.jit(jaxsim.rollout), jnp.zeros((300, model.nu))
    _, traj = roll(model, jaxsim.make_state(model), ctrls)
    total = lambda q, v: sum(energy(model, jaxsim.forward_kinematics(model, q), v))  # noqa: E731
    e = jax.jit(jax.vmap(total))(traj.q, traj.v)
    e0 = total(model.qpos0, jnp.zeros(model.nv, model.dtype))
    floor = (np.asarray(model.topo.geom_body) == 0)[slot_info(model.topo).geom1]
    active = np.asarray(traj.contact.active)
    depth = np.where(active, np.asarray(traj.contact.depth), 0.0)
    landing = dict(dtype=str(traj.q.dtype), floor_contact=bool((active & floor).any()),
                   self_contact=bool((active & ~floor).any()), depth_max=float(depth.max()),
                   vz_max=float(np.max(np.asarray(traj.v[:, 2]))), z_max=float(np.max(np.asarray(traj.q[:, 2]))),
                   energy_max=float(np.max(np.asarray(e))), energy0=float(e0), nonfinite=bool(traj.nonfinite[-1]))

    # lying on its back, 12 cm up, for 1.8 s (two runs of the same compiled rollout):
    # the floor's force on the robot over the last 0.3 s
    q0 = model.qpos0.at[2].set(0.12).at[3:7].set(jnp.asarray([np.cos(np.pi / 4), 0, np.sin(np.pi / 4), 0]))
    state = jaxsim.make_state(model, q=q0)
    for _ in range(2):
        state, traj = roll(model, state, ctrls)
    world_on_robot = jax.jit(jax.vmap(lambda s: jnp.sum(jnp.where(
        s.contact.active[:, None], jaxsim.contact_forces(model, s).force2_w, 0.0), 0)))(traj)
    lying = dict(force_z=float(np.mean(np.asarray(world_on_robot)[-100:, 2])),
                 weight=float(jnp.sum(model.body_mass) * jnp.linalg.norm(model.opt.gravity)), nonfinite=bool(state.nonfinite))
    return dict(landing=landing, lying=lying)


if __name__ == "__main__":
    import gc

    import jax
    gc.set_threshold(50_000, 20, 100)  # as the suite's workers (conftest)
    jax.config.update("jax_enable_x64", False)
    kinds = dict(random=random_scenes, overlap=overlapping_starts, spin=spinning_body, humanoid=humanoid_landing)
    print(json.dumps(kinds[sys.argv[1]](sys.argv[2] if len(sys.argv) > 2 else "")))
