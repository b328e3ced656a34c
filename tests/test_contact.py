"""Simulation with contact (relaxed point contacts, SPEC section 2): physics with known
answers, jit / vmap, and gradients through contact against finite differences."""

import numpy as np
import jax
import jax.numpy as jnp
import pytest
from conftest import check_grads_rev, rollout_in_chunks
from scipy.spatial.transform import Rotation

import jaxsim
from jaxsim import scenes
from jaxsim.dynamics import energy
from jaxsim.kinematics import forward_kinematics
from jaxsim.types import batch_models

G = 9.81


def run(model, state, steps):
    """(final state, trajectory) of ``steps`` steps without control."""
    return rollout_in_chunks(model, state, jnp.zeros((steps, model.nu), model.dtype))


def cube_corners(q):
    """(T, 8, 3) world corners of the scene cube along a trajectory of q (T, 7)."""
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * scenes.CUBE_SIZE / 2
    rot = Rotation.from_quat(np.roll(np.asarray(q[:, 3:7]), -1, axis=1)).as_matrix()
    return np.asarray(q[:, None, :3]) + np.einsum("tij,kj->tki", rot, signs)


def test_cube_rests_on_floor():
    """0.1 m, 0.5 kg cube, 3 s at dt = 1 ms: height within 1 mm of 0.05 m without drift
    over the last 1.5 s; its four normal forces sum to m g within 1 % and are equal within
    5 %."""
    model = scenes.cube(height=0.05, dtype=jnp.float64)
    state, traj = run(model, jaxsim.make_state(model), 3000)
    z = np.asarray(traj.q[:, 2])
    assert np.all(np.abs(z - 0.05) < 1e-3)
    assert np.ptp(z[1500:]) < 1e-6
    fz = np.asarray(state.contact.force_w[:, 2])[np.asarray(state.contact.active)]
    assert len(fz) == 4
    np.testing.assert_allclose(fz.sum(), scenes.CUBE_MASS * G, rtol=1e-2)
    assert np.ptp(fz) < 0.05 * fz.mean()
    assert not bool(state.nonfinite) and int(state.overflow) == 0
    assert int(traj.solver.iterations.max()) < model.opt.solver_iterations


def test_sliding_box_stopping_distance():
    """Sliding at 2 m/s with mu_k = 0.3 it stops after v^2 / (2 mu_k g) within 2 %."""
    model = scenes.cube(height=0.05, friction=(0.5, 0.3), dtype=jnp.float64)
    state, traj = run(model, jaxsim.make_state(model, v=[2.0, 0, 0, 0, 0, 0]), 1000)
    expected = 2.0 ** 2 / (2 * 0.3 * G)
    np.testing.assert_allclose(float(state.q[0]), expected, rtol=0.02)
    assert abs(float(state.v[0])) < 1e-4
    assert np.max(np.abs(np.asarray(traj.q[:, 2]) - 0.05)) < 1e-3  # no hopping or tipping


def incline_model(theta_deg):
    """A cube on a slope of theta: the floor stays flat and gravity tilts about y."""
    th = np.deg2rad(theta_deg)
    return scenes.cube(height=0.05, friction=(0.5, 0.3), gravity=(G * np.sin(th), 0.0, -G * np.cos(th)),
                       dtype=jnp.float64)


def test_incline_sticks_below_static_friction():
    model = incline_model(np.rad2deg(np.arctan(0.4)))  # tan = 0.4 < mu_s = 0.5
    state, _ = run(model, jaxsim.make_state(model), 1000)
    assert abs(float(state.q[0])) < 1e-4 and abs(float(state.v[0])) < 1e-4


def test_incline_slides_with_kinetic_acceleration():
    theta = np.arctan(0.7)  # tan = 0.7 > mu_s = 0.5
    model = incline_model(np.rad2deg(theta))
    _, traj = run(model, jaxsim.make_state(model), 600)
    t = np.arange(1, 601) * 1e-3
    vx = np.asarray(traj.v[:, 0])
    accel = np.polyfit(t[100:], vx[100:], 1)[0]
    np.testing.assert_allclose(accel, G * (np.sin(theta) - 0.3 * np.cos(theta)), rtol=0.02)


