"""The contact-volume model (``contact="volume"``, seed 000) in scenes: a resting cube
(weight, centre of pressure under the centre of mass, height, drift), a cube half over
an edge (balanced inside the overlap, or tipping), SPEC section 3's edge landing, and
a mixed scene where a ball keeps its point contact in the same solve."""

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim
from jaxsim import ModelBuilder

G = 9.81
A = 0.05  # cube half size, m


def _quat(axis, deg):
    half = np.deg2rad(deg) / 2
    return np.r_[np.cos(half), np.sin(half) * np.asarray(axis, float)]


def _qmul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def cube_scene(contact="volume", pos=(0, 0, A), quat=(1, 0, 0, 0), dt=2e-3, mass=0.5, ledge=None, ball=False):
    b = ModelBuilder(timestep=dt, contact=contact)
    b.add_geom("world", "plane", (5, 5, 0.1), friction=(0.5, 0.3), name="floor")
    if ledge is not None:  # a fixed block whose top face is at z = 0.2, its edge at x = ledge
        b.add_geom("world", "box", (0.2, 0.2, 0.1), pos=(ledge - 0.2, 0, 0.1), friction=(0.5, 0.3), name="ledge")
    b.add_body("cube", pos=pos, quat=tuple(quat), mass=mass, inertia=(mass * (2 * A) ** 2 / 6,) * 3)
    b.add_joint("cube", "free")
    b.add_geom("cube", "box", (A, A, A), friction=(0.5, 0.3), name="box")
    if ball:
        b.add_body("ball", pos=(0.3, 0, 0.04), mass=0.2, inertia=(0.4 * 0.2 * 0.04 ** 2,) * 3)
        b.add_joint("ball", "free")
        b.add_geom("ball", "sphere", (0.04,), friction=(0.5, 0.3), name="ball")
    return b.build(jnp.float64)


def _run(model, steps):
    return jax.jit(jaxsim.rollout, static_argnums=())(model, jaxsim.make_state(model),
                                                       jnp.zeros((steps, model.nu)))


def test_cube_rests_with_its_centre_of_pressure_under_the_com():
    """5 s at rest: the wrench is m g up, the centre of pressure under the com within
    0.1 mm, the height within 1 mm of 0.05 m, no drift."""
    model = cube_scene()
    final, traj = _run(model, 2500)
    force, torque = jaxsim.body_contact_wrench(model, final, "cube")
    np.testing.assert_allclose(np.asarray(force), [0, 0, 0.5 * G], atol=5e-3 * 0.5 * G)
    assert np.abs(np.asarray(torque)).max() < 1e-6
    cf = jaxsim.contact_forces(model, final)
    (slot,) = np.flatnonzero(np.asarray(cf.active))
    cop = np.asarray(cf.cop_w[slot])
    q = np.asarray(final.q)
    assert np.abs(cop[:2] - q[:2]).max() < 1e-4
    assert abs(q[2] - A) < 1e-3 and not bool(final.nonfinite)
    late = np.asarray(traj.q[1250:])
    assert np.ptp(late[:, :3], 0).max() < 1e-6


def test_cube_half_over_an_edge_balances_or_tips():
    """On a ledge (edge at x = 0): with the com 2 cm inside, the centre of pressure lies
    in the overlap (x < 0) and the wrench carries the weight; with the com 2 cm beyond
    the edge, the cube tips off."""
    held = cube_scene(pos=(-0.02, 0, 0.2 + A), ledge=0.0)
    tips = cube_scene(pos=(0.02, 0, 0.2 + A), ledge=0.0)
    final, _ = _run(held, 1000)
    cf = jaxsim.contact_forces(held, final)
    on = np.asarray(cf.active)
    force = np.asarray(cf.force2_w)[on].sum(0)
    cop = np.asarray(cf.cop_w)[on]
    np.testing.assert_allclose(force, [0, 0, 0.5 * G], atol=5e-3 * 0.5 * G)
    assert on.sum() == 1 and -2 * A < cop[0, 0] < 0.0
    np.testing.assert_allclose(cop[0, 0], float(final.q[0]), atol=1e-4)  # under the com
    assert abs(float(final.q[2]) - 0.2 - A) < 1e-3
    final, _ = _run(tips, 1000)
    assert float(final.q[2]) < 0.2  # fell off the ledge


def test_spec_edge_landing_depth():
    """SPEC 3's first scene (cube turned -15 degrees about x and y, dropped from 0.4 m,
    dt 1 ms): with ``volume`` the edge stays within 5 mm of the floor. Both models'
    deepest penetration is printed."""
    quat = _qmul(_quat((0, 1, 0), -15), _quat((1, 0, 0), -15))
    depths = {}
    for name in ("volume", "relaxed"):
        model = cube_scene(name, pos=(0, 0, 0.4), quat=quat, dt=1e-3)
        final, traj = _run(model, 1000)
        assert not bool(final.nonfinite)
        depths[name] = float(np.max(np.asarray(traj.contact.depth)))
        assert abs(float(final.q[2]) - A) < 2e-3  # settled flat
    print(f"deepest penetration: volume {depths['volume'] * 1e3:.3f} mm, relaxed point "
          f"{depths['relaxed'] * 1e3:.3f} mm")
    assert depths["volume"] < 5e-3


def test_mixed_scene_ball_keeps_its_point_contact():
    model = cube_scene(ball=True)
    final, _ = _run(model, 500)
    q = np.asarray(final.q)
    assert abs(q[2] - A) < 1e-3 and abs(q[9] - 0.04) < 1e-3 and not bool(final.nonfinite)
    np.testing.assert_allclose(np.asarray(jaxsim.body_contact_wrench(model, final, "ball")[0]),
                               [0, 0, 0.2 * G], atol=5e-3 * 0.2 * G)
