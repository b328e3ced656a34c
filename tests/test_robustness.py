"""Contact that never explodes: randomized scenes in float32 (as users run them), and
bodies started overlapping, checked by ``jaxsim.diagnostics`` (penetration from the
shapes' support functions, independent of the collision code).

Every random scene (``scenes.random_drop``: 4 free boxes, spheres, capsules or
convex hulls, masses 0.01-30 kg with up to 1000:1 in a scene, extents 1-15 cm, dt
0.5-5 ms, ~2 m/s and ~2 rad/s initial velocities, stacked with gaps above a floor)
must keep every value finite, never hold energy above its start by more than 1 % plus
the work bound of the capped depenetration (``energy_bound``), never keep a pair more
than 1 cm deep for longer than 20 ms, and never report a contact slot deeper than its
shapes' size. ``experiments/robustness.py`` runs the same checks on 1,000 scenes of
1-4 bodies for 10,000 steps.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim
from jaxsim import diagnostics, scenes
from jaxsim.types import batch_models

# one topology per test (one compile each), the scenes of a topology in one vmap;
# together they cover every pair kind of boxes, spheres, capsules and hulls
TOPOLOGIES = {
    "mixed": ("box", "capsule", "hull", "sphere"),
    "polytopes": ("box", "box", "hull", "hull"),
    "round": ("capsule", "capsule", "sphere", "sphere"),
}
# 100 scenes in all (fewer polytope ones: their collision costs the most)
SCENES = {"mixed": 40, "polytopes": 20, "round": 40}
STEPS = 1000  # 0.5-5 s: every scene lands, tumbles and mostly comes to rest
EVERY = 2  # health checked every 2 steps


def energy_bound(models, health) -> np.ndarray:
    """Allowed energy rise (J) per scene: 1 % of the start energy, plus the kinetic
    energy the capped depenetration can give each body once (1/2 m cap^2)."""
    cap = np.asarray(models.opt.max_depenetration_speed)
    return 0.01 * np.abs(np.asarray(health.energy0)) + 0.5 * np.asarray(models.body_mass).sum(-1) * cap ** 2


def run_batch(built, steps, every=EVERY):
    models = batch_models([m for m, _, _ in built])
    states = jax.vmap(lambda m, q, v: jaxsim.make_state(m, q=q, v=v))(
        models, jnp.stack([q for _, q, _ in built]), jnp.stack([v for _, _, v in built]))
    fn = jax.jit(jax.vmap(lambda m, s: diagnostics.monitor(m, s, steps, every=every)))
    final, health = fn(models, states)
    return models, final, jax.tree.map(np.asarray, health)


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_random_scenes_float32(name):
    shapes = TOPOLOGIES[name]
    seeds = [1000 * sorted(TOPOLOGIES).index(name) + i for i in range(SCENES[name])]
    with jax.enable_x64(False):
        built = [scenes.random_drop(shapes, s, dtype=jnp.float32) for s in seeds]
        masses = np.asarray([np.asarray(m.body_mass[1:]) for m, _, _ in built])
        assert masses.max() / masses.min() > 100  # heavy on light is in the sample
        models, final, h = run_batch(built, STEPS)
    assert final.q.dtype == jnp.float32
    bound = energy_bound(models, h)
    report = {s: dict(energy=float(h.energy_rise[k]), bound=float(bound[k]), depth=float(h.depth_max[k].max()),
                      deep_time=float(h.deep_time[k].max()), slot=float(h.slot_depth_ratio[k].max()))
              for k, s in enumerate(seeds)}
    assert not h.nonfinite.any(), report
    assert np.all(h.energy_rise <= bound), report
    assert np.all(h.deep_time <= 0.02 + 1e-6), report
    assert np.all(h.slot_depth_ratio <= 1.0), report


def test_overlapping_starts_separate_at_the_capped_speed():
    """Bodies started half inside the floor or half inside each other are pushed apart
    at no more than ``max_depenetration_speed`` (0.5 m/s): the momentum-level correction
    alone would push a 5 cm penetration out at 5 cm / dt."""
    b = jaxsim.ModelBuilder(timestep=2e-3)
    b.add_geom("world", "plane", (0, 0, 0), name="floor")
    b.add_body("sunk", "world", pos=(0, 0, 0.0), mass=1.0, inertia=(1e-3, 1e-3, 1e-3))
    b.add_joint("sunk", "free")
    b.add_geom("sunk", "box", (0.05, 0.05, 0.05))
    b.add_body("low", "world", pos=(0.5, 0, 0.05), mass=2.0, inertia=(2e-3, 2e-3, 2e-3))
    b.add_joint("low", "free")
    b.add_geom("low", "box", (0.05, 0.05, 0.05))
    b.add_body("high", "world", pos=(0.5, 0, 0.1), mass=0.5, inertia=(5e-4, 5e-4, 5e-4))
    b.add_joint("high", "free")
    b.add_geom("high", "sphere", (0.05,))
    with jax.enable_x64(False):
        model = b.build(jnp.float32)
        cap = float(model.opt.max_depenetration_speed)
        _, traj = jax.jit(jaxsim.rollout)(model, jaxsim.make_state(model), jnp.zeros((400, 0)))
        depth = jax.jit(jax.vmap(lambda q: diagnostics.penetration(model, jaxsim.forward_kinematics(model, q))))(traj.q)
    v = np.asarray(traj.v).reshape(400, 3, 6)
    speed = np.linalg.norm(v[..., :3], axis=-1)
    assert float(np.asarray(depth)[0].max()) > 0.04  # they did start deep
    assert speed.max() <= cap + 0.05, speed.max(0)
    assert float(np.asarray(depth)[-1].max()) < 1e-3  # apart after 0.8 s
    assert not bool(traj.nonfinite[-1])


def test_spinning_body_keeps_its_energy_bounded():
    """A 0.1 kg capsule tumbling at 240 rad/s (a light body knocked about in a random
    scene reached this) at dt = 2 ms, no gravity, no contact: with the gyroscopic torque
    taken at the step's end (the default) its energy never rises and it stays finite;
    taken explicitly, as MuJoCo's Euler does, the energy grows until it is NaN."""
    def spin(implicit):
        b = jaxsim.ModelBuilder(timestep=2e-3, gravity=(0, 0, 0), implicit_gyroscopic=implicit)
        b.add_body("c", "world", pos=(0, 0, 1), mass=0.1, inertia=(3.9e-5, 3.9e-5, 2.0e-5))
        b.add_joint("c", "free")
        b.add_geom("c", "capsule", (0.021, 0.014))
        model = b.build(jnp.float32)
        state = jaxsim.make_state(model, v=jnp.asarray([0, 0, 0, -31.0, -186.0, 154.0]))
        _, traj = jax.jit(jaxsim.rollout)(model, state, jnp.zeros((2000, 0)))
        e = jax.vmap(lambda q, v: diagnostics.total_energy(model, state.replace(q=q, v=v)))(traj.q, traj.v)
        return float(diagnostics.total_energy(model, state)), np.asarray(e)

    with jax.enable_x64(False):
        e0, e = spin(True)
        e0_explicit, e_explicit = spin(False)
    assert np.all(np.isfinite(e)) and e.max() <= e0 * (1 + 1e-5)
    assert not np.all(np.isfinite(e_explicit) & (e_explicit <= 1.5 * e0_explicit))