def test_pendulum_scene():
    """SPEC section 2's 6-link pendulum falling from 60 degrees onto the ground: stable,
    at rest after 5 s, energy never above its initial value by more than 1 % (of the
    energy it has to lose), and its tip link rests flat on four steady contacts: the
    +y and -y ones equal, nothing chattering over the last second, and their forces
    (normal and friction) in static balance with its weight about its free hinge.
    (The chain comes to rest partly tented, as MuJoCo's does on the same scene, with
    friction locked in; how the tip's load splits between its near and far pairs then
    depends on that friction: 0.84 / 0.73 N per point here. A chain that lay flat gave
    four equal forces.)"""
    model = scenes.pendulum(6, floor=True, dtype=jnp.float64)
    state0 = jaxsim.make_state(model, q=scenes.pendulum_raised_q(model))
    state, traj = run(model, state0, 5000)
    assert not bool(state.nonfinite)
    assert np.max(np.abs(np.asarray(state.v))) < 1e-3
    kin_e = jax.jit(jax.vmap(lambda q, v: sum(energy(model, forward_kinematics(model, q), v))))
    e0 = float(kin_e(state0.q[None], state0.v[None])[0])
    e = np.asarray(kin_e(traj.q, traj.v))
    e_rest = e[-1]
    assert np.max(e) <= e0 + 0.01 * abs(e0 - e_rest)
    tip = model.geom_id("box5")
    kin = jax.jit(forward_kinematics)(model, state.q)  # jitted: eager dispatch compiles op by op
    geom2 = np.asarray(jax.jit(jaxsim.collide)(model, kin).geom2)
    on_tip = (geom2 == tip) & np.asarray(state.contact.active)
    assert on_tip.sum() == 4
    force = np.asarray(traj.contact.force_w[-1000:])[:, on_tip]  # (1000, 4, 3) the last second
    assert np.ptp(force[..., 2], axis=0).max() < 1e-3 * force[..., 2].mean()
    pos = np.asarray(state.contact.pos_w)[on_tip]
    order = np.lexsort((pos[:, 1], np.round(pos[:, 0], 4)))  # pairs at equal x: -y, +y
    np.testing.assert_allclose(force[-1, order[0::2], 2], force[-1, order[1::2], 2], rtol=1e-3)
    # moments about the hinge axis (world y) of the contact forces and of gravity
    hinge = np.asarray(kin.jnt_anchor_w[model.joint_id("hinge5")])
    com = np.asarray(kin.body_com_w[model.body_id("link5")])
    gravity = scenes.LINK_MASS * np.asarray(model.opt.gravity)
    moment = np.cross(pos - hinge, force[-1]).sum(0) + np.cross(com - hinge, gravity)
    assert abs(moment[1]) < 1e-3 * scenes.LINK_MASS * G * scenes.LINK_SIZE[1]


def test_euler_quaternion_matches_scipy():
    for e in ((-15.0, -15.0, 0.0), (10.0, 5.0, 0.0), (30.0, -40.0, 70.0)):
        expected = np.roll(Rotation.from_euler("xyz", e, degrees=True).as_quat(), 1)
        np.testing.assert_allclose(scenes.euler_xyz_to_quat(e), expected, atol=1e-12)


def test_cube_dropped_on_edge_does_not_pass_through():
    """SPEC section 3's first scene: rotated -15 deg about x and y, dropped from 0.4 m."""
    model = scenes.cube(height=0.4, euler_deg=(-15.0, -15.0, 0.0), dtype=jnp.float64)
    state, traj = run(model, jaxsim.make_state(model), 1500)
    lowest = cube_corners(traj.q)[..., 2].min(1)
    assert lowest.min() > -5e-3
    assert np.max(np.abs(np.asarray(state.v))) < 1e-2  # settles


