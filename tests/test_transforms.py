"""jit, vmap (over states and over models), grad, float32/float64, rollout, and
analytic invariants (energy conservation, quaternion integration, Jacobians)."""

import numpy as np
import jax
import jax.numpy as jnp
import pytest

import jaxsim
from jaxsim import dynamics, scenes
from jaxsim.integrator import integrate_positions
from jaxsim.io import load_mjcf

from conftest import check_grads_rev, gymnasium_dir, rollout_in_chunks

mujoco = pytest.importorskip("mujoco")


@pytest.fixture(scope="session")
def humanoid():
    """Contact-free: these tests are about the dynamics under jit / vmap / grad; the
    contact stage's are in test_contact.py (the humanoid falling on the floor there)."""
    return load_mjcf(f"{gymnasium_dir()}/humanoid.xml", dtype=jnp.float64, constraint=False)


def random_state(model, key, scale=0.3):
    """A random State near qpos0 with unit quaternions."""
    kq, kv, ku = jax.random.split(key, 3)
    q = model.qpos0 + scale * jax.random.normal(kq, (model.nq,), model.dtype)
    q = q.at[3:7].set(q[3:7] / jnp.linalg.norm(q[3:7]))  # the humanoid's free joint
    v = jax.random.normal(kv, (model.nv,), model.dtype)
    u = jax.random.uniform(ku, (model.nu,), model.dtype, -1, 1)
    return jaxsim.make_state(model, q=q, v=v, ctrl=u)


def test_vmap_states_matches_loop(humanoid):
    keys = jax.random.split(jax.random.PRNGKey(1), 8)
    states = jax.vmap(lambda k: random_state(humanoid, k))(keys)
    step = jax.jit(jaxsim.step)
    batched = jax.jit(jax.vmap(jaxsim.step, in_axes=(None, 0)))(humanoid, states)
    for i in range(8):
        one = step(humanoid, jax.tree_util.tree_map(lambda x: x[i], states))
        np.testing.assert_allclose(np.asarray(batched.q[i]), np.asarray(one.q), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(batched.v[i]), np.asarray(one.v), rtol=1e-12, atol=1e-12)


def test_vmap_over_models(humanoid):
    """Domain randomisation: a batch of models with scaled masses and inertias."""
    scales = jnp.array([0.5, 1.0, 2.0, 3.0])
    models = jaxsim.batch_models([
        humanoid.replace(body_mass=humanoid.body_mass * s, body_inertia=humanoid.body_inertia * s)
        for s in scales])
    state = random_state(humanoid, jax.random.PRNGKey(2))
    acc = lambda m: jaxsim.accelerations(m, state.q, state.v, state.act, state.ctrl)[0]  # noqa: E731
    batched = jax.jit(jax.vmap(acc))(models)
    for i, s in enumerate(scales):
        m = humanoid.replace(body_mass=humanoid.body_mass * s, body_inertia=humanoid.body_inertia * s)
        np.testing.assert_allclose(np.asarray(batched[i]), np.asarray(jax.jit(acc)(m)), rtol=1e-10, atol=1e-10)
    assert not np.allclose(np.asarray(batched[0]), np.asarray(batched[3]))
    # and a full step over (model, state) pairs
    states = jax.tree_util.tree_map(lambda x: jnp.stack([x] * 4), state)
    out = jax.jit(jax.vmap(jaxsim.step))(models, states)
    assert out.q.shape == (4, humanoid.nq) and bool(jnp.all(jnp.isfinite(out.q)))


@pytest.mark.parametrize("method", ["aba", "crba"])
def test_check_grads_forward_dynamics(humanoid, method):
    model = humanoid.replace(opt=humanoid.opt.replace(forward_dynamics=method))
    s = random_state(model, jax.random.PRNGKey(3))
    tau = jax.random.normal(jax.random.PRNGKey(4), (model.nv,), model.dtype)

    def f(q, v, tau):
        return jaxsim.accelerations(model, q, v, s.act, s.ctrl, tau)[0]

    # check_grads(order 1) in reverse mode only (suite time; linalg's fwd mode:
    # test_linalg.py), value and VJP from one compile
    check_grads_rev(f, (s.q, s.v, tau), atol=1e-5, rtol=1e-5)


