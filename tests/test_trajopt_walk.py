"""The quadruped gait problem (``jaxsim.trajopt.QuadrupedGaitProblem``), reduced: 0.3 s
(15 steps of 20 ms) with the gait fading in over 0.1 s, float64 with the contact QP
solved to 1e-12 (a finite difference divides the solver's error by its step). One
compiled ``value_and_grad`` serves both checks:

* the loss' gradient (contact solves differentiated implicitly) against central
  finite differences along two random directions, at a random gait (coefficients of std
  0.3): measured, they agree to 1.4e-6 and 1e-5 relative at h = 1e-4 (-0.508346 and
  0.0438742 against -0.508347 and 0.0438737);
* Adam on the gradient from standing still lowers the loss below a threshold fixed
  from the measured curve: 0.0026 (standing) to -0.022, -0.046, -0.065 and -0.081
  after 4 steps of 0.03; the threshold is -0.05.
"""

import jax
import jax.numpy as jnp
import pytest
from conftest import adam_descent, check_directional_derivatives

from jaxsim.trajopt import QuadrupedGaitProblem

REDUCED = dict(horizon_s=0.3, ramp_s=0.1)


def test_bad_problems_are_refused():
    for kwargs, match in [(dict(horizon_s=0.31), "whole number of steps"), (dict(timestep=0.0), "positive"),
                          (dict(period_s=-1.0), "period_s"), (dict(harmonics=0), "harmonics"),
                          (dict(amplitude=2.0), "amplitude"), (dict(ramp_s=3.0), "ramp_s"),
                          (dict(symmetry="diagonal"), "symmetry"), (dict(servos="legs"), "servos"),
                          (dict(height_margin=0.9), "height_margin"), (dict(tilt_margin_deg=70.0), "tilt_margin"),
                          (dict(rock_weight=-1.0), "weights"), (dict(penalty_width=0.0), "penalty_width")]:
        with pytest.raises(ValueError, match=match):
            QuadrupedGaitProblem(**kwargs)


@pytest.fixture(scope="module")
def problem_and_value_and_grad():
    problem = QuadrupedGaitProblem(dtype=jnp.float64, solver_tol=1e-12, solver_iterations=2000, **REDUCED)
    return problem, jax.jit(jax.value_and_grad(problem.loss))


def _gradient_matches_finite_differences(problem_and_value_and_grad):
    problem, value_and_grad = problem_and_value_and_grad
    theta = 0.3 * jax.random.normal(jax.random.PRNGKey(0), (problem.size,), jnp.float64)
    directions = jax.random.normal(jax.random.PRNGKey(1), (2, problem.size), jnp.float64)
    # min_change: the gait moves the trunk, so the loss depends on theta
    check_directional_derivatives(value_and_grad, theta, directions, h=1e-4, rtol=1e-4, atol=1e-6, min_change=0.01)


def _adam_on_the_gradient_moves_the_trunk_forward(problem_and_value_and_grad):
    problem, value_and_grad = problem_and_value_and_grad
    losses, _ = adam_descent(value_and_grad, problem.initial_guess(), 0.03, 4)
    assert abs(losses[0]) < 0.01, losses  # standing still: no travel, no penalty, no effort
    assert losses[-1] < -0.05, losses


def test_gradient_and_adam(problem_and_value_and_grad):
    """Both checks in one test, so that one worker compiles the rollout's gradient once."""
    _gradient_matches_finite_differences(problem_and_value_and_grad)
    _adam_on_the_gradient_moves_the_trunk_forward(problem_and_value_and_grad)
