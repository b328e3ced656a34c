"""The pusher arm's push (``jaxsim.trajopt.ArmPushProblem``), reduced: the arm starts at
rest 9 cm behind the object's centre (2 cm from touching it) and pushes through two
waypoints 0.15 s apart (40 steps of 10 ms), float64 with the contact QP solved to
1e-12. One compiled ``value_and_grad`` serves both checks:

* the gradient (the wrist's capsules against the cylinder, a convex polyhedron,
  differentiated through collision and contact) against central finite differences
  along random directions;
* Adam on the gradient lowers the loss below a threshold fixed from the measured
  curve: the straight push ends 1.4 cm from the target (loss 1.85); step 0.3 took it
  to 0.49 at iteration 9 and 0.45 at 30; the threshold is 0.8 after 12 iterations.
"""

import jax
import jax.numpy as jnp
import pytest
from conftest import adam_descent, check_directional_derivatives

from jaxsim.trajopt import ArmPushProblem

pytest.importorskip("gymnasium")

# m: 1.4 cm beside where the straight push leaves the object (0.499, 0.019)
TARGET = (0.487, 0.025)
REDUCED = dict(approach=False, start_behind=0.09, push_knots=2, knot_s=0.15, hold_s=0.1)


def test_bad_problems_are_refused():
    with pytest.raises(ValueError, match="clear of the object"):
        ArmPushProblem(TARGET, start_behind=0.05)


@pytest.fixture(scope="module")
def problem_and_value_and_grad():
    problem = ArmPushProblem(TARGET, dtype=jnp.float64, solver_tol=1e-12, solver_iterations=2000, **REDUCED)
    return problem, jax.jit(jax.value_and_grad(problem.loss))


def test_gradient_and_adam(problem_and_value_and_grad):
    """Both checks in one test, so that one worker compiles the rollout's gradient once."""
    problem, value_and_grad = problem_and_value_and_grad
    theta = problem.initial_guess()
    directions = jax.random.normal(jax.random.PRNGKey(0), (3,) + theta.shape, jnp.float64)
    # measured: within 2e-5 relative
    check_directional_derivatives(value_and_grad, theta, directions, h=1e-4, rtol=1e-3, atol=1e-4, min_change=1.0)
    losses, _ = adam_descent(value_and_grad, theta, 0.3, 12)
    assert losses[0] > 1.5, losses  # the straight push misses
    assert losses[-1] < 0.8, losses