def tilted_cube():
    return scenes.cube(height=0.06, euler_deg=(10.0, 5.0, 0.0), dtype=jnp.float64)


@pytest.mark.benchmark  # op-by-op dispatch compiles each of the step's ~600 operations: 25 s
def test_eager_step_equals_jitted():
    model = tilted_cube()
    s_touch = jaxsim.make_state(model, q=model.qpos0.at[2].set(0.056))  # a corner 1 mm deep
    eager = jaxsim.step(model, s_touch)
    jitted = jax.jit(jaxsim.step)(model, s_touch)
    assert int(jnp.sum(eager.contact.active)) > 0
    for a, b in zip(jax.tree.leaves(eager), jax.tree.leaves(jitted)):
        np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), atol=1e-10)


def test_rollouts_compile_once_and_the_policy_closes_the_loop():
    """``rollout``, ``rollout_policy`` and ``diagnostics.monitor`` called outside
    ``jit`` compile on their first call only; ``rollout_policy`` applies the policy to
    each step's state, as a Python loop of steps does."""
    from conftest import count_compiles
    from jaxsim import diagnostics

    b = jaxsim.ModelBuilder(timestep=1e-3)
    b.add_body("link", pos=(0, 0, 1), mass=1.0, com=(0, 0, -0.5), inertia=(0.1, 0.1, 0.1))
    b.add_joint("link", "hinge", name="hinge", axis=(0, 1, 0))
    b.add_actuator(joint="hinge")
    model = b.build(jnp.float64)
    s0 = jaxsim.make_state(model, q=jnp.asarray([0.3]))

    def policy(s):  # PD towards the bottom
        return -20.0 * s.q - 2.0 * s.v

    final, traj = jaxsim.rollout_policy(model, s0, policy, 40)
    s = s0
    for _ in range(40):
        s = jaxsim.step(model, s, policy(s))
    np.testing.assert_allclose(np.asarray(final.q), np.asarray(s.q), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(traj.ctrl[-1]), np.asarray(policy(traj.replace(
        q=traj.q[-2], v=traj.v[-2]))), rtol=1e-12)
    free, _ = jaxsim.rollout(model, s0, jnp.zeros((40, 1), model.dtype))
    assert abs(float(final.q[0]) - float(free.q[0])) > 1e-3  # the policy acts
    diagnostics.monitor(model, s0, 40)
    ctrls = [jnp.full((40, 1), c, model.dtype) for c in (0.5, 1.0)]
    s1 = jaxsim.make_state(model, q=jnp.asarray([0.1]))
    with count_compiles() as compiled:
        for c in ctrls:
            jaxsim.rollout(model, s0, c)
        jaxsim.rollout_policy(model, s1, policy, 40)
        diagnostics.monitor(model, s1, 40)
    assert not compiled, f"{len(compiled)} compiles on repeated calls"


def test_jit_vmap_and_model_batches():
    model = tilted_cube()
    rng = np.random.default_rng(0)
    step = jax.jit(jaxsim.step)

    # 16 envs, each with its own initial velocity, body mass and friction: one vmap
    # over states and over a batch of models (same topology), against single runs
    # (100 calls of the step compiled above: no compile of their own)
    v0 = rng.normal(size=(16, 6)) * 0.5
    mass, mu = rng.uniform(0.5, 2.0, 16), rng.uniform(0.2, 0.8, 16)
    models = [model.replace(body_mass=model.body_mass.at[1].set(m),
                            geom_friction=jnp.full_like(model.geom_friction, f)) for m, f in zip(mass, mu)]
    states = jax.vmap(lambda v: jaxsim.make_state(model, v=v))(jnp.asarray(v0))
    roll = lambda m, s: jaxsim.rollout(m, s, jnp.zeros((100, 0)))[0]  # noqa: E731
    batched = jax.jit(jax.vmap(roll))(batch_models(models), states)
    for i in (0, 7, 15):
        single = jaxsim.make_state(model, v=v0[i])
        for _ in range(100):
            single = step(models[i], single)
        np.testing.assert_allclose(batched.q[i], single.q, atol=1e-9)
    assert np.ptp(np.asarray(batched.q[:, 0])) > 0.01  # the envs differ


