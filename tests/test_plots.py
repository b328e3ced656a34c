"""jaxsim.viz.plots against physics we know the answer to: a box at rest carries its
weight and presses on the floor right under its centre of mass (also when that is
off its geometric centre), a free fall's energy, and a batch picked env by env."""

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

import jaxsim  # noqa: E402
from conftest import rollout_in_chunks  # noqa: E402
from jaxsim import viz  # noqa: E402
from jaxsim.kinematics import forward_kinematics  # noqa: E402

G = 9.81
MASS = 2.0
HALF = (0.15, 0.1, 0.05)  # box half sizes, m
COM = (0.06, -0.03, 0.0)  # off-centre centre of mass in the body frame, m


def resting_box(friction=(0.8, 0.6)):
    b = jaxsim.ModelBuilder(timestep=2e-3)
    b.add_geom("world", "plane", (0, 0, 0), name="floor", friction=friction)
    b.add_body("box", pos=(0.2, 0.1, HALF[2]), mass=MASS, com=COM, inertia=(0.01, 0.02, 0.02))
    b.add_joint("box", "free")
    b.add_geom("box", "box", HALF, name="box", friction=friction)
    return b.build(jnp.float64)


@pytest.fixture(scope="module")
def settled():
    model = resting_box()
    _, traj = rollout_in_chunks(model, jaxsim.make_state(model), jnp.zeros((300, 0)))
    return model, traj


def test_resting_box_carries_its_weight(settled):
    model, traj = settled
    time, labels, force = viz.contact_forces(model, traj, by="body")
    assert labels == ["box"] and force.shape == (300, 1) and np.allclose(time, np.asarray(traj.time))
    np.testing.assert_allclose(force[-50:, 0], MASS * G, rtol=0.01)
    _, slots, per_slot = viz.contact_forces(model, traj, by="contact")
    assert len(slots) >= 3 and all(s.startswith("floor / box #") for s in slots)
    np.testing.assert_allclose(per_slot.sum(1), force[:, 0], rtol=1e-9, atol=1e-9)


def test_centre_of_pressure_is_under_the_centre_of_mass(settled):
    model, traj = settled
    _, cop, total = viz.center_of_pressure(model, traj, "box")
    com_w = np.asarray(forward_kinematics(model, traj.q[-1]).body_com_w[model.body_id("box")])
    assert abs(com_w[0] - 0.2 - COM[0]) < 1e-3  # it did not slide or tip
    np.testing.assert_allclose(cop[-1, :2], com_w[:2], atol=1e-3)
    assert abs(cop[-1, 2]) < 2e-3 and total[-1] > 0


def test_free_fall_energy_is_analytic():
    model = resting_box()  # started 1 m up: no contact in 0.3 s
    dt = float(model.opt.timestep)
    state = jaxsim.make_state(model, q=jnp.asarray(model.qpos0).at[2].set(1.0))
    _, traj = rollout_in_chunks(model, state, jnp.zeros((150, 0)))
    time, kinetic, potential = viz.energy(model, traj)
    np.testing.assert_allclose(kinetic, 0.5 * MASS * (G * time) ** 2, rtol=1e-9)
    n = np.round(time / dt)  # semi-implicit Euler: v_n = -g n dt, z_n = z_0 - g dt^2 n (n + 1) / 2
    initial = MASS * G * 1.0  # the CoM is at the body origin in z
    np.testing.assert_allclose(potential, initial - MASS * G * G * dt ** 2 * n * (n + 1) / 2, rtol=1e-9)
    assert not np.any(np.asarray(traj.contact.active))
    _, labels, force = viz.contact_forces(model, traj)
    assert labels == [] and force.shape == (150, 0)


def test_batch_env_matches_single_rollout():
    model = resting_box()
    # the batched and the single program round differently, and rounding can tip the
    # QP's accept-or-reject choice of a step, so the two agree to the solver's
    # tolerance: a tight one makes that far below this test's 1e-6
    model = model.replace(opt=model.opt.replace(solver_tol=1e-9))
    q0 = jnp.asarray(model.qpos0)
    states = jax.vmap(lambda z: jaxsim.make_state(model, q=q0.at[2].set(z)))(jnp.asarray([0.06, 0.2]))
    _, trajs = jax.jit(jax.vmap(jaxsim.rollout, in_axes=(None, 0, None)))(model, states, jnp.zeros((120, 0)))
    _, single = rollout_in_chunks(model, jaxsim.make_state(model, q=q0.at[2].set(0.2)), jnp.zeros((120, 0)))
    for fn in (lambda t, e: viz.contact_forces(model, t, env=e)[2],
               lambda t, e: viz.center_of_pressure(model, t, 1, env=e)[2],
               lambda t, e: viz.energy(model, t, env=e)[1]):
        np.testing.assert_allclose(fn(trajs, 1), fn(single, None), rtol=1e-6, atol=1e-9)
    # for the same reason a few steps take some iterations more or less (env 0, at
    # rest, needs far fewer than the dropped env 1)
    batched, alone = viz.solver_iterations(trajs, env=1)[1], viz.solver_iterations(single, env=None)[1]
    np.testing.assert_allclose(np.sum(batched), np.sum(alone), rtol=0.05)
    assert np.mean(np.asarray(batched) == np.asarray(alone)) >= 0.8
    with pytest.raises(ValueError, match="2 environments; choose one with env="):
        viz.contact_forces(model, trajs)
    with pytest.raises(ValueError, match="out of range"):
        viz.energy(model, trajs, env=5)
    with pytest.raises(ValueError, match="by must be"):
        viz.contact_forces(model, single, by="geom")
    with pytest.raises(ValueError, match="single State"):
        viz.energy(model, jaxsim.make_state(model))


def test_figures_draw_the_data(settled, tmp_path):
    model, traj = settled
    fig = viz.plot_summary(model, traj)
    assert len(fig.axes) == 4
    forces, cop, energy, iters = fig.axes
    np.testing.assert_allclose(forces.lines[0].get_ydata(), viz.contact_forces(model, traj)[2][:, 0])
    np.testing.assert_allclose(cop.lines[0].get_ydata(), 1e3 * viz.center_of_pressure(model, traj, "box")[1][:, 0])
    assert "centre of pressure of box" in cop.get_title()
    np.testing.assert_array_equal(iters.lines[0].get_ydata(), np.asarray(traj.solver.iterations))
    assert len(energy.lines) == 3
    fig.savefig(tmp_path / "summary.png")
    assert (tmp_path / "summary.png").stat().st_size > 10_000
