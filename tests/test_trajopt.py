"""Trajectory optimization through contact (``jaxsim.trajopt``), reduced: the cube push
over 0.3 s (30 steps, 3 knots) with the pusher starting 1 cm from the cube, so that
every rollout pushes it.

* float64: the loss' gradient (contact solves differentiated implicitly) against
  central finite differences of the loss along random directions, with the contact
  QP solved to 1e-12 (at its default 1e-6 the differences' own noise is larger
  than the disagreement being tested).
* float32: Adam on the gradient lowers the loss below a threshold fixed from the
  measured curve: from 16.3 (the straight push) to 0.66 in 30 iterations of step
  0.2, and below 1.6 from the 11th on; the threshold is 4.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxsim.trajopt import CubePushProblem, quarter_turn_error

# (x m, y m, yaw deg): a push that also turns the cube
TARGET = (0.05, 0.01, 10.0)
REDUCED = dict(horizon_s=0.3, knots=3, pusher_start=0.085)


def test_quarter_turn_error_wraps_to_the_nearest_equivalent_yaw():
    deg = np.deg2rad
    got = quarter_turn_error(jnp.asarray(deg([10.0, 100.0, -80.0, 44.0, 46.0])), jnp.asarray(deg(0.0)))
    np.testing.assert_allclose(np.rad2deg(np.asarray(got)), [10.0, 10.0, 10.0, 44.0, -44.0], atol=1e-9)


def test_bad_problems_are_refused():
    with pytest.raises(ValueError, match="knots"):
        CubePushProblem(TARGET, horizon_s=0.3, knots=4)
    with pytest.raises(ValueError, match="clear of the cube"):
        CubePushProblem(TARGET, pusher_start=0.05)


def test_gradient_matches_finite_differences_in_float64():
    problem = CubePushProblem(TARGET, dtype=jnp.float64, solver_tol=1e-12, solver_iterations=2000, **REDUCED)
    theta = problem.straight_push()
    loss, grad = jax.jit(jax.value_and_grad(problem.loss))(theta)
    assert np.isfinite(float(loss)) and np.all(np.isfinite(np.asarray(grad)))
    directions = jax.random.normal(jax.random.PRNGKey(0), (3,) + theta.shape, jnp.float64)
    h = 1e-5
    losses = jax.jit(jax.vmap(problem.loss))(jnp.concatenate([theta + h * directions, theta - h * directions]))
    fd = (losses[:3] - losses[3:]) / (2 * h)
    analytic = jnp.einsum("kij,ij->k", directions, grad)
    np.testing.assert_allclose(np.asarray(analytic), np.asarray(fd), rtol=1e-5, atol=1e-6 * float(jnp.abs(fd).max()))
    assert float(jnp.abs(fd).max()) > 10.0  # the pusher moves the cube: its pose depends on theta


def test_adam_on_the_gradient_reaches_the_pose_in_float32():
    problem = CubePushProblem(TARGET, dtype=jnp.float32, **REDUCED)
    opt = optax.adam(0.2)

    @jax.jit
    def run(theta):
        def body(carry, _):
            theta, state = carry
            loss, grad = jax.value_and_grad(problem.loss)(theta)
            updates, state = opt.update(grad, state, theta)
            return (optax.apply_updates(theta, updates), state), loss
        (theta, _), losses = jax.lax.scan(body, (theta, opt.init(theta)), None, length=30)
        return theta, losses, problem.loss(theta)

    theta, losses, final = run(problem.straight_push())
    assert float(losses[0]) > 12.0, losses  # the straight push misses
    assert float(final) < 4.0, losses