def test_inverse_dynamics_inverts_forward(humanoid):
    s = random_state(humanoid, jax.random.PRNGKey(5))
    tau = jax.random.normal(jax.random.PRNGKey(6), (humanoid.nv,), humanoid.dtype)

    @jax.jit  # one program: eager dispatch would compile every operation on its own
    def both_sides(s, tau):
        kin = jaxsim.forward_kinematics(humanoid, s.q)
        body_vel, _ = jaxsim.body_velocities(humanoid, kin, s.v)
        passive = dynamics.passive_forces(humanoid, s.q, s.v, kin, body_vel)
        qacc = jaxsim.accelerations(humanoid, s.q, s.v, s.act, jnp.zeros(humanoid.nu), tau)[0]
        return jaxsim.inverse_dynamics(humanoid, kin, s.v, qacc) + humanoid.dof_armature * qacc, tau + passive

    lhs, rhs = both_sides(s, tau)
    np.testing.assert_allclose(np.asarray(lhs), np.asarray(rhs), rtol=1e-10, atol=1e-9)


def test_float32_matches_float64(humanoid):
    m32 = humanoid.astype(jnp.float32)
    s = random_state(humanoid, jax.random.PRNGKey(7))
    accelerations = jax.jit(jaxsim.accelerations)
    a64 = accelerations(humanoid, s.q, s.v, s.act, s.ctrl)[0]
    s32 = jaxsim.cast_floats(s, jnp.float32)
    a32 = accelerations(m32, s32.q, s32.v, s32.act, s32.ctrl)[0]
    assert a32.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(a32), np.asarray(a64), rtol=2e-3, atol=2e-3 * float(jnp.max(jnp.abs(a64))))
    out = jax.jit(jaxsim.step)(m32, s32)
    assert out.q.dtype == jnp.float32 and out.v.dtype == jnp.float32


def test_rollout_matches_step_loop(humanoid):
    s = random_state(humanoid, jax.random.PRNGKey(8))
    ctrls = jax.random.uniform(jax.random.PRNGKey(9), (20, humanoid.nu), humanoid.dtype, -1, 1)
    final, traj = rollout_in_chunks(humanoid, s, ctrls)
    step = jax.jit(jaxsim.step)
    for t in range(20):
        s = step(humanoid, s, ctrls[t])
        np.testing.assert_allclose(np.asarray(traj.q[t]), np.asarray(s.q), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(final.v), np.asarray(s.v), rtol=1e-10, atol=1e-10)
    assert traj.q.shape == (20, humanoid.nq)


def test_energy_conserved_rk4():
    """Undamped pendulum: RK4 keeps the total energy constant (analytic invariant)."""
    model = scenes.pendulum(4, integrator="rk4", timestep=1e-3, dtype=jnp.float64)
    s = jaxsim.make_state(model, q=scenes.pendulum_initial_q(model))
    _, traj = rollout_in_chunks(model, s, jnp.zeros((1000, 0)))

    def total(q, v):
        k, p = dynamics.energy(model, jaxsim.forward_kinematics(model, q), v)
        return k + p

    total = jax.jit(jax.vmap(total))
    e = total(traj.q, traj.v)
    e0, rest = total(jnp.stack([s.q, jnp.zeros(model.nq)]), jnp.stack([s.v, jnp.zeros(model.nv)]))
    assert float(jnp.max(jnp.abs(e - e0)) / (e0 - rest)) < 1e-6
    assert float(jnp.max(jnp.abs(traj.v))) > 1.0  # it really moved


def test_ball_joint_quaternion_integration():
    """A sphere on a ball joint without gravity spins at constant body rate:
    q(t) = q0 * exp(w t) exactly (nq = 4 != nv = 3)."""
    b = jaxsim.ModelBuilder(timestep=1e-3, gravity=(0, 0, 0))
    b.add_body("ball", mass=1.0, inertia=(0.1, 0.1, 0.1))
    b.add_joint("ball", "ball")
    model = b.build(jnp.float64)
    w = jnp.array([0.3, -1.2, 2.0])
    q0 = jnp.array([np.cos(0.4), np.sin(0.4), 0.0, 0.0])
    s = jaxsim.make_state(model, q=q0, v=w)
    final, _ = rollout_in_chunks(model, s, jnp.zeros((1000, 0)))
    angle = float(jnp.linalg.norm(w))  # over t = 1 s
    axis = np.asarray(w) / angle
    dq = np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])
    expected = jaxsim.math.quat_mul(q0, jnp.asarray(dq))
    np.testing.assert_allclose(np.asarray(final.q), np.asarray(expected), atol=1e-10)
    np.testing.assert_allclose(np.asarray(final.v), np.asarray(w), atol=1e-12)
    np.testing.assert_allclose(float(jnp.linalg.norm(final.q)), 1.0, atol=1e-14)


