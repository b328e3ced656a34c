"""Springhead's contact model (``contact="springhead"``, SPEC section 4):
restitution against the impact threshold, rigid-impact spin, resting at the contact
tolerance, the correction rate, the static/kinetic friction switch, the Gauss-Seidel
solver against the QP, and gradients. Float64; the box cases run as one batch (one
compile: the parameters, gravity and restitution are Model arrays)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import check_grads_rev, rollout_in_chunks

import jaxsim
from jaxsim import ModelBuilder, math

G = 9.81
R = 0.05  # ball radius, m
A = 0.05  # box half size, m
_ROLLOUT = rollout_in_chunks  # one compile per model structure (conftest)
BALL_STEPS = 1400  # dt 1 ms: fall from 1 m (0.45 s), rise and fall back
BOX_DT, BOX_STEPS = 2e-3, 1000  # 2 s
TILT = np.deg2rad(30.0)  # edge drop: turned about x, one edge lowest


def ball(e, impact_threshold=1.0, solver="qp"):
    b = ModelBuilder(timestep=1e-3, contact="springhead", impact_threshold=impact_threshold, solver=solver)
    b.add_geom("world", "plane", (5, 5, 0.1), restitution=e)
    b.add_body("ball", pos=(0, 0, 1.0 + R), mass=1.0, inertia=(0.4 * R * R,) * 3)
    b.add_joint("ball", "free")
    b.add_geom("ball", "sphere", (R,), restitution=e)
    return b.build(jnp.float64)


def box(z, tilt=0.0, friction=(0.6, 0.4), gravity=(0, 0, -G), timestep=BOX_DT, **options):
    """A 10 cm cube, 1 kg, its centre at height ``z``, turned ``tilt`` about x; mu0 0.6,
    mu 0.4 (both geoms); restitution 0.5. The QP unless ``solver`` says otherwise: its
    corner forces are symmetric (Gauss-Seidel's split follows its sweep order)."""
    options.setdefault("solver", "qp")
    b = ModelBuilder(timestep=timestep, contact="springhead", gravity=gravity, **options)
    b.add_geom("world", "plane", (5, 5, 0.1), friction=friction, restitution=0.5)
    b.add_body("box", pos=(0, 0, z), quat=(np.cos(tilt / 2), np.sin(tilt / 2), 0, 0), mass=1.0,
               inertia=(2 * A * A / 3,) * 3)
    b.add_joint("box", "free")
    b.add_geom("box", "box", (A, A, A), friction=friction, restitution=0.5)
    return b.build(jnp.float64)


def _bounce(model):
    """(gap (m) and v-, v+ (m/s) of the impact step, apex (m) above the surface) of a
    ball dropped from 1 m."""
    _, traj = _ROLLOUT(model, jaxsim.make_state(model), jnp.zeros((BALL_STEPS, 0)))
    z, vz = np.asarray(traj.q[:, 2]) - R, np.asarray(traj.v[:, 2])
    k = int(np.argmax(vz > 0))  # the impact step: the first that leaves the ball rising
    return z[k - 1], vz[k - 1], vz[k], z[k:].max()


def test_ball_rebounds_to_e_squared_above_the_threshold_only():
    """Dropped from 1 m (impact at 4.43 m/s) with V_th = 1 m/s, the ball leaves at e
    times its approach, from within one step's travel of the surface, and rises to
    e^2 h within 2 % for e = 0.2, 0.5, 0.8. With V_th = 10 m/s it does not bounce.
    Springhead's Gauss-Seidel gives the QP's rebound."""
    for e in (0.2, 0.5, 0.8):
        gap, v_in, v_out, apex = _bounce(ball(e))
        assert 0.0 <= gap < -v_in * 1e-3
        np.testing.assert_allclose(v_out, -e * v_in, rtol=1e-4)  # the QP's tolerance
        np.testing.assert_allclose(apex, e * e * 1.0, rtol=0.02)
        print(f"e = {e}: bounced {gap * 1e3:.3f} mm above the surface, apex {apex:.5f} m, e^2 h {e * e:.5f} m")
    _, traj = _ROLLOUT(slow := ball(0.5, impact_threshold=10.0), jaxsim.make_state(slow), jnp.zeros((BALL_STEPS, 0)))
    assert float(jnp.max(traj.v[:, 2])) < 0.01 and float(jnp.max(traj.q[600:, 2])) < R + 1e-3
    _, _, v_pgs, apex_pgs = _bounce(ball(0.5, solver="pgs"))
    _, _, v_qp, apex_qp = _bounce(ball(0.5))
    np.testing.assert_allclose([v_pgs, apex_pgs], [v_qp, apex_qp], rtol=1e-4)


@pytest.mark.benchmark  # a 1400-step gradient; the default suite: test_parameter_gradients.py (restitution)
def test_apex_gradient_with_respect_to_restitution():
    """d apex / d e of the ball (e = 0.5), forward mode through 1400 steps against a
    central finite difference, and near the analytic 2 e h."""
    model = ball(0.5)

    def apex(e, rollout):
        m = model.replace(geom_restitution=jnp.full_like(model.geom_restitution, e))
        _, traj = rollout(m, jaxsim.make_state(m), jnp.zeros((BALL_STEPS, 0)))
        return jnp.max(traj.q[600:, 2])  # after the impact (step ~450)

    _, slope = jax.jit(lambda e: jax.jvp(lambda e_: apex(e_, jaxsim.rollout), (e,), (1.0,)))(0.5)
    h = 1e-5
    fd = (apex(0.5 + h, _ROLLOUT) - apex(0.5 - h, _ROLLOUT)) / (2 * h)
    np.testing.assert_allclose(float(slope), float(fd), rtol=1e-5)
    np.testing.assert_allclose(float(slope), 2 * 0.5 * 1.0, rtol=0.03)


def _rigid_impact(q, v, friction):
    """Velocity (6,) after a rigid impact (e = 0.5) of the cube on its lowest edge from
    state (q, v): Newton's law at the edge's midpoint, frictionless or sticking."""
    rot = np.asarray(math.quat_to_mat(jnp.asarray(q[3:7])))
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
    corners = (signs * A) @ rot.T
    r = corners[np.argsort(corners[:, 2])[:2]].mean(0)  # the lowest edge, from the centre
    skew = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
    inertia = 2 * A * A / 3
    k = np.eye(3) - skew @ skew / inertia  # contact-point velocity per unit impulse (m = 1)
    v_point = v[:3] + np.cross(v[3:], r)
    dv = np.array([0, 0, -1.5 * v_point[2]])  # v_z+ = -e v_z-
    impulse = np.array([0, 0, dv[2] / k[2, 2]]) if friction == 0 else np.linalg.solve(k, dv - [*v_point[:2], 0])
    return np.concatenate([v[:3] + impulse, v[3:] + np.cross(r, impulse) / inertia])


def test_box_cases_in_one_batch():
    """Eight boxes on the floor (dt 2 ms, 2 s), one vmapped rollout:

    * started 5 mm deep: gamma = 0.1 brings it to d_tol = 2 mm within 0.1 mm in 1 s and
      it stays (no drift over the last 1 s), its four corner forces summing to m g
      within 0.5 % and equal within 1 %; gamma = 1 removes the excess in one step;
    * launched at 2 m/s: it slides v^2 / (2 mu g) (mu = 0.4) within 2 %;
    * pushed by a constant horizontal force 0.5 m g (between mu m g and mu0 m g; a
      sideways gravity component): started at rest it stays (static friction), started
      at 0.5 m/s it keeps sliding, accelerating at (0.5 - mu) g;
    * dropped flat from 0.2 m with e = 0.5 (V_th 1 m/s): four equal corner forces (1 %)
      and no spin;
    * dropped from 0.2 m onto an edge (30 degrees), frictionless and with friction: it
      bounces and spins the way a rigid impact at the edge predicts (Newton's law,
      sliding and sticking), within 3 %."""
    low = A * (np.cos(TILT) + np.sin(TILT))
    push = (0, 0.5 * G, -G)
    cases = [(box(A - 0.005), 0.0), (box(A - 0.005, correction_rate=1.0), 0.0), (box(A - 0.002), 2.0),
             (box(A - 0.002, gravity=push), 0.0), (box(A - 0.002, gravity=push), 0.5),
             (box(A + 0.2, impact_threshold=1.0), 0.0),
             (box(low + 0.2, tilt=TILT, friction=(0, 0), impact_threshold=1.0), 0.0),
             (box(low + 0.2, tilt=TILT, impact_threshold=1.0), 0.0)]
    models = jaxsim.batch_models([m for m, _ in cases])
    v0 = jnp.zeros((len(cases), 6)).at[:, 1].set(jnp.asarray([v for _, v in cases]))
    states = jax.vmap(lambda m, v: jaxsim.make_state(m, v=v))(models, v0)
    run = jax.jit(jax.vmap(lambda m, s: jaxsim.rollout(m, s, jnp.zeros((BOX_STEPS, 0)))[1]))
    traj = run(models, states)
    assert not np.any(np.asarray(traj.nonfinite))
    q, v = np.asarray(traj.q), np.asarray(traj.v)
    fz, on = np.asarray(traj.contact.force_w)[..., 2], np.asarray(traj.contact.active)

    depth = A - q[0, :, 2]
    assert abs(depth[499] - 0.002) < 1e-4 and np.ptp(depth[500:]) < 1e-6
    assert on[0, -1].sum() == 4
    np.testing.assert_allclose(fz[0, -1][on[0, -1]].sum(), G, rtol=5e-3)
    np.testing.assert_allclose(fz[0, -1][on[0, -1]], G / 4, rtol=1e-2)
    np.testing.assert_allclose(A - q[1, 0, 2], 0.002, atol=1e-6)

    np.testing.assert_allclose(q[2, -1, 1], 2.0 ** 2 / (2 * 0.4 * G), rtol=0.02)
    assert abs(v[2, -1, 1]) < 1e-6

    assert np.abs(q[3, :, 1]).max() < 1e-6 and np.abs(v[3, -1]).max() < 1e-6
    t = BOX_DT * (np.arange(BOX_STEPS) + 1)
    np.testing.assert_allclose(v[4, 499:, 1], 0.5 + (0.5 - 0.4) * G * t[499:], rtol=0.02)

    k = int(np.argmax(v[5, :, 2] > 0))  # the impact step
    np.testing.assert_allclose(v[5, k, 2], -0.5 * v[5, k - 1, 2], rtol=0.01)
    assert on[5, k].sum() == 4 and np.abs(v[5, k, 3:]).max() < 1e-9
    np.testing.assert_allclose(fz[5, k][on[5, k]], fz[5, k][on[5, k]].mean(), rtol=1e-2)

    for env, friction in ((6, 0.0), (7, 0.6)):
        k = int(np.argmax(v[env, :, 2] > 0))
        predicted = _rigid_impact(q[env, k - 1], v[env, k - 1], friction)
        print(f"edge drop, mu0 {friction}: after impact v {np.round(v[env, k], 3)}, rigid {np.round(predicted, 3)}")
        assert v[env, k, 2] > 0 and np.sign(v[env, k, 3]) == np.sign(predicted[3]) != 0
        np.testing.assert_allclose(v[env, k, [1, 2, 3]], predicted[[1, 2, 3]], rtol=0.03, atol=0.02)


def test_check_grads_resting_and_sliding_steps():
    """jax.test_util.check_grads (reverse mode, float64; one compile for both steps:
    conftest.check_grads_rev) of one step of a box 3 mm deep (under correction), at
    rest and sliding at 1 m/s (kinetic friction),
    tilted by 0.02 and 0.01 rad: flat, its four corners tie for the deepest and the
    pair depth (their max) has a kink. The QP is solved to 1e-12 here: at its default
    1e-6 the finite differences see its tolerance."""
    model = box(A - 0.003, solver_tol=1e-12, solver_iterations=5000)

    def step(q, v):
        after = jaxsim.step(model, jaxsim.make_state(model, q=q, v=v))
        return jnp.concatenate([after.q, after.v])


    about_x, about_y = jnp.asarray([np.cos(0.01), np.sin(0.01), 0, 0]), jnp.asarray([np.cos(0.005), 0, np.sin(0.005), 0])
    tilt = math.quat_mul(about_x, about_y)
    q0 = model.qpos0.at[3:7].set(tilt)
    for v_y in (0.0, 1.0):  # one compile for both (conftest.check_grads_rev)
        check_grads_rev(step, (q0, jnp.zeros(6).at[1].set(v_y)), atol=1e-4, rtol=1e-4, eps=1e-6)


def test_time_of_impact_gradient_is_the_continuous_bounce_s_and_leaves_the_step_alone():
    """A frictionless ball (e = 0.6, dt = 2 ms) sent at 2 m/s towards a wall 0.45 m away
    while it drops from 0.8 m to the floor: x and z are independent, each one bounce
    of a continuous-time path with a closed-form derivative at T = 0.6 s,

        x(T) = X - e (vx T - (X - x0))      dx/dx0 = -e,  dx/dvx = -e T
        z(T) = R + e g t_c tau - g tau^2 / 2 (t_c = sqrt(2 h / g), tau = T - t_c)
                                             dz/dz0 = (1 + e) g tau / (g t_c) - e.

    ``impact_gradient="time_of_impact"`` gives these derivatives (within 2 % on z, whose
    formula leaves out the step's O(dt) terms); the step's own derivative (1 for
    dx/dx0 and dz/dz0: within one step's phase the impacts keep their step, so the
    whole path shifts) is far from them; the states of the two settings are
    bitwise equal."""
    e, dt, steps, x_wall, z0, vx = 0.6, 2e-3, 300, 0.5, 0.8, 2.0

    def scene(impact_gradient):
        b = ModelBuilder(timestep=dt, contact="springhead", impact_threshold=0.5, solver="qp", solver_tol=1e-12,
                         impact_gradient=impact_gradient)
        for pos, quat in (((0, 0, 0), (1, 0, 0, 0)), ((x_wall, 0, 1), (np.cos(np.pi / 4), 0, -np.sin(np.pi / 4), 0))):
            b.add_geom("world", "plane", (5, 5, 0.1), pos=pos, quat=quat, friction=(0, 0), restitution=e)
        b.add_body("ball", pos=(0, 0, z0), mass=1.0, inertia=(0.4 * R * R,) * 3)
        b.add_joint("ball", "free")
        b.add_geom("ball", "sphere", (R,), friction=(0, 0), restitution=e)
        return b.build(jnp.float64)

    def final(model, x0_z0_vx):
        s = jaxsim.make_state(model)
        s = s.replace(q=s.q.at[jnp.array([0, 2])].set(x0_z0_vx[:2]), v=s.v.at[0].set(x0_z0_vx[2]))
        return jax.lax.scan(lambda s_, _: (jaxsim.step(model, s_), None), s, None, length=steps)[0]

    @jax.jit
    def end_and_jacobian(model, p):
        """The final (q, v) and d(x, z)/d(x0, z0, vx), in one compile per setting."""
        def qv(p_):
            s = final(model, p_)
            return jnp.concatenate([s.q, s.v])
        primal, tangents = jax.vmap(lambda t: jax.jvp(qv, (p,), (t,)))(jnp.eye(3, dtype=p.dtype))
        return primal[0], tangents[:, jnp.array([0, 2])].T

    point = jnp.asarray([0.0, z0, vx])
    (end_toi, got), (end_step, step_jac) = (end_and_jacobian(scene(g), point) for g in ("time_of_impact", "step"))
    np.testing.assert_array_equal(np.asarray(end_toi), np.asarray(end_step))
    assert float(end_toi[7]) < 0 < float(end_toi[2]) - R  # off the wall, in flight after the floor
    T, h = steps * dt, z0 - R
    t_c = np.sqrt(2 * h / G)
    expected = np.array([[-e, 0.0, -e * T], [0.0, (1 + e) * (T - t_c) / t_c - e, 0.0]])
    got, step_jac = np.asarray(got), np.asarray(step_jac)
    np.testing.assert_allclose(got[0], expected[0], atol=1e-6)
    np.testing.assert_allclose(got[1], expected[1], atol=0.02 * abs(expected[1, 1]))
    np.testing.assert_allclose(step_jac[:, :2], np.eye(2), atol=1e-6)