def sliding_model():
    return scenes.cube(height=0.0499, friction=(0.5, 0.3), dtype=jnp.float64)


def test_check_grads_one_contact_step():
    model = sliding_model()
    # in contact; jitted, since an eager step is slow
    s0 = jax.jit(jaxsim.step)(model, jaxsim.make_state(model, v=[1.5, 0.2, 0, 0, 0, 0]))

    def f(q, v):
        s = jaxsim.step(model, s0.replace(q=q, v=v))
        return jnp.concatenate([s.q, s.v])
    check_grads_rev(f, (s0.q, s0.v), atol=1e-5, rtol=1e-5, eps=1e-7)  # check_grads(order 1, rev), one compile


@pytest.mark.parametrize("contact, dtype", [("rigid", jnp.float64), ("relaxed", jnp.float32)])
def test_forward_and_reverse_mode_agree_on_a_resting_step(contact, dtype):
    """The Jacobian of a step in the positions and velocities, by forward mode
    (``jacfwd``: what a Jacobian-based optimizer or a JVP uses) and by reverse mode, on
    the cube resting on its four corners, where the tangential position correction is
    zero (a rigid contact's cap is infinite; a fresh relaxed contact has not drifted):
    both finite and equal."""
    model = scenes.cube(height=0.05, dtype=dtype, contact=contact)
    s0 = jax.jit(jaxsim.step)(model, jaxsim.make_state(model))
    assert int(s0.contact.active.sum()) == 4

    def f(q, v):
        s = jaxsim.step(model, s0.replace(q=q, v=v))
        return jnp.concatenate([s.q, s.v])
    fwd, rev = jax.jit(lambda q, v: (jax.jacfwd(f, (0, 1))(q, v), jax.jacrev(f, (0, 1))(q, v)))(s0.q, s0.v)
    fwd, rev = (np.concatenate([np.asarray(a) for a in j], 1) for j in (fwd, rev))
    assert np.isfinite(fwd).all() and np.isfinite(rev).all()
    # float32: the two modes round the implicit QP adjoint's solves differently
    np.testing.assert_allclose(fwd, rev, atol=3e-3 if dtype == jnp.float32 else 1e-12)
    assert np.abs(fwd).max() > 0.5


@pytest.mark.benchmark  # a 300-step gradient; the default suite: test_parameter_gradients.py (its initial vx)
def test_final_position_gradient_matches_finite_differences():
    model = sliding_model()

    def final_x(vx):
        s = jaxsim.make_state(model, q=model.qpos0.at[2].set(0.0499), v=jnp.stack([vx, 0.0, 0, 0, 0, 0]))
        out, _ = jaxsim.rollout(model, s, jnp.zeros((300, 0)))
        return out.q[0]
    # one compile: the finite difference reads the value output of the same program
    f = jax.jit(jax.value_and_grad(final_x))
    vx, h = jnp.asarray(1.5), 1e-5
    grad = float(f(vx)[1])
    fd = float((f(vx + h)[0] - f(vx - h)[0]) / (2 * h))
    np.testing.assert_allclose(grad, fd, rtol=1e-4)


def routh_impact(mass, inertia_w, r, v0, mu):
    """Velocity (3,) and angular velocity (3,) right after a rigid, perfectly inelastic
    impact with Coulomb friction mu at the point r (3,) from the centre of mass of a
    body translating at v0 (3,) without spin, normal +z (Routh's method: the contact
    sticks if the sticking impulse lies in the cone, else it slides with the friction
    along the slip its normal impulse builds up; here the slip stays in the x-z plane)."""
    inv_i = np.linalg.inv(inertia_w)
    rx = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
    W = np.eye(3) / mass - rx @ inv_i @ rx  # point velocity change per unit impulse
    P = -np.linalg.solve(W, v0)
    if np.hypot(P[0], P[1]) > mu * P[2]:  # slides: P_x = -s mu P_z along the slip W_xz builds
        s = np.sign(W[0, 2])
        Pz = -v0[2] / (W[2, 2] - s * mu * W[2, 0])
        P = np.array([-s * mu * Pz, 0.0, Pz])
    return v0 + P / mass, inv_i @ np.cross(r, P)


