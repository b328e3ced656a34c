"""The bounce task (``jaxsim.trajopt.BounceProblem``), reduced: 2 ms steps and the hit
at 0.4 s (off the wall at 0.15 s, the floor at 0.29 s), float64, one compiled
``value_and_grad`` for both checks:

* with ``impact_gradient="time_of_impact"`` the gradient follows the loss' trend: it
  agrees within 10 % with the slope of a quadratic fitted to the loss at 21 points
  over +-0.1 along each entry of ``theta`` (about 50 of the sawtooth's teeth, whose
  slope the step's own derivative follows instead: ``d x / d theta_x`` -0.003 m where
  the trend, ``-e T (1 - exp(-v_x))``, is -0.228 m);
* Adam on it brings the ball within 1 cm of the target: measured, the loss (1 per
  cm^2) falls from 201 to 0.58 in 60 iterations of step 0.03, below 1 from the 40th
  on (0.84 at most); the threshold is 1.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import adam_descent

from jaxsim.trajopt import BounceProblem

TARGET = (0.08, 0.1, 0.28)  # m, at 0.4 s
REDUCED = dict(horizon_s=0.4, timestep=2e-3)


def test_bad_problems_are_refused():
    with pytest.raises(ValueError, match="whole number"):
        BounceProblem(TARGET, horizon_s=0.4005)
    with pytest.raises(ValueError, match="in front of the wall"):
        BounceProblem((0.6, 0.0, 0.3))


@pytest.fixture(scope="module")
def problem_and_value_and_grad():
    problem = BounceProblem(TARGET, dtype=jnp.float64, solver_tol=1e-12, **REDUCED)
    return problem, jax.jit(jax.value_and_grad(problem.loss))


def _gradient_follows_the_trend_of_the_bounce(problem_and_value_and_grad):
    problem, value_and_grad = problem_and_value_and_grad
    theta = problem.initial_guess()
    _, grad = value_and_grad(theta)
    offsets = np.linspace(-0.1, 0.1, 21)
    for k in range(3):
        losses = [float(value_and_grad(theta.at[k].add(s))[0]) for s in offsets]
        trend = np.polyfit(offsets, losses, 2)[1]  # the slope at theta of a quadratic fit
        np.testing.assert_allclose(float(grad[k]), trend, rtol=0.1, atol=2.0, err_msg=f"theta[{k}]")


def _adam_on_the_gradient_hits_the_target(problem_and_value_and_grad):
    problem, value_and_grad = problem_and_value_and_grad
    losses, theta = adam_descent(value_and_grad, problem.initial_guess(), 0.03, 60)
    metrics = {k: float(v) for k, v in jax.jit(problem.metrics)(theta).items()}
    assert losses[0] > 100, losses  # the first throw misses by more than 10 cm
    assert losses[-1] < 1.0, losses
    assert metrics["floor_bounces"] >= 1 and metrics["wall_bounces"] >= 1, metrics


def test_gradient_and_adam(problem_and_value_and_grad):
    """Both checks in one test, so that one worker compiles the rollout's gradient once."""
    _gradient_follows_the_trend_of_the_bounce(problem_and_value_and_grad)
    _adam_on_the_gradient_hits_the_target(problem_and_value_and_grad)