def test_jacobians_match_mujoco():
    path = f"{gymnasium_dir()}/humanoid.xml"
    mm = mujoco.MjModel.from_xml_path(path)
    model = load_mjcf(path, dtype=jnp.float64)
    rng = np.random.default_rng(0)
    d = mujoco.MjData(mm)
    d.qpos[:] = mm.qpos0 + 0.3 * rng.standard_normal(mm.nq)
    d.qpos[3:7] /= np.linalg.norm(d.qpos[3:7])
    mujoco.mj_kinematics(mm, d)
    mujoco.mj_comPos(mm, d)
    bodies = (1, 5, mm.nbody - 1)
    points = np.array([d.xpos[b] + np.array([0.05, -0.02, 0.1]) for b in bodies])

    @jax.jit  # one program: eager dispatch would compile every operation on its own
    def jacobians(q, points):
        kin = jaxsim.forward_kinematics(model, q)
        return ([jaxsim.point_jacobian(model, kin, b, p) for b, p in zip(bodies, points)],
                [jaxsim.body_jacobian(model, kin, b) for b in bodies])

    point_jacs, body_jacs = jacobians(jnp.asarray(d.qpos), jnp.asarray(points))
    for body, point, got, jb in zip(bodies, points, point_jacs, body_jacs):
        jacp, jacr = np.zeros((3, mm.nv)), np.zeros((3, mm.nv))
        mujoco.mj_jac(mm, d, jacp, jacr, point, body)
        np.testing.assert_allclose(np.asarray(got), jacp, atol=1e-12)
        mujoco.mj_jacBody(mm, d, jacp, jacr, body)
        np.testing.assert_allclose(np.asarray(jb[:3]), jacr, atol=1e-12)
        np.testing.assert_allclose(np.asarray(jb[3:]), jacp, atol=1e-12)


def test_point_jacobian_finite_difference(humanoid):
    """J v equals the time derivative of a body point (finite difference on the
    configuration manifold)."""
    s = random_state(humanoid, jax.random.PRNGKey(11))
    body, offset = 7, jnp.array([0.02, 0.03, -0.04])

    def point(q):
        kin = jaxsim.forward_kinematics(humanoid, q)
        return kin.body_pos_w[body] + kin.body_rot_w[body] @ offset

    @jax.jit  # one program: eager dispatch would compile every operation on its own
    def velocity_and_difference(q, v, eps=1e-6):
        jac = jaxsim.point_jacobian(humanoid, jaxsim.forward_kinematics(humanoid, q), body, point(q))
        fd = (point(integrate_positions(humanoid, q, v, eps)) - point(integrate_positions(humanoid, q, v, -eps)))
        return jac @ v, fd / (2 * eps)

    velocity, fd = velocity_and_difference(s.q, s.v)
    np.testing.assert_allclose(np.asarray(velocity), np.asarray(fd), rtol=1e-7, atol=1e-8)


def test_nonfinite_flag(humanoid):
    s = random_state(humanoid, jax.random.PRNGKey(12))
    bad = s.replace(v=s.v.at[0].set(jnp.nan))
    out = jax.jit(jaxsim.step)(humanoid, bad)
    assert bool(out.nonfinite)
    assert not bool(jax.jit(jaxsim.step)(humanoid, s).nonfinite)
    _, traj = rollout_in_chunks(humanoid, bad, jnp.zeros((3, humanoid.nu)))
    assert bool(jnp.all(traj.nonfinite))  # the flag stays set


def test_grad_through_rollout_matches_finite_difference():
    """d(tip x after 0.3 s)/d(initial root velocity) of a 3-link pendulum (no
    contact stage: the chain never touches itself, and contact gradients have their
    own tests in test_contact.py)."""
    model = scenes.pendulum(3, dtype=jnp.float64)
    model = model.replace(opt=model.opt.replace(constraint=False))
    q0 = scenes.pendulum_initial_q(model, 30.0)

    def tip_x(v0):
        s = jaxsim.make_state(model, q=q0, v=jnp.zeros(3).at[0].set(v0))
        final, _ = jaxsim.rollout(model, s, jnp.zeros((300, 0)))
        return jaxsim.forward_kinematics(model, final.q).body_pos_w[-1, 0]

    g = jax.jit(jax.grad(tip_x))(0.5)
    eps, tip_x = 1e-5, jax.jit(tip_x)
    fd = (tip_x(0.5 + eps) - tip_x(0.5 - eps)) / (2 * eps)
    np.testing.assert_allclose(float(g), float(fd), rtol=1e-6)
    assert abs(float(g)) > 1e-3