@pytest.mark.parametrize("mu", [1.0, 0.3])
def test_rod_impact_matches_routh(mu):
    """A long box (0.4 x 0.02 x 0.02 m, 0.5 kg) tilted 30 degrees falls at 3 m/s without
    spin onto its lower end: with mu = 1 the end sticks, with mu = 0.3 it slides (the
    sticking impulse needs mu >= 0.74). Velocity and angular velocity right after the
    impact match the rigid inelastic impact with Coulomb friction (Routh) within 3 %
    at dt = 1 ms."""
    L, w, mass, th, v0 = 0.4, 0.02, 0.5, np.deg2rad(30.0), 3.0
    b = jaxsim.ModelBuilder(timestep=1e-3)
    b.add_geom("world", "plane", (0, 0, 0), friction=(mu, mu))
    inertia = mass / 12 * np.array([2 * w * w, L * L + w * w, L * L + w * w])
    height = L / 2 * np.sin(th) + w / 2 * np.cos(th) + 5e-4  # lower end 0.5 mm up
    b.add_body("rod", "world", pos=(0, 0, height), quat=(np.cos(th / 2), 0, np.sin(th / 2), 0), mass=mass,
               inertia=inertia)
    b.add_joint("rod", "free")
    b.add_geom("rod", "box", (L / 2, w / 2, w / 2), friction=(mu, mu))
    model = b.build(jnp.float64)
    state = jaxsim.make_state(model, v=jnp.asarray([0.0, 0, -v0, 0, 0, 0]))
    _, traj = run(model, state, 4)
    fn = np.asarray(traj.contact.impulse[:, :, 0]).sum(1)
    after = int(np.flatnonzero(fn > 0)[-1]) if fn[-1] == 0 else 1  # the step ending the impact
    assert fn[0] > 0 and np.all(fn[after + 1:] == 0)  # an impact of at most two steps
    rot = Rotation.from_quat([0, np.sin(th / 2), 0, np.cos(th / 2)]).as_matrix()
    end = rot @ np.array([L / 2, 0, -w / 2])  # midpoint of the lower (+x) end's bottom edge
    v, omega = routh_impact(mass, rot @ np.diag(inertia) @ rot.T, end, np.array([0, 0, -v0]), mu)
    got_v = np.asarray(traj.v[after, :3])
    got_omega = rot @ np.asarray(traj.v[after, 3:])  # body-frame angular velocity to world
    np.testing.assert_allclose(got_v[[0, 2]], v[[0, 2]], rtol=0.03)
    np.testing.assert_allclose(got_omega[1], omega[1], rtol=0.03)
    slip = np.linalg.norm(v + np.cross(omega, end))  # Routh's end velocity: 0 when it sticks
    assert (slip < 1e-9) == (mu == 1.0)  # the two cases are the two regimes


def test_contact_impulses_dissipate():
    """The point model's QP (energy metric, contact/point.py) never adds kinetic energy
    without a position correction: for random contact operators A = J M^-1 J^T, free
    velocities b and friction cones, the impulse's energy change
    df . b + 1/2 df . A df (J^T df applied to the contact-free motion) is <= 0, also
    when the solver stops at an iteration cap (3 iterations from a random start)."""
    from jaxsim.solver import qp
    rng = np.random.default_rng(3)
    m = 4
    J = rng.normal(size=(3 * m, 7))
    A = J @ J.T / 7 + 1e-3 * np.eye(3 * m)  # rank 7 < 12: statically indeterminate
    def solve(b, mu, iters):
        return qp.solve(qp.QP(jnp.asarray(A) + 1e-3 * jnp.eye(3 * m), b, jnp.zeros(3 * m), jnp.zeros(3 * m), mu),
                        jnp.asarray(rng.normal(size=3 * m)), 1e-10, max_iter=iters, block=(3, m))[0]
    solve = jax.jit(solve, static_argnums=2)
    for iters in (5000, 3):  # converged, and stopped at an iteration cap from a bad start
        for _ in range(20):
            b = jnp.asarray(rng.normal(size=3 * m))
            df = np.asarray(solve(b, jnp.asarray(rng.uniform(0.1, 1.5, m)), iters))
            assert float(df @ np.asarray(b) + 0.5 * df @ A @ df) <= 1e-9
            assert iters < 5000 or np.any(df != 0)


