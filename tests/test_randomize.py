"""``jaxsim.randomize``: draws land in their ranges (log-uniform ones uniform in log),
only the selected entries change, ``in_axes`` batches exactly the randomized leaves and
drives a vmapped step, the Brax-style call returns one model per key, and bad ranges
fail with a one-line ``ValueError``."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim
from jaxsim import Range, scenes


@pytest.fixture(scope="module")
def chain():
    """Three named bodies: a hinge, a slide below it and a free body, one geom each."""
    b = jaxsim.ModelBuilder(timestep=1e-3)
    b.add_body("a", pos=(0, 0, 1), mass=1.0, inertia=(0.01,) * 3)
    b.add_joint("a", "hinge", name="ja", axis=(0, 1, 0), damping=0.1)
    b.add_geom("a", "sphere", (0.05,), name="ga", friction=(0.5, 0.3))
    b.add_body("b", "a", pos=(0, 0, -0.3), mass=2.0, inertia=(0.02,) * 3)
    b.add_joint("b", "slide", name="jb", axis=(0, 0, 1), damping=0.2)
    b.add_geom("b", "sphere", (0.05,), name="gb", friction=(0.5, 0.3))
    b.add_body("c", pos=(1, 0, 1), mass=3.0, inertia=(0.03,) * 3)
    b.add_joint("c", "free", name="jc", damping=0.3)
    b.add_geom("c", "box", (0.1, 0.1, 0.1), name="gc", friction=(0.5, 0.3))
    return b.build(jnp.float64)


def test_draws_land_in_their_ranges(chain):
    ranges = [Range("body_mass", 0.5, 2.0, index=["a", "c"]),
              Range("dof_damping", 1.0, 3.0, mode="absolute"),
              Range("opt.gravity", (-1.0, -1.0, -10.0), (1.0, 1.0, -9.0), mode="absolute"),
              Range("contact_params.contact_relaxation", 0.5, 2.0, dist="loguniform")]
    models, _ = jaxsim.randomize(chain, jax.random.key(0), ranges, num=64)
    mass = np.asarray(models.body_mass)
    assert mass.shape == (64, chain.nbody)
    for i in (chain.body_id("a"), chain.body_id("c")):
        ratio = mass[:, i] / float(chain.body_mass[i])
        assert ratio.min() >= 0.5 and ratio.max() <= 2.0 and ratio.std() > 0.1
    damping = np.asarray(models.dof_damping)
    assert damping.shape == (64, chain.nv) and damping.min() >= 1.0 and damping.max() <= 3.0
    g = np.asarray(models.opt.gravity)
    assert np.all(g >= [-1, -1, -10]) and np.all(g <= [1, 1, -9]) and np.all(g.std(axis=0) > 0.1)
    ratio = np.asarray(models.contact_params.contact_relaxation) / float(chain.contact_params.contact_relaxation)
    assert ratio.min() >= 0.5 and ratio.max() <= 2.0


def test_loguniform_is_uniform_in_log(chain):
    """log10 of draws on [1e-2, 1e2] is uniform on [-2, 2]: mean 0 and half below 0
    (a uniform draw on the same interval has a mean log of about 1.7)."""
    spec = Range("dof_damping", 1e-2, 1e2, mode="absolute", dist="loguniform")
    models, _ = jaxsim.randomize(chain, jax.random.key(1), spec, num=1000)
    logs = np.log10(np.asarray(models.dof_damping)).ravel()  # 8 dofs: 8000 draws
    assert logs.min() >= -2 and logs.max() <= 2
    assert abs(logs.mean()) < 0.05  # its standard error is 4 / sqrt(12 * 8000) = 0.013
    assert abs(np.mean(logs < 0) - 0.5) < 0.02
    assert abs(np.mean(logs < -1) - 0.25) < 0.02


def test_index_by_name_changes_only_the_selection(chain):
    ranges = [Range("body_mass", 10.0, 20.0, mode="absolute", index="b"),
              Range("dof_damping", 5.0, 6.0, mode="absolute", index="jc"),
              Range("geom_friction", 0.9, 1.0, mode="absolute", index=["ga", chain.geom_id("gc")],
                    column=1),
              Range("body_inertia", 2.0, 3.0, index="c", shared=True)]
    models, _ = jaxsim.randomize(chain, jax.random.key(2), ranges, num=8)
    b = chain.body_id("b")
    mass, nominal = np.asarray(models.body_mass), np.asarray(chain.body_mass)
    assert np.all((mass[:, b] >= 10) & (mass[:, b] <= 20))
    np.testing.assert_array_equal(np.delete(mass, b, axis=1), np.delete(nominal, b)[None].repeat(8, 0))
    dofs = np.arange(2, 8)  # ja: dof 0, jb: dof 1, jc (free): dofs 2..7
    damping = np.asarray(models.dof_damping)
    assert np.all((damping[:, dofs] >= 5) & (damping[:, dofs] <= 6))
    np.testing.assert_array_equal(damping[:, :2], np.broadcast_to(chain.dof_damping[:2], (8, 2)))
    friction = np.asarray(models.geom_friction)
    picked = [chain.geom_id("ga"), chain.geom_id("gc")]
    assert np.all(friction[:, picked, 1] >= 0.9)
    nominal = np.asarray(chain.geom_friction)
    np.testing.assert_array_equal(friction[:, :, 0], np.broadcast_to(nominal[:, 0], (8, chain.topo.ngeom)))
    gb = chain.geom_id("gb")
    np.testing.assert_array_equal(friction[:, gb], np.broadcast_to(nominal[gb], (8, 2)))
    # shared: one factor per model for the body's three moments, different across models
    c = chain.body_id("c")
    factor = np.asarray(models.body_inertia)[:, c] / np.asarray(chain.body_inertia)[c]
    np.testing.assert_allclose(factor, factor[:, :1].repeat(3, 1), rtol=1e-12)
    assert factor[:, 0].std() > 0.05


def test_in_axes_drives_a_vmapped_step():
    """With implicit damping the free cube's x velocity after one step in the air is
    v m / (m + dt d): each model of the batch uses its own mass and damping."""
    model = scenes.cube(height=1.0, dtype=jnp.float64)
    ranges = [Range("body_mass", 0.5, 2.0, index="cube"),
              Range("dof_damping", 0.5, 20.0, mode="absolute", index="cube")]
    models, in_axes = jaxsim.randomize(model, jax.random.key(3), ranges, num=4)
    assert (jax.tree_util.tree_structure(in_axes, is_leaf=lambda x: x is None)
            == jax.tree_util.tree_structure(model))
    axes = jax.tree_util.tree_leaves_with_path(in_axes, is_leaf=lambda x: x is None)
    batched = {jax.tree_util.keystr(p) for p, a in axes if a is not None}
    assert batched == {".body_mass", ".dof_damping"}
    assert all(a is None or (type(a) is int and a == 0) for _, a in axes)
    leaves = zip(axes, jax.tree_util.tree_leaves(models), jax.tree_util.tree_leaves(model))
    for (p, a), leaf, nominal in leaves:
        if a is None:
            assert leaf is nominal, jax.tree_util.keystr(p)  # shared, not copied
        else:
            assert leaf.shape == (4,) + nominal.shape
    v0 = jnp.array([1.0, 0, 0, 0, 0, 0])
    states = jax.vmap(functools.partial(jaxsim.make_state, v=v0), in_axes=(in_axes,))(models)
    states = jax.jit(jax.vmap(jaxsim.step, in_axes=(in_axes, 0)))(models, states)
    mass, damping = models.body_mass[:, 1], models.dof_damping[:, 0]
    np.testing.assert_allclose(states.v[:, 0], mass / (mass + model.opt.timestep * damping), rtol=1e-12)
    assert float(jnp.std(states.v[:, 0])) > 1e-3


def test_brax_style_call(chain):
    """Brax binds ``rng`` to a (num_envs, 2) batch of keys and calls ``fn(sys)``."""
    ranges = [Range("body_mass", 0.5, 2.0), Range("geom_friction", 0.5, 1.5, column=0, shared=True)]
    fn = functools.partial(jaxsim.randomize, ranges=ranges)
    keys = jax.random.split(jax.random.PRNGKey(4), 5)
    assert keys.shape == (5, 2)
    models, in_axes = functools.partial(fn, rng=keys)(chain)
    assert models.body_mass.shape == (5, chain.nbody) and in_axes.body_mass == 0
    again, _ = fn(chain, keys)
    jitted, _ = jax.jit(fn)(chain, keys)
    other, _ = fn(chain, jax.random.split(jax.random.PRNGKey(5), 5))
    for m in (again, jitted):
        np.testing.assert_array_equal(m.body_mass, models.body_mass)
        np.testing.assert_array_equal(m.geom_friction, models.geom_friction)
    assert not np.allclose(other.body_mass, models.body_mass)
    assert len(np.unique(np.asarray(models.body_mass[:, 1]))) == 5
    one, _ = fn(chain, jax.random.key(6), num=3)  # one key split into num models
    one_again, _ = fn(chain, jax.random.key(6), num=3)
    np.testing.assert_array_equal(one.body_mass, one_again.body_mass)


@pytest.mark.parametrize("make, message", [
    (lambda: Range("body_mas", 0.5, 2.0), r"unknown field 'body_mas'; randomizable fields: \[.*'body_mass'"),
    (lambda: Range("body_mass", 0.5, 2.0, index="torso"), r"no body named 'torso'; known: \['world', 'a'"),
    (lambda: Range("dof_damping", 0.5, 2.0, index="a"), r"no joint named 'a'"),
    (lambda: Range("body_mass", 2.0, 0.5), r"low > high"),
    (lambda: Range("body_mass", 0.0, 2.0, dist="loguniform"), r"loguniform needs positive bounds"),
    (lambda: Range("body_mass", 0.5, 2.0, mode="offset"), r"mode must be one of"),
    (lambda: Range("mesh_vert", 0.5, 2.0), r"'mesh_vert' is structural"),
    (lambda: Range("mesh_face", 0.5, 2.0), r"'mesh_face' is structural"),
    (lambda: Range("hfield_data", 0.5, 2.0), r"'hfield_data' is structural"),
    (lambda: Range("topo", 0.5, 2.0), r"'topo' is structural"),
    (lambda: Range("opt.integrator", 0.5, 2.0), r"'opt.integrator' is structural"),
    (lambda: Range("body_mass", 0.5, 2.0, index=7), r"index 7 out of range for size 4"),
    (lambda: Range("body_mass", 0.5, 2.0, column=0), r"has no columns"),
    (lambda: Range("opt.timestep", 0.5, 2.0, index=0), r"is a scalar"),
    (lambda: Range("pair_friction", 0.5, 2.0, index="ga"), r"has no element names"),
    (lambda: Range("opt.gravity", (1, 1), (2, 2), mode="absolute"), r"do not broadcast"),
])
def test_bad_ranges_raise(chain, make, message):
    with pytest.raises(ValueError, match=message):
        jaxsim.randomize(chain, jax.random.key(0), make(), num=2)


def test_bad_keys_raise(chain):
    spec = Range("body_mass", 0.5, 2.0)
    with pytest.raises(ValueError, match="num must be a batch size"):
        jaxsim.randomize(chain, jax.random.key(0), spec)
    with pytest.raises(ValueError, match="num = 3 but rng holds 2 keys"):
        jaxsim.randomize(chain, jax.random.split(jax.random.PRNGKey(0), 2), spec, num=3)
    models, _ = jaxsim.randomize(chain, jax.random.key(0), spec, num=2)
    with pytest.raises(ValueError, match="must be a single model"):
        jaxsim.randomize(models, jax.random.key(0), spec, num=2)


def test_randomized_cubes_slide_the_coulomb_distance():
    """15 cubes with randomized friction and mass, sliding from 1 m/s, stop after
    ``v0^2 / (2 mu_k g)`` within 1 %, whatever their mass (the pair's friction is
    derived in the step from the randomized geoms). Semi-implicit Euler stops
    ``v0 dt / 2`` short of it (0.5 mm at dt = 1 ms, 0.7 % of the shortest slide); its
    own discrete distance under a constant deceleration ``mu_k g``, which depends on
    ``mu_k`` alone, matches each cube within 0.2 %, so no mass moves it further."""
    model = scenes.cube(height=0.0499, timestep=1e-3, dtype=jnp.float64)
    ranges = [Range("geom_friction", 1.0, 2.33, shared=True),  # mu_k 0.3 .. 0.7, mu_s / mu_k kept
              Range("body_mass", 0.5, 2.0, index="cube")]
    # 15: under compaction.MIN_BATCH the vmapped step's solver loop compiles as one stage
    models, in_axes = jaxsim.randomize(model, jax.random.key(1), ranges, num=15)
    v0, dt, g = 1.0, 1e-3, 9.81

    def slide(m):
        s = jaxsim.make_state(m, v=jnp.array([v0, 0, 0, 0, 0, 0]))
        return jax.lax.fori_loop(0, 360, lambda _, s: jaxsim.step(m, s), s).q[0]

    distance = np.asarray(jax.jit(jax.vmap(slide, in_axes=(in_axes,)))(models))
    mu_k = np.asarray(models.geom_friction[:, 1, 1])
    mass = np.asarray(models.body_mass[:, 1])
    assert np.ptp(mu_k) > 0.3 and np.ptp(mass) > 0.5
    error = distance / (v0**2 / (2 * mu_k * g)) - 1
    assert np.max(np.abs(error)) < 0.01, (error.min(), error.max())
    # n full steps of v_k = v0 - k mu_k g dt, then the step that would reverse it stops it
    n = np.floor(v0 / (mu_k * g * dt))
    discrete = dt * (n * v0 - mu_k * g * dt * n * (n + 1) / 2)
    np.testing.assert_allclose(distance, discrete, rtol=2e-3)
