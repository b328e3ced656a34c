"""Trajectory optimization through contact (``jaxsim.trajopt``), reduced: the cube push
over 0.3 s (30 steps, 3 knots) with the pusher starting 1 cm from the cube, so that
every rollout pushes it; float64 with the contact QP solved to 1e-12 (at its default
1e-6 the finite differences' own noise is larger than the disagreement being tested).
One compiled ``value_and_grad`` serves both checks:

* the loss' gradient (contact solves differentiated implicitly) against central
  finite differences of the loss along random directions;
* Adam on the gradient lowers the loss below a threshold fixed from the measured
  curve: from 16.3 (the straight push) to 0.08 in 30 iterations of step 0.2, below
  1.6 from the 11th on; the threshold is 1.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import adam_descent, check_directional_derivatives

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


@pytest.fixture(scope="module")
def problem_and_value_and_grad():
    problem = CubePushProblem(TARGET, dtype=jnp.float64, solver_tol=1e-12, solver_iterations=2000, **REDUCED)
    return problem, jax.jit(jax.value_and_grad(problem.loss))


def _gradient_matches_finite_differences(problem_and_value_and_grad):
    problem, value_and_grad = problem_and_value_and_grad
    theta = problem.straight_push()
    directions = jax.random.normal(jax.random.PRNGKey(0), (3,) + theta.shape, jnp.float64)
    # atol: the differences' noise (the QP's 1e-12 tolerance over h, times the loss' scale);
    # min_change: the pusher moves the cube, so its pose depends on theta
    check_directional_derivatives(value_and_grad, theta, directions, h=1e-5, rtol=1e-5, atol=1e-4, min_change=0.1)


def _adam_on_the_gradient_reaches_the_pose(problem_and_value_and_grad):
    problem, value_and_grad = problem_and_value_and_grad
    losses, _ = adam_descent(value_and_grad, problem.straight_push(), 0.2, 30)
    assert losses[0] > 12.0, losses  # the straight push misses
    assert losses[-1] < 1.0, losses


def test_gradient_and_adam(problem_and_value_and_grad):
    """Both checks in one test, so that one worker compiles the rollout's gradient once."""
    _gradient_matches_finite_differences(problem_and_value_and_grad)
    _adam_on_the_gradient_reaches_the_pose(problem_and_value_and_grad)