def test_humanoid_lands_and_lies_on_the_floor_carrying_its_weight():
    """gymnasium's humanoid in float32 as users run it (a float32 process,
    ``float32_runs.py``).

    Released from its file pose (ctrl 0), it falls, lands and folds over onto the
    floor (0.9 s): no contact, with the floor or between its own limbs, ever deeper
    than 15 mm (MuJoCo C reaches 18 mm in the same fall), never thrown upwards
    (< 0.5 m/s), never above its start height or energy.

    Laid on its back 12 cm up, after 1.8 s the floor's force on it, summed over the
    contacts and averaged over the last 0.3 s (the limbs still settle), equals its
    weight within 1 %."""
    from float32_runs import run as run_float32

    r = run_float32("humanoid")
    landing, lying = r["landing"], r["lying"]
    assert landing["dtype"] == "float32" and not landing["nonfinite"]
    assert landing["floor_contact"] and landing["self_contact"]
    assert landing["depth_max"] < 15e-3
    assert landing["vz_max"] < 0.5
    assert landing["z_max"] <= 1.4 + 1e-6
    assert landing["energy_max"] <= landing["energy0"] + 0.01 * abs(landing["energy0"])
    assert not lying["nonfinite"]
    np.testing.assert_allclose(lying["force_z"], lying["weight"], rtol=0.01)


def slot_geom1(model):
    from jaxsim.contact.space import slot_info
    return slot_info(model.topo).geom1


@pytest.mark.benchmark  # one 40-60 s compile; the gradients are checked on small scenes elsewhere
def test_humanoid_rollout_gradient_is_finite():
    """gymnasium's humanoid falling on the floor for 160 steps (0.48 s: down to 0.17 m
    with 10 contacts from step 12 on; 16 deepest contacts solved): the gradient of a loss on the trajectory with respect to the whole
    control sequence is finite."""
    from conftest import gymnasium_dir
    from jaxsim.io import load_mjcf

    model = load_mjcf(f"{gymnasium_dir()}/humanoid.xml", dtype=jnp.float64, max_contacts=16)
    s0 = jaxsim.make_state(model, v=jnp.zeros(model.nv).at[4].set(3.0))  # tipped forwards

    def loss(ctrls):
        final, traj = jaxsim.rollout(model, s0, ctrls)
        return jnp.sum(final.q[:3] ** 2) + jnp.mean(traj.q[:, 2]), (final, traj)

    ctrls = jnp.full((160, model.nu), 0.1, model.dtype)
    # one compiled function gives the value, the gradient and the trajectory
    (value, (final, traj)), grad = jax.jit(jax.value_and_grad(loss, has_aux=True))(ctrls)
    assert float(traj.q[:, 2].min()) < 0.5  # it did fall onto the floor
    assert int(np.asarray(traj.contact.active).sum(1).max()) > 0
    assert not bool(final.nonfinite)
    assert np.isfinite(float(value)) and bool(jnp.all(jnp.isfinite(grad)))
    assert float(jnp.abs(grad).max()) > 0


