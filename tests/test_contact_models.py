"""The constraint stage's interface: a contract every registered contact model meets
(jit, vmap over states and models, float64 and, for the built-in models, float32, a
resting and a sliding box, the contact-force query; the gradients of every built-in
model against finite differences are in ``test_parameter_gradients.py``), a model
registered here without touching ``step.py``, per-pair contact modes, penalty
contacts and the force query on an incline and a humanoid."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim
from conftest import rollout_in_chunks
from jaxsim import ModelBuilder, ModelError, contact
from jaxsim.contact import ContactModel, Solution, param, register
from jaxsim.solver import qp
from jaxsim.types import ContactMode, SolverStats, pytree_dataclass

G = 9.81
MU = 0.5
INCLINE = np.deg2rad(20.0)  # tan 20 deg = 0.36 < mu


# ------------------------------------------------------------ a model registered by a test


@pytree_dataclass
class FrictionlessParams:
    push_rate: jax.Array = param(100.0, "1/s, penetration correction rate")


def _frictionless_solve(model, problem, carry):
    """Normal rows, generic rows and (R = 6) the two tipping rows of each slot, rigid,
    as one QP over half-lines (normals, rows) and free rows (tipping)."""
    m, nr = problem.contacts.active.shape[0], problem.rows.dist.shape[0]
    R = (problem.space.b.shape[0] - nr) // max(m, 1)
    dt, space = model.opt.timestep, problem.space
    tip = np.arange(0, R * m, R)[:, None] + np.arange(4, R)[None]  # (m, 0) or (m, 2)
    sel = np.concatenate([np.arange(0, R * m, R), R * m + np.arange(nr), tip.reshape(-1)])
    depth, dist = problem.contacts.depth, problem.rows.dist
    rate = jnp.minimum(model.contact_params.push_rate, 1 / dt)
    # v_n+ >= rate * depth inside, >= -gap / dt apart; a row: v+ >= -dist / dt before its
    # limit, >= -rate * dist past it; tipping rows: no relative rotation
    push = jnp.concatenate([jnp.where(depth >= 0, rate * depth, depth / dt),
                            -jnp.where(dist >= 0, dist / dt, rate * dist), jnp.zeros(tip.size, dist.dtype)])
    on = jnp.concatenate([problem.contacts.active, problem.rows.active,
                          jnp.repeat(problem.contacts.active, tip.shape[1])])
    g = jnp.where(on, space.b[sel] - push, 0.0)
    lower = jnp.concatenate([jnp.zeros(m + nr, g.dtype), jnp.full(tip.size, -jnp.inf, g.dtype)])
    x, st = qp.solve(qp.QP(space.A[sel][:, sel], g, lower, jnp.full_like(g, jnp.inf),
                           jnp.zeros((0,), g.dtype)), jnp.zeros_like(g), model.opt.solver_tol,
                     max_iter=model.opt.solver_iterations)
    x = jnp.where(on, x, 0.0)
    out = jnp.zeros(R * m + nr, g.dtype).at[sel].set(x)
    return Solution(out, carry, SolverStats(st.iterations, st.residual))


# one on contact-polygon corners, one on intersection volumes (a 6-row wrench per pair)
register(ContactModel("test_frictionless", FrictionlessParams, lambda model, n: (), _frictionless_solve,
                      "registered by tests/test_contact_models.py", collision="polygon"))
register(ContactModel("test_volume", FrictionlessParams, lambda model, n: (), _frictionless_solve,
                      "registered by tests/test_contact_models.py", collision="volume", slot_rows=6))
MODELS = sorted(contact.MODELS)
FRICTIONLESS = {"test_frictionless", "test_volume"}


def cube_model(contact_model, dtype, mass=1.0, **options):
    b = ModelBuilder(timestep=2e-3, contact=contact_model, **options)
    b.add_geom("world", "plane", (5, 5, 0.1), friction=(MU, MU), name="floor")
    b.add_body("cube", pos=(0, 0, 0.05), mass=mass, inertia=(mass / 600,) * 3)
    b.add_joint("cube", "free")
    b.add_geom("cube", "box", (0.05, 0.05, 0.05), friction=(MU, MU), name="box")
    return b.build(dtype)


def _envs(contact_model, dtype):
    """Three envs, one vmap over models and states: (flat, at rest), (flat, sliding at
    1 m/s), (on a 20 degree incline, at rest); the last two of mass 2 kg."""
    flat, heavy = cube_model(contact_model, dtype), cube_model(contact_model, dtype, mass=2.0)
    tilt = heavy.replace(opt=heavy.opt.replace(gravity=jnp.asarray(
        [-G * np.sin(INCLINE), 0.0, -G * np.cos(INCLINE)], dtype)))
    models = jaxsim.batch_models([flat, heavy, tilt])
    v = jnp.zeros((3, 6), dtype).at[1, 0].set(1.0)
    states = jax.vmap(lambda m, v: jaxsim.make_state(m, v=v))(models, v)
    return models, states


STEPS = 400  # 0.8 s


@pytest.fixture(scope="module", params=MODELS)
def contract_run(request):
    name = request.param
    out = {}
    # float32 for the built-in models (the test-registered ones are about the interface)
    for dtype in (jnp.float64,) if name in FRICTIONLESS else (jnp.float64, jnp.float32):
        models, states = _envs(name, dtype)
        run = jax.jit(jax.vmap(lambda m, s: jaxsim.rollout(m, s, jnp.zeros((STEPS, 0), dtype))[0]))
        final = run(models, states)
        wrench = jax.jit(jax.vmap(lambda m, s: jaxsim.body_contact_wrench(m, s, "cube")))(models, final)
        out[dtype] = (models, final, wrench)
    return name, out


def test_contract_rest_slide_and_force_query(contract_run):
    name, out = contract_run
    models, final, (force, torque) = out[jnp.float64]
    q, v = np.asarray(final.q), np.asarray(final.v)
    assert not np.any(np.asarray(final.nonfinite))
    mass = np.asarray(models.body_mass)[:, 1]
    gravity = np.asarray(models.opt.gravity)
    # at rest: on the floor (penalty: sunk m g / (4 k), 2.5 micrometres), no drift
    assert abs(q[0, 2] - 0.05) < 1e-4 and np.abs(q[0, :2]).max() < 1e-5 and np.abs(v[0]).max() < 1e-4
    np.testing.assert_allclose(force[0], -mass[0] * gravity[0], atol=5e-3 * mass[0] * G)
    assert np.abs(torque[0]).max() < 1e-6
    if name in FRICTIONLESS:  # keeps sliding at 1 m/s; slides down the incline at g sin
        assert abs(v[1, 0] - 1.0) < 1e-3
        t = STEPS * 2e-3
        np.testing.assert_allclose(-q[2, 0], 0.5 * G * np.sin(INCLINE) * t ** 2, rtol=0.02)
    else:  # stops after v^2 / (2 mu g) = 0.102 m; holds on the incline
        assert abs(v[1, 0]) < 1e-3
        np.testing.assert_allclose(q[1, 0], 1.0 / (2 * MU * G), rtol=0.1)
        if name == "penalty":  # regularized friction: steady creep at v_s tan / mu (7.3 mm/s)
            np.testing.assert_allclose(-v[2, 0], 0.01 * np.tan(INCLINE) / MU, rtol=0.02)
        else:
            assert np.abs(v[2]).max() < 1e-3
        np.testing.assert_allclose(force[2], -mass[2] * gravity[2], atol=5e-3 * mass[2] * G)
    if name in FRICTIONLESS:
        return
    # float32 runs the same physics
    models32, final32, (force32, _) = out[jnp.float32]
    assert final32.q.dtype == jnp.float32 and not np.any(np.asarray(final32.nonfinite))
    np.testing.assert_allclose(np.asarray(final32.q)[:, :3], q[:, :3], atol=2e-3)
    np.testing.assert_allclose(np.asarray(force32)[0], np.asarray(force)[0], rtol=0.01, atol=1e-3)


# ---------------------------------------------------------------------------- modes


def two_boxes(mode):
    b = ModelBuilder(timestep=2e-3)
    b.add_geom("world", "plane", (5, 5, 0.1))
    for name, z in (("low", 0.06), ("high", 0.2)):
        b.add_body(name, pos=(0.01, 0, z), mass=1.0, inertia=(1 / 600,) * 3)
        b.add_joint(name, "free")
        b.add_geom(name, "box", (0.05, 0.05, 0.05))
    if mode is not None:
        b.set_contact_mode(mode, "low", "high")
    return b.build(jnp.float64)


@pytest.mark.parametrize("mode", ["none", "penalty", "constraint"])
def test_modes_pass_through_or_stack(mode):
    model = two_boxes(mode)
    floor_pairs = [i for i, g1 in enumerate(model.topo.pair_geom1) if g1 == 0]
    box_pair = [i for i in range(len(model.topo.pair_mode)) if i not in floor_pairs]
    assert model.topo.pair_mode[box_pair[0]] == {"none": 0, "constraint": 1, "penalty": 2}[mode]
    assert all(model.topo.pair_mode[i] == ContactMode.CONSTRAINT for i in floor_pairs)
    final, _ = rollout_in_chunks(model, jaxsim.make_state(model), jnp.zeros((750, 0)))
    z_low, z_high = float(final.q[2]), float(final.q[9])
    assert abs(z_low - 0.05) < 1e-3 and not bool(final.nonfinite)
    if mode == "none":  # the upper box fell through the lower one onto the floor
        assert abs(z_high - 0.05) < 1e-3
    else:
        assert abs(z_high - 0.15) < 2e-3


def test_penalty_cube_rests_at_its_spring_deflection():
    """Each of the 4 corners of a 1 kg cube carries m g / 4 on a k = 1e6 N/m spring:
    it sinks m g / (4 k) (within 2 %), and does not drift over 5 s."""
    k = 2e5
    b = ModelBuilder(timestep=2e-3, contact_mode="penalty", penalty_stiffness=k)
    b.add_geom("world", "plane", (5, 5, 0.1))
    b.add_body("cube", pos=(0, 0, 0.05), mass=1.0, inertia=(1 / 600,) * 3)
    b.add_joint("cube", "free")
    b.add_geom("cube", "box", (0.05, 0.05, 0.05))
    model = b.build(jnp.float64)
    assert set(model.topo.pair_mode) == {ContactMode.PENALTY}
    final, traj = rollout_in_chunks(model, jaxsim.make_state(model), jnp.zeros((2500, 0)))
    active = np.asarray(final.contact.active)
    assert active.sum() == 4
    np.testing.assert_allclose(np.asarray(final.contact.depth)[active], G / (4 * k), rtol=0.02)
    late = np.asarray(traj.q[1250:])
    assert np.ptp(late[:, :3], 0).max() < 1e-7 and np.abs(late[:, :2]).max() < 1e-7


# ------------------------------------------------------------------- force query, grad


@pytest.mark.benchmark  # the default suite: test_parameter_gradients.py's loss holds the contact force
def test_gradient_of_contact_wrench_with_respect_to_mass():
    """d F_z / d m of a cube resting on the floor (relaxed model, float64): the
    implicit QP gradient against a central finite difference (both near g)."""
    base = cube_model("relaxed", jnp.float64)

    def fz(mass):
        model = base.replace(body_mass=base.body_mass.at[1].set(mass),
                             body_inertia=base.body_inertia.at[1].set(mass / 600))
        final, _ = jaxsim.rollout(model, jaxsim.make_state(model), jnp.zeros((20, 0)))
        return jaxsim.body_contact_wrench(model, final, "cube")[0][2]

    f = jax.jit(jax.value_and_grad(fz))
    (_, g), h = f(1.0), 1e-5
    fd = (f(1.0 + h)[0] - f(1.0 - h)[0]) / (2 * h)
    np.testing.assert_allclose(float(g), float(fd), rtol=1e-5)
    np.testing.assert_allclose(float(g), G, rtol=0.01)


# -------------------------------------------------------------- boundary: builder, MJCF


def test_builder_rejects_bad_contact_options():
    with pytest.raises(ModelError, match=r"'penalty' has no parameter.*contact_rate"):
        ModelBuilder(contact="penalty", contact_rate=100.0)
    with pytest.raises(ModelError, match=r"contact_relaxation must be >= 0"):
        ModelBuilder(contact_relaxation=-1.0)
    with pytest.raises(ModelError, match=r"contact='none' is gone"):
        ModelBuilder(contact="none")
    with pytest.raises(ModelError, match=r"contact must name a contact model.*'lcp'"):
        ModelBuilder(contact="lcp")
    with pytest.raises(ModelError, match=r"set_contact_mode: contact mode must be one of"):
        ModelBuilder().set_contact_mode("soft")
    b = ModelBuilder()
    b.add_body("a")
    b.add_joint("a", "free")
    b.set_contact_mode("none", "ghost")
    with pytest.raises(ModelError, match=r"unknown body 'ghost'"):
        b.build()
    assert jaxsim.make_state(cube_model("relaxed", jnp.float64, constraint=False)).contact.active.shape == (0,)


def test_mjcf_pairs_excludes_and_mode_texts():
    from jaxsim.io import load_mjcf

    xml = """<mujoco><custom>
      <text name="jaxsim:contact_mode:a" data="penalty"/>
      <text name="jaxsim:contact_mode:a:b" data="none"/></custom>
      <worldbody><geom name="floor" type="plane" size="1 1 .1"/>
        <body name="a" pos="0 0 .1"><freejoint/><geom name="ga" type="sphere" size=".05"/></body>
        <body name="b" pos="0 0 .3"><freejoint/><geom name="gb" type="sphere" size=".05"/></body>
        <body name="c" pos="0 0 .5"><freejoint/><geom name="gc" type="box" size=".05 .05 .05"
            contype="0" conaffinity="0"/></body></worldbody>
      <contact><pair geom1="gc" geom2="floor" friction="0.9 0.9 0.005 0.0001 0.0001"/></contact></mujoco>"""
    model = load_mjcf(xml, dtype=jnp.float64)
    topo = model.topo
    names = [(topo.geom_name[a], topo.geom_name[b]) for a, b in zip(topo.pair_geom1, topo.pair_geom2)]
    mode = dict(zip(names, topo.pair_mode))
    assert mode[("floor", "ga")] == ContactMode.PENALTY and mode[("floor", "gb")] == ContactMode.CONSTRAINT
    assert mode[("ga", "gb")] == ContactMode.NONE and mode[("floor", "gc")] == ContactMode.CONSTRAINT
    # the explicit pair's friction is its own; the other pairs' comes from their geoms
    assert topo.pair_friction_id == (names.index(("floor", "gc")),)
    np.testing.assert_allclose(np.asarray(model.pair_friction), [[0.9, 0.9]])


def test_params_declared_by_each_model():
    for name in ("relaxed", "rigid", "penalty"):
        cls = contact.get(name).params
        for f in dataclasses.fields(cls):
            assert f.metadata["doc"], (name, f.name)
        assert isinstance(contact.make_params(name, jnp.float64), cls)


def test_explicit_pair_friction_overrides_the_geoms():
    """A cube sliding at 1 m/s on a floor whose pair says mu = 0.2 (both geoms 0.8)
    stops after v^2 / (2 mu g); the geoms' friction no longer matters for that pair,
    the pair's own does."""
    b = ModelBuilder(timestep=1e-3)
    b.add_geom("world", "plane", name="floor", friction=(0.8, 0.8))
    b.add_body("cube", pos=(0, 0, 0.0499), mass=0.5, inertia=(1e-3,) * 3)
    b.add_joint("cube", "free")
    b.add_geom("cube", "box", (0.05,) * 3, name="cube", friction=(0.8, 0.8))
    b.add_pair("floor", "cube", friction=(0.2, 0.2))
    model = b.build(jnp.float64)

    @jax.jit
    def slide(m):
        s = jaxsim.make_state(m, v=jnp.array([1.0, 0, 0, 0, 0, 0]))
        return jax.lax.fori_loop(0, 600, lambda _, s: jaxsim.step(m, s), s).q[0]

    base = float(slide(model))
    np.testing.assert_allclose(base, 1 / (2 * 0.2 * 9.81), rtol=0.01)
    assert float(slide(model.replace(geom_friction=model.geom_friction * 0.5))) == base
    assert float(slide(model.replace(pair_friction=model.pair_friction * 2))) < 0.6 * base