@pytest.mark.parametrize("integrator", ["euler", "rk4"])
def test_joint_limit_holds_a_pendulum(integrator):
    """A hinged link pulled by gravity towards 1 rad, limited to [-0.5, 0.5] rad: it
    swings onto the upper limit and rests there (no floor: limit rows only)."""
    from jaxsim import ModelBuilder

    th = 1.0
    b = ModelBuilder(gravity=(-G * np.sin(th), 0.0, -G * np.cos(th)), integrator=integrator)
    b.add_body("link", "world", pos=(0, 0, 1), mass=0.3, com=(0, 0, -0.05), inertia=(1e-3, 1e-3, 1e-4))
    b.add_joint("link", "hinge", name="hinge", axis=(0, 1, 0), range=(-0.5, 0.5))
    b.add_geom("link", "box", (0.02, 0.02, 0.05), pos=(0, 0, -0.05))
    model = b.build(jnp.float64)
    # the free link would rest at +1 rad: check the sign convention first
    free = model.replace(jnt_range=model.jnt_range.at[0].set(jnp.asarray([-3.0, 3.0])))
    s_free, _ = run(free, jaxsim.make_state(free), 300)
    assert float(s_free.q[0]) > 0.5
    state, traj = run(model, jaxsim.make_state(model), 2000)
    angle = np.asarray(traj.q[:, 0])
    assert angle.max() < 0.5 + 0.01
    assert abs(float(state.q[0]) - 0.5) < 1e-3
    # known: under RK4 the speculative target (gap closed within the step) leaves a
    # phantom velocity of gap/dt at rest (~0.02 rad/s here), as RK4's positions do not
    # follow v+; semi-implicit Euler is exact
    assert abs(float(state.v[0])) < (1e-3 if integrator == "euler" else 0.05)
    assert not bool(state.nonfinite)


def test_newton_steps_change_the_solve_not_the_motion():
    """The point models' ``newton_steps``: two boxes stacked on the floor (their QP
    has more rows than twice the dof, so it takes Newton steps through A's factors),
    float64, ``solver_tol`` 1e-10, the 11 steps from 1 mm above rest in which they
    land. Without Newton steps the projected gradient alone takes far more
    iterations than with up to four (measured: 812 against 12), and from each state
    of that landing both give the same next state to the QP's tolerance (6e-12 m).
    The comparison is step by step from shared states: the upper box lands with a
    second contact group at depth +-1e-17, whose points the narrow phase puts on one
    edge of the overlap or the other by the sign of that depth, so two rollouts
    that differ by 1e-12 m may meet different contact sets (whose next states then
    differ by 2e-5 m)."""
    def stack(newton_steps):
        b = jaxsim.ModelBuilder(timestep=2e-3, solver_tol=1e-10, solver_iterations=2000, newton_steps=newton_steps)
        b.add_geom("world", "plane", (5, 5, 0.1), friction=(0.6, 0.6))
        for i, z in enumerate((0.051, 0.152)):
            b.add_body(f"box{i}", pos=(0.01 * i, 0, z), mass=0.5 + 2.0 * i, inertia=(1e-3,) * 3)
            b.add_joint(f"box{i}", "free")
            b.add_geom(f"box{i}", "box", (0.05, 0.05, 0.05))
        return b.build(jnp.float64)

    models = {steps: stack(steps) for steps in (0, 4)}
    start = jaxsim.make_state(models[0])
    traj = jax.jit(jaxsim.rollout)(models[0], start, jnp.zeros((11, 0)))[1]
    assert int(traj.contact.active[-1].sum()) >= 8  # both boxes rest on their faces
    before = jax.tree.map(lambda s0, t: jnp.concatenate([s0[None], t[:-1]]), start, traj)
    with_newton = jax.jit(jax.vmap(jaxsim.step, in_axes=(None, 0)))(models[4], before)
    assert models[4].contact_params.newton_steps == 4
    iterations = (int(traj.solver.iterations.sum()), int(with_newton.solver.iterations.sum()))
    assert iterations[0] > 10 * iterations[1], iterations
    np.testing.assert_allclose(np.asarray(with_newton.q), np.asarray(traj.q), rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.asarray(with_newton.v), np.asarray(traj.v), rtol=0, atol=1e-7)
